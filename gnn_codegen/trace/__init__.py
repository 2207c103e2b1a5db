"""Stage 2, trace (and 2b, write out). Takes the model; gives `Traced` (tracer.py): a torch.fx
GraphModule whose message-passing modules are leaves and whose graph is one placeholder, with
what tracing decided (static decisions, graphs derived from the input graph, forward's
defaults); hetero*.py are the heterogeneous variant (one value per node type). May import load,
ir, errors, names, random_graphs; a few helpers of analysis (input_specs, node_tables,
known_modules, rowwise) that tracing asks of values."""
