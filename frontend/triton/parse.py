"""Reading a Python module that holds `@triton.jit` kernels and their launches (parse only).

    module = parse_triton_source(text, "kernels.py")   # TritonModule, or SourceError
    module.kernels["add_kernel"].params                # name, constexpr or not, default
    module.launches                                    # add_kernel[grid](x, y, BLOCK=1024)

The text is parsed with `ast` and never imported or run. Names are resolved through the
module's imports (`import triton`, `import triton.language as tl`, `from triton import jit`),
so `@jit`, `@triton.jit` and `@triton.jit(...)` all mark a kernel, and `tl.constexpr` an
annotation however `triton.language` was imported. A launch is `kernel[grid](args...,
NAME=value..., num_warps=...)` anywhere outside a kernel: its grid (a lambda, a tuple, or a
name bound to one earlier in the same function), its arguments bound to the kernel's
parameters, and its launch options. Every mistake is a SourceError at file:line:col.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from axon.frontend.diagnostics import SourceError, source_error
from axon.frontend.numpy_subset.source import decode_source

__all__ = ["JitKernel", "KernelParam", "LaunchSite", "Loc", "TritonModule", "parse_triton_file",
           "parse_triton_source"]

#: 1-based line and column (in characters) of a construct
Loc = tuple[int, int]

#: the qualified names of Triton's jit decorator
JIT_NAMES = frozenset({"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit"})
#: the qualified names of `tl.constexpr`
CONSTEXPR_NAMES = frozenset({"triton.language.constexpr", "triton.language.core.constexpr"})
#: keywords of a launch that configure it rather than bind a parameter
LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "grf_mode",
                            "enable_fp_fusion", "warp_size", "launch_cooperative_grid",
                            "num_buffers_warp_spec", "num_consumer_groups",
                            "reg_dec_producer", "reg_inc_consumer"})


@dataclass(frozen=True)
class KernelParam:
    """A kernel parameter: `constexpr` when annotated `tl.constexpr`, else a runtime value (a
    pointer or a scalar: which one, the analysis of the body tells). `default` is the default's
    source text and `default_value` its value when it is a literal number or bool."""

    name: str
    constexpr: bool
    annotation: str | None
    default: str | None
    default_value: int | float | bool | None
    loc: Loc


@dataclass
class JitKernel:
    """A `@triton.jit` function (a kernel, or a helper other jit functions call): its
    parameters, its decorators' text and its syntax tree."""

    name: str
    params: list[KernelParam]
    decorators: list[str]
    node: ast.FunctionDef
    loc: Loc

    def calls(self) -> set[str]:
        """The names this function calls by a bare name (the jit helpers among them)."""
        return {n.func.id for n in ast.walk(self.node)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}

    def param(self, name: str) -> KernelParam | None:
        """The parameter called `name`, if there is one."""
        return next((p for p in self.params if p.name == name), None)


@dataclass(frozen=True)
class LaunchSite:
    """`kernel[grid](...)` in host code.

    `grid_kind` is "lambda", "tuple", "name" (bound earlier to a lambda or tuple: `grid` is
    then the bound expression) or "expr"; `grid_dims` the text of each grid dim where the grid
    is (or returns) a tuple. `args` binds parameter names to argument text, positional first;
    `extra_args` are positional arguments past the parameters; `options` the launch keywords
    that bind no parameter (num_warps, num_stages, ...); `missing` the parameters left
    unbound (an autotune config may bind them)."""

    kernel: str
    host: str
    loc: Loc
    grid_kind: str
    grid: str
    grid_dims: tuple[str, ...]
    args: tuple[tuple[str, str], ...]
    extra_args: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    missing: tuple[str, ...]

    def arg(self, name: str) -> str | None:
        """The text of the argument bound to parameter `name`."""
        return dict(self.args).get(name)

    def literal(self, name: str) -> int | float | bool | None:
        """The argument bound to `name` when it is a literal number or bool."""
        text = self.arg(name)
        if text is None:
            return None
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            return None
        return value if isinstance(value, (bool, int, float)) else None


@dataclass
class TritonModule:
    """A parsed module: its imports' aliases, kernels, launches and literal module constants."""

    filename: str
    text: str
    aliases: dict[str, str]
    kernels: dict[str, JitKernel] = field(default_factory=dict)
    launches: list[LaunchSite] = field(default_factory=list)
    constants: dict[str, int | float | bool] = field(default_factory=dict)
    #: `text` split as `ast.get_source_segment` splits it, once (`segment`)
    _segment_lines: list[str] | None = field(default=None, init=False, repr=False,
                                             compare=False)

    def helpers(self) -> set[str]:
        """The jit functions another jit function calls (analysed where they are called)."""
        called = set().union(*(k.calls() for k in self.kernels.values()))
        launched = {site.kernel for site in self.launches}
        return {name for name in self.kernels if name in called and name not in launched}

    def loc(self, node: ast.AST) -> Loc:
        """The 1-based line and character column where `node` starts (`ast` counts bytes)."""
        line = getattr(node, "lineno", 1)
        offset = getattr(node, "col_offset", 0)
        lines = self.text.splitlines()
        if 0 < line <= len(lines):
            offset = len(lines[line - 1].encode("utf-8")[:offset].decode("utf-8", "replace"))
        return line, offset + 1

    def error(self, node: ast.AST, message: str) -> SourceError:
        """A SourceError at `node`."""
        return self.error_at(self.loc(node), message)

    def error_at(self, loc: Loc, message: str) -> SourceError:
        """A SourceError at 1-based line and column `loc`."""
        line, column = loc
        return source_error(message, self.text, self.filename, line, column)

    def segment(self, node: ast.AST) -> str:
        """The source text of `node` (one line, whitespace runs folded)."""
        text = self._source_segment(node) or "?"
        return " ".join(text.split())

    def _source_segment(self, node: ast.AST) -> str | None:
        """`ast.get_source_segment(self.text, node)`, the text split into lines once: that
        function splits it again (character by character) on every call."""
        line, end_line = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
        start, end = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        if line is None or end_line is None or start is None or end is None:
            return None
        first, last = line - 1, end_line - 1
        if self._segment_lines is None:
            # at \r\n, \r and \n only (not str.splitlines' \f, \v and others), ends kept
            self._segment_lines = _LINE.findall(self.text)
        lines = self._segment_lines
        if first == last:
            return lines[first].encode()[start:end].decode()
        return "".join([lines[first].encode()[start:].decode(), *lines[first + 1:last],
                        lines[last].encode()[:end].decode()])

    def qualified(self, node: ast.AST) -> str | None:
        """The dotted name `node` spells with its root resolved through the imports
        (`tl.load` -> `triton.language.load`), or None when it is no dotted name of an import."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id], *reversed(parts)])


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def parse_triton_source(source: str | bytes, filename: str = "<source>") -> TritonModule:
    """Parse a module's text (or bytes) into its kernels and launches; SourceError on a
    mistake. Nothing of the module is imported or run."""
    text = decode_source(source, filename) if isinstance(source, bytes) \
        else source.removeprefix("\ufeff")
    try:
        with warnings.catch_warnings():  # Python's own (an invalid escape): not the user's
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename)
    except SyntaxError as err:
        line, column = err.lineno or 1, err.offset or 1
        raise source_error(f"invalid Python: {err.msg}", text, filename, line, column) from None
    except (RecursionError, MemoryError):
        raise source_error("expressions nest too deeply for Python's parser", text, filename,
                           1, 1) from None
    module = TritonModule(filename, text, _aliases(tree))
    module.constants = _constants(tree)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and _is_jit(module, node):
            module.kernels[node.name] = _kernel(module, node)
        elif isinstance(node, ast.AsyncFunctionDef) and _is_jit(module, node):
            raise module.error(node, "a kernel is a plain `def`, not `async def`")
    module.launches = _launches(module, tree)
    return module


def parse_triton_file(path: str | Path) -> TritonModule:
    """parse_triton_source on the file at `path` (its name is used in diagnostics)."""
    path = Path(path)
    return parse_triton_source(path.read_bytes(), str(path))


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Each name an import binds, mapped to the dotted name it stands for."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for name in node.names:
                if name.asname:
                    aliases[name.asname] = name.name
                else:
                    root = name.name.split(".")[0]
                    aliases[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for name in node.names:
                if name.name != "*":
                    aliases[name.asname or name.name] = f"{node.module}.{name.name}"
    return aliases


def _constants(tree: ast.Module) -> dict[str, int | float | bool]:
    """Module-level `NAME = literal` numbers and bools (a kernel may read them)."""
    out: dict[str, int | float | bool] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            value = node.value
            negate = isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub)
            if isinstance(value, ast.UnaryOp) and negate:
                value = value.operand
            if isinstance(value, ast.Constant) and isinstance(value.value, (bool, int, float)):
                literal = value.value
                out[node.targets[0].id] = -literal if negate else literal
    return out


def _decorator_name(module: TritonModule, node: ast.expr) -> str | None:
    return module.qualified(node.func if isinstance(node, ast.Call) else node)


def _is_jit(module: TritonModule, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(_decorator_name(module, d) in JIT_NAMES for d in node.decorator_list)


def _literal(node: ast.expr) -> int | float | bool | None:
    negate = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    if isinstance(node, ast.UnaryOp) and negate:
        node = node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)):
        return -node.value if negate else node.value
    return None


def _is_constexpr(module: TritonModule, annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.split(".")[-1] == "constexpr"
    return module.qualified(annotation) in CONSTEXPR_NAMES


def _kernel(module: TritonModule, node: ast.FunctionDef) -> JitKernel:
    args = node.args
    if args.vararg or args.kwarg:
        extra = args.vararg or args.kwarg
        assert extra is not None
        raise module.error(extra, "a kernel takes named parameters only; expected no *args "
                                  "or **kwargs")
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    defaults += list(args.kw_defaults)
    params: list[KernelParam] = []
    for arg, default in zip([*positional, *args.kwonlyargs], defaults, strict=True):
        params.append(KernelParam(
            arg.arg, _is_constexpr(module, arg.annotation),
            module.segment(arg.annotation) if arg.annotation else None,
            module.segment(default) if default is not None else None,
            _literal(default) if default is not None else None,
            module.loc(arg)))
    decorators = [module.segment(d) for d in node.decorator_list]
    return JitKernel(node.name, params, decorators, node, module.loc(node))


def _launches(module: TritonModule, tree: ast.Module) -> list[LaunchSite]:
    """Every `kernel[grid](...)` outside the kernels, in source order."""
    found: list[LaunchSite] = []
    stack: list[tuple[ast.AST, str, ast.AST | None]] = [(tree, "<module>", None)]
    while stack:
        node, host, scope = stack.pop()
        if isinstance(node, ast.FunctionDef) and node.name in module.kernels \
                and module.kernels[node.name].node is node:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            host, scope = node.name, node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) \
                and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in module.kernels:
            found.append(_launch(module, node, node.func, host, scope or tree))
        stack.extend((child, host, scope) for child in ast.iter_child_nodes(node))
    found.sort(key=lambda site: site.loc)
    return found


def _grid_dims(module: TritonModule, grid: ast.expr) -> tuple[str, ...]:
    body = grid.body if isinstance(grid, ast.Lambda) else grid
    if isinstance(body, (ast.Tuple, ast.List)):
        return tuple(module.segment(e) for e in body.elts)
    return ()


def _launch(module: TritonModule, call: ast.Call, sub: ast.Subscript, host: str,
            scope: ast.AST) -> LaunchSite:
    assert isinstance(sub.value, ast.Name)
    kernel = module.kernels[sub.value.id]
    grid: ast.expr = sub.slice
    kind = "lambda" if isinstance(grid, ast.Lambda) else \
        "tuple" if isinstance(grid, (ast.Tuple, ast.List)) else "expr"
    if isinstance(grid, ast.Name):
        bound = _last_binding(scope, grid.id, call.lineno)
        if bound is not None:
            grid, kind = bound, "name"
    names = [p.name for p in kernel.params]
    args: list[tuple[str, str]] = []
    extra: list[str] = []
    for k, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            raise module.error(arg, "a launch's arguments are listed one by one; expected no "
                                    "*args")
        if k < len(names):
            args.append((names[k], module.segment(arg)))
        else:
            extra.append(module.segment(arg))
    options: list[tuple[str, str]] = []
    for kw in call.keywords:
        if kw.arg is None:
            raise module.error(kw.value, "a launch's keywords are listed one by one; expected "
                                         "no **kwargs")
        if kw.arg in names:
            if any(n == kw.arg for n, _ in args):
                raise module.error(kw.value, f"parameter '{kw.arg}' of {kernel.name} is bound "
                                             "twice in this launch")
            args.append((kw.arg, module.segment(kw.value)))
        else:
            options.append((kw.arg, module.segment(kw.value)))
    bound_names = {n for n, _ in args}
    missing = tuple(p.name for p in kernel.params
                    if p.name not in bound_names and p.default is None)
    return LaunchSite(kernel.name, host, module.loc(call), kind, module.segment(grid),
                      _grid_dims(module, grid), tuple(args), tuple(extra), tuple(options),
                      missing)


def _last_binding(scope: ast.AST, name: str, before_line: int) -> ast.expr | None:
    """The value of the last `name = value` in `scope` above line `before_line`."""
    best: tuple[int, ast.expr] | None = None
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and node.lineno < before_line \
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets) \
                and (best is None or node.lineno > best[0]):
            best = (node.lineno, node.value)
    return None if best is None else best[1]
