"""Stage 8, verify. Takes `Generated`; runs its `inference` against the model's `forward` on
seeded random graphs (hetero.py for heterographs) and refuses on any difference. The tests use
the same harness. May import every stage before it."""
