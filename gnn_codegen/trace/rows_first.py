"""A rewrite of the traced forward that keeps each node's rows first where forward moves them
only to move them back: `torch.stack(hs).mean(dim=0)` (ARMA's average over its stacks) becomes
`torch.stack(hs, dim=1).mean(dim=1)`, the same numbers for tensors of one dimension or more,
which a layer-wise loop can compute one batch of rows at a time."""

from __future__ import annotations

import ast
import operator
from typing import Any

import torch
import torch.fx as fx

from gnn_codegen.trace.stack_frames import frames

# reductions that take a dim and return one tensor
_REDUCTIONS = frozenset({"mean", "sum", "amax", "amin", "prod", "logsumexp"})


def _dim(node: fx.Node, position: int, default: object) -> object:
    return node.kwargs.get("dim", node.args[position] if len(node.args) > position else default)


def stacks_reduced_along_rows(gm: fx.GraphModule) -> None:
    """Rewrite, in place, every stack over dim 0 whose only reader reduces it over dim 0."""
    changed = False
    for node in list(gm.graph.nodes):
        if not (node.op == "call_function" and node.target is torch.stack and _dim(node, 1, 0) == 0
                and len(node.users) == 1):
            continue
        reader = next(iter(node.users))
        name = reader.target if reader.op == "call_method" else getattr(reader.target, "__name__", "")
        if (reader.op not in ("call_method", "call_function") or name not in _REDUCTIONS
                or not reader.args or reader.args[0] is not node or _dim(reader, 1, None) != 0):
            continue
        node.args, node.kwargs = node.args[:1], {**{k: v for k, v in node.kwargs.items() if k != "dim"}, "dim": 1}
        if "dim" in reader.kwargs:
            reader.kwargs = {**reader.kwargs, "dim": 1}
        else:
            reader.args = (reader.args[0], 1, *reader.args[2:])
        changed = True
    if changed:
        gm.recompile()


def lstm_states_rows_first(gm: fx.GraphModule) -> None:
    """Rewrite, in place, an nn.LSTM or nn.GRU of one layer stepped once per call with each node
    a sequence of its own, its state carried across layers (DGL's GeniePath example; a GRU or
    LSTM over layers whose state starts from the input's rows):

        h = torch.zeros(1, x.shape[0], d)          ->  h = torch.zeros(x.shape[0], d)
        x, (h, c) = lstm(x.unsqueeze(0), (h, c))   ->  x, h, c = _lstm_step(lstm, x, h, c)
        x = x[0]
        state = h.unsqueeze(0)                     ->  state = h
        out, state = gru(m.unsqueeze(0), state)    ->  out, state = _gru_step(gru, m, state)
        h = out.squeeze(0)

    The states have their rows on dim 1, which a layer-wise loop cannot batch; rows first, the
    same numbers are row-wise (write_out's step helpers). Only where every state is made so
    (zeros, or a tensor with a row per node unsqueezed) and read only as a state of such a
    call, an LSTM's (h, c) also as the pair the call returned, and each step's output only as
    `out[0]` or `out.squeeze(0)`."""
    from gnn_codegen.trace.write_out import HELPERS

    modules = dict(gm.named_modules())
    graph = gm.graph
    steps = [n for n in graph.nodes if n.op == "call_module" and _one_step(modules.get(str(n.target)), n)]
    if not steps:
        return
    outputs: dict[fx.Node, _StepOutputs] = {}
    for step in steps:
        parts = _step_outputs(step, isinstance(modules[str(step.target)], torch.nn.LSTM))
        if parts is None:
            return
        outputs[step] = parts
    pairs = {parts.pair: step for step, parts in outputs.items() if parts.pair is not None}
    made = {n for parts in outputs.values() for n in parts.states if n is not None}
    starts: dict[fx.Node, fx.Node] = {}  # each initial state -> the zeros or unsqueeze it is
    for step in steps:
        for state in _state_nodes(step):
            if state in made or state in pairs:
                continue
            start = _zeros_factory(state) or _unsqueezed(state)
            if start is None:
                return
            starts[state] = start
    for state in made | set(starts) | set(pairs):  # read as a state only (_one_step: no kwargs)
        if any(user not in steps for user in state.users):
            return
    for state, start in starts.items():
        if start.op == "call_function" and start.target is torch.zeros:  # zeros(1, n, d) -> zeros(n, d)
            if not start.meta.get("gnn_codegen_rows_first"):
                start.args = start.args[1:] if len(start.args) > 1 else (tuple(start.args[0])[1:],)
                start.meta["gnn_codegen_rows_first"] = True
    replaced: dict[fx.Node, fx.Node] = {}  # each state made by a step -> its rows-first value
    made_by: dict[fx.Node, list[fx.Node]] = {}  # each step -> its helper call's outputs
    for step in steps:
        parts = outputs[step]
        lstm = isinstance(modules[str(step.target)], torch.nn.LSTM)
        if lstm and step.args[1] in pairs:
            states = made_by[pairs[step.args[1]]][1:]
        else:
            states = [_rows_first(state, replaced, starts) for state in _state_nodes(step)]
        x = step.args[0].args[0]
        helper = HELPERS["lstm_step" if lstm else "gru_step"]
        with graph.inserting_before(step):
            call = graph.call_function(helper, (graph.get_attr(str(step.target)), x, *states))
            new = [graph.call_function(operator.getitem, (call, i)) for i in range(3 if lstm else 2)]
        for node, name in zip(new, _assigned_names(step, lstm)):  # as forward names them (lower.py)
            node.meta["gnn_codegen"] = (name, "", "")
        made_by[step] = new
        for old, replacement in zip(parts.states, new[1:]):
            if old is not None:
                replaced[old] = replacement
        for node in new:
            node.stack_trace = call.stack_trace = step.stack_trace
        for reader in parts.out:
            reader.replace_all_uses_with(new[0])
    for step in reversed(steps):  # the calls and their unpacking, the last first
        parts = outputs[step]
        for node in (*parts.out, *parts.unpacking, step, step.args[0]):
            graph.erase_node(node)
    for state in list(starts):  # `h.unsqueeze(0)`: read by no step now
        if not state.users and state.op != "placeholder":
            _erase_chain(graph, state)
    graph.lint()
    gm.recompile()


class _StepOutputs:
    """What reads one step's result: `out[0]` / `out.squeeze(0)` readers, the states it makes
    (h, c for an LSTM; h for a GRU), the (h, c) pair passed whole, and the unpacking nodes."""

    def __init__(self, out: list[fx.Node], states: list[fx.Node], pair: fx.Node | None,
                 unpacking: list[fx.Node]):
        self.out, self.states, self.pair, self.unpacking = out, states, pair, unpacking


def _state_nodes(step: fx.Node) -> list[fx.Node]:
    """The state arguments of a step: (h, c) written as a pair, or the one node passed."""
    if len(step.args) < 2:
        return []
    state = step.args[1]
    return list(state) if isinstance(state, tuple) else [state]


def _rows_first(state: fx.Node, replaced: dict[fx.Node, fx.Node], starts: dict[fx.Node, fx.Node]) -> Any:
    if state in replaced:
        return replaced[state]
    start = starts[state]
    if start.op == "call_function" and start.target is torch.zeros:
        return state  # the factory itself makes (n, d) now
    return start.args[0]  # `t.unsqueeze(0)`: t


def _unsqueezed(state: fx.Node) -> fx.Node | None:
    """`t.unsqueeze(0)` (or torch.unsqueeze(t, 0)), when the state is one."""
    if isinstance(state.args[0] if state.args else None, fx.Node) and state.args[1:] == (0,) and not state.kwargs and (
            (state.op == "call_method" and state.target == "unsqueeze")
            or (state.op == "call_function" and state.target is torch.unsqueeze)):
        return state
    return None


def _erase_chain(graph: fx.Graph, node: fx.Node) -> None:
    """Erase `node`, then what made it where nothing else reads that (`.to(...)` of a state)."""
    while node.op != "placeholder" and not node.users:
        inputs = [a for a in node.args if isinstance(a, fx.Node)]
        if node.op == "call_function" and node.target is torch.zeros:
            return  # the factory is the state's rows-first value: kept where read
        graph.erase_node(node)
        if len(inputs) != 1 or node.op != "call_method" or node.target != "to":
            return
        node = inputs[0]


def _assigned_names(step: fx.Node, lstm: bool = True) -> tuple[str, ...]:
    """The names forward's line gives the step's output and states, `x, (h, c) = lstm(...)`,
    `out, h = gru(...)`."""
    default = ("out", "h", "c") if lstm else ("out", "h")
    # the innermost frame of the user's code: not gnn-codegen's tracer, not a library's
    user = [frame.code for frame in frames(step) if "/gnn_codegen/" not in frame.file and "site-packages" not in frame.file]
    try:
        statement = ast.parse(user[-1]).body[0]
    except (SyntaxError, IndexError):
        return default
    target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else None
    if not (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name)):
        return default
    state = target.elts[1]
    if lstm and isinstance(state, ast.Tuple) and len(state.elts) == 2 and all(isinstance(e, ast.Name) for e in state.elts):
        return target.elts[0].id, state.elts[0].id, state.elts[1].id  # type: ignore[union-attr]
    if not lstm and isinstance(state, ast.Name):
        return target.elts[0].id, state.id
    return default


def _one_step(module: object, node: fx.Node) -> bool:
    """`lstm(x.unsqueeze(0), (h, c))`, `gru(x.unsqueeze(0), h)` or `gru(x.unsqueeze(0))` on an
    nn.LSTM or nn.GRU of one plain layer."""
    lstm = isinstance(module, torch.nn.LSTM)
    if not isinstance(module, (torch.nn.LSTM, torch.nn.GRU)) or module.num_layers != 1 or module.bidirectional \
            or module.batch_first or getattr(module, "proj_size", 0) or node.kwargs \
            or not 1 <= len(node.args) <= 2 or (lstm and len(node.args) != 2):
        return False
    x = node.args[0]
    unsqueezed = isinstance(x, fx.Node) and len(x.users) == 1 and _unsqueezed(x) is not None
    if not unsqueezed or len(node.args) == 1:
        return unsqueezed
    state = node.args[1]
    if lstm and isinstance(state, tuple):
        return len(state) == 2 and all(isinstance(s, fx.Node) for s in state)
    return isinstance(state, fx.Node)


def _is_getitem(node: fx.Node, index: tuple[int, ...] = (0, 1)) -> bool:
    return node.op == "call_function" and node.target is operator.getitem and node.args[1] in index


def _first_row(node: fx.Node) -> bool:
    """`out[0]`, `out.squeeze(0)` or torch.squeeze(out, 0): the one sequence position."""
    if _is_getitem(node, (0,)):
        return True
    return node.args[1:] == (0,) and not node.kwargs and (
        (node.op == "call_method" and node.target == "squeeze")
        or (node.op == "call_function" and node.target is torch.squeeze))


def _step_outputs(step: fx.Node, lstm: bool) -> _StepOutputs | None:
    """What reads a step's `out, (h, c)` (LSTM) or `out, h` (GRU), or None where anything else
    does: out only as its first row, the states only as states of other steps (checked by the
    caller), an LSTM's pair unpacked or passed whole."""
    out: list[fx.Node] = []
    inner: list[fx.Node] = []  # the LSTM's h and c unpacked from its pair
    outer: list[fx.Node] = []  # the step's own unpacking
    states: list[fx.Node | None] = [None, None] if lstm else [None]
    pair = None
    for user in step.users:
        if not _is_getitem(user):
            return None
        outer.append(user)
        if user.args[1] == 0:
            if not all(_first_row(reader) for reader in user.users):
                return None
            out += list(user.users)
        elif not lstm:
            states[0] = user
        else:
            for reader in user.users:
                if _is_getitem(reader) and states[reader.args[1]] is None:
                    states[reader.args[1]] = reader
                    inner.append(reader)
                elif reader.op == "call_module" and reader.args[1:2] == (user,):
                    pair = user  # passed whole as another step's state
                else:
                    return None
    return _StepOutputs(out, states, pair, [*inner, *outer])


def _zeros_factory(state: fx.Node) -> fx.Node | None:
    """The `torch.zeros(1, n, d)` a state is (past `.to(...)`), when it is one."""
    node = state
    while node.op == "call_method" and node.target == "to" and isinstance(node.args[0], fx.Node):
        node = node.args[0]
    if node.op != "call_function" or node.target is not torch.zeros:
        return None
    if node is not state and len(node.users) != 1:  # read other than through `.to(...)`
        return None
    shape = node.args if len(node.args) > 1 else tuple(node.args[0]) if node.args and isinstance(node.args[0], (tuple, list)) else ()
    return node if len(shape) == 3 and shape[0] == 1 else None

