"""Issue 35's survey: model classes written in the styles of third-party DGL code that the project
had not modelled before (OpenHGNN, benchmarking-gnns, GraphMAE, CCA-SSG, GGD, BWGNN, AGDN, RecHub,
XGCN, ...). Each class is our own code, written after reading the public file its docstring names,
with the same constructs in forward. The table of cases (target, options, whether exact layer-wise
inference is possible at all, the issue's mechanisms it exercises) is in cases.py;
benchmarks/survey.py runs the CLI on every case."""
