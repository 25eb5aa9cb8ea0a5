"""Roofline cost of e-nodes: FLOPs and bytes derived from the op's generic form at given sizes.

    time(op) = overhead + max(flops / peak, bytes / bandwidth)

FLOPs: the domain's points (parallel extents times reduced extents) times the scalar operations of
the body (plus one per point for the reduction). A reduction whose body multiplies two operand
reads is a contraction and runs at the matrix peak; everything else at the vector peak. Bytes: each
operand read once and the output written once (the ideal of a fused kernel). Symbolic sizes take
the values in `sizes` (default 1024, a mid-size benchmark shape). Inputs cost nothing. The peaks
and the overhead come from a device profile (`targets/<target>/profiles/<name>.yaml`).

The cost is pluggable: extraction takes any `NodeCost` (a callable from the graph and a node id).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from xdsl.dialects.builtin import FunctionType

from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import GenericForm
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Call, Const, ScalarExpr, reads
from axon.nugraph.eclass import ENode
from axon.nugraph.egraph import EGraph
from axon.nugraph.ops import node_semantics
from axon.targets.profiles import DeviceProfile, Roofline, load_profile

NodeCost = Callable[[EGraph, int], float]

DEFAULT_SIZE = 1024
DEFAULT_DEVICE = "h200"


@dataclass
class RooflineCost:
    """Roofline seconds per e-node for a device profile; cached per node id."""

    profile: DeviceProfile | str = DEFAULT_DEVICE
    """The device's profile, or its name (`RooflineCost("trn1", sizes)`: see `load_profile`)."""
    sizes: Mapping[str, int] = field(default_factory=dict)
    _cache: dict[tuple[object, ...], float] = field(default_factory=dict)
    _roofline: Roofline = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.profile, str):
            self.profile = load_profile(self.profile)
        self._roofline = self.profile.roofline

    def __call__(self, g: EGraph, node_id: int) -> float:
        node = g.nodes[node_id]
        if node.is_input:
            return 0.0
        types = tuple(g.type_of(c) for c in node.children)
        # keyed by what the node computes, not its id, so one cost serves several graphs
        key = (node.op, node.attrs, types)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._compute(node, types)
        return cached

    def _compute(self, node: ENode, types: tuple[TensorType, ...]) -> float:
        sem = node_semantics(node, types)
        # `Semantics` types it as any attribute; an op over tensors (every e-graph op) makes one
        assert isinstance(sem.result_type, TensorType), f"'{node.op}' makes a non-tensor"
        flops, nbytes = self.flops_and_bytes(sem.form, list(types), sem.result_type)
        roof = self._roofline
        peak = roof.matrix_flops if is_contraction(sem.form) else roof.vector_flops
        return roof.op_overhead_s.value + max(flops / peak.value, nbytes / roof.bytes_per_s.value)

    def size(self, expr: IntExpr, env: Mapping[str, int] | None = None) -> int:
        bound = {s: self.sizes.get(s, DEFAULT_SIZE) for s in expr.symbols()}
        if env:
            bound.update(env)
        return max(expr.evaluate(bound), 0)

    def elements(self, t: TensorType) -> int:
        n = 1
        for d in t.shape:
            n *= self.size(d)
        return n

    def tensor_bytes(self, t: TensorType) -> int:
        """The bytes `t` holds at these sizes, in its dtype's storage."""
        return self.elements(t) * DTYPES[t.dtype].storage.itemsize

    def signature_bytes(self, signature: FunctionType) -> int:
        """The bytes of a function's tensor inputs and results at these sizes: what a kernel
        of it reads and writes at least."""
        return sum(self.tensor_bytes(t) for t in (*signature.inputs.data,
                                                   *signature.outputs.data)
                   if isinstance(t, TensorType))

    def flops_and_bytes(self, form: GenericForm, operand_types: list[TensorType],
                        result_type: TensorType) -> tuple[float, float]:
        nbytes = sum(self.tensor_bytes(t) for t in (*operand_types, result_type))
        return self.flops(form), float(nbytes)

    def flops(self, form: GenericForm) -> float:
        """The form's scalar operations at these sizes (a triangular domain at its mean)."""
        outer = 1
        half: dict[str, int] = {}
        for d in form.parallel:
            extent = self.size(d.upper)
            outer *= extent
            half[d.name] = extent // 2  # triangular bounds: evaluate at the mean outer index
        inner = 1
        for d in form.reduced:
            inner *= max(self.size(d.upper, half) - self.size(d.lower, half), 0)
            half[d.name] = 0
        ops = count_ops(form.body) + (1 if form.reduction else 0)
        if form.finalize is not None:
            ops_final = count_ops(form.finalize)
        else:
            ops_final = 0
        return float(outer * inner * max(ops, 1) + outer * ops_final)


def count_ops(expr: ScalarExpr) -> int:
    """Scalar operations in a body (each call counts once)."""
    if isinstance(expr, Call):
        return 1 + sum(count_ops(a) for a in expr.args)
    return 0


def is_contraction(form: GenericForm) -> bool:
    """An add-reduction of a product of two or more distinct operand reads (matrix-unit work),
    masked or not (`select(c, a * b, 0.0)`: a tiled loop's last block, zeros where the matrix
    unit reads padded operands)."""
    body = form.body
    if (isinstance(body, Call) and body.fn == "select" and isinstance(body.args[2], Const)
            and body.args[2].value == 0.0):
        body = body.args[1]
    if form.reduction != "add" or not isinstance(body, Call) or body.fn != "mul":
        return False
    return len({r.operand for r in reads(body)}) >= 2

