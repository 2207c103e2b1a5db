"""Stage 4, analysis, what the program forces an input's dtype and rank to be: forward's
inputs are never dtype witnesses on their own (dtype_witnesses.py: their dtype is the
caller's), but where forward could not run unless an input's dtype (or rank) equals a computed
tensor's, the two are equal in every run there is. TAGConv's first layer casts its norm to
forward's features, its second to the first layer's output `relu(lin(cat([features, hop1,
hop2])))`: the hops are computed from the features alone (their dtype), the Linear refuses an
input of another dtype than its weight (torch raises), and its output has the weight's. So
the output's dtype is the features', and both norms are one value. Ranks alike: torch.cat
refuses parts of different ranks, a Linear and an elementwise op keep theirs.

The mechanism: a symbol per input (its dtype or rank, unknown), per Linear (its weight's
dtype), per constant dtype (`.float()`); each op's result takes a symbol by the rules below
where they are certain, or none; what an op requires (a Linear's input of its weight's dtype,
torch.cat's parts of one rank) makes two symbols one (union-find), until nothing changes.
Certain means: an elementwise op whose tensors' symbols are one gives that symbol (torch's
promotion of a dtype with itself is that dtype; Python numbers and the graph's integer
values, such as its degrees, do not change a floating dtype); an op outside the lists below
gives none. As everywhere in the generated code, forward runs without autocast (under
autocast a Linear's output dtype is autocast's, not its weight's)."""

from __future__ import annotations

from typing import Literal

from gnn_codegen.analysis.attributes import Attributes
from gnn_codegen.ir import Op, Program, Ref, iter_refs

Trait = Literal["dtype", "rank"]

# elementwise: result of the operands' common dtype and rank (broadcast of one rank is it)
_ELEMENTWISE = frozenset({
    "add", "sub", "mul", "truediv", "neg", "pos", "pow", "relu", "elu", "leaky_relu", "gelu", "silu",
    "sigmoid", "tanh", "clamp", "clamp_min", "clamp_max", "clip", "exp", "log", "sqrt", "rsqrt", "abs",
    "reciprocal", "contiguous", "clone", "detach", "iadd", "isub", "imul", "itruediv",
})
# results of their tensor's dtype whatever their shape
_KEEPS_DTYPE = _ELEMENTWISE | frozenset({
    "reshape", "view", "unsqueeze", "squeeze", "flatten", "transpose", "permute", "t", "getitem",
    "sum", "mean", "expand", "expand_as", "repeat", "narrow",
})
_CASTS = {"float": "torch.float32", "double": "torch.float64", "half": "torch.float16",
          "bfloat16": "torch.bfloat16"}
_INT = "int"  # the graph's integer values (degrees): they do not change a floating dtype


class _Sets:
    """Union-find over symbols."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, s: str) -> str:
        while self.parent.get(s, s) != s:
            s = self.parent[s]
        return s

    def union(self, a: str, b: str) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self.parent[max(ra, rb)] = min(ra, rb)
        return True


def _name(op: Op) -> str:
    return op.target.rsplit(".", 1)[-1]


class _Symbols:
    def __init__(self, program: Program, attrs: Attributes, trait: Trait):
        self.program, self.trait, self.info = program, trait, attrs.as_dict()
        self.sets = _Sets()
        self.of: dict[str, str | None] = {}

    def _tensor(self, value: object) -> bool:
        """A tensor (a parameter too), not a shape or a number computed from one."""
        return isinstance(value, Ref) and (bool(getattr(self.info.get(value.name), "dtype", ""))
                                           or self.program.op(value.name).kind == "attr")

    def _common(self, refs: list[Ref]) -> str | None:
        """The one symbol of refs' tensors (the graph's integers aside, for a dtype), or None."""
        symbols = {self.of.get(r.name) for r in refs if self._tensor(r)}
        if self.trait == "dtype":
            symbols.discard(_INT)
        roots = {self.sets.find(s) for s in symbols if s is not None}
        return roots.pop() if len(roots) == 1 and None not in symbols else None

    def _symbol(self, op: Op) -> str | None:
        dtype = self.trait == "dtype"
        if dtype and any(k == "dtype" for k, _ in op.kwargs):  # x.sum(dtype=...): another dtype
            return None
        floating = getattr(self.info.get(op.name), "dtype", "").startswith("torch.float")
        if dtype and op.kind != "graph_value" and not floating:
            # integers computed from the graph's alone (`in_degrees.clamp(min=1)`) are the
            # graph's; any other (an input's, the caller's at run time) is its own, unknown
            tensors = [r for r in iter_refs((op.args, tuple(v for _, v in op.kwargs))) if self._tensor(Ref(r))]
            return _INT if op.kind != "input" and tensors and all(self.of.get(r) == _INT for r in tensors) else None
        if op.kind == "input":
            return f"input:{op.name}"
        if op.kind == "graph_value":
            return _INT if dtype and not floating else None
        refs = [Ref(n) for n in iter_refs((op.args, tuple(v for _, v in op.kwargs)))]
        if op.kind == "module" and op.linear and len(op.args) == 1 and self._tensor(op.args[0]):
            source = self.of.get(op.args[0].name)
            if not dtype:
                return source
            weight = f"weight:{op.target}"  # its input must have its weight's dtype
            if source is not None and source != _INT:
                self.changed |= self.sets.union(source, weight)
            return weight
        if op.kind == "mp" and op.mp is not None and op.mp.inline and op.target == "update_all":
            return self._common(refs)  # messages and sums of the fields: their common symbol
        if op.kind not in ("function", "method"):
            return None
        name = _name(op)
        if op.kind == "method" and name in ("to", "type_as") and len(op.args) == 2 and not op.kwargs \
                and isinstance(op.args[0], Ref):
            where = op.args[1]
            if self._tensor(where):  # x.to(t): t's dtype, x's shape
                return self.of.get(where.name if dtype else op.args[0].name)  # type: ignore[union-attr]
            if type(where).__name__ == "dtype":  # x.to(torch.float64)
                return f"dtype:{where}" if dtype else self.of.get(op.args[0].name)
            return self.of.get(op.args[0].name)  # x.to(t.device), x.to("cpu"): a move, x's dtype
        if op.kind == "method" and name in _CASTS and len(op.args) == 1:
            return f"dtype:{_CASTS[name]}" if dtype else self.of.get(op.args[0].name)
        if name in ("cat", "concat", "concatenate") and op.args and isinstance(op.args[0], (list, tuple)):
            parts = [p for p in op.args[0] if self._tensor(p)]
            if not dtype and parts and all(self.of.get(p.name) for p in parts):
                for p in parts[1:]:  # torch.cat refuses parts of different ranks
                    self.changed |= self.sets.union(self.of[parts[0].name], self.of[p.name])  # type: ignore[arg-type]
            return self._common(parts)
        if name in (_KEEPS_DTYPE if dtype else _ELEMENTWISE):
            return self._common(refs)
        return None

    def solve(self) -> dict[str, str]:
        """op name -> the earliest input whose trait it provably has at run time."""
        order = {op.name: i for i, op in enumerate(self.program.ops)}
        for _ in range(len(self.program.ops) + 1):
            self.changed = False
            before = dict(self.of)
            for op in self.program.ops:
                symbol = self._symbol(op)
                if symbol is None and self._tensor(Ref(op.name)) and op.kind != "graph_value":
                    # its own, unknown: what an op requires of it still ties it to others
                    # (torch.cat's parts, a Linear's input)
                    symbol = f"value:{op.name}"
                self.of[op.name] = symbol
            if not self.changed and before == self.of:
                break
        inputs: dict[str, str] = {}
        for name in sorted((n for n in self.program.inputs), key=order.__getitem__):
            inputs.setdefault(self.sets.find(f"input:{name}"), name)
        return {name: inputs[self.sets.find(s)] for name, s in self.of.items()
                if s is not None and s != _INT and self.sets.find(s) in inputs}


def equal_to_inputs(program: Program, attrs: Attributes, trait: Trait) -> dict[str, str]:
    """op name -> the (earliest) forward input whose dtype, or rank, the op's value provably has
    in every run of forward; ops of no such input are left out."""
    return _Symbols(program, attrs, trait).solve()
