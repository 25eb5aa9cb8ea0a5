"""The Triton frontend: Python modules with `@triton.jit` kernels, parsed, never run.

    module = parse_triton_source(text, "kernels.py")     # parse.py: kernels, params, launches
    analysis = analyse_kernel(module, "add_kernel")      # kernel_ir.py, analysis.py: accesses
    print(report_module(module))                         # report.py; python -m axon.frontend.triton

The analysis reads each kernel's body symbolically: pointers become a base parameter plus a
polynomial offset over program ids, `tl.arange` lanes, loop iterations and parameters (values.py),
masks conjunctions of bounds, everything else a small value graph of Triton constructs. An access
whose offset is affine in lanes and loop iterations, with parameter strides and a mask of bounds,
is one the next step raises into `xt` and `tile`; anything unsupported is a located SourceError.
Triton itself is never imported.
"""

from axon.frontend.diagnostics import SourceError
from axon.frontend.triton.analysis import Access, Carried, KernelAnalysis, Loop, check_affine
from axon.frontend.triton.kernel_ir import analyse_kernel
from axon.frontend.triton.parse import (
    JitKernel,
    KernelParam,
    LaunchSite,
    TritonModule,
    parse_triton_file,
    parse_triton_source,
)
from axon.frontend.triton.report import analyse_module, report_module

__all__ = ["Access", "Carried", "JitKernel", "KernelAnalysis", "KernelParam", "LaunchSite",
           "Loop", "SourceError", "TritonModule", "analyse_kernel", "analyse_module",
           "check_affine", "parse_triton_file", "parse_triton_source", "report_module"]
