"""gnn-codegen: write exact, readable layer-wise full-neighbour inference for DGL models."""

from gnn_codegen.errors import GnnCodegenError
from gnn_codegen.pipeline import GenerateOptions, generate

__all__ = ["GenerateOptions", "GnnCodegenError", "generate"]
__version__ = "0.1.0"
