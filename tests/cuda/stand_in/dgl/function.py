"""dgl.function: not used by the examples the stand-in runs; present so that imports work."""
