"""Stage 5, cut and plan. Takes Program and Attributes; the cut (placement.py, cost.py,
search.py) decides every op's stage, the plan (plan.py; hetero.py for heterogeneous models)
turns it into stages: their ops, rows, what each stores and frees. May import analysis, lower,
ir, errors."""
