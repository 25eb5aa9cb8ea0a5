"""Axon's NKI simulator: runs NKI kernels written against the current `nki` API on numpy.

A leaf package: it imports numpy and ml_dtypes only, nothing of Axon. Hardware limits come in as
a plain `HardwareLimits` object; `axon.targets.nki.simulator_limits.load_limits(name)` (outside
the leaf) reads them from `targets/nki/profiles/<name>.yaml`.

    from axon.targets.nki.simulator import load_kernel, simulate
    kernel = load_kernel("rmsnorm.py")            # its `import nki` gets this package's surface
    out = simulate(kernel, x, w, limits=limits)
    out, trace = simulate(kernel[4], x, w, limits=limits, trace=True)

The model, after AWS's simulator: eager and sequential, one instruction at a time; fresh
allocations hold NaN (floats) or 4 (integers); every instruction computes in fp32 and rounds once
to its destination's dtype (ml_dtypes, round-to-nearest-even); TensorE accumulates in fp32 in PSUM.
Each instruction checks buffers, partition counts and alignment, sizes and dtype rules; SBUF and
PSUM capacity are checked when a tile is allocated (live tiles: those the kernel still holds).
Errors are `KernelError`s at the kernel's file and line. `trace.py` defines the per-instruction
record the NeuronCore cost model reads.
"""

from axon.targets.nki.simulator.errors import KernelError, SimulationError, SimulationWarning
from axon.targets.nki.simulator.kernel import JitKernel, jit
from axon.targets.nki.simulator.limits import HardwareLimits
from axon.targets.nki.simulator.loader import load_kernel
from axon.targets.nki.simulator.run import simulate
from axon.targets.nki.simulator.trace import Access, Instruction, Trace

__all__ = ["Access", "HardwareLimits", "Instruction", "JitKernel", "KernelError",
           "SimulationError", "SimulationWarning", "Trace", "jit", "load_kernel", "simulate"]
