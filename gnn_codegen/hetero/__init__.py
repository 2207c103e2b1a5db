"""Heterogeneous graphs (several node and edge types): models built on DGL's HeteroGraphConv,
traced into one value per node type (trace.py), cut into one stage per HeteroGraphConv depth
(plan.py), written out as a loop per layer and destination node type (render.py), and checked
against forward on random heterographs (verify.py). generate.py runs the stages in order."""
