"""Stage 6, render (heterogeneous): the terms forward adds to a HeteroGraphConv's result on
the destination rows (rgcn-hetero's `h + torch.matmul(inputs_dst[ntype], self.loop_weight)`,
then `h + self.h_bias`), found in a stage's ops for the relations' helper to take into its one
product, where forward makes a product and two passes over the result's rows of their own."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.fx as fx

_ADDS = (operator.add, torch.add)
_PRODUCTS = (torch.matmul, operator.matmul, torch.mm)


@dataclass(frozen=True)
class AddedTerms:
    """`conv(...) + rows @ weight` (then `+ bias`): the call's `linear=(rows, weight)` and
    `bias=`; the ops it then stands for (the product and the additions), the last of them
    the value the call gives."""

    rows: fx.Node
    weight: fx.Node
    bias: fx.Node | None
    folded: tuple[fx.Node, ...]

    @property
    def last(self) -> fx.Node:
        return self.folded[-1]


def added_terms(conv: fx.Node, nodes: list[fx.Node], users: dict[fx.Node, list[fx.Node]],
                stored: set[fx.Node], res: Callable[[Any], Any], given: Callable[[fx.Node], bool],
                constant: Callable[[fx.Node], bool]) -> AddedTerms | None:
    """The terms added to conv's result in the stage's ops `nodes`, or None. Each op taken in
    must be read by the next alone (nothing else sees the values in between, and none is
    stored); the rows must be `given` (a parameter of the stage's function, there before the
    call), the weight and the bias `constant` (of the weights alone: the same in every batch)."""
    def only_reader(node: fx.Node) -> fx.Node | None:
        readers = users.get(node, [])
        if node in stored or len(readers) != 1 or readers[0] not in nodes:
            return None
        return readers[0]

    def other_operand(add: fx.Node | None, node: fx.Node) -> fx.Node | None:
        """add's operand beside node, where add is `node + x` or `x + node` alone."""
        if add is None or add.target not in _ADDS or add.kwargs or len(add.args) != 2:
            return None
        left, right = (res(a) for a in add.args)
        other = right if left is node else left if right is node else None
        return other if isinstance(other, fx.Node) and other is not node else None

    first = only_reader(conv)
    product = other_operand(first, conv)
    if product not in nodes or product.target not in _PRODUCTS or product.kwargs or len(product.args) != 2:
        return None
    if only_reader(product) is not first:
        return None
    rows, weight = (res(a) for a in product.args)
    if not (isinstance(rows, fx.Node) and given(rows) and isinstance(weight, fx.Node) and constant(weight)):
        return None
    assert first is not None
    second = only_reader(first)
    bias = other_operand(second, first)
    if bias is None or not constant(bias):
        return AddedTerms(rows, weight, None, (product, first))
    assert second is not None
    return AddedTerms(rows, weight, bias, (product, first, second))
