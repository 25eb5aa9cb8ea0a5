"""Fusion of a user's separate kernels: a host function launching raised kernels in sequence
through buffers becomes one `ax` program, which Axon's propagation and tiling then fuse.

    fused = fuse_host(file, raised_kernels, "forward")   # FusedHost, or NotRaised(reason)

Each launch binds the raised kernel's tensors to views of the user's buffers
(`torch.as_strided(z, sizes, strides)` with the launch's argument texts, `raised_path`); a view
that a launch reads and an earlier launch of the same host function wrote (the same buffer name
and the same size and stride texts, the names not assigned between) is that launch's result,
so the kernels' `ax` functions compose: the composed function's inputs are the views and float
parameters read before any launch writes them, its results the views written and not read by a
later launch. Each kernel's `ax` function is proved equal to its kernel, and a kernel writes
every element of its result (the verifier checks the store pattern), so the composition is
what the launches compute in sequence, provided each buffer is written once, by a kernel that
does not read it, and an intermediate buffer is read nowhere else in the host function (the
rules checked here; anything else is NotRaised with the reason). Size symbols of the kernels are
renamed by their launch texts (`n_elements` of each kernel bound to `n` is `n`), so sizes
that the launches pass alike are one symbol of the composed function.

Views are compared by their texts, read as products (`M * N` is `N * M`) and with the strides of
a buffer the host function allocates once (`z = torch.empty((M, N), ...)`, contiguous at every
size) as the row-major products of its dims (`z.stride(0)` is `N`, `z.stride(1)` is `1`). A
kernel that is elementwise over a flat view (`as_strided(z, (M * N,), (1,))`, every tensor
rank 1 of one size, every op an `ax.generic` reading each operand at its own index) reading a
buffer an earlier launch wrote row-major at a shape `S` of that many elements is taken at `S`:
each of its flat views `as_strided(t, (n,), (1,))` addresses the same elements as
`as_strided(t, S, row-major strides of S)` in row-major order, and its `ax` function at `S` is
proved equal to the flat one between reshapes (`reviewed`) before it is composed. 02's GELU and
04's residual add then compose with the GEMM that wrote their input.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.dialects.func import FuncOp

from axon.forge.source import KernelFile
from axon.frontend.triton.parse import LaunchSite
from axon.frontend.triton.raise_tile import NotRaised, _parse
from axon.verifier import Proved, prove_equivalent
from axon.verifier.budget import SEARCH_BUDGET

if TYPE_CHECKING:
    from axon.forge.raised_path import KernelRaise

__all__ = ["FusedHost", "fuse_host", "reviewed", "strided"]


@dataclass
class FusedHost:
    """A host function's launches as one `ax` function: the launches (in order), the function
    and its text, the host text of each input (a view or a float parameter) and each result's
    view (where its value is copied)."""

    host: str
    kernels: list[str]
    sites: list[LaunchSite]
    ax: FuncOp
    ax_text: str
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    input_params: list[tuple[LaunchSite, str]] = field(default_factory=list)
    """Each input's launch and the kernel parameter it binds (its dtype is that argument's)."""
    output_params: list[tuple[LaunchSite, str]] = field(default_factory=list)
    """Each result's launch and the kernel parameter it is stored through."""
    symbols: dict[str, tuple[LaunchSite, str]] = field(default_factory=dict)
    """Each size symbol of `ax`: a launch binding it and that kernel's own symbol (its value
    is what the launch passes for it)."""
    layouts: list[tuple[str, tuple[str, ...], tuple[str, ...]] | None] = field(
        default_factory=list)
    """Each input's buffer, sizes and strides (texts; None for a float parameter)."""


def _clean(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and text.count("(") == 1:
        text = text[1:-1].strip()
    return text


def fuse_host(file: KernelFile, kernels: Sequence, host: str) -> FusedHost:
    """The launches of `host` composed (module docstring); `kernels` are `raised_path`'s
    `KernelRaise`s. NotRaised when a rule does not hold, saying which."""
    sites = [s for s in file.module.launches if s.host == host]
    by_name = {k.name: k for k in kernels}
    if len(sites) < 2:
        raise NotRaised(f"{host}() launches fewer than two kernels")
    from axon.forge.raised_path import assumption_error

    for site in sites:
        k = by_name.get(site.kernel)
        if k is None or k.raised is None:
            raise NotRaised(f"{site.kernel} (launched in {host}()) is not raised")
        why = assumption_error(k, site)
        if why:
            raise NotRaised(why)
    symbols: dict[str, str] = {}  # launch text -> composed symbol
    bindings: dict[str, tuple[LaunchSite, str]] = {}  # composed symbol -> a launch's own

    def symbol(text: str, site: LaunchSite, own: str) -> str:
        text = _clean(text)
        if text not in symbols:
            symbols[text] = text if text.isidentifier() else f"S{len(symbols)}"
            bindings[symbols[text]] = (site, own)
        return symbols[text]

    allocated = _allocations(file, host)
    written: dict[tuple, str] = {}   # view key -> SSA name of its value
    shapes: dict[str, tuple[str, ...]] = {}  # buffer -> the sizes it was written at, row-major
    read_later: set[tuple] = set()
    inputs: dict[tuple, tuple[str, str, str]] = {}  # key -> (ssa, type, host text)
    input_params: dict[tuple, tuple[LaunchSite, str]] = {}
    output_params: dict[tuple, tuple[LaunchSite, str]] = {}
    lines: list[str] = []
    pointers: dict[tuple, str] = {}
    result_types: dict[tuple, str] = {}
    views: dict[tuple, str] = {}
    layouts: dict[tuple, tuple[str, tuple[str, ...], tuple[str, ...]] | None] = {}
    proved: dict[tuple[str, int], bool] = {}
    for n, site in enumerate(sites):
        k = by_name[site.kernel]
        grid = {f"G{j}": t for j, t in enumerate(site.grid_dims)}
        text = k.raised.ax_text
        head, *body, ret, _end = text.splitlines()
        rename: dict[str, str] = {}
        names = set(re.findall(r"\b[A-Za-z_]\w*\b", head))
        for t in k.tensors.values():
            for size in t[1]:
                for s in size.symbols():
                    bound = grid.get(s) if s in grid else site.arg(s)
                    if bound is None:
                        raise NotRaised(f"the launch of {site.kernel} does not bind {s}")
                    rename[s] = symbol(bound, site, s)
        rename = {s: v for s, v in rename.items() if s in names}
        shape = _review_shape(k, site, shapes, allocated)
        flat, dims = _flat_symbol(k) or "", []
        if shape is not None:
            if (k.name, len(shape)) not in proved:
                proved[(k.name, len(shape))] = _reviewed_is_proved(text, flat, len(shape))
            if not proved[(k.name, len(shape))]:
                raise NotRaised(f"{site.kernel} taken at the shape ({', '.join(shape)}) of the "
                                "buffer it reads is not proved equal to it")
            dims = [symbols[t] for t in shape]  # the writer's sizes, named at its launch
        pattern = re.compile(r"(?<![%\w.])(" + "|".join(map(re.escape, rename)) + r")(?!\w)") \
            if rename else None

        def sub(line: str, n: int = n, rename: dict[str, str] = rename,
                pattern: re.Pattern[str] | None = pattern,
                shape: tuple[str, ...] | None = shape, flat: str = flat,
                dims: list[str] = dims) -> str:
            line = re.sub(r"%a(\d+)\b", lambda m: f"%k{n}a{m.group(1)}", line)
            if pattern is not None:  # one pass: a renaming never meets another's result
                line = pattern.sub(lambda m: rename[m.group(1)], line)
            if shape is not None:
                line = _at_shape(line, rename[flat], dims)
            return line

        def view_of(param: str, k: KernelRaise = k, site: LaunchSite = site,
                    grid: dict[str, str] = grid, shape: tuple[str, ...] | None = shape
                    ) -> tuple[tuple, tuple[str, ...], tuple[str, ...]]:
            """The key of the view the launch binds to `param`, its sizes and strides."""
            pointer = _clean(site.arg(param) or "")
            strides, sizes = k.tensors[param]
            if shape is not None:
                size_texts, stride_texts = shape, _row_major(shape)
            else:
                size_texts = tuple(_clean(grid.get(str(s), site.arg(str(s)) or "?"))
                                   for s in sizes)
                stride_texts = tuple("1" if s is None else _clean(site.arg(s) or "?")
                                     for s in strides)
            key = (pointer, tuple(_product(t, allocated) for t in size_texts),
                   tuple(_product(t, allocated) for t in stride_texts))
            return key, size_texts, stride_texts

        arg_types = re.findall(r"%in(\d+): (!ax\.tensor<\[[^\]]*\], \w+>)", head)
        env: dict[str, str] = {}
        keys: list[tuple] = []
        for (index, type_text), param in zip(arg_types, k.inputs, strict=True):
            pointer = site.arg(param)
            if pointer is None:
                raise NotRaised(f"the launch of {site.kernel} does not bind {param}")
            if param in k.scalars:
                key: tuple = ("scalar", _clean(pointer))
                view = f"torch.full((1,), {pointer}, dtype=torch.float32, device=@DEVICE@.device)"
                layout = None
            else:
                key, sizes, strides = view_of(param)
                layout = (_clean(pointer), sizes, strides)
                view = strided(*layout)
            keys.append(key)
            if key in written:
                env[f"%in{index}"] = written[key]
                read_later.add(key)
            else:
                if any(w[0] == key[0] for w in written if key[0] != "scalar"):
                    raise NotRaised(f"{site.kernel} reads {pointer} through another view than "
                                    "the kernel that wrote it")
                if key not in inputs:
                    inputs[key] = (f"%x{len(inputs)}", sub(type_text), view)
                    input_params[key] = (site, param)
                    layouts[key] = layout
                env[f"%in{index}"] = inputs[key][0]
        def argument(m: re.Match[str], env: dict[str, str] = env) -> str:
            return env[f"%in{m.group(1)}"]

        for line in body:
            lines.append(re.sub(r"%in(\d+)\b", argument, sub(line)))
        returned = re.findall(r"%a(\d+)", ret.split(":")[0])
        out_types = re.findall(r"!ax\.tensor<\[[^\]]*\], \w+>", ret.split(":", 1)[1])
        for param, number, type_text in zip(k.outputs, returned, out_types, strict=True):
            pointer = site.arg(param) or ""
            key, size_texts, stride_texts = view_of(param)
            if not pointer.isidentifier():
                raise NotRaised(f"the launch of {site.kernel} writes {pointer!r}, not a "
                                "buffer's name")
            if key in written or key in keys or any(w[0] == pointer for w in written):
                raise NotRaised(f"{pointer} is written twice, or read and written by "
                                f"{site.kernel}")
            if any(i[0] == pointer for i in inputs):
                raise NotRaised(f"{pointer} is read before {site.kernel} writes it")
            written[key] = f"%k{n}a{number}"
            if key[2] == tuple(_product(t, allocated) for t in _row_major(size_texts)):
                shapes[pointer] = size_texts
            output_params[key] = (site, param)
            pointers[key] = pointer
            result_types[key] = sub(type_text)
            views[key] = strided(pointer, size_texts, stride_texts)
    _check_intermediates(file, host, sites, {pointers[k] for k in read_later})
    results = [k for k in written if k not in read_later]
    sig = ", ".join(f"{ssa}: {t}" for ssa, t, _ in inputs.values())
    out_sig = ", ".join(result_types[k] for k in results)
    text = "\n".join([f"func.func @{host}_fused({sig}) -> ({out_sig}) {{", *lines,
                      f"  func.return {', '.join(written[k] for k in results)} : {out_sig}",
                      "}"])
    device = pointers[results[0]]  # float parameters go where the first result lives
    return FusedHost(host, [s.kernel for s in sites], sites, _parse(text, "fused ax"), text,
                     [v.replace("@DEVICE@", device) for _, _, v in inputs.values()],
                     [views[k] for k in results], list(input_params.values()),
                     [output_params[k] for k in results],
                     {s: b for s, b in bindings.items() if re.search(rf"\b{s}\b", sig)},
                     list(layouts.values()))


def strided(pointer: str, sizes: Sequence[str], strides: Sequence[str]) -> str:
    """The host text of the view of `pointer` at `sizes` and `strides` (texts)."""
    return f"torch.as_strided({pointer}, ({', '.join(sizes)},), ({', '.join(strides)},))"


def _check_intermediates(file: KernelFile, host: str, sites: Sequence[LaunchSite],
                         names: set[str]) -> None:
    """Each intermediate buffer is read only by the launches (its value never leaves them;
    its shape, strides, dtype or device may be read: `torch.empty_like(z)`), and no name a
    launch reads is assigned between the first launch and the last."""
    node = _host_node(file, host)
    calls = [c for s in {s.kernel for s in sites} for c in file.launch_calls(s)]
    inside = {id(n) for c in calls for n in ast.walk(c)} | _metadata_reads(node)
    first, last = min(c.lineno for c in calls), max(c.lineno for c in calls)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in names and id(n) not in inside \
                and isinstance(n.ctx, ast.Load):
            raise NotRaised(f"{n.id} (a buffer between the kernels) is read at line "
                            f"{n.lineno} outside the launches")
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) \
                and first < n.lineno < last and any(c.lineno < n.lineno and n.id in _names(c)
                                                    for c in calls):
            raise NotRaised(f"{n.id} is assigned at line {n.lineno}, after a launch that "
                            "reads it and before a later one")


METADATA = frozenset({"shape", "stride", "size", "numel", "dim", "ndim", "dtype", "device"})
"""A tensor's attributes that read none of its values."""


def _metadata_reads(node: ast.AST) -> set[int]:
    """The ids of the names under `node` read only for their metadata: `z.shape`,
    `z.stride(0)`, `torch.empty_like(z)` (and the other `*_like` allocations)."""
    found: set[int] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr in METADATA and isinstance(n.value, ast.Name):
            found.add(id(n.value))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and isinstance(n.func.value, ast.Name) and n.func.value.id == "torch" \
                and n.func.attr in ("empty_like", "zeros_like", "ones_like") and n.args \
                and isinstance(n.args[0], ast.Name):
            found.add(id(n.args[0]))
    return found


def _names(call: ast.Call) -> set[str]:
    return {n.id for n in ast.walk(call) if isinstance(n, ast.Name)}


ALLOCATORS = frozenset({"empty", "zeros", "ones"})
"""`torch.<name>(shape, ...)` calls that make a new contiguous tensor of the shape spelled."""


def _host_node(file: KernelFile, host: str) -> ast.FunctionDef:
    node = next((n for n in ast.walk(file.tree) if isinstance(n, ast.FunctionDef)
                 and n.name == host), None)
    if node is None:
        raise NotRaised(f"no host function {host}()")
    return node


def _allocations(file: KernelFile, host: str) -> dict[str, tuple[str, ...]]:
    """The buffers `host` binds once, to a new contiguous tensor whose shape its text spells,
    with the texts of its dims: `z = torch.empty((M, N), ...)` (`zeros`, `ones`; the shape a
    tuple, a list or the positional arguments), or `torch.empty_like(b)` (`zeros_like`) of
    such a buffer `b` (a dense tensor's strides are kept, so it is contiguous too)."""
    node = _host_node(file, host)
    bindings: dict[str, int] = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            bindings[n.id] = bindings.get(n.id, 0) + 1
    for a in node.args.args + node.args.kwonlyargs:
        bindings[a.arg] = bindings.get(a.arg, 0) + 1
    assigns = sorted((n for n in ast.walk(node) if isinstance(n, ast.Assign)
                      and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                      and bindings.get(n.targets[0].id) == 1 and isinstance(n.value, ast.Call)),
                     key=lambda n: n.lineno)
    found: dict[str, tuple[str, ...]] = {}
    for n in assigns:
        call = n.value
        assert isinstance(call, ast.Call) and isinstance(n.targets[0], ast.Name)
        fn = call.func
        if not (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name)
                and fn.value.id == "torch") or any(isinstance(a, ast.Starred) for a in call.args):
            continue
        if any(kw.arg in (None, "size", "memory_format", "out") for kw in call.keywords):
            continue
        dims: list[ast.expr] | None = None
        if fn.attr in ALLOCATORS and len(call.args) == 1 \
                and isinstance(call.args[0], ast.Tuple | ast.List):
            dims = list(call.args[0].elts)
        elif fn.attr in ALLOCATORS and (len(call.args) > 1 or len(call.args) == 1 and isinstance(
                call.args[0], ast.Constant)):  # one name may hold a whole shape: not read
            dims = list(call.args)
        if fn.attr in ("empty_like", "zeros_like") and len(call.args) == 1 \
                and isinstance(call.args[0], ast.Name) and call.args[0].id in found:
            found[n.targets[0].id] = found[call.args[0].id]
        elif dims and not any(isinstance(d, ast.Starred) for d in dims):
            # not `(*x.shape[:-1], N)`: dims the text does not spell
            found[n.targets[0].id] = tuple(ast.unparse(d) for d in dims)
    return found


def _product(text: str, allocated: Mapping[str, tuple[str, ...]]) -> str:
    """`text` as a product in one order of its factors (`N * M` and `M*N` both `M * N`, 1s
    dropped), with `b.stride(j)` of an allocated buffer `b` the product of its dims past `j`:
    two texts equal so denote one value wherever the host evaluates them."""
    try:
        root = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return _clean(text)
    factors: list[str] = []
    constant = 1
    stack: list[ast.expr] = [root]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
            stack += [e.left, e.right]
        elif isinstance(e, ast.Constant) and type(e.value) is int:
            constant *= e.value
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) \
                and e.func.attr == "stride" and isinstance(e.func.value, ast.Name) \
                and e.func.value.id in allocated and len(e.args) == 1 and not e.keywords \
                and isinstance(e.args[0], ast.Constant) and type(e.args[0].value) is int \
                and 0 <= e.args[0].value < len(allocated[e.func.value.id]):
            dims = allocated[e.func.value.id][e.args[0].value + 1:]
            stack += [ast.parse(d, mode="eval").body for d in dims]
        else:
            factors.append(ast.unparse(e))
    if constant != 1 or not factors:
        factors.append(str(constant))
    return " * ".join(sorted(factors))


def _row_major(sizes: Sequence[str]) -> tuple[str, ...]:
    """The strides, as texts, of a row-major tensor of `sizes`."""
    def factor(t: str) -> str:
        return t if re.fullmatch(r"\w+", t) else f"({t})"
    return tuple(" * ".join(factor(t) for t in sizes[i + 1:]) or "1"
                 for i in range(len(sizes)))


_GENERIC = re.compile(r'\s*%a\d+ = ax\.generic [^{]*\{form = "out\[d0 < (\w+)\] = ([^"]*)"')


def _flat_symbol(k: KernelRaise) -> str | None:
    """The size of a kernel elementwise over flat contiguous views: every tensor rank 1 of
    that one size and unit stride (or one float parameter's element), every op an
    `ax.generic` without a reduction or an index in its value; None for another kernel."""
    sizes = {str(dims[0]) for strides, dims in k.tensors.values()
             if len(dims) == 1 and strides == [None]}
    if len(sizes) != 1 or any(len(dims) != 1 or strides != [None]
                              for strides, dims in k.tensors.values()):
        return None
    (size,) = sizes
    assert k.raised is not None
    _head, *body, _ret, _end = k.raised.ax_text.splitlines()
    for line in body:
        m = _GENERIC.match(line)
        if m is None or m.group(1) != size or " over " in m.group(2) or "idx(" in m.group(2):
            return None
    return size


def _review_shape(k: KernelRaise, site: LaunchSite, shapes: Mapping[str, tuple[str, ...]],
                  allocated: Mapping[str, tuple[str, ...]]) -> tuple[str, ...] | None:
    """The shape at which to take an elementwise kernel over flat views (`_flat_symbol`): that
    of a buffer it reads that an earlier launch wrote row-major at a shape of more than one dim
    and as many elements as the launch passes for the flat size; None where there is none."""
    flat = _flat_symbol(k)
    if flat is None:
        return None
    count = site.arg(flat)
    if count is None:
        return None
    for param in k.inputs:
        shape = shapes.get(_clean(site.arg(param) or ""))
        if param not in k.scalars and shape is not None and len(shape) > 1 and \
                _product(count, allocated) == _product(" * ".join(f"({t})" for t in shape),
                                                       allocated):
            return shape
    return None


def _at_shape(text: str, flat: str, dims: Sequence[str]) -> str:
    """An elementwise function's text over `[flat]` written over `dims` (`_flat_symbol`)."""
    size = re.escape(flat)
    index = ", ".join(f"d{i}" for i in range(len(dims)))
    text = re.sub(rf"!ax\.tensor<\[{size}\], ", f"!ax.tensor<[{', '.join(dims)}], ", text)
    text = re.sub(rf"out\[d0 < {size}\]",
                  "out[" + ", ".join(f"d{i} < {d}" for i, d in enumerate(dims)) + "]", text)
    return re.sub(r"\b(in\d+)\[d0\]", rf"\1[{index}]", text)


def reviewed(ax_text: str, flat: str, rank: int) -> tuple[str, str]:
    """An elementwise function over `[flat]` (`ax_text`) written over `rank` dims `V0, ...`,
    and the function it must equal: the flat one between row-major reshapes of each operand of
    that size to `[V0 * ...]` and of each result back to `[V0, ...]`."""
    dims = [f"V{i}" for i in range(rank)]
    while any(re.search(rf"\b{d}\b", ax_text) for d in dims):
        dims = [d + "_" for d in dims]
    shaped = _at_shape(ax_text, flat, dims)
    whole, count = f"[{', '.join(dims)}]", " * ".join(dims)
    head, *body, ret, end = ax_text.splitlines()
    size = re.escape(flat)
    lines: list[str] = []
    operands = re.findall(rf"%in(\d+): !ax\.tensor<\[{size}\], (\w+)>", head)
    for index, dtype in operands:
        lines.append(f'  %v{index} = ax.reshape %in{index} {{shape = ["{count}"]}} : '
                     f"(!ax.tensor<{whole}, {dtype}>) -> !ax.tensor<[{count}], {dtype}>")
    reshaped = {index for index, _ in operands}
    for line in body:
        line = re.sub(r"%in(\d+)\b",
                      lambda m: f"%v{m.group(1)}" if m.group(1) in reshaped else m.group(0), line)
        line = re.sub(rf"out\[d0 < {size}\]", f"out[d0 < {count}]", line)
        lines.append(re.sub(rf"!ax\.tensor<\[{size}\], ", f"!ax.tensor<[{count}], ", line))
    returned = re.findall(r"%a\d+", ret.split(":")[0])
    types = re.findall(r"!ax\.tensor<\[[^\]]*\], (\w+)>", ret.split(":", 1)[1])
    back = ", ".join(f'"{d}"' for d in dims)
    for j, (value, dtype) in enumerate(zip(returned, types, strict=True)):
        lines.append(f"  %r{j} = ax.reshape {value} {{shape = [{back}]}} : "
                     f"(!ax.tensor<[{count}], {dtype}>) -> !ax.tensor<{whole}, {dtype}>")
    out_sig = ", ".join(f"!ax.tensor<{whole}, {d}>" for d in types)
    reference = "\n".join([_at_shape(head, flat, dims), *lines,
                           f"  func.return {', '.join(f'%r{j}' for j in range(len(types)))}"
                           f" : {out_sig}", end])
    return shaped, reference


def _reviewed_is_proved(ax_text: str, flat: str, rank: int) -> bool:
    shaped, reference = reviewed(ax_text, flat, rank)
    verdict = prove_equivalent(_parse(shaped, "reshaped ax"), _parse(reference, "reference ax"),
                               budget=SEARCH_BUDGET)
    return isinstance(verdict, Proved)
