"""A text report of a module's Triton kernels and launches, and its command.

    python -m axon.frontend.triton KERNELS.py [-D NAME=VALUE ...] [--xt [--dtype P=DTYPE ...]]

prints, per kernel (jit helpers are read where they are called), its parameters and their
kinds, its program ids and loops (with what each carries), each tl.load / tl.store (base
pointer, offset, origin and strides per axis, mask bounds, block shape, and whether it is
affine, so raisable to `xt` / `tile`, or why not), whether the kernel raises to `xt` (or where
and why not) and the value graph; then each launch site's grid, arguments and launch options.
A mistake in the file is a located diagnostic on stderr and exit status 1, never a traceback.
With `--xt` it prints each kernel raised into the `xt` dialect (raise_xt.py) instead.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import ModuleOp

from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.intexpr import IntExpr
from axon.frontend.diagnostics import SourceError
from axon.frontend.triton.analysis import Access, KernelAnalysis, Loop
from axon.frontend.triton.kernel_ir import analyse_kernel
from axon.frontend.triton.parse import JitKernel, TritonModule, parse_triton_file
from axon.frontend.triton.raise_xt import raise_kernel
from axon.frontend.triton.values import (
    DataValue,
    DtypeValue,
    FloatValue,
    IndexValue,
    MaskValue,
    StrValue,
    TupleValue,
    Value,
    shape_text,
)

__all__ = ["analyse_module", "launch_constexprs", "main", "report_module", "value_text"]


def launch_constexprs(module: TritonModule, kernel: JitKernel) -> dict[str, int | bool]:
    """The literal constexpr arguments of the kernel's first launch in the module (what its
    `if`s on constexprs are decided by, beside the defaults)."""
    for site in module.launches:
        if site.kernel == kernel.name:
            out: dict[str, int | bool] = {}
            for p in kernel.params:
                value = site.literal(p.name) if p.constexpr else None
                if isinstance(value, (bool, int)):
                    out[p.name] = value
            return out
    return {}


def analyse_module(module: TritonModule, constexprs: Mapping[str, int | bool] | None = None
                   ) -> list[KernelAnalysis]:
    """Every kernel's analysis (jit helpers are read where they are called), with constexprs
    from its first launch and `constexprs` (which win)."""
    helpers = module.helpers()
    return [analyse_kernel(module, k, {**launch_constexprs(module, k), **(constexprs or {})})
            for k in module.kernels.values() if k.name not in helpers]


def value_text(value: Value | None, analysis: KernelAnalysis | None = None) -> str:
    """A value as an operand: `%3` for a node, the expression of an integer, a mask's bounds
    (loop-carried symbols resolved to their closed forms when `analysis` is given)."""
    def resolve(expr: IntExpr) -> IntExpr:
        return expr if analysis is None else analysis.resolve(expr)

    if value is None:
        return "none"
    if isinstance(value, DataValue):
        return f"%{value.number}"
    if isinstance(value, IndexValue):
        return str(resolve(value.expr))
    if isinstance(value, MaskValue):
        return " & ".join(f"({resolve(b.lhs)} {b.op} {resolve(b.rhs)})" for b in value.bounds)
    if isinstance(value, FloatValue):
        return repr(value.value)
    if isinstance(value, DtypeValue):
        return value.name
    if isinstance(value, StrValue):
        return repr(value.text)
    if isinstance(value, TupleValue):
        return "(" + ", ".join(value_text(v, analysis) for v in value.items) + ")"
    return "None"


def _loop_lines(analysis: KernelAnalysis, loop: Loop) -> list[str]:
    line, col = loop.loc
    options = "".join(f", {k}={v}" for k, v in loop.options.items())
    iv = IntExpr.sym(loop.iteration)
    counted = f"iteration {loop.iteration}" if loop.iteration == loop.iv else \
        f"{loop.iv} = {loop.start + loop.step * iv} at iteration {loop.iteration}"
    out = [f"  loop {loop.number} at {line}:{col}: {loop.iv} in range({loop.start}, "
           f"{loop.stop}, {loop.step}{options}); {counted}, trip {loop.trip}"]
    for c in loop.carried:
        if c.kind == "step":
            out.append(f"    carries {c.name}: integer, += {c.step} per iteration")
        elif c.kind == "index":
            out.append(f"    carries {c.name}: integer, no loop-invariant step")
        elif c.kind == "last":
            out.append(f"    carries {c.name}: integer, reassigned each iteration")
        elif c.kind == "block_ptr":
            steps = ", ".join("?" if s is None else str(s) for s in c.steps)
            out.append(f"    carries {c.name}: block pointer, offsets += ({steps}) per "
                       "iteration")
        else:
            out.append(f"    carries {c.name}: data {shape_text(c.init.shape)}, init "
                       f"{value_text(c.init)}, entry {value_text(c.entry)}, next "
                       f"{value_text(c.next)}")
    return out


def _access_lines(analysis: KernelAnalysis, number: int, access: Access) -> list[str]:
    line, col = access.loc
    where = f" in loop {', '.join(map(str, access.loops))}" if access.loops else ""
    via = {"pointer": "", "block_ptr": " through a block pointer",
           "descriptor": " through a tensor descriptor"}[access.via]
    out = [f"  {access.kind} #{number} at {line}:{col}{where}{via}: base "
           f"{access.base or '?'}, block {shape_text(access.shape)}"]
    if access.offset is not None:
        out.append(f"    offset: {access.offset}")
    if access.origin is not None:
        strides = ", ".join(f"axis {k}: {s}" for k, s in enumerate(access.strides))
        out.append(f"    origin: {access.origin}; strides: {strides or 'none (scalar)'}")
    if access.bounds:
        parts = []
        for b in access.bounds:
            axes = ", ".join(map(str, analysis.lane_axes(b.lhs - b.rhs))) or "-"
            parts.append(f"{b} (axes {axes})")
        out.append(f"    mask: {'; '.join(parts)}")
    elif access.mask is not None:
        out.append(f"    mask: {value_text(access.mask)}")
    if access.other is not None:
        out.append(f"    other: {value_text(access.other)}")
    if access.value is not None:
        out.append(f"    value: {value_text(access.value)}")
    out.append("    affine: yes" if access.affine else f"    affine: no: {access.reason}")
    return out


def kernel_report(analysis: KernelAnalysis) -> list[str]:
    """The report lines of one kernel's analysis."""
    kernel = analysis.kernel
    line, col = kernel.loc
    out = [f"kernel {kernel.name} at {analysis.module.filename}:{line}:{col}"]
    params = []
    for p in kernel.params:
        default = f" = {p.default}" if p.default is not None else ""
        params.append(f"{p.name} ({analysis.param_kinds[p.name]}{default})")
    out.append(f"  params: {', '.join(params)}")
    if analysis.program_ids:
        out.append("  program ids: " + ", ".join(
            f"{s} = tl.program_id({a})" for a, s in sorted(analysis.program_ids.items())))
    for loop in analysis.loops:
        out += _loop_lines(analysis, loop)
    for number, access in enumerate(analysis.accesses):
        out += _access_lines(analysis, number, access)
    try:
        raise_kernel(analysis)
        out.append("  raises to xt: yes")
    except SourceError as err:
        out.append(f"  raises to xt: no, at {err.line}:{err.column}: {err.message}")
    if analysis.values:
        out.append("  values:")
    for v in analysis.values:
        attrs = "".join(f" {k}={val}" for k, val in v.attrs.items())
        operands = ", ".join(value_text(o, analysis) for o in v.operands)
        out.append(f"    %{v.number} = {v.op}({operands}){attrs} : {shape_text(v.shape)} at "
                   f"{v.loc[0]}:{v.loc[1]}")
    return out


def report_module(module: TritonModule,
                  constexprs: Mapping[str, int | bool] | None = None) -> str:
    """The whole report of a parsed module (SourceError where a kernel uses a construct the
    analysis does not support); `constexprs` decide the kernels' `if`s on them."""
    out: list[str] = []
    for analysis in analyse_module(module, constexprs):
        out += kernel_report(analysis)
    for name in sorted(module.helpers()):
        line, col = module.kernels[name].loc
        out.append(f"helper {name} at {module.filename}:{line}:{col} (read where it is called)")
    for site in module.launches:
        line, col = site.loc
        out.append(f"launch of {site.kernel} at {line}:{col} in {site.host}()")
        out.append(f"  grid ({site.grid_kind}): {site.grid}")
        if site.grid_dims:
            out.append(f"  grid dims: {'; '.join(site.grid_dims)}")
        out.append("  args: " + (", ".join(f"{n}={a}" for n, a in site.args) or "none"))
        if site.extra_args:
            out.append(f"  extra args: {', '.join(site.extra_args)}")
        if site.options:
            out.append("  options: " + ", ".join(f"{n}={a}" for n, a in site.options))
        if site.missing:
            out.append(f"  unbound params: {', '.join(site.missing)}")
    if not module.kernels:
        out.append(f"no @triton.jit kernels in {module.filename}")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m axon.frontend.triton FILE [-D NAME=VALUE ...]`: print FILE's report, the
    constexprs NAME given VALUE (an integer, or True / False) for the `if`s that test them;
    exit status 1 on a located error."""
    parser = argparse.ArgumentParser(prog="python -m axon.frontend.triton",
                                     description="Report the Triton kernels and launches of a "
                                                 "Python file, read without running it.")
    parser.add_argument("file")
    parser.add_argument("-D", dest="defines", action="append", default=[],
                        metavar="NAME=VALUE", help="a constexpr's value for the `if`s on it")
    parser.add_argument("--xt", action="store_true",
                        help="print each kernel raised into the xt dialect instead")
    parser.add_argument("--dtype", dest="dtypes", action="append", default=[],
                        metavar="PARAM=DTYPE", help="a pointer's element type for --xt (f32 "
                                                    "where not given)")
    args = parser.parse_args(argv)
    dtypes: dict[str, str] = {}
    for given in args.dtypes:
        name, sep, dtype = given.partition("=")
        if not sep or dtype.strip() not in DTYPES:
            parser.error(f"--dtype {given}: expected PARAM=DTYPE with DTYPE one of "
                         f"{', '.join(sorted(DTYPES))}")
        dtypes[name.strip()] = dtype.strip()
    constexprs: dict[str, int | bool] = {}
    for define in args.defines:
        name, sep, value = define.partition("=")
        literal = {"true": 1, "false": 0}.get(value.strip().lower(), value.strip())
        try:
            constexprs[name.strip()] = int(literal)
        except ValueError:
            parser.error(f"-D {define}: expected NAME=VALUE with an integer or True / False "
                         "VALUE")
        if not sep or not name.strip().isidentifier():
            parser.error(f"-D {define}: expected NAME=VALUE")
    try:
        module = parse_triton_file(args.file)
        if args.xt:
            funcs = [raise_kernel(analysis, dtypes)
                     for analysis in analyse_module(module, constexprs)]
            text = str(ModuleOp(funcs)) + "\n"
        else:
            text = report_module(module, constexprs)
    except SourceError as err:
        print(err, file=sys.stderr)
        return 1
    except OSError as err:
        print(f"{args.file}: error: {err.strerror}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
