"""Stage 4, attributes and proofs. Takes the Program; gives `Attributes` (rows, width, dtype
of every op) and a Program whose message-passing modules outside the verified table are proven
exact on 1-hop blocks (probe.py) or refused. May import trace, lower, ir, errors."""
