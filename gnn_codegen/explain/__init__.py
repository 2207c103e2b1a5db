"""--explain: a plan as text, JSON or DOT instead of a module (hetero.py for heterogeneous
models). May import cut, render and verify, never the pipeline."""
