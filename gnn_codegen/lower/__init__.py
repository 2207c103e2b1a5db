"""Stage 3, lower and simplify. Takes the traced GraphModule; gives the torch-free `Program`
of ir.py, each op spelled as the user's file spells it; in-place ops become values, eval-mode
identities are dropped, fixed row ranges and rows on another axis go onto its result. May
import trace and the package's top-level ir, errors, names."""
