"""Capture a KernelBench-format PyTorch problem with `torch.export` and translate it into `ax`.

    problem = load_problem_file(Path("01_gemm_bias_relu.py"), sizes={"batch_size": 33})
    captured = capture_problem(problem)       # torch.export, then aten -> ax (aten.py)
    captured.module                           # builtin.module { func.func @forward(...) }
    captured.example_inputs                   # numpy arrays: parameters first, then get_inputs()

Loading a problem RUNS ITS PYTHON: the file is imported, `Model(*get_init_inputs())` built and
`get_inputs()` called, exactly as KernelBench does. Only give it files you would run yourself; the
NumPy-subset frontend never executes its input and never takes this path.

Parameters and buffers become function inputs (named after the attribute, `linear_weight`), in
`torch.export`'s order, before the user inputs. Every input dim larger than one is a size symbol:
the module global whose change alone changes that dim (found by re-making the model and inputs
with each size global moved by one; `forward` is not run for this), else `D0`, `D1`, ... per
distinct value. Shapes torch.export baked into the graph (a `view`'s target, `ones(n, n)`) are
mapped back to those symbols (aten.py); a size whose move changes the translated function (a
scale computed in Python from a shape) is fixed at its value (`capture_problem`). An operator
the translation does not handle, or a shape it cannot place, is a `TorchFrontendError` listing
each offending operator by name at the `forward` line that made it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import logging
import re
import sys
import traceback
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.intexpr import IntExpr
from axon.frontend.diagnostics import SourceError, source_error

_loaded = itertools.count()

#: torch dtypes the translation reads and writes, by their `ax` names
TORCH_DTYPES: dict[torch.dtype, str] = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int32: "i32", torch.bool: "i1"}
#: the float dtypes a problem may run in, by their `ax` names (`--dtype`)
FLOAT_DTYPES: dict[str, torch.dtype] = {
    name: t for t, name in TORCH_DTYPES.items() if t.is_floating_point}


class TorchFrontendError(Exception):
    """A problem the PyTorch frontend cannot capture or translate: one located diagnostic per
    offending operator (or one unlocated line when there is no source line to point at)."""

    def __init__(self, diagnostics: Sequence[SourceError | str]):
        super().__init__("\n".join(map(str, diagnostics)))
        self.diagnostics = list(diagnostics)

    @property
    def operators(self) -> list[str]:
        """The names of the unsupported operators, in graph order (`aten.sort.default`)."""
        found = []
        for d in self.diagnostics:
            text = d.message if isinstance(d, SourceError) else d
            match = re.search(r"unsupported operator ([\w.]+)", text)
            if match:
                found.append(match.group(1))
        return found


@dataclass
class LoadedProblem:
    """A loaded problem file: its module (sizes set), the built model and the inputs."""

    path: Path
    module: ModuleType
    model: torch.nn.Module
    inputs: list[Any]
    sizes: dict[str, int] = field(default_factory=dict)
    dtype: torch.dtype | None = None
    seed: int = 0


@dataclass
class CapturedProblem:
    """A translated problem: the module with `func.func @forward`, the example inputs in the
    function's parameter order (parameters and buffers, then the user inputs, as numpy arrays),
    which of them are parameters, the size symbols with their values at capture, and the size
    globals fixed at their value because the function changes when they move (`fixed`)."""

    module: ModuleOp
    function: func.FuncOp
    input_names: list[str]
    example_inputs: list[np.ndarray]
    parameter_names: list[str]
    sizes: dict[str, int] = field(default_factory=dict)
    fixed: dict[str, int] = field(default_factory=dict)
    sources: list[tuple[str, str]] = field(default_factory=list)
    """Each input's kind (`parameter`, `buffer`, `constant` or `input`) and its name in the
    model (`linear.weight`) or in `forward`'s signature, in the function's parameter order."""
    renamed: dict[str, str] = field(default_factory=dict)
    """Size globals whose symbol was renamed (`capture_problem`'s `reserved`): global -> symbol."""

    def summary(self) -> str:
        """One line: the op count, the inputs and how many of them are parameters."""
        block = self.function.body.blocks.first
        ops = 0 if block is None else len(block.ops) - 1  # not the return
        sizes = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        fixed = ", ".join(f"{k}={v}" for k, v in self.fixed.items())
        return (f"{self.function.sym_name.data}: {ops} ax ops, {len(self.input_names)} inputs "
                f"({len(self.parameter_names)} parameters as inputs: "
                f"{', '.join(self.parameter_names) or 'none'}); symbolic sizes {sizes or 'none'}"
                f"; fixed sizes {fixed or 'none'}")


def size_globals(module: ModuleType) -> dict[str, int]:
    """The size globals of a loaded problem: its public module-level ints, in file order."""
    return {k: v for k, v in vars(module).items()
            if not k.startswith("_") and isinstance(v, int) and not isinstance(v, bool)}


def load_problem_file(path: Path, sizes: Mapping[str, int] | None = None,
                      dtype: torch.dtype | None = None, seed: int = 0) -> LoadedProblem:
    """Import the problem file `path` (RUNS ITS PYTHON), set the size globals in `sizes` and the
    `dtype` global, and build `Model(*get_init_inputs())` and `get_inputs()` under `seed`;
    TorchFrontendError for a file that is not in KernelBench format or fails to run."""
    name = f"axon_torch_problem_{next(_loaded)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TorchFrontendError([f"{path}: error: not a Python file"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # the user's file: any failure is theirs, reported without a trace
        raise TorchFrontendError([_user_failure(path, "importing it", err)]) from None
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not hasattr(module, n)]
    if missing:
        raise TorchFrontendError([f"{path}: error: not a KernelBench problem: it defines no "
                                  f"{', '.join(missing)}"])
    known = size_globals(module)
    for key, value in (sizes or {}).items():
        if key not in known:
            raise TorchFrontendError([f"{path}: error: no size global {key!r}; its sizes are "
                                      f"{', '.join(known) or 'none'}"])
        setattr(module, key, int(value))
    if dtype is not None:
        vars(module)["dtype"] = dtype
    try:
        torch.manual_seed(seed)
        model = module.Model(*module.get_init_inputs())
        run_dtype = getattr(module, "dtype", None)
        if isinstance(run_dtype, torch.dtype) and run_dtype.is_floating_point:
            model = model.to(run_dtype)
        torch.manual_seed(seed + 1)
        inputs = list(module.get_inputs())
    except Exception as err:
        raise TorchFrontendError([_user_failure(path, "building Model and its inputs", err)]) \
            from None
    return LoadedProblem(path, module, model.eval(), inputs, size_globals(module), dtype, seed)


def _user_failure(path: Path, doing: str, err: BaseException) -> SourceError | str:
    """A failure of the user's code at the deepest line of `path` in its traceback."""
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if Path(f.filename).resolve() == path.resolve()]
    message = f"{doing} failed: {type(err).__name__}: {err}".strip()
    if frames and frames[-1].lineno is not None:
        return _located(message, path, frames[-1].lineno)
    return f"{path}: error: {message}"


def _located(message: str, path: Path, line: int) -> SourceError:
    """A SourceError at `line` of `path`, pointing at the statement's first character."""
    text = path.read_text()
    lines = text.splitlines()
    source_line = lines[line - 1] if 0 < line <= len(lines) else ""
    column = len(source_line) - len(source_line.lstrip()) + 1
    return source_error(message, text, str(path), line, column)


def name_input_dims(problem: LoadedProblem, input_shapes: Sequence[Sequence[int]],
                    state_names: Sequence[str]) -> list[list[IntExpr]]:
    """The symbolic dims of the function's inputs (shapes as captured: first the model's
    parameters, buffers and constants named by `state_names`, then the user inputs): a dim is
    the size global that alone moves it when each global is moved by one (the model and inputs
    are re-made, `forward` is not run), else `D<k>` per distinct value; dims of one stay 1."""
    module = problem.module
    sizes = size_globals(module)
    movers: dict[tuple[int, int], list[str]] = {}
    with torch.random.fork_rng():
        for name, value in sizes.items():
            try:
                setattr(module, name, value + 1)
                moved = _input_shapes(problem, state_names)
            except Exception:  # a size the problem cannot move alone: it names no dim
                moved = None
            finally:
                setattr(module, name, value)
            if moved is None or len(moved) != len(input_shapes):
                continue
            for i, (before, after) in enumerate(zip(input_shapes, moved, strict=True)):
                if after is None or len(before) != len(after):
                    continue
                for j, (b, a) in enumerate(zip(before, after, strict=True)):
                    if a != b:
                        movers.setdefault((i, j), []).append(name)
    unnamed: dict[int, IntExpr] = {}
    dims: list[list[IntExpr]] = []
    for i, shape in enumerate(input_shapes):
        row = []
        for j, extent in enumerate(shape):
            names = movers.get((i, j), [])
            if extent == 1:
                row.append(IntExpr.const(1))
            elif len(names) == 1 and sizes[names[0]] == extent:
                row.append(IntExpr.sym(names[0]))
            else:
                if extent not in unnamed:
                    unnamed[extent] = IntExpr.sym(f"D{len(unnamed)}")
                row.append(unnamed[extent])
        dims.append(row)
    return dims


def _input_shapes(problem: LoadedProblem,
                  state_names: Sequence[str]) -> list[list[int] | None]:
    """At the module's current size globals: the shapes of the tensors of a freshly built model
    named by `state_names` (None for one it does not hold as a parameter or buffer), then those
    of a fresh `get_inputs()`. Only shapes are read, so both are built on the meta device (no
    data made: a problem's inputs can be gigabytes); a problem whose model or inputs need real
    data (`.item()`, a data-dependent shape) fails there and is built again on the CPU."""
    try:
        with torch.device("meta"):
            return _built_shapes(problem, state_names)
    except Exception:
        return _built_shapes(problem, state_names)


def _built_shapes(problem: LoadedProblem,
                  state_names: Sequence[str]) -> list[list[int] | None]:
    """`_input_shapes` on the current default device."""
    module = problem.module
    model = module.Model(*module.get_init_inputs())
    state = dict(model.named_parameters())
    state.update(dict(model.named_buffers()))
    shapes: list[list[int] | None] = [list(state[n].shape) if n in state else None
                                      for n in state_names]
    shapes += [list(x.shape) if isinstance(x, torch.Tensor) else None
               for x in module.get_inputs()]
    return shapes


def export_problem(problem: LoadedProblem) -> torch.export.ExportedProgram:
    """`torch.export.export` of the model's forward on the problem's inputs (which runs the
    user's forward on fake tensors); a failure is a TorchFrontendError at the user's line."""
    # torch logs and prints the partial graph of a failed export; the located error says it
    quiet = logging.getLogger("torch")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return torch.export.export(problem.model, tuple(problem.inputs))
    except Exception as err:
        raise TorchFrontendError([_export_failure(problem.path, err)]) from None
    finally:
        quiet.setLevel(level)


def _export_failure(path: Path, err: BaseException) -> SourceError | str:
    """torch.export's failure at the line of `path` its message or traceback names."""
    text = f"{type(err).__name__}: {err}"
    first = text.strip().splitlines()[0] if text.strip() else type(err).__name__
    message = f"torch.export cannot capture forward: {first}"
    lines = [int(m) for m in re.findall(rf'File "{re.escape(str(path.resolve()))}", line (\d+)',
                                        text)]
    lines += [f.lineno for f in traceback.extract_tb(err.__traceback__)
              if Path(f.filename).resolve() == path.resolve() and f.lineno is not None]
    if lines:
        return _located(message, path, lines[-1])
    return f"{path}: error: {message}"


def node_location(path: Path, stack_trace: str | None) -> int | None:
    """The line of `path` in a node's `stack_trace` (the innermost frame in the file)."""
    if not stack_trace:
        return None
    resolved = str(path.resolve())
    found = None
    for m in re.finditer(r'File "([^"]+)", line (\d+)', stack_trace):
        if m.group(1) == resolved or Path(m.group(1)).resolve() == path.resolve():
            found = int(m.group(2))
    return found


def capture_problem(problem: LoadedProblem, function_name: str = "forward",
                    generalize: bool = True, reserved: Collection[str] = (),
                    distinct: bool = False) -> CapturedProblem:
    """Export `problem`'s forward and translate it into a module of one `func.func`; its inputs
    are the parameters and buffers, then the user inputs, in the dtypes of the tensors.

    torch.export bakes Python arithmetic on shapes into constants (`q.shape[-1] ** -0.5`), so
    with `generalize` each size symbol that is a size global is checked: the problem is loaded
    again with that global moved by one and captured, and unless the function comes out the
    same, that size is fixed at its captured value (as are `D<k>` sizes, which no global moves
    alone, and sizes the problem cannot be moved in). A size symbol in `reserved` (names a
    later stage gives its own values, such as the tiler's loop indices) is renamed
    `<name>_size` (`CapturedProblem.renamed`). With `distinct`, inputs share a size only where
    the graph requires it (`translate_program`)."""
    from axon.frontend.torch.translate import translate_program

    program = export_problem(problem)
    captured = translate_program(problem, program, function_name)
    fixed = _fixed_sizes(problem, captured, function_name) if generalize else {}
    taken = set(captured.sizes) | set(reserved)
    renamed = {}
    for name in captured.sizes:
        if name in reserved and name not in fixed:
            new = f"{name}_size"
            while new in taken:
                new += "_"
            renamed[name] = new
            taken.add(new)
    if not fixed and not renamed and not distinct:
        return captured
    return translate_program(problem, program, function_name, fixed, renamed, distinct)


def _fixed_sizes(problem: LoadedProblem, captured: CapturedProblem,
                 function_name: str) -> dict[str, int]:
    """The sizes of `captured` to fix at their values (see `capture_problem`)."""
    from axon.tools.embed import print_ir

    if not captured.sizes:
        return {}
    text = print_ir(captured.module)
    fixed = {}
    for name, value in captured.sizes.items():
        if name not in problem.sizes:
            fixed[name] = value
            continue
        try:
            moved = load_problem_file(problem.path, {**problem.sizes, name: value + 1},
                                      problem.dtype, problem.seed)
            same = print_ir(capture_problem(moved, function_name, False).module) == text
        except TorchFrontendError:
            same = False
        if not same:
            fixed[name] = value
    return fixed


def diagnose(problem: LoadedProblem, node: torch.fx.Node, message: str) -> SourceError | str:
    """`message` located at the `forward` line that made `node`."""
    line = node_location(problem.path, node.meta.get("stack_trace"))
    if line is None:
        return f"{problem.path}: error: {message}"
    return _located(message, problem.path, line)


def shape_failure(problem: LoadedProblem, node: torch.fx.Node,
                  err: ShapeError) -> SourceError | str:
    """A ShapeError from building the `ax` op of `node`, located at its `forward` line."""
    return diagnose(problem, node, f"cannot translate {node.target}: {err}")
