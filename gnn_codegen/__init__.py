"""gnn-codegen: write exact, readable layer-wise full-neighbour inference for DGL models."""

import os

# DGL prints a notice on import unless a backend is chosen; gnn-codegen only works with PyTorch.
os.environ.setdefault("DGLBACKEND", "pytorch")

from gnn_codegen.errors import GnnCodegenError
from gnn_codegen.generated import GenerateOptions
from gnn_codegen.pipeline import generate

__all__ = ["GenerateOptions", "GnnCodegenError", "generate"]
__version__ = "0.1.0"
