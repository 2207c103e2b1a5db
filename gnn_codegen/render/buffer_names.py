"""Stage 6, render, the names of what the method stores (a mixin of method.Renderer): a stored
tensor takes the user's name for its value where it has one (forward's results first, so that
they keep theirs), the rows a hop scales for the next one to send take the name of the rows
they scale (`t1_src`), the rows sent on one graph of a user's layer take that graph's
(`feat0_pa_ap`), and generic names (h, x, feat) the stage that writes them (h1, feat2). The
rows a user's layer of a convolution per graph reads, or a part of it computes, are numbered
for that layer (`feat1_pa_ap`, `x_skip1`, `hidden1`), not for a pass, and a sum it accumulates
over its graphs keeps one name, as forward's `x_skip += conv(...)` does."""

from __future__ import annotations

import re

from gnn_codegen.cut.plan import Stage
from gnn_codegen.ir import Op, Ref
from gnn_codegen.render.stored_names import SOURCE_SUFFIX, scaled_rows, stored_name
from gnn_codegen.render.user_layers import graph_suffix

# the index of a user's layer in its list: `self.convs[1]`
_LAST_NUMBER = re.compile(r"\[(\d+)\]$")


class BufferNames:
    """Names the Renderer's stored tensors (self.buffer); reads the Renderer's program, plan,
    attrs, names and the sets its __init__ makes (sources, generic, reduced, parts, graph_name)."""

    def base_name(self, op: Op) -> str:
        """A local's name: the user's variable for the value, else the variable its line
        assigns, else what computes it."""
        if op.var:
            return op.var
        if op.kind == "module":  # self.skip(x): skip
            last = op.target.rsplit(".", 1)[-1]
            return last if last.isidentifier() else op.class_name.lower()
        if op.kind == "method" and op.args and isinstance(op.args[0], Ref):  # e.flatten(1): e
            receiver = self.program.op(op.args[0].name)
            if receiver.var:
                return receiver.var
        if op.line_var and op.name in self.reduced:  # `x.pow(2).sum(1)` of `rownorm_mean = (...mean()).sqrt()`
            return f"{op.line_var}_terms"
        return op.line_var or self._named_receiver(op) or self.hidden

    def _named_receiver(self, op: Op) -> str:
        """A chain of methods on a named value no line names (a module's, called from the
        user's line): named as that value, `out_degrees.to(h).clamp(min=1)` (APPNPConv's)."""
        while op.kind == "method" and op.args and isinstance(op.args[0], Ref):
            op = self.program.op(op.args[0].name)
            if op.var:
                return op.var
        return op.target if op.kind == "graph_value" else ""

    def _name_buffers(self) -> None:
        """Stored tensors take the user's names (forward's results first, so that they keep
        theirs); generic names (h, x, feat) get the stage that writes them: h1, feat2."""
        outputs = self.plan.outputs
        self.part_bases: dict[str, str] = {}  # a user's layer's rows' names -> their base (_part_name)
        stores = [(stage, name) for stage in self.plan.stages for name in stage.stores]
        # forward's results first; a value sent to neighbours after the others, so that where
        # two are named alike it is the one named for that (stored_names.py)
        stores.sort(key=lambda item: (item[1] not in outputs, item[1] in self.sources))

        info = self.attrs.as_dict()

        def shape(value: str) -> tuple[int, ...] | None:  # of a value with a row per node
            return info[value].shape if value in info and info[value].rows == "node" else None

        for stage, name in stores:
            op = self.program.op(name)
            own = self.base_name(op)
            layer = self._users_layer_of(name)
            if layer is not None and name not in outputs:  # read by one user's layer's parts alone
                self.buffer[name] = self._part_name(stage, name, f"{own}{layer}")
                continue
            if name in outputs and op.var and op.var not in self.params:
                base = op.var
            elif name in outputs:
                base = "out" if len(outputs) == 1 else f"out{outputs.index(name)}"
            elif name in self.sources and (rows := scaled_rows(op, self.buffer, shape, self.generic)):
                base = f"{rows}{SOURCE_SUFFIX}"  # `t1 * norm`, sent to the next hop: t1_src
            elif own not in self.generic and own not in self.names.taken:
                base = own
            elif own[-1:].isdigit() and own not in self.generic:
                # a numbered name (a hop's, `hop1`): its rows sent on are `hop1_src`
                # (stored_names.py), another layer's `hop1_3`, never the unreadable `hop13`
                base = own if name in self.sources and f"{own}_src" not in self.names.taken else f"{own}_{stage.layer}"
            else:  # readout1: the part of readout that layer 1 computes
                base = f"{own}{stage.layer}"
            if name not in outputs:  # rows sent on one graph of a user's layer's: `feat0_pa_ap`
                base += self._graph_of_part(name)
            self.buffer[name] = stored_name(base, name, self.sources, self.buffer, self.names.taken, self.names.take)

    def _graph_of_part(self, value: str) -> str:
        """`_pa_ap` for a value sent to neighbours by one layer alone that is a part of a user's
        layer (user_layers.py), on g_pa_ap; "" otherwise: the parts' rows are told apart by
        their graph, not by a counter (`feat0_2`)."""
        readers = [stage for stage in self.plan.stages if (value, "src") in stage.loads]
        if len(readers) != 1 or readers[0].index not in self.parts:
            return ""
        return "_" + graph_suffix(self.plain_graph_name[readers[0].graph], self.params[0])

    def _users_layer_of(self, value: str) -> int | None:
        """k where every stage that reads the value is a part of the user's layer
        `self.convs[k]` (user_layers.py): its rows are that layer's, numbered so (`x_skip1`,
        `feat1_etype_0`), not by the pass that computes them (`x_skip3`, `feat3_etype_0`, which
        read as the third pass's); where other stages read it too, the user's layer a part of
        which computes it; None where neither is, or the layer has no index."""
        readers = [stage for stage in self.plan.stages if any(v == value for v, _ in stage.loads)]
        owners = {self.parts[stage.index].owner if stage.index in self.parts else None for stage in readers}
        if len(owners) != 1 or None in owners:  # read otherwise: the layer that computes it
            return self._users_layer_writing(value)
        return _index_of(owners.pop())

    def _users_layer_writing(self, value: str) -> int | None:
        """k where a part of the user's layer `self.layers[k]` computes the value (HAN's
        `hidden1`, the stack of self.layers[1]'s metapaths' results), else None."""
        writers = [stage for stage in self.plan.stages if value in stage.stores]
        if len(writers) != 1 or writers[0].index not in self.parts:
            return None
        return _index_of(self.parts[writers[0].index].owner)

    def _part_name(self, stage: Stage, value: str, base: str) -> str:
        """A name for a value a user's layer's parts read: base and the graph it is sent on
        (`feat1_etype_0`); where the stage computes it from a value of that name it reads last
        (forward's `x_skip += conv(...)`, a pass per edge type), that value's name again, as
        forward names the sum it accumulates, `x_skip`, not a new name per pass."""
        base += self._graph_of_part(value)
        for read, space in stage.loads:
            # a value named so here (never the caller's input, whose name is the caller's)
            if (space == "dst" and self.buffer.get(read) in self.part_bases and read not in self.program.inputs
                    and self.part_bases[self.buffer[read]] == base
                    and self._last_reader(read) == stage.index):
                return self.buffer[read]
        name = stored_name(base, value, self.sources, self.buffer, self.names.taken, self.names.take)
        self.part_bases[name] = base
        return name

    def _last_reader(self, value: str) -> int:
        return max(stage.index for stage in self.plan.stages if any(v == value for v, _ in stage.loads))


def _index_of(owner: str) -> int | None:
    """1 for the user's layer `self.convs[1]`; None for one no list holds by index."""
    index = _LAST_NUMBER.search(owner)
    return int(index.group(1)) if index else None
