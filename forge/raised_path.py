"""Forge's raised path: a user's Triton kernel that raises to `ax` with proof goes through Axon's
own pipeline, and the launch becomes a call of Axon's kernel.

    raised = raise_file(KernelFile.read(path))                 # per launched kernel
    forged = forge_raised(path, problem, device, sizes, executor, gpu=False, scratch=dir)

For each launched kernel the Triton frontend reads (never runs) the file, raises the kernel to
`xt`, then to `tile` and `ax` (`frontend/triton/raise_tile.py`, proved by the verifier); a
kernel that does not raise is listed with the reason and keeps the Triton-level stages. The
raised `ax` function goes through the Triton target's selection unchanged (`select_kernel`: the
nu-graph's variants, proved tilings, the KB's launches, the target's cascade per candidate),
as the torch path's captured function does. The launch statement `kernel[grid](...)` is then
replaced, in the user's own text, by a call of the selected host function on the user's
tensors seen as the raised kernel's tensors (`torch.as_strided(arg, sizes, strides)` with the
launch's own argument texts for the sizes and strides; the raise's tensors are the user's with
those strides), and the result copied into the user's output the same way, so `ModelNew`, its
constructor and its entry points stay the user's. The module is checked by the Forge cascade
against the ORIGINAL kernel file (`forge/cascade.py`); a proposal that fails it is not used.

Sizes and dtypes: the file's text has neither, so the launches are recorded at the problem's
sizes (`launch_record.py`: the kernel file's `ModelNew` run on meta tensors, each launch
intercepted) and the selection prices each size symbol at the value its launch passes (13's
flat add at `n_elements = 16777216`); a symbol no launch gives (host code that cannot run on
meta) is priced at `SIZE`, and the notes say so. The raise reads every pointer as float32
(`raise_xt`); where every tensor a kernel (or a fused host function) reads has one dtype, bf16
or f16, the `ax` function is selected in that dtype (float parameters stay float32; the Triton
target's kernels load bf16 and compute in float32), and its launch passes the user's tensors
as they are. Elsewhere (inputs of mixed dtypes) it is selected in float32 and a narrower input
is widened at the call (`.float()`, an extra pass over it). Each result is then cast to the
dtype of the user's output (`with_result_dtypes`: 08's bf16 GEMM writing a float32 buffer is a
bf16 `tl.dot` whose float32 accumulator is stored as it is; a row kernel reading that buffer
and writing bf16 rounds at its store). Two modules come out: `device_source`, Axon's kernels in
those dtypes (what a GPU runs), and `source`, what the cascade checked: on the CPU
interpreter, whose bf16 `tl.dot` is wrong, each kernel's float32 twin with every input widened
(on a GPU the two are one).

Outputs: the host function writes its results into the user's output views (`out=`) where
the launch recorded at the problem's sizes shows each view row-major, in the result's dtype
and sharing no memory with a tensor the kernel reads (the host checks the same at every call:
ValueError, never a wrong write); otherwise the results are new tensors copied into the views,
one more pass over the output (`copy_reason` says why, in the selection's line). The twin
module decides the same for its float32 results (the views qualify where the problem's
outputs are float32; the cascade's float32 run exercises the `out=` call there).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from axon.dialects.ax import CastOp, TensorType, TransposeOp
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.intexpr import IntExpr
from axon.forge.cascade import ForgeCascade
from axon.forge.driver import CheckOutcome
from axon.forge.fuse_raised import FusedHost, fuse_host, strided
from axon.forge.launch_record import LaunchRecord, RecordedLaunch, TensorArg, record_launches
from axon.forge.source import (
    Edit,
    KernelFile,
    apply_edits,
    indent_of,
    statement_span,
    without_docstring,
)
from axon.forge.stages.analysis import analysable
from axon.frontend.diagnostics import SourceError
from axon.frontend.triton.kernel_ir import analyse_kernel
from axon.frontend.triton.parse import LaunchSite
from axon.frontend.triton.raise_tile import NotRaised, RaisedKernel, _parse, raise_to_ax
from axon.frontend.triton.raise_xt import _Raising
from axon.frontend.triton.report import launch_constexprs
from axon.nugraph.stored import function_text
from axon.selection.executor import Executor
from axon.targets.xe_triton.kb import Device
from axon.targets.xe_triton.select import (
    Candidate,
    Selection,
    SelectionError,
    SelectOptions,
    select_kernel,
)

__all__ = ["KernelRaise", "RaisedResult", "assumption_error", "copy_reason", "forge_raised",
           "launch_replacement", "raise_file", "retyped_to", "with_result_dtypes"]

#: the size a symbol is priced at in the selection where no recorded launch gives its value
SIZE = 4096
#: the dtypes a raised function is selected in where all its tensors have one (torch's names);
#: float32 is the raise's own
NARROW_DTYPES = {"bf16": "torch.bfloat16", "f16": "torch.float16"}
_TORCH_DTYPES = {"f32": "torch.float32", **NARROW_DTYPES}

Say = Callable[[str], None]


@dataclass
class KernelRaise:
    """One launched kernel: raised (with its proof) or why not; its tensors' dims (each
    pointer parameter's stride parameters, None for the unit stride, and sizes)."""

    name: str
    raised: RaisedKernel | None = None
    reason: str = ""
    tensors: dict[str, tuple[list[str | None], list[IntExpr]]] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    scalars: list[str] = field(default_factory=list)
    """Float parameters (`scale`, `eps`): inputs of one float32 element."""

    def line(self) -> str:
        """The report line."""
        if self.raised is None:
            return f"kernel {self.name}: not raised to ax: {self.reason}"
        assume = f" (assuming {', '.join(self.raised.assumptions)})" \
            if self.raised.assumptions else ""
        direct = ("the xt kernel itself proved equal too" if self.raised.xt_proved else
                  "the xt kernel not proved directly ("
                  f"{getattr(self.raised.xt_verdict, 'reason', self.raised.xt_verdict)}): the "
                  "raise's steps stand")
        return (f"kernel {self.name}: raised to tile and ax, proved equal{assume} in "
                f"{self.raised.seconds:.2f} s; {direct}")


@dataclass
class RaisedResult:
    """What the raised path made of a file: per kernel its raise, the module text (the input's
    where nothing was replaced), the kernels replaced and the cascade's outcome."""

    kernels: list[KernelRaise]
    source: str
    replaced: list[str]
    outcome: CheckOutcome | None = None
    notes: list[str] = field(default_factory=list)
    proposal: str = ""
    """The module put to the cascade (kept when it failed, for the report)."""
    device_source: str = ""
    """The module with Axon's kernels in the tensors' dtypes, for a GPU (`source` where the
    cascade ran on one; on the CPU `source` holds the float32 twins the interpreter checked);
    the input's text where nothing was replaced."""
    selected: list[str] = field(default_factory=list)
    """Per selection: the function, the kernel chosen, its launch, the sizes and dtype."""
    record: LaunchRecord | None = None
    """The launches recorded at the problem's sizes (None where nothing raised)."""

    def report_lines(self) -> list[str]:
        """One line per kernel, then the notes."""
        return [k.line() for k in self.kernels] + self.notes


def raise_file(file: KernelFile) -> list[KernelRaise]:
    """Every launched kernel of `file` raised to `ax` with proof, or the reason it is not."""
    out: list[KernelRaise] = []
    if file.error is not None:
        return out
    module = analysable(file)
    launched = {s.kernel for s in file.module.launches}
    for name in module.kernels:
        if name not in launched:
            continue
        entry = KernelRaise(name)
        out.append(entry)
        try:
            analysis = analyse_kernel(module, name, launch_constexprs(module,
                                                                      module.kernels[name]))
            raising = _Raising(analysis, {})
            func = raising.run()
            func.verify()
        except SourceError as err:
            entry.reason = f"the raise to xt stops at {err.line}:{err.column}: {err.message}"
            continue
        except Exception as err:  # noqa: BLE001 (the raise's verify: a gap, reported)
            entry.reason = f"the raise to xt does not verify: {err}"
            continue
        entry.tensors = {t.param: (list(t.strides), [s for s in t.sizes if s is not None])
                         for t in raising.tensors.values()}
        entry.inputs = [t.param for t in raising.tensors.values() if t.loaded] \
            + raising.scalars
        entry.scalars = list(raising.scalars)
        entry.outputs = [t.param for t in raising.tensors.values() if t.stored]
        try:
            entry.raised = raise_to_ax(func)
        except NotRaised as err:
            entry.reason = str(err)
    return out


def _size_text(size: IntExpr, site: LaunchSite, grid_names: Mapping[str, str]) -> str:
    """A size of the raised kernel as host text: a size parameter's launch argument or the
    grid's dim `G<k>`."""
    name = size.as_symbol
    if name is None:
        raise NotRaised(f"a tensor dim of size {size} (not one parameter) has no launch text")
    if name in grid_names:
        return grid_names[name]
    text = site.arg(name)
    if text is None:
        raise NotRaised(f"the launch at line {site.loc[0]} does not bind {name}")
    return text


def assumption_error(kernel: KernelRaise, site: LaunchSite) -> str | None:
    """Why the launch `site` may break an assumption of the raise (`B >= S`: a block holding a
    dim whole covers it), or None: the launch must pass `B=triton.next_power_of_2(T)` where
    `T` is the text it passes for the size `S` (or the grid's dim for `G<k>`)."""
    assert kernel.raised is not None
    grid = {f"G{k}": text for k, text in enumerate(site.grid_dims)}
    for fact in kernel.raised.assumptions:
        block, _, size = (part.strip() for part in fact.partition(">="))
        given = (site.arg(block) or "").replace(" ", "")
        size_text = (grid.get(size) or site.arg(size) or "?").replace(" ", "")
        wanted = {f"triton.next_power_of_2({size_text})", f"triton.next_power_of_2(({size_text}))"}
        if given not in wanted:
            return (f"the raise assumes {fact} (the block holds the dim whole); the launch at "
                    f"line {site.loc[0]} passes {block}={site.arg(block)!r}, not "
                    f"triton.next_power_of_2({size_text})")
    return None


def retyped_to(func: FuncOp, dtype: str) -> tuple[FuncOp, str]:
    """The raise's `func` (every tensor float32) with its tensors in `dtype`, and the dtype its
    float parameters (inputs of one element) take: float32 as the user's kernel reads them,
    unless another value of the function has their type (then `dtype` too). NotRaised when
    neither retyping parses."""
    narrow = re.sub(r"\bf32\b", dtype, function_text(func))
    scalar = f"!ax.tensor<[1], {dtype}>"
    if not re.search(rf"-> \(?{re.escape(scalar)}", narrow.split("\n", 1)[1]):
        try:
            return _parse(narrow.replace(scalar, "!ax.tensor<[1], f32>"), dtype), "f32"
        except NotRaised:
            pass
    return _parse(narrow, dtype), dtype


def with_result_dtypes(func: FuncOp, dtypes: Sequence[str]) -> FuncOp:
    """`func` with each result cast to its dtype of `dtypes` where it has another (an `ax.cast`
    before the return). The Triton target computes blocks in float32 and converts at the store
    (`lower.COMPUTE_DTYPE`), so a bf16 matmul's result cast to float32 is its float32
    accumulator stored as it is, never rounded to bf16 first (a staged plan keeps a reduction
    feeding arithmetic in float32 in memory too, `tiling.split.intermediate_dtype`). NotRaised
    where the casts do not verify."""
    clone = func.clone()
    (ret,) = [op for op in clone.body.block.ops if isinstance(op, ReturnOp)]
    values = []
    try:
        for value, dtype in zip(ret.operands, dtypes, strict=True):
            assert isinstance(value.type, TensorType)
            if value.type.dtype == dtype:
                values.append(value)
                continue
            cast = CastOp.make([value], dtype=dtype)
            clone.body.block.insert_op_before(cast, ret)
            values.append(cast.results[0])
        ret.operands = values
        clone.update_function_type()
        clone.verify()
    except (ShapeError, VerifyException, DiagnosticException) as err:
        raise NotRaised(f"the results cast to {', '.join(dtypes)} do not verify: {err}") from None
    return clone


def _one_dtype(dtypes: Sequence[str | None]) -> str | None:
    """The dtype all of `dtypes` are, where it is one of NARROW_DTYPES; else None."""
    first = dtypes[0] if dtypes else None
    return first if first in NARROW_DTYPES and all(d == first for d in dtypes) else None


def _row_major(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a view of `sizes` and `strides` is row-major (a dim of size 1 has any stride)."""
    step = 1
    for size, stride in zip(reversed(sizes), reversed(strides), strict=True):
        if size != 1 and stride != step:
            return False
        step *= size
    return True


def copy_reason(record: LaunchRecord, kernel: KernelRaise, site: LaunchSite, param: str,
                 dtype: str, reads: Sequence[tuple[LaunchSite, str]]) -> str:
    """Why the user's view of the output `param` of `kernel` at `site` cannot take the host
    function's result of `dtype` as it is written (`out=`), from the launch recorded at the
    problem's sizes: no record, another dtype, a layout that is not row-major, memory shared
    with a tensor of `reads` (launch, parameter); "" where it can."""
    launch = record.at(site)
    tensor = launch.tensor(param) if launch is not None else None
    if launch is None or tensor is None:
        return "no launch recorded at the problem's sizes"
    if tensor.dtype != dtype:
        return f"it is {tensor.dtype}, the result {dtype}"
    view = recorded_view(record, kernel, site, param)
    if view is None:
        return "its view's sizes or strides are not recorded"
    size_values, stride_values = view
    if not _row_major(size_values, stride_values):
        return (f"its view (sizes {tuple(size_values)}, strides {tuple(stride_values)}) is not "
                "row-major")
    shared = [p for s, p in reads
              if (t := _tensor(record, s, p)) is not None and t.storage == tensor.storage]
    if shared:
        return f"it shares memory with {', '.join(shared)}, which the kernel reads"
    return ""


def recorded_view(record: LaunchRecord, kernel: KernelRaise, site: LaunchSite, param: str
                  ) -> tuple[list[int], list[int]] | None:
    """The sizes and strides of the user's view of `param` at the launch recorded from
    `site`, or None where the record lacks one."""
    launch = record.at(site)
    if launch is None:
        return None
    strides, sizes = kernel.tensors[param]
    size_values = [launch.size(d.as_symbol) if d.as_symbol else None for d in sizes]
    stride_values = [1 if s is None else _int(launch, s) for s in strides]
    if any(v is None for v in [*size_values, *stride_values]):
        return None
    return size_values, stride_values  # type: ignore[return-value]


def flipped_inputs(record: LaunchRecord, kernel: KernelRaise, sites: Sequence[LaunchSite]
                   ) -> list[str]:
    """The matrix inputs of `kernel` every recorded launch passes as the transpose of a
    row-major matrix (a linear layer's `W^T`, read through `w.stride(1), w.stride(0)`): the
    raised function takes them row-major, transposed in it (`transposed_inputs`), so that the
    host function's `.contiguous()` copies nothing (a transposing copy of W every call,
    otherwise)."""
    out = []
    for param in kernel.inputs:
        if param in kernel.scalars or len(kernel.tensors[param][1]) != 2:
            continue
        views = [recorded_view(record, kernel, site, param) for site in sites]
        if views and all(v is not None and _row_major(v[0][::-1], v[1][::-1])
                         and not _row_major(*v) for v in views):
            out.append(param)
    return out


def transposed_inputs(func: FuncOp, indices: Sequence[int]) -> FuncOp:
    """`func` taking each input of `indices` (a matrix) transposed: the input `[N, K]` and an
    `ax.transpose` of it in place of the `[K, N]` the function read, so `f'(.., w', ..) =
    f(.., transpose(w'), ..)` by construction; the caller passes the user's view transposed
    (`launch_replacement`'s `flipped`), the same memory. NotRaised where it does not verify."""
    clone = func.clone()
    block = clone.body.block
    try:
        for index in indices:
            old = block.args[index]
            t = old.type
            assert isinstance(t, TensorType) and t.rank == 2
            arg = block.insert_arg(TensorType(list(reversed(t.shape)), t.dtype), index)
            flip = TransposeOp.make([arg], perm=[1, 0])
            assert block.first_op is not None
            block.insert_op_before(flip, block.first_op)
            old.replace_all_uses_with(flip.results[0])
            block.erase_arg(old)
        clone.update_function_type()
        clone.verify()
    except (ShapeError, VerifyException, DiagnosticException) as err:
        raise NotRaised(f"the inputs taken transposed do not verify: {err}") from None
    return clone


def _int(launch: RecordedLaunch, param: str) -> int | None:
    value = launch.args.get(param)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tensor(record: LaunchRecord, site: LaunchSite, param: str) -> TensorArg | None:
    launch = record.at(site)
    return launch.tensor(param) if launch is not None else None


def _call(host: str, inputs: Sequence[str], keywords: str, outputs: Sequence[str],
          direct: bool, indent: str) -> str:
    """The statements calling `host`: its results written into the views `outputs` (`direct`),
    or new tensors copied into them."""
    if direct:
        lines = [f"{host}({', '.join(inputs)}{keywords}, out=({', '.join(outputs)},))"]
    else:
        names = [f"_axon_out{k}" for k in range(len(outputs))]
        lines = [f"{', '.join(names)} = {host}({', '.join(inputs)}{keywords})"]
        lines += [f"{view}.copy_({name})" for view, name in zip(outputs, names, strict=True)]
    return "\n".join(indent + line for line in lines) + "\n"


def launch_replacement(kernel: KernelRaise, site: LaunchSite, host: str,
                       kwargs: Mapping[str, object], indent: str, *, widen: bool = True,
                       scalar_dtype: str = "f32", direct: bool = False,
                       flipped: Sequence[str] = ()) -> str:
    """The statements replacing the launch `site`: the host function `host` called on the
    user's tensors seen as the raised kernel's, its results written into the user's outputs
    (`direct`: passed as `out`) or copied into them. `widen`: the host function takes float32
    (each input `.float()`, the tensor itself when it is float32); otherwise it takes the
    user's tensors as they are. Float parameters are one-element tensors of `scalar_dtype`.
    The matrices of `flipped` are passed transposed (sizes and strides reversed: the same
    memory), as the function raised with `transposed_inputs` takes them."""
    grid_names = {f"G{k}": f"({text})" for k, text in enumerate(site.grid_dims)}

    def view(param: str, read: bool = False) -> str:
        pointer = site.arg(param)
        if pointer is None:
            raise NotRaised(f"the launch at line {site.loc[0]} does not bind {param}")
        if param in kernel.scalars:
            first = site.arg(kernel.outputs[0]) if kernel.outputs else None
            return (f"torch.full((1,), {pointer}, dtype={_TORCH_DTYPES[scalar_dtype]}, "
                    f"device={first}.device)")
        strides, sizes = kernel.tensors[param]
        size_texts = [_size_text(s, site, grid_names) for s in sizes]
        stride_texts = []
        for s in strides:
            if s is None:
                stride_texts.append("1")
                continue
            text = site.arg(s)
            if text is None:
                raise NotRaised(f"the launch at line {site.loc[0]} does not bind {s}")
            stride_texts.append(text)
        if param in flipped:
            size_texts.reverse()
            stride_texts.reverse()
        return (f"torch.as_strided({pointer}, ({', '.join(size_texts)},), "
                f"({', '.join(stride_texts)},)){'.float()' if read and widen else ''}")

    keywords = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    return _call(host, [view(p, read=True) for p in kernel.inputs], keywords,
                 [view(p) for p in kernel.outputs], direct, indent)


def _launch_statements(file: KernelFile, kernel: str) -> list[ast.stmt]:
    """The statements that are exactly one launch of `kernel`, in order."""
    calls = file.launch_calls(kernel)
    found: list[ast.stmt] = []
    for node in ast.walk(file.tree):
        if isinstance(node, ast.Expr) and any(node.value is c for c in calls):
            found.append(node)
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


@dataclass
class _Picked:
    """A selection's outcome: the host function, the chosen candidate, how the call passes
    tensors (`widen`: each input `.float()`; else as they are, in the dtype the kernel was
    selected in) and float parameters (`scalar_dtype`), the dtype of each result, and the
    selection's line (its outputs' handling is added where the launches are replaced)."""

    host: str
    chosen: Candidate
    widen: bool
    scalar_dtype: str
    results: list[str]
    line: str


def forge_raised(path: Path, problem: Path, device: Device,
                 sizes: Sequence[Mapping[str, int]], executor: Executor, *, gpu: bool,
                 scratch: Path, atol_scale: float = 1.0, max_candidates: int = 4,
                 fuse: bool = True, say: Say = lambda line: None,
                 problem_sizes: Mapping[str, int] | None = None, rank: int = 0,
                 selections: MutableMapping[str, Selection] | None = None
                 ) -> RaisedResult:
    """The raised path on the kernel file `path` (module docstring): each raised kernel's
    launches replaced by Axon's selected kernel, the module checked by the Forge cascade
    against the original at `sizes`. The selection prices the sizes and takes the dtypes the
    launches have at the problem's size globals (`problem_sizes` replacing some; by default
    the problem file's own, its benchmark sizes), recorded on the meta device. With `fuse`, a
    host function whose launches are all raised and compose (`forge/fuse_raised.py`) is one
    `ax` program, selected once, its launches replaced by one call. Kernels that do not
    raise, or whose selection or replacement fails, keep their launches, and the result says
    why.

    `rank` picks, for each selection, its launch of that place among those that passed the
    target's cascade (0: the one it chose; 1: the next in its order, measured where it timed
    them, else modeled; a selection with fewer gives its last, `ranked_passed`): the bundle
    writes these modules as twins of the chosen one, so that the GPU, not the cost model,
    picks the launch (`bundle._raised_candidates`). Each twin goes through the same cascade.
    `selections`: the selections made so far, by function and options, shared across the
    ranks' calls so that each function is selected once (a selection does not depend on the
    rank: only which of its passed launches is taken does)."""
    file = KernelFile.read(path)
    kernels = raise_file(file)
    result = RaisedResult(kernels, file.source, [], device_source=file.source)
    for k in kernels:
        say(k.line())
    if not any(k.raised is not None for k in kernels):
        return result
    record = result.record = record_launches(file, path, problem, problem_sizes)
    if record.error:
        result.notes.append(f"the launches are not recorded at the problem's sizes (its host "
                            f"code on the meta device: {record.error}): every size is priced "
                            f"at {SIZE} and every kernel selected in float32")
    device_edits: list[Edit] = []
    check_edits: list[Edit] = []
    device_texts: list[str] = []
    check_texts: list[str] = []
    taken = set(re.findall(r"^(?:def|class)\s+(\w+)", file.source, re.M))
    ours: set[str] = set()  # Axon's shared helpers (`_wide`, ...) may repeat across kernels

    def select(func: FuncOp, name: str, bound: Mapping[str, int | None],
               input_dtypes: Sequence[str | None],
               output_dtypes: Sequence[str | None]) -> _Picked | None:
        """Axon's kernel for `func`, priced at the recorded sizes `bound` (`SIZE` where None),
        selected in the one dtype of `input_dtypes` where they have one, each result cast to
        its dtype of `output_dtypes` (a float dtype; else the function's own); None (with a
        note) where the selection or the names fail."""
        symbols = sorted({s for t in func.function_type.inputs.data
                          for d in t.shape for s in d.symbols()})  # type: ignore[attr-defined]
        unbound = [s for s in symbols if bound.get(s) is None]
        if unbound and not record.error:
            result.notes.append(f"{name}: no recorded launch gives {', '.join(unbound)}: "
                                f"priced at {SIZE}")
        priced = {s: bound.get(s) or SIZE for s in symbols}
        dtype = _one_dtype(input_dtypes)
        scalar_dtype = "f32"
        if dtype is not None:
            try:
                func, scalar_dtype = retyped_to(func, dtype)
            except NotRaised as err:
                result.notes.append(f"{name}: selected in float32: {err}")
                dtype = None
        own = dtype or "f32"
        results = [d if d in _TORCH_DTYPES else own for d in output_dtypes]
        if any(d != own for d in results):
            try:
                func = with_result_dtypes(func, results)
            except NotRaised as err:
                result.notes.append(f"{name}: results in {own}: {err}")
                results = [own] * len(results)
        widen = dtype is None and any(d != "f32" for d in input_dtypes)
        options = SelectOptions(profile=device.name, sizes=priced,
                                max_candidates=max_candidates, time_on_gpu=gpu)
        key = f"{options!r}\n{func}"
        selection = None if selections is None else selections.get(key)
        if selection is not None:
            say(f"{name}: the selection made for an earlier rank")
        else:
            try:
                selection = select_kernel(func, options, executor, program=name,
                                          report=lambda line: say(f"{name}: {line}"))
            except SelectionError as err:
                result.notes.append(f"{name}: the selection found no kernel: {err}")
                return None
            if selections is not None:
                selections[key] = selection
        ranked = ranked_passed(selection)
        if not ranked:
            result.notes.append(f"{name}: no selected candidate passed the target's cascade")
            return None
        place = min(rank, len(ranked) - 1)
        chosen = ranked[place]
        emitted = selection.emitted[chosen.id]
        twin = emitted.text if gpu else selection.twins[chosen.id]
        names = set(re.findall(r"^def\s+(\w+)", emitted.text, re.M))
        hosts = {emitted.name, *(n for n in names if n.startswith(emitted.name))}
        clash = sorted((names & taken) | (hosts & ours))
        if clash:
            result.notes.append(f"{name}: the emitted module defines {', '.join(clash)}, "
                                "which the file defines too")
            return None
        ours.update(names)
        header = (f"# ---- Axon: {name} raised to ax (proved), {chosen.tiling} "
                  f"({chosen.launch()}) ----\n")
        device_texts.append(header + without_docstring(emitted.text).rstrip() + "\n")
        check_texts.append(header + without_docstring(twin).rstrip() + "\n")
        cast = (f", result{'s' if len(results) > 1 else ''} in {', '.join(results)}"
                if any(d != own for d in results) else "")
        ordinal = f" (passed launch {place + 1} of {len(ranked)})" if rank else ""
        line = (f"{name}: {chosen.tiling} ({chosen.launch()}) selected{ordinal} at "
                + ", ".join(f"{s}={v}" for s, v in priced.items())
                + f" in {own}" + (" (inputs widened)" if widen else "") + cast)
        return _Picked(emitted.name, chosen, widen, scalar_dtype, results, line)

    def outputs_line(picked: _Picked, writes: Sequence[Sequence[tuple[str, str]]]) -> bool:
        """The selection's line with how each launch's outputs (parameter, why a copy; ""
        where written directly) are written, recorded and said; whether the device module
        writes them all directly."""
        parts = dict.fromkeys(
            f"{param} written directly (out=)" if not why else f"{param} copied ({why})"
            for site in writes for param, why in site)
        line = picked.line + "; " + "; ".join(parts)
        result.selected.append(line)
        say(line)
        return all(not why for site in writes for _, why in site)

    def replace(statements: Sequence[ast.stmt], texts: Callable[[bool], str]) -> None:
        """The launch statements replaced: the last by `texts(device)`, the others removed
        (`device`: the module for the GPU, or the one the cascade checks)."""
        for j, st in enumerate(statements):
            begin, stop = statement_span(file, st)
            last = j == len(statements) - 1
            device_edits.append(Edit(begin, stop, texts(True) if last else ""))
            check_edits.append(Edit(begin, stop, texts(gpu) if last else ""))

    by_name = {k.name: k for k in kernels}
    fused_kernels: set[str] = set()
    if fuse:
        for host in dict.fromkeys(s.host for s in file.module.launches):
            try:
                fused = fuse_host(file, kernels, host)
            except NotRaised as err:
                if len([s for s in file.module.launches if s.host == host]) > 1:
                    result.notes.append(f"{host}(): the launches are not fused: {err}")
                continue
            say(f"{host}(): {', '.join(fused.kernels)} composed into one ax program")
            try:
                fused = _flipped(fused, record, by_name)
            except NotRaised as err:
                result.notes.append(f"{host}(): {err}")
            reads = [(site, param) for site, param in fused.input_params
                     if param not in by_name[site.kernel].scalars]
            picked = select(fused.ax, f"{host}_fused",
                            {sym: _size(record, site, own)
                             for sym, (site, own) in fused.symbols.items()},
                            [_dtype(record, site, param) for site, param in reads],
                            [_dtype(record, site, param) for site, param in fused.output_params])
            if picked is None:
                continue
            statements = [st for k in dict.fromkeys(fused.kernels)
                          for st in _launch_statements(file, k)]
            statements.sort(key=lambda st: st.lineno)
            indent = indent_of(file, statements[-1])

            def fused_copies(dtypes: Sequence[str], fused: FusedHost = fused,
                       reads: Sequence[tuple[LaunchSite, str]] = reads) -> list[tuple[str, str]]:
                return [(param, copy_reason(record, by_name[site.kernel], site, param, dtype,
                                             reads))
                        for (site, param), dtype in zip(fused.output_params, dtypes,
                                                        strict=True)]

            direct = outputs_line(picked, [fused_copies(picked.results)])
            direct_check = direct if gpu else not any(
                why for _, why in fused_copies(["f32"] * len(picked.results)))

            def fused_call(for_device: bool, picked: _Picked = picked,
                           fused: FusedHost = fused, indent: str = indent,
                           direct: bool = direct, direct_check: bool = direct_check) -> str:
                widen = not for_device or picked.widen
                scalar = _TORCH_DTYPES[picked.scalar_dtype if for_device else "f32"]
                inputs = [text.replace("dtype=torch.float32", f"dtype={scalar}")
                          if param in by_name[site.kernel].scalars
                          else text + (".float()" if widen else "")
                          for text, (site, param) in zip(fused.inputs, fused.input_params,
                                                         strict=True)]
                keywords = "".join(f", {k}={v!r}" for k, v in picked.chosen.kwargs.items())
                return _call(picked.host, inputs, keywords, fused.outputs,
                             direct if for_device else direct_check, indent)

            # at the last launch: every input and output buffer exists by then
            replace(statements, fused_call)
            fused_kernels.update(fused.kernels)
            result.replaced.extend(fused.kernels)
            result.notes.append(f"{host}(): {', '.join(fused.kernels)} fused into one ax "
                                "program")
    for k in kernels:
        if k.raised is None or k.name in fused_kernels:
            continue
        try:
            sites = file.kernel_launches(k.name)
            statements = _launch_statements(file, k.name)
            if len(statements) != len(sites):
                raise NotRaised("a launch that is not a statement of its own")
            why = next((w for w in (assumption_error(k, site) for site in sites) if w), None)
            if why:
                raise NotRaised(why)
            symbols = {s for _, dims in k.tensors.values() for d in dims for s in d.symbols()}
            tensors = [p for p in k.inputs if p not in k.scalars]
            flipped = flipped_inputs(record, k, sites)
            ax = k.raised.ax
            if flipped:
                ax = transposed_inputs(ax, [k.inputs.index(p) for p in flipped])
                result.notes.append(f"{k.name}: {', '.join(flipped)} taken as the user holds "
                                    "it, row-major, and transposed in the raised function")
            picked = select(ax, k.name,
                            {s: _size(record, sites[0], s) for s in symbols},
                            [_dtype(record, site, p) for site in sites for p in tensors],
                            [_dtype(record, sites[0], p) for p in k.outputs])
            if picked is None:
                continue

            def copies(site: LaunchSite, dtypes: Sequence[str], k: KernelRaise = k,
                       tensors: Sequence[str] = tensors) -> list[tuple[str, str]]:
                reads = [(site, p) for p in tensors]
                return [(param, copy_reason(record, k, site, param, dtype, reads))
                        for param, dtype in zip(k.outputs, dtypes, strict=True)]

            outputs_line(picked, [copies(site, picked.results) for site in sites])
            for site, stmt in zip(sites, statements, strict=True):
                direct = not any(why for _, why in copies(site, picked.results))
                direct_check = direct if gpu else not any(
                    why for _, why in copies(site, ["f32"] * len(picked.results)))

                def call(for_device: bool, site: LaunchSite = site, stmt: ast.stmt = stmt,
                         picked: _Picked = picked, k: KernelRaise = k, direct: bool = direct,
                         direct_check: bool = direct_check,
                         flipped: Sequence[str] = flipped) -> str:
                    return launch_replacement(
                        k, site, picked.host, picked.chosen.kwargs, indent_of(file, stmt),
                        widen=not for_device or picked.widen,
                        scalar_dtype=picked.scalar_dtype if for_device else "f32",
                        direct=direct if for_device else direct_check, flipped=flipped)

                replace([stmt], call)
        except NotRaised as err:
            result.notes.append(f"kernel {k.name}: its launch is not replaced: {err}")
            continue
        result.replaced.append(k.name)
    if not result.replaced:
        return result
    proposal = apply_edits(file.source, check_edits).rstrip() + "\n\n\n" + "\n\n".join(
        check_texts)
    device_proposal = apply_edits(file.source, device_edits).rstrip() + "\n\n\n" + \
        "\n\n".join(device_texts)
    result.proposal = proposal
    cascade = ForgeCascade(path, problem, device, list(sizes), scratch, gpu=gpu,
                           atol_scale=atol_scale)
    outcome = cascade(file.source, proposal)
    result.outcome = outcome
    if outcome.passed:
        result.source = proposal
        result.device_source = device_proposal
        result.notes.append(f"raised path: {', '.join(result.replaced)} replaced by Axon's "
                            f"kernels; cascade: {outcome.step}: {outcome.reason}")
    else:
        result.notes.append(f"raised path: the module with {', '.join(result.replaced)} "
                            f"replaced failed the cascade at {outcome.step}: {outcome.reason}")
        result.replaced = []
    return result


def ranked_passed(selection: Selection) -> list[Candidate]:
    """The candidates of `selection` that passed the cascade: the chosen one first, then the
    others in the selection's order (measured, else modeled), one per tiling and launch (the
    nu-graph's variants of a program at the same launch differ by a rewrite the GPU cannot
    tell apart: 14's `x * 1.0`)."""
    passed = selection.passed()
    first = selection.chosen
    ordered = passed if first is None else [first, *(c for c in passed if c.id != first.id)]
    distinct: dict[tuple[str, str], Candidate] = {}
    for c in ordered:
        distinct.setdefault((c.tiling, c.launch()), c)
    return list(distinct.values())


def _flipped(fused: FusedHost, record: LaunchRecord, by_name: Mapping[str, KernelRaise]
             ) -> FusedHost:
    """`fused` taking the matrices its launches pass as the transpose of a row-major one as
    the user holds them (`flipped_inputs`, `transposed_inputs`), where there are such."""
    indices = [i for i, (site, param) in enumerate(fused.input_params)
               if param in flipped_inputs(record, by_name[site.kernel], [site])]
    if not indices:
        return fused
    inputs = list(fused.inputs)
    for i in indices:
        layout = fused.layouts[i]
        assert layout is not None
        pointer, sizes, strides = layout
        inputs[i] = strided(pointer, sizes[::-1], strides[::-1])
    ax = transposed_inputs(fused.ax, indices)
    return dataclasses.replace(fused, ax=ax, ax_text=str(ax), inputs=inputs)


def _size(record: LaunchRecord, site: LaunchSite, symbol: str) -> int | None:
    """The value the first launch recorded from `site` passes for `symbol`, or None."""
    launch = record.at(site)
    return launch.size(symbol) if launch is not None else None


def _dtype(record: LaunchRecord, site: LaunchSite, param: str) -> str | None:
    """The dtype of the tensor the first launch recorded from `site` binds to `param`."""
    launch = record.at(site)
    return launch.dtype(param) if launch is not None else None
