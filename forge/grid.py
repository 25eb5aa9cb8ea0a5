"""How a launch's grid and a kernel's block constexprs meet, read from the text.

A grid dim `triton.cdiv(M, 64)` at a launch that binds the kernel's `M` to `M` and `BLOCK_M` to
`64`, where the kernel masks `offs < M` with `offs = ... + tl.arange(0, BLOCK_M)`, equals
`tl.cdiv(M, BLOCK_M)` inside the kernel: the swizzle reads the grid's dims in the kernel that way,
the autotuner's grid reads `META['BLOCK_M']` in place of the 64, and a new block size changes the
literal. Anything else in a grid (a literal no block explains, a size the kernel cannot see) is
left to the caller to refuse, with the reason.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from axon.forge.source import KernelFile
from axon.frontend.triton.parse import JitKernel, LaunchSite

__all__ = ["GridBlock", "grid_blocks", "grid_expr", "program_blocks", "size_block_pairs"]


@dataclass(frozen=True)
class GridBlock:
    """`triton.cdiv(size_text, literal)` in a grid, read as `tl.cdiv(size, block)` in the
    kernel: `literal` is the node of the block's launch value."""

    call: ast.Call
    size: str
    block: str
    literal: ast.expr


def size_block_pairs(kernel: JitKernel) -> dict[str, set[str]]:
    """Each runtime parameter a mask compares a block's lanes against, with the constexprs whose
    `tl.arange(0, B)` those lanes come from (`offs = pid * B + tl.arange(0, B)`, `offs < N`),
    or a block pointer's shape dim, with its block_shape dim (`shape=(M, K)`,
    `block_shape=(BLOCK_M, BLOCK_K)`)."""
    constexprs = {p.name for p in kernel.params if p.constexpr}
    runtime = {p.name for p in kernel.params if not p.constexpr}
    blocks_of: dict[str, set[str]] = {}
    for _ in range(3):  # names defined from names defined from an arange (k = k0 + offs_k)
        for node in ast.walk(kernel.node):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                found = _aranges(node.value, constexprs, blocks_of)
                if found:
                    blocks_of.setdefault(node.targets[0].id, set()).update(found)
    pairs: dict[str, set[str]] = {}
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 \
                and isinstance(node.ops[0], ast.Lt) and isinstance(node.comparators[0], ast.Name) \
                and node.comparators[0].id in runtime:
            found = _aranges(node.left, constexprs, blocks_of)
            if found:
                pairs.setdefault(node.comparators[0].id, set()).update(found)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "make_block_ptr":
            given = {k.arg: k.value for k in node.keywords}
            shape, block = given.get("shape"), given.get("block_shape")
            if isinstance(shape, ast.Tuple) and isinstance(block, ast.Tuple):
                for size, tile in zip(shape.elts, block.elts, strict=False):
                    if isinstance(size, ast.Name) and size.id in runtime \
                            and isinstance(tile, ast.Name) and tile.id in constexprs:
                        pairs.setdefault(size.id, set()).add(tile.id)
    return pairs


def program_blocks(kernel: JitKernel, axis: int) -> set[str]:
    """The constexprs B of `offs = P * B + tl.arange(0, B)` with P assigned `tl.program_id(axis)`
    or stepping from it (the persistent stage's `for P in range(tl.program_id(axis), ...)`; a
    name's spelling only: the kernel's own `tl` alias is not resolved here)."""
    def is_pid(value: ast.expr) -> bool:
        return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and value.func.attr == "program_id" and bool(value.args) \
            and isinstance(value.args[0], ast.Constant) and value.args[0].value == axis

    pids = {n.targets[0].id for n in ast.walk(kernel.node)
            if isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name) and is_pid(n.value)}
    pids |= {n.target.id for n in ast.walk(kernel.node)
             if isinstance(n, ast.For) and isinstance(n.target, ast.Name)
             and isinstance(n.iter, ast.Call) and isinstance(n.iter.func, ast.Name)
             and n.iter.func.id == "range" and len(n.iter.args) >= 2 and is_pid(n.iter.args[0])}
    constexprs = {p.name for p in kernel.params if p.constexpr}
    found: set[str] = set()
    for node in ast.walk(kernel.node):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            names = [e.id for e in (node.left, node.right) if isinstance(e, ast.Name)]
            if len(names) == 2 and names[0] in pids and names[1] in constexprs:
                found.add(names[1])
            elif len(names) == 2 and names[1] in pids and names[0] in constexprs:
                found.add(names[0])
    return found


def _aranges(expr: ast.expr, constexprs: set[str], blocks_of: dict[str, set[str]]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "arange" and len(node.args) == 2 \
                and isinstance(node.args[1], ast.Name) and node.args[1].id in constexprs:
            found.add(node.args[1].id)
        elif isinstance(node, ast.Name) and node.id in blocks_of:
            found |= blocks_of[node.id]
    return found


def grid_expr(file: KernelFile, call: ast.Call) -> tuple[ast.expr, ast.Assign | None]:
    """The grid of launch `call`: the subscript itself, or the value of the `name = ...` it
    names (the last one above the call in the same function) and that statement."""
    assert isinstance(call.func, ast.Subscript)
    grid = call.func.slice
    if isinstance(grid, ast.Name):
        host = file.host_of(call)
        best: ast.Assign | None = None
        for node in ast.walk(host) if host is not None else ():
            if isinstance(node, ast.Assign) and node.lineno < call.lineno \
                    and any(isinstance(t, ast.Name) and t.id == grid.id for t in node.targets) \
                    and (best is None or node.lineno > best.lineno):
                best = node
        if best is not None:
            return best.value, best
    return grid, None


def grid_blocks(file: KernelFile, site: LaunchSite, expr: ast.expr
                ) -> tuple[list[GridBlock], str | None]:
    """Every `triton.cdiv(X, B)` of the grid `expr` read as `tl.cdiv(size, block)` of the
    kernel, or why one cannot be: X must be the text the launch binds to a size parameter,
    that parameter paired with exactly one block constexpr by the kernel's masks (where several
    are, the one the grid dim's program id multiplies), and B that block's launch value."""
    kernel = file.kernel(site.kernel)
    pairs = size_block_pairs(kernel)
    dims: dict[int, int] = {}
    if isinstance(expr, ast.Tuple):
        for axis, dim in enumerate(expr.elts):
            # a cdiv anywhere in the dim (the persistent stage's `min(cdiv(...), PROGRAMS)`)
            dims.update((id(sub), axis) for sub in ast.walk(dim) if isinstance(sub, ast.Call))
    by_text = {text: name for name, text in site.args}
    found: list[GridBlock] = []
    for node in ast.walk(expr):
        if not (isinstance(node, ast.Call) and file.module.qualified(node.func) == "triton.cdiv"
                and len(node.args) == 2):
            continue
        size_text, block_node = file.segment(node.args[0]), node.args[1]
        size = by_text.get(size_text)
        if size is None:
            return [], (f"grid dim `{file.segment(node)}`: `{size_text}` is no argument of the "
                        f"launch of {site.kernel}")
        blocks = pairs.get(size, set())
        if len(blocks) > 1 and dims.get(id(node)) is not None:
            # the block the grid dim's own program id multiplies (`pid_m * BLOCK_M + ...`)
            blocks = blocks & program_blocks(kernel, dims[id(node)])
        if len(blocks) != 1:
            why = "no" if not blocks else f"{len(blocks)} ({', '.join(sorted(blocks))})"
            return [], (f"grid dim `{file.segment(node)}`: {why} block constexprs of "
                        f"{site.kernel} are masked against `{size}`")
        block = next(iter(blocks))
        launched = site.arg(block)
        if launched is None or launched != file.segment(block_node):
            return [], (f"grid dim `{file.segment(node)}`: its divisor is not the launch value "
                        f"of {block} ({launched})")
        found.append(GridBlock(node, size, block, block_node))
    return found, None
