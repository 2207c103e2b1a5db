import os

os.environ.setdefault("DGLBACKEND", "pytorch")
