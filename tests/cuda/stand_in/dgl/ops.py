"""DGL's message-passing ops that the examples call, on a Graph of CSC arrays: each message is
computed per CSC position and summed into its destination with index_add_."""

import torch


def _check(graph, *tensors):
    for t in tensors:
        if t.device != graph.device:
            raise RuntimeError(
                f"DGL op on a graph on {graph.device} and a tensor on {t.device}"
            )


def copy_u_sum(graph, x):
    _check(graph, x)
    messages = x[graph.indices]
    out = x.new_zeros(graph.num_dst_nodes(), *x.shape[1:])
    return out.index_add_(0, graph._destinations(), messages)


def u_mul_e_sum(graph, x, e):
    _check(graph, x, e)
    messages = x[graph.indices] * e[graph.edge_ids]
    out = messages.new_zeros(graph.num_dst_nodes(), *messages.shape[1:])
    return out.index_add_(0, graph._destinations(), messages)


def u_add_v(graph, x, y):
    """A row per edge ID."""
    _check(graph, x, y)
    per_position = x[graph.indices] + y[graph._destinations()]
    out = torch.empty_like(per_position)
    out[graph.edge_ids] = per_position
    return out


def edge_softmax(graph, logits):
    """Softmax of each destination's in-edges' logits (a row per edge ID)."""
    _check(graph, logits)
    dst = graph._destinations()
    per_position = logits[graph.edge_ids]
    shape = (graph.num_dst_nodes(), *logits.shape[1:])
    index = dst.view(-1, *(1,) * (logits.dim() - 1)).expand_as(per_position)
    peak = logits.new_full(shape, float("-inf")).scatter_reduce_(
        0, index, per_position, "amax"
    )
    exp = (per_position - peak[dst]).exp()
    total = logits.new_zeros(shape).index_add_(0, dst, exp)
    out = torch.empty_like(per_position)
    out[graph.edge_ids] = exp / total[dst]
    return out
