"""Rebuilding a `tile.kernel` op by op into a new kernel of the same launch.

A rewrite of a kernel's body (the NKI layout's squeeze, the NKI lowering) walks the body in
order and makes each op anew over the values it made before; loops nest, so each loop's body is
rebuilt once its new loop exists, from a worklist (no recursion on the nest's depth). The grid,
program ids, tile parameters and assumptions are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.ir import Block, Operation, Region, SSAValue

from axon.dialects.tile.kernel import ForOp, KernelOp


@dataclass
class KernelRebuild:
    """The walk; a subclass makes each op (`rebuild_op`) into `values` (old value: new)."""

    kernel: KernelOp
    values: dict[SSAValue, SSAValue] = field(default_factory=dict)
    #: the new kernel's body, once `rebuild` has made it
    body: Block | None = None

    def rebuild(self, inputs: list[SSAValue]) -> KernelOp:
        """The new kernel over `inputs` (the old kernel's, or their images)."""
        src = self.kernel.body.block
        body = Block(arg_types=[a.type for a in src.args])
        self.body = body
        self.values.update(zip(src.args, body.args, strict=True))
        work = [(src, body)]
        while work:
            source, target = work.pop()
            for op in source.ops:
                work.extend(self.rebuild_op(op, target))
        k = self.kernel
        return KernelOp(inputs, k.output_types(), k.program_names(), k.grid_exprs(),
                        k.param_names(), Region(body), k.assumptions())

    def rebuild_op(self, op: Operation, target: Block) -> list[tuple[Block, Block]]:
        """Make `op` anew at the end of `target`; the (old, new) loop bodies left to walk."""
        raise NotImplementedError

    def add(self, target: Block, op: Operation) -> SSAValue:
        target.add_op(op)
        return op.results[0]

    def loop(self, op: ForOp, target: Block) -> tuple[ForOp, list[tuple[Block, Block]]]:
        """`op` anew over the images of its starts (same iv, extent and kind, no invariant),
        its carried values and results mapped; its body left to walk."""
        inits = [self.values[v] for v in op.inits]
        body = Block(arg_types=[v.type for v in inits])
        self.values.update(zip(op.body.block.args, body.args, strict=True))
        loop = ForOp(inits, op.iv.data, op.extent_expr(), Region(body), kind=op.loop_kind)
        target.add_op(loop)
        self.values.update(zip(op.results, loop.results, strict=True))
        return loop, [(op.body.block, body)]
