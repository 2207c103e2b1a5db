"""A rewrite of the traced forward that keeps each node's rows first where forward moves them
only to move them back: `torch.stack(hs).mean(dim=0)` (ARMA's average over its stacks) becomes
`torch.stack(hs, dim=1).mean(dim=1)`, the same numbers for tensors of one dimension or more,
which a layer-wise loop can compute one batch of rows at a time."""

from __future__ import annotations

import ast
import operator

import torch
import torch.fx as fx

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
    """Rewrite, in place, an nn.LSTM of one layer stepped once per call with each node a
    sequence of its own, its state carried across layers (DGL's GeniePath example):

        h = torch.zeros(1, x.shape[0], d)          ->  h = torch.zeros(x.shape[0], d)
        x, (h, c) = lstm(x.unsqueeze(0), (h, c))   ->  x, h, c = _lstm_step(lstm, x, h, c)
        x = x[0]

    The states have their rows on dim 1, which a layer-wise loop cannot batch; rows first, the
    same numbers are row-wise (write_out's lstm_step helper). Only where every state is made so
    and read only as an LSTM state of such a call, and each step's output only as `out[0]`."""
    from gnn_codegen.write_out import HELPERS

    modules = dict(gm.named_modules())
    graph = gm.graph
    steps = [n for n in graph.nodes if n.op == "call_module" and _one_step_lstm(modules.get(str(n.target)), n)]
    if not steps:
        return
    states: dict[fx.Node, fx.Node] = {}  # each state value -> the zeros factory it starts from
    outputs: dict[fx.Node, tuple[fx.Node, fx.Node, fx.Node]] = {}  # step -> out[0], h, c nodes
    for step in steps:
        parts = _step_outputs(step)
        if parts is None:
            return
        outputs[step] = parts
    made = {n for parts in outputs.values() for n in parts[1:]}
    for step in steps:
        for state in step.args[1]:
            factory = _zeros_factory(state)
            if state not in made and factory is None:
                return
            if factory is not None:
                states[state] = factory
    for state in made | set(states):  # read as an LSTM state only (_one_step_lstm: no kwargs)
        if any(user not in steps for user in state.users):
            return
    for factory in set(states.values()):  # zeros(1, n, d) -> zeros(n, d)
        factory.args = factory.args[1:] if len(factory.args) > 1 else (tuple(factory.args[0])[1:],)
    for step in steps:
        out0, h, c = outputs[step]
        x = step.args[0].args[0]
        with graph.inserting_before(step):
            call = graph.call_function(HELPERS["lstm_step"], (graph.get_attr(str(step.target)), x, *step.args[1]))
            new = [graph.call_function(operator.getitem, (call, i)) for i in range(3)]
        for node, name in zip(new, _assigned_names(step)):  # as forward names them (lower.py)
            node.meta["gnn_codegen"] = (name, "", "")
        for old, replacement in zip((out0, h, c), new):
            replacement.stack_trace = call.stack_trace = step.stack_trace
            old.replace_all_uses_with(replacement)
        # the call's unpacking (_step_outputs: its only readers), the call, its x.unsqueeze(0)
        for node in (out0, h, c, out0.args[0], h.args[0], step, step.args[0]):
            graph.erase_node(node)
    graph.lint()
    gm.recompile()


def _assigned_names(step: fx.Node) -> tuple[str, str, str]:
    """The names forward's line gives the step's output and states, `x, (h, c) = lstm(...)`."""
    lines = (step.stack_trace or "").splitlines()
    # the innermost frame of the user's code: not gnn-codegen's tracer, not a library's
    frames = [lines[i + 1] for i, line in enumerate(lines[:-1]) if line.strip().startswith("File ")
              and "/gnn_codegen/" not in line and "site-packages" not in line]
    try:
        statement = ast.parse(frames[-1].strip()).body[0]
    except (SyntaxError, IndexError):
        return ("out", "h", "c")
    target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else None
    if (isinstance(target, ast.Tuple) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Tuple)
            and len(target.elts[1].elts) == 2 and all(isinstance(e, ast.Name) for e in (target.elts[0], *target.elts[1].elts))):
        return target.elts[0].id, target.elts[1].elts[0].id, target.elts[1].elts[1].id  # type: ignore[union-attr]
    return ("out", "h", "c")


def _one_step_lstm(module: object, node: fx.Node) -> bool:
    """`lstm(x.unsqueeze(0), (h, c))` on an nn.LSTM of one plain layer."""
    if not isinstance(module, torch.nn.LSTM) or module.num_layers != 1 or module.bidirectional \
            or module.batch_first or module.proj_size or len(node.args) != 2 or node.kwargs:
        return False
    x, state = node.args
    unsqueezed = isinstance(x, fx.Node) and len(x.users) == 1 and x.args[1:] == (0,) and (
        (x.op == "call_method" and x.target == "unsqueeze") or (x.op == "call_function" and x.target is torch.unsqueeze))
    return unsqueezed and isinstance(state, tuple) and len(state) == 2 and all(isinstance(s, fx.Node) for s in state)


def _step_outputs(step: fx.Node) -> tuple[fx.Node, fx.Node, fx.Node] | None:
    """(out[0], h, c) of `out, (h, c) = lstm(...)`: the step's only uses, or None."""
    found: dict[str, fx.Node] = {}
    for user in step.users:
        if user.op != "call_function" or user.target is not operator.getitem or user.args[1] not in (0, 1):
            return None
        for inner in user.users:
            if inner.op != "call_function" or inner.target is not operator.getitem or inner.args[1] not in (0, 1):
                return None
            key = ("out", "hc")[user.args[1]] + str(inner.args[1])
            if key in found or key == "out1":
                return None
            found[key] = inner
    if set(found) != {"out0", "hc0", "hc1"}:
        return None
    return found["out0"], found["hc0"], found["hc1"]


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

