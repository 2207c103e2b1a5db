"""Stage 1, load. Takes `FILE:NAME`, --init and --forward-args; gives a `LoadedModel` (the
instance in eval mode, its file's source and namespace) and, for a heterogeneous model, its
schema. Imports only errors and its own modules: the user's code runs here under import_guard."""
