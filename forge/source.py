"""A user's kernel file as text, with the frontend's view of it, and span edits on that text.

Stages never import or run the file: `KernelFile` holds its text and the Triton frontend's
parse (`frontend/triton/parse.py`); rewrites are `Edit`s of character spans taken from `ast`
positions, applied back to front, so everything outside the edited spans (the user's
formatting, comments, docstrings) is kept byte for byte. `ast.unparse` would drop comments and
reformat the whole file, which a user reviewing a proposal's diff should not have to read.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from axon.frontend.diagnostics import SourceError
from axon.frontend.triton.parse import JitKernel, LaunchSite, TritonModule, parse_triton_source

__all__ = ["Edit", "KernelFile", "Positioned", "apply_edits", "fresh_name", "indent_of",
           "node_span", "statement_span", "without_docstring"]


#: the nodes that carry positions
Positioned = ast.expr | ast.stmt | ast.arg | ast.keyword


@dataclass(frozen=True)
class Edit:
    """Replace the characters `start:end` of the text by `text`."""

    start: int
    end: int
    text: str


class KernelFile:
    """A kernel file's text and its parse; `error` holds the located parse error, if any."""

    def __init__(self, source: str, filename: str = "<kernel>") -> None:
        self.source = source
        self.filename = filename
        self.error: SourceError | None = None
        self._module: TritonModule | None = None
        try:
            self._module = parse_triton_source(source, filename)
        except SourceError as err:
            self.error = err

    @classmethod
    def read(cls, path: str | Path) -> KernelFile:
        """The file at `path` (its name is used in diagnostics)."""
        path = Path(path)
        return cls(path.read_text(encoding="utf-8"), str(path))

    @property
    def module(self) -> TritonModule:
        """The parsed module; the parse error when the file does not parse."""
        if self._module is None:
            assert self.error is not None
            raise self.error
        return self._module

    @functools.cached_property
    def tree(self) -> ast.Module:
        """The module's syntax tree."""
        return ast.parse(self.source, self.filename)

    @functools.cached_property
    def line_starts(self) -> list[int]:
        """The character offset of each line's start (index 0 is line 1)."""
        starts, total = [], 0
        for line in self.source.splitlines(keepends=True):
            starts.append(total)
            total += len(line)
        starts.append(total)
        return starts

    def offset(self, line: int, byte_col: int) -> int:
        """The character offset of `ast`'s (1-based line, UTF-8 byte column)."""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.source)
        text = self.source[start:end]
        return start + len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def kernel_launches(self, kernel: str) -> list[LaunchSite]:
        """The launch sites of `kernel`, in source order."""
        return [s for s in self.module.launches if s.kernel == kernel]

    def kernel(self, name: str) -> JitKernel:
        """The jit function `name`."""
        return self.module.kernels[name]

    def launch_calls(self, kernel: str) -> list[ast.Call]:
        """The `kernel[grid](...)` call nodes of `kernel` (outside jit functions), in order."""
        jit = {k.node for k in self.module.kernels.values()}
        found: list[ast.Call] = []
        stack: list[ast.AST] = [self.tree]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.FunctionDef) and any(
                    node.name == j.name and node.lineno == j.lineno for j in jit):
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == kernel:
                found.append(node)
            stack.extend(ast.iter_child_nodes(node))
        return sorted(found, key=lambda c: (c.lineno, c.col_offset))

    def kernel_node(self, name: str) -> ast.FunctionDef:
        """The kernel's `def` in this file's own tree (positions agree with `source`)."""
        for node in self.tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return node
        raise KeyError(name)

    def host_of(self, call: ast.Call) -> ast.FunctionDef | None:
        """The innermost function holding `call`."""
        best: ast.FunctionDef | None = None
        for node in ast.walk(self.tree):
            if isinstance(node, ast.FunctionDef) and any(n is call for n in ast.walk(node)):
                if best is None or node.lineno > best.lineno:
                    best = node
        return best

    def segment(self, node: Positioned) -> str:
        """The exact source text of `node`."""
        start, end = node_span(self, node)
        return self.source[start:end]


def node_span(file: KernelFile, node: Positioned) -> tuple[int, int]:
    """The character span of `node` in the file's text."""
    end_lineno = node.end_lineno if node.end_lineno is not None else node.lineno
    end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
    return file.offset(node.lineno, node.col_offset), file.offset(end_lineno, end_col)


def statement_span(file: KernelFile, node: ast.stmt) -> tuple[int, int]:
    """The span of whole lines holding statement `node` (its indentation and newline too)."""
    start = file.line_starts[node.lineno - 1]
    end_line = node.end_lineno or node.lineno
    end = file.line_starts[end_line] if end_line < len(file.line_starts) else len(file.source)
    return start, end


def indent_of(file: KernelFile, node: ast.stmt) -> str:
    """The indentation of the line where `node` starts."""
    line = file.source[file.line_starts[node.lineno - 1]:]
    return line[:len(line) - len(line.lstrip(" \t"))]


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """`source` with every edit applied; edits must not overlap (ValueError when they do), and
    insertions at one place land in the order given."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for before, after in zip(ordered, ordered[1:], strict=False):
        if after.start < before.end:
            raise ValueError(f"overlapping edits at {before.start}:{before.end} and "
                             f"{after.start}:{after.end}")
    out = source
    for edit in reversed(ordered):
        out = out[:edit.start] + edit.text + out[edit.end:]
    return out


def fresh_name(base: str, taken: Sequence[str] | set[str]) -> str:
    """`base`, or `base_2`, `base_3`, ... : the first not in `taken`."""
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


def without_docstring(text: str) -> str:
    """`text` without its module docstring (a written module keeps the problem's or the user's)."""
    tree = ast.parse(text)
    first = tree.body[0] if tree.body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str) and first.end_lineno is not None):
        return "\n".join(text.splitlines()[first.end_lineno:]).lstrip("\n")
    return text
