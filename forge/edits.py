"""Edits of launch calls and kernel signatures shared by the stages (spans, never re-printing)."""

from __future__ import annotations

import ast

from axon.forge.grid import program_blocks
from axon.forge.source import Edit, KernelFile, node_span

__all__ = ["LINE_WIDTH", "add_param", "dot_block_roles", "drop_keyword", "keyword_node",
           "plain_range", "set_keyword", "triton_alias", "wrapped_call"]


def _items(call: ast.Call) -> list[ast.expr]:
    return sorted([*call.args, *(k.value for k in call.keywords)],
                  key=lambda e: (e.lineno, e.col_offset))


def keyword_node(call: ast.Call, name: str) -> ast.keyword | None:
    """The keyword `name=` of `call`, if given."""
    return next((k for k in call.keywords if k.arg == name), None)


def set_keyword(file: KernelFile, call: ast.Call, name: str, value: str) -> Edit:
    """Give `call` the keyword `name=value`, replacing its value where it is already given."""
    given = keyword_node(call, name)
    if given is not None:
        return Edit(*node_span(file, given.value), value)
    end = node_span(file, _items(call)[-1])[1]
    return Edit(end, end, f", {name}={value}")


def drop_keyword(file: KernelFile, call: ast.Call, name: str) -> Edit | None:
    """Remove `name=...` from `call` with the comma before it (None where it is not given)."""
    given = keyword_node(call, name)
    if given is None:
        return None
    items = _items(call)
    index = next(k for k, e in enumerate(items) if e is given.value)
    start = node_span(file, items[index - 1])[1] if index else node_span(file, given)[0]
    end = node_span(file, given.value)[1]
    if not index:
        rest = file.source[end:]
        end += len(rest) - len(rest.lstrip(" ,\n"))
    return Edit(start, end, "")


#: the line length the inserted code keeps to where it can
LINE_WIDTH = 100


def add_param(file: KernelFile, kernel: str, text: str) -> Edit:
    """Insert `, text` after the kernel's last positional parameter (and its default), on a
    new line aligned with the first parameter where the line would pass LINE_WIDTH."""
    node = file.kernel_node(kernel)
    params = [*node.args.posonlyargs, *node.args.args]
    end = node_span(file, params[-1])[1]
    if node.args.defaults:
        end = max(end, node_span(file, node.args.defaults[-1])[1])
    line_start = file.source.rfind("\n", 0, end) + 1
    line_end = file.source.find("\n", end)
    line_end = len(file.source) if line_end < 0 else line_end
    if line_end - line_start + len(text) + 2 <= LINE_WIDTH:
        return Edit(end, end, f", {text}")
    first = node_span(file, params[0])[0]
    column = first - (file.source.rfind("\n", 0, first) + 1)
    return Edit(end, end, f",\n{' ' * column}{text}")


def wrapped_call(indent: str, head: str, args: list[str]) -> str:
    """`head(args...)` on one line after `indent` where it fits LINE_WIDTH, else the
    arguments packed on continuation lines indented four more."""
    one = f"{indent}{head}({', '.join(args)})"
    if len(one) <= LINE_WIDTH:
        return one
    inner = indent + "    "
    lines, current = [f"{indent}{head}("], inner
    for k, arg in enumerate(args):
        piece = arg + ("," if k < len(args) - 1 else ")")
        if current != inner and len(current) + 1 + len(piece) > LINE_WIDTH:
            lines.append(current)
            current = inner
        current += ("" if current == inner else " ") + piece
    lines.append(current)
    return "\n".join(lines)


def plain_range(file: KernelFile, loop: ast.For) -> bool:
    """`for target in range(args)` (the builtin): positional arguments only, no `else`."""
    it = loop.iter
    return (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and "range" not in file.module.aliases
            and not it.keywords and 1 <= len(it.args) <= 3
            and not any(isinstance(a, ast.Starred) for a in it.args) and not loop.orelse)


def triton_alias(file: KernelFile, full: str) -> str | None:
    """The name the module imports `full` (`triton`, `triton.language`) as."""
    return next((a for a, f in file.module.aliases.items() if f == full), None)


def dot_block_roles(file: KernelFile, kernel: str) -> dict[str, str]:
    """The kernel's block constexprs by the roles the KB's tiles are given for (only the roles
    found). A GEMM (one `tl.dot`): `block_k` steps the `for` loop holding the dot, `block_m` and
    `block_n` are the dims of the `tl.zeros((BM, BN), ...)` accumulator. Attention (two dots or
    more: its accumulator is BLOCK_M x HEAD_DIM, no GEMM tile): `block_n` steps the loop over
    keys holding the dots, `block_m` is the block program id 0 multiplies."""
    node = file.kernel_node(kernel)
    dots = [c for c in ast.walk(node) if isinstance(c, ast.Call)
            and file.module.qualified(c.func) == "triton.language.dot"]
    constexprs = {p.name for p in file.kernel(kernel).params if p.constexpr}
    step = None
    for loop in ast.walk(node):
        if isinstance(loop, ast.For) and isinstance(loop.iter, ast.Call) \
                and isinstance(loop.iter.func, ast.Name) and loop.iter.func.id == "range" \
                and len(loop.iter.args) == 3 and isinstance(loop.iter.args[2], ast.Name) \
                and loop.iter.args[2].id in constexprs \
                and any(any(c is d for d in dots) for c in ast.walk(loop)):
            step = loop.iter.args[2].id
    roles: dict[str, str] = {}
    if len(dots) >= 2:
        rows = program_blocks(file.kernel(kernel), 0)
        if len(rows) == 1:
            roles["block_m"] = next(iter(rows))
        if step is not None and step not in rows:
            roles["block_n"] = step
        return roles
    if not dots:
        return roles
    if step is not None:
        roles["block_k"] = step
    for stmt in ast.walk(node):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) \
                and file.module.qualified(stmt.value.func) == "triton.language.zeros" \
                and stmt.value.args and isinstance(stmt.value.args[0], ast.Tuple) \
                and len(stmt.value.args[0].elts) == 2 \
                and all(isinstance(e, ast.Name) and e.id in constexprs
                        for e in stmt.value.args[0].elts):
            m, n = stmt.value.args[0].elts
            assert isinstance(m, ast.Name) and isinstance(n, ast.Name)
            roles.setdefault("block_m", m.id)
            roles.setdefault("block_n", n.id)
    return roles
