"""The convolutions the examples build, as DGL 1.1 lays out their parameters and attributes
(what the generated code reads); their forward is the generated code's, so none is here."""

import torch
from torch import nn


def _pair(feats):
    return feats if isinstance(feats, tuple) else (feats, feats)


class SAGEConv(nn.Module):
    def __init__(
        self,
        in_feats,
        out_feats,
        aggregator_type,
        feat_drop=0.0,
        bias=True,
        norm=None,
        activation=None,
    ):
        super().__init__()
        if aggregator_type != "mean":
            raise NotImplementedError("the stand-in has SAGEConv's mean aggregator only")
        src, dst = _pair(in_feats)
        self._in_src_feats, self._in_dst_feats = src, dst
        self._out_feats, self._aggre_type = out_feats, aggregator_type
        self.norm, self.activation = norm, activation
        self.feat_drop = nn.Dropout(feat_drop)
        self.fc_neigh = nn.Linear(src, out_feats, bias=False)
        self.fc_self = nn.Linear(dst, out_feats, bias=bias)


class GraphConv(nn.Module):
    def __init__(
        self,
        in_feats,
        out_feats,
        norm="both",
        weight=True,
        bias=True,
        activation=None,
        allow_zero_in_degree=False,
    ):
        super().__init__()
        self._in_feats, self._out_feats = in_feats, out_feats
        self._norm, self._allow_zero_in_degree = norm, allow_zero_in_degree
        if weight:
            self.weight = nn.Parameter(torch.empty(in_feats, out_feats))
        else:
            self.register_parameter("weight", None)
        if bias:
            self.bias = nn.Parameter(torch.zeros(out_feats))
        else:
            self.register_parameter("bias", None)
        self._activation = activation


class GATConv(nn.Module):
    def __init__(
        self,
        in_feats,
        out_feats,
        num_heads,
        feat_drop=0.0,
        attn_drop=0.0,
        negative_slope=0.2,
        residual=False,
        activation=None,
        allow_zero_in_degree=False,
        bias=True,
    ):
        super().__init__()
        if isinstance(in_feats, tuple) or residual:
            raise NotImplementedError("the stand-in has GATConv without fc_src or res_fc")
        self._num_heads, self._out_feats = num_heads, out_feats
        self._in_src_feats = self._in_dst_feats = in_feats
        self._allow_zero_in_degree = allow_zero_in_degree
        self.fc = nn.Linear(in_feats, out_feats * num_heads, bias=False)
        self.attn_l = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.attn_r = nn.Parameter(torch.empty(1, num_heads, out_feats))
        self.feat_drop = nn.Dropout(feat_drop)
        self.attn_drop = nn.Dropout(attn_drop)
        self.leaky_relu = nn.LeakyReLU(negative_slope)
        self.has_linear_res = False
        self.register_buffer("res_fc", None)
        self.has_explicit_bias = bias
        if bias:
            self.bias = nn.Parameter(torch.zeros(num_heads * out_feats))
        else:
            self.register_buffer("bias", None)
        self.activation = activation
