"""Suite programs tiled for a Trn2 NeuronCore, as the `tile` pass builds them (the profile's
limits among the kernel's assumptions), for the NKI lowering and emitter tests."""

from __future__ import annotations

from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.tile import KernelOp
from axon.targets.profiles import load_profile
from axon.tiling.kernels import tile_function, tilings
from axon.tiling.profiles import kernel_constraints, tile_spaces
from axon.tools.embed import parse_source

#: (program, tiling) pairs the NKI lowering covers: elementwise, row reductions, matmuls
#: with the whole contraction on chip and with a loop over K accumulating in PSUM
COVERED = [("mul", "rows"), ("relu", "rows"), ("silu", "rows"), ("softmax", "rows"),
           ("rmsnorm", "rows"), ("matmul", "rows"), ("matmul", "rows_k"),
           ("matmul", "blocks_k")]


def program(name: str) -> FuncOp:
    """A suite program, parsed from its source."""
    (func,) = (op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp))
    return func


def trn2_kernel(func: FuncOp, kind: str) -> FuncOp:
    """The `kind` tiling of `func` in SBUF with PSUM accumulators, assuming Trn2's limits."""
    (tiling,) = [t for t in tilings(func) if t.kind == kind]
    profile = load_profile("trn2")
    kernel = tile_function(func, tiling, *tile_spaces(profile))
    (op,) = (o for o in kernel.body.block.ops if isinstance(o, KernelOp))
    op.assume_also(kernel_constraints(profile, op))
    return kernel
