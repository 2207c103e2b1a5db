"""The table of operations that keep rows independent: each output row depends only on the same
row of its node-indexed inputs. Only such operations may run outside message passing, because a
layer-wise loop computes them on a batch of rows at a time. Consulted by attributes.py.

Modules are known by their class, never by its name: a user's own `class Linear(nn.Module)` is
not torch's. The program (ir.py) records a module call's class as its qualified name
(`qualified_name`), which is what the tables below hold."""

from __future__ import annotations

from typing import Any

import dgl.nn as dglnn
import torch
from torch import nn

from gnn_codegen.ir import Op, Ref


def qualified_name(cls: type) -> str:
    """`torch.nn.modules.linear.Linear`: a class's module and name, which no user class shares."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _names(*classes: type) -> frozenset[str]:
    return frozenset(qualified_name(c) for c in classes)


ROWWISE_MODULES = _names(
    nn.Linear, nn.Bilinear, nn.LazyLinear, nn.Embedding,
    nn.ReLU, nn.ReLU6, nn.ELU, nn.SELU, nn.CELU, nn.GELU, nn.SiLU, nn.Mish, nn.LeakyReLU, nn.PReLU,
    nn.RReLU, nn.Hardtanh, nn.Sigmoid, nn.Tanh, nn.Softplus, nn.Softsign, nn.Hardswish,
    nn.Hardsigmoid, nn.LogSigmoid, nn.Tanhshrink, nn.Softshrink, nn.Hardshrink, nn.Threshold,
    nn.BatchNorm1d, nn.LayerNorm, nn.RMSNorm, nn.Identity,
    # recurrent cells step each row of their batch on its own (GatedGraphConv's GRU per node)
    nn.GRUCell, nn.LSTMCell, nn.RNNCell,
    # dgl.nn.JumpingKnowledge combines each node's layer outputs (cat, max, or an LSTM over the
    # layers with nodes as the batch): row-wise in every mode, so it stays one call.
    dglnn.JumpingKnowledge,
    # dgl.nn.TypedLinear(x, x_type): each row times the weight of its own type (HGT's adaptation
    # per node type on a graph made by dgl.to_homogeneous)
    dglnn.TypedLinear,
)
# Modules whose `dim` (or `start_dim`) attribute must not be the row dimension.
DIM_MODULES = _names(nn.Softmax, nn.LogSoftmax, nn.Softmin, nn.Flatten, nn.Unflatten, nn.GLU)
START_DIM_MODULES = _names(nn.Flatten, nn.Unflatten)
# Modules that are the identity in eval mode.
EVAL_IDENTITY_MODULES = _names(nn.Dropout, nn.Dropout1d, nn.AlphaDropout, nn.FeatureAlphaDropout, nn.Identity)

ELEMENTWISE = frozenset({
    "relu", "relu_", "relu6", "elu", "selu", "celu", "gelu", "silu", "mish", "leaky_relu", "prelu",
    "rrelu", "hardtanh", "sigmoid", "tanh", "softplus", "softsign", "hardswish", "hardsigmoid",
    "logsigmoid", "tanhshrink", "softshrink", "hardshrink", "threshold", "linear", "bilinear",
    "layer_norm", "abs", "exp", "log", "log1p", "sqrt", "rsqrt", "pow", "clamp", "clip", "neg",
    "reciprocal", "sign", "square", "sin", "cos", "maximum", "minimum", "where", "float", "double",
    "half", "to", "contiguous", "clone", "detach", "type_as", "add", "sub", "mul", "div", "true_divide",
    "floordiv", "truediv", "pos", "matmul", "mm", "addmm", "iadd", "imul", "isub", "itruediv",
    "add_", "mul_", "sub_", "div_", "sigmoid_", "tanh_",
    "zeros_like", "ones_like",  # a state that starts at zero for every node (rows_first.py)
})
# name -> (index of the dim positional argument, its keyword, default dim)
DIM_ARGUMENT = {
    "softmax": (1, "dim", None), "log_softmax": (1, "dim", None), "normalize": (2, "dim", 1),
    "glu": (1, "dim", -1), "cat": (1, "dim", 0), "concat": (1, "dim", 0), "concatenate": (1, "dim", 0),
    "stack": (1, "dim", 0), "mean": (1, "dim", None), "sum": (1, "dim", None), "max": (1, "dim", None),
    "min": (1, "dim", None), "amax": (1, "dim", None), "amin": (1, "dim", None),
    "prod": (1, "dim", None), "logsumexp": (1, "dim", None), "squeeze": (1, "dim", None),
    "unsqueeze": (1, "dim", None), "flatten": (1, "start_dim", 0), "split": (2, "dim", 0),
    "chunk": (2, "dim", 0), "unbind": (1, "dim", 0), "norm": (2, "dim", None),
}
RESHAPES = frozenset({"view", "reshape"})


def _dim(op: Op) -> Any:
    name = op.target.rsplit(".", 1)[-1]
    position, keyword, default = DIM_ARGUMENT[name]
    kwargs = dict(op.kwargs)
    if keyword in kwargs:
        return kwargs[keyword]
    if len(op.args) > position:
        return op.args[position]
    return default


def _touches_rows(dim: Any, ndim: int) -> bool:
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return any(d is None or (isinstance(d, int) and d % max(ndim, 1) == 0) for d in dims)


def is_rowwise(op: Op, ndim: int, module_dim: Any = None) -> bool:
    """Whether `op` keeps node rows independent; ndim is that of its first node-indexed input
    (plus one for torch.stack, which adds a dimension)."""
    if op.kind == "module":
        if op.module_class in DIM_MODULES:
            return not _touches_rows(module_dim, ndim)
        return op.module_class in ROWWISE_MODULES
    name = op.target.rsplit(".", 1)[-1]
    if name in ELEMENTWISE:
        return True
    if name in DIM_ARGUMENT:  # stack and unsqueeze count the dimension they add
        return not _touches_rows(_dim(op), ndim + (name in ("stack", "unsqueeze")))
    if name == "getitem" and len(op.args) == 2:
        return _index_keeps_rows(op.args[1], ndim)
    if name == "permute":  # h.permute(0, 2, 1): the rows stay first
        dims = op.args[1:] if len(op.args) > 1 else tuple(dict(op.kwargs).get("dims", ()))
        dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else tuple(dims)
        return bool(dims) and all(isinstance(d, int) for d in dims) and dims[0] % max(ndim, 1) == 0
    if name in ("transpose", "swapaxes", "swapdims"):  # two dimensions other than the rows'
        dims = [*op.args[1:3], *(v for k, v in op.kwargs if k in ("dim0", "dim1", "axis0", "axis1"))]
        return len(dims) == 2 and all(isinstance(d, int) and d % max(ndim, 1) != 0 for d in dims)
    return False


def _index_keeps_rows(index: Any, ndim: int) -> bool:
    if index is Ellipsis:
        return True
    if not isinstance(index, tuple) or not index:
        return False
    first = index[0]
    if isinstance(first, slice) and first == slice(None):
        return not any(isinstance(i, Ref) for i in index)
    if first is Ellipsis:
        return len(index) - 1 < ndim
    return False


def is_rowwise_module(module: torch.nn.Module) -> bool:
    """A torch.nn module (or an nn.Sequential of them) that treats each row on its own in eval
    mode. Such a Sequential stays one call, `h = self.head(h)`, in the generated code."""
    name = qualified_name(type(module))
    if type(module) is nn.Sequential:
        return all(is_rowwise_module(child) for child in module.children())
    if name in DIM_MODULES:
        dim = getattr(module, "start_dim", getattr(module, "dim", None))
        return isinstance(dim, int) and (dim > 0 or dim == -1)
    return name in ROWWISE_MODULES or name in EVAL_IDENTITY_MODULES
