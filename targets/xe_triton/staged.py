"""A staged candidate's module: the kernels of a program cut in two (`tiling.split`), each with
its own host function, and one host function of the program's parameters that runs them (a
split loop's partials and combine (`tiling.split_loop`) are joined the same way).

    def gemm_sum_scale_k1_staged(in0, in1, in2, *, out=None):
        t = gemm_sum_scale_k1_stage1_rows(in1)           # the producer writes the cut value
        return gemm_sum_scale_k1_stage2_rows_k(in0, in2, t, out=out)

Each stage's module is the emitter's own (`emit.emit_triton`), launch settings as its host
function's defaults; the modules are joined with each top-level definition kept once (the
emitter's helpers and tables are the same text in both) and without `autotune_configs()`,
whose keywords are one kernel's. The joined module takes no launch keywords but `out` (the
consumer's).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from xdsl.dialects.func import FuncOp

from axon.dialects.tile import KernelOp
from axon.targets.xe_triton.emit import EmittedModule, emit_triton
from axon.tiling.split import Split
from axon.tiling.split_loop import NotSplit, stages

#: definitions of an emitted module that belong to one kernel's host function
_PER_KERNEL = frozenset({"autotune_configs"})


def staged_module(split: Split, parts: Sequence[EmittedModule]) -> EmittedModule:
    """The module running `parts` (the producer's module, then the consumer's) as the function
    `split` cut; its host function is `<function>_staged`."""
    producer, consumer = parts
    name = f"{split.function}_staged"
    count = 1 + max((*split.producer_args, *split.consumer_args), default=-1)
    params = [f"in{n}" for n in range(count)]
    first = ", ".join(f"in{n}" for n in split.producer_args)
    second = ", ".join([*(f"in{n}" for n in split.consumer_args), "t"])
    doc = [f'"""Triton kernels emitted by Axon from @{split.function} cut at {split.value}:',
           f"@{producer.name} writes it, @{consumer.name} reads it,",
           f'`{name}` runs both (Triton 3.6; Intel XPU and NVIDIA)."""']
    kept = f", in {split.dtype} ({split.widened})" if split.widened else ""
    host = [
        f"def {name}({', '.join([*params, '*', 'out=None'])}):",
        f'    """Run @{split.function} as two launches on torch tensors: `t` is {split.value}'
        f' in memory{kept};\n    `out`: the tensors the results are written to (None: new '
        'ones)."""',
        f"    t = {producer.name}({first})",
        f"    return {consumer.name}({second}, out=out)"]
    return _joined(name, doc, parts, host)


def split_loop_module(function: str, params: int, parts: Sequence[EmittedModule]
                      ) -> EmittedModule:
    """The module running a split loop's two launches (`tiling.split_loop`: the partials'
    module, then the combine's) as @`function` of `params` tensors; its host function is
    `<function>_split`."""
    partials, combine = parts
    name = f"{function}_split"
    inputs = [f"in{n}" for n in range(params)]
    doc = [f'"""Triton kernels emitted by Axon from @{function}, its loop split across '
           "programs:",
           f"@{partials.name} writes each stretch's running max and sums, @{combine.name} "
           "combines them,",
           f'`{name}` runs both (Triton 3.6; Intel XPU and NVIDIA)."""']
    host = [
        f"def {name}({', '.join([*inputs, '*', 'out=None'])}):",
        f'    """Run @{function} as two launches on torch tensors: the partials, then their '
        'combine;\n    `out`: the tensors the results are written to (None: new ones)."""',
        f"    partials = {partials.name}({', '.join(inputs)})",
        f"    return {combine.name}(*partials, out=out)"]
    return _joined(name, doc, parts, host)


def emit_tiled(tiled: FuncOp, device: str = "h200", tile_sizes: Mapping[str, int] | None = None
               ) -> EmittedModule:
    """`tiled` as a Triton module: one kernel as `emit_triton` emits it, a split loop's
    partials and combine (`tiling.split_loop`) each emitted with the `tile_sizes` it takes and
    joined (`split_loop_module`)."""
    try:
        parts = stages(tiled)
    except NotSplit:
        return emit_triton(tiled, device, dict(tile_sizes or {}))
    emitted = []
    for func in (parts.partials, parts.combine):
        (kernel,) = (op for op in func.body.block.ops if isinstance(op, KernelOp))
        taken = {*kernel.param_names(), "num_warps", "num_stages"}
        emitted.append(emit_triton(func, device, {k: v for k, v in (tile_sizes or {}).items()
                                                  if k in taken}))
    params = len(tiled.function_type.inputs.data)
    return split_loop_module(tiled.sym_name.data, params, emitted)


def _joined(name: str, doc: list[str], parts: Sequence[EmittedModule], host: list[str]
            ) -> EmittedModule:
    """One module of `parts`' definitions (each kept once) and the `host` function `name`."""
    head = [*doc, "", "import torch", "import triton", "import triton.language as tl"]
    if any("TensorDescriptor" in p.text for p in parts):
        head.append("from triton.tools.tensor_descriptor import TensorDescriptor")
    body: list[str] = []
    seen: set[str] = set()
    for part in parts:
        body += _definitions(part.text, seen)
    text = "\n".join([*head, "", "", *body, *host, ""])
    return EmittedModule(text, name, {}, parts[-1].num_warps)


def _definitions(text: str, seen: set[str]) -> list[str]:
    """The top-level definitions of `text` (functions with their decorators, and assignments
    such as the host's table of block I/O modes) not in `seen`, as lines each followed by two
    blank lines; their names join `seen`."""
    lines = text.split("\n")
    found: list[str] = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            names = {node.name}
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        elif isinstance(node, ast.Assign):
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
            first = node.lineno
        else:  # the docstring and the imports: the joined module has its own
            continue
        if names & (seen | _PER_KERNEL):
            continue
        seen.update(names)
        assert node.end_lineno is not None
        found += [*lines[first - 1:node.end_lineno], "", ""]
    return found
