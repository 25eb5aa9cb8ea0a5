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
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp

from axon.forge.source import KernelFile
from axon.frontend.triton.parse import LaunchSite
from axon.frontend.triton.raise_tile import NotRaised, _parse

__all__ = ["FusedHost", "fuse_host"]


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

    written: dict[tuple, str] = {}   # view key -> SSA name of its value
    read_later: set[tuple] = set()
    inputs: dict[tuple, tuple[str, str, str]] = {}  # key -> (ssa, type, host text)
    input_params: dict[tuple, tuple[LaunchSite, str]] = {}
    output_params: dict[tuple, tuple[LaunchSite, str]] = {}
    lines: list[str] = []
    pointers: dict[tuple, str] = {}
    result_types: dict[tuple, str] = {}
    views: dict[tuple, str] = {}
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

        pattern = re.compile(r"(?<![%\w.])(" + "|".join(map(re.escape, rename)) + r")(?!\w)") \
            if rename else None

        def sub(line: str, n: int = n, rename: dict[str, str] = rename,
                pattern: re.Pattern[str] | None = pattern) -> str:
            line = re.sub(r"%a(\d+)\b", lambda m: f"%k{n}a{m.group(1)}", line)
            if pattern is not None:  # one pass: a renaming never meets another's result
                line = pattern.sub(lambda m: rename[m.group(1)], line)
            return line

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
            else:
                strides, sizes = k.tensors[param]
                size_texts = tuple(_clean(grid.get(str(s), site.arg(str(s)) or "?"))
                                   for s in sizes)
                stride_texts = tuple("1" if s is None else _clean(site.arg(s) or "?")
                                     for s in strides)
                key = (pointer, size_texts, stride_texts)
                view = (f"torch.as_strided({pointer}, ({', '.join(size_texts)},), "
                        f"({', '.join(stride_texts)},))")
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
                env[f"%in{index}"] = inputs[key][0]
        def argument(m: re.Match[str], env: dict[str, str] = env) -> str:
            return env[f"%in{m.group(1)}"]

        for line in body:
            lines.append(re.sub(r"%in(\d+)\b", argument, sub(line)))
        returned = re.findall(r"%a(\d+)", ret.split(":")[0])
        out_types = re.findall(r"!ax\.tensor<\[[^\]]*\], \w+>", ret.split(":", 1)[1])
        for param, number, type_text in zip(k.outputs, returned, out_types, strict=True):
            pointer = site.arg(param) or ""
            strides, sizes = k.tensors[param]
            size_texts = tuple(_clean(grid.get(str(s), site.arg(str(s)) or "?")) for s in sizes)
            stride_texts = tuple("1" if s is None else _clean(site.arg(s) or "?")
                                 for s in strides)
            key = (pointer, size_texts, stride_texts)
            if not pointer.isidentifier():
                raise NotRaised(f"the launch of {site.kernel} writes {pointer!r}, not a "
                                "buffer's name")
            if key in written or key in keys or any(w[0] == pointer for w in written):
                raise NotRaised(f"{pointer} is written twice, or read and written by "
                                f"{site.kernel}")
            if any(i[0] == pointer for i in inputs):
                raise NotRaised(f"{pointer} is read before {site.kernel} writes it")
            written[key] = f"%k{n}a{number}"
            output_params[key] = (site, param)
            pointers[key] = pointer
            result_types[key] = sub(type_text)
            views[key] = (f"torch.as_strided({pointer}, ({', '.join(size_texts)},), "
                          f"({', '.join(stride_texts)},))")
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
                     {s: b for s, b in bindings.items() if re.search(rf"\b{s}\b", sig)})


def _check_intermediates(file: KernelFile, host: str, sites: Sequence[LaunchSite],
                         names: set[str]) -> None:
    """Each intermediate buffer is read only by the launches (its value never leaves them),
    and no name a launch reads is assigned between the first launch and the last."""
    node = next((n for n in ast.walk(file.tree) if isinstance(n, ast.FunctionDef)
                 and n.name == host), None)
    if node is None:
        raise NotRaised(f"no host function {host}()")
    calls = [c for s in {s.kernel for s in sites} for c in file.launch_calls(s)]
    inside = {id(n) for c in calls for n in ast.walk(c)}
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


def _names(call: ast.Call) -> set[str]:
    return {n.id for n in ast.walk(call) if isinstance(n, ast.Name)}
