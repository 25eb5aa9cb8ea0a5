"""The walk over an exported program's graph: its inputs become the function's parameters, each
node the `ax` ops of its handler in `aten.ATEN`; what has no handler is listed, located."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.export.graph_signature import InputKind
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from axon.dialects.ax.shapes import ShapeError
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.intexpr import IntExpr
from axon.frontend import builders as bx
from axon.frontend.builders import Tensor
from axon.frontend.graph import GraphBuilder, build_function
from axon.frontend.torch.aten import ATEN
from axon.frontend.torch.capture import (
    TORCH_DTYPES,
    CapturedProblem,
    LoadedProblem,
    TorchFrontendError,
    diagnose,
    name_input_dims,
    shape_failure,
)
from axon.frontend.torch.context import SizeContext, Substitute, Unsupported


def operator_name(node: torch.fx.Node) -> str:
    """The name an operator is reported by: `aten.sort.default`, or the callable's name."""
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return getattr(target, "__name__", str(target))


def _makes_tensor(node: torch.fx.Node) -> bool:
    """Whether `node` computes a tensor (or tensors), not a Python or symbolic number."""
    val = node.meta.get("val")
    values = val if isinstance(val, tuple | list) else [val]
    return any(isinstance(v, torch.Tensor) for v in values)


def _unsupported_message(node: torch.fx.Node) -> str:
    """`unsupported operator NAME`, saying when the result's shape depends on the data."""
    val = node.meta.get("val")
    data_dependent = isinstance(val, torch.Tensor) and any(
        not isinstance(d, int) for d in val.shape)
    why = " (its result's shape depends on the data)" if data_dependent else ""
    return f"unsupported operator {operator_name(node)}{why}; no ax translation"


def translate_program(problem: LoadedProblem, program: torch.export.ExportedProgram,
                      function_name: str = "forward",
                      fixed: Mapping[str, int] | None = None,
                      renamed: Mapping[str, str] | None = None,
                      distinct: bool = False) -> CapturedProblem:
    """The `ax` module of an exported program: one `func.func` whose inputs are the program's
    parameters and buffers, then its user inputs; the size symbols in `fixed` are replaced by
    their values, those in `renamed` by the symbols it names. With `distinct`, a size symbol
    is a new one in each input after the first that has it (`seq_len_k`), and only the
    equalities torch's graph requires join them again (`SizeContext.unify`): self-attention's
    key length apart from its query length. TorchFrontendError listing every
    unsupported operator (each at its `forward` line) or the first shape it cannot
    translate."""
    graph = program.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    specs = program.graph_signature.input_specs
    plain = [x for x in problem.inputs if not isinstance(x, torch.Tensor)]
    if plain:
        raise TorchFrontendError([f"{problem.path}: error: get_inputs() returns "
                                  f"{type(plain[0]).__name__} {plain[0]!r}; the PyTorch frontend "
                                  f"takes tensor inputs only"])
    user_inputs = iter(problem.inputs)
    names, tensors, parameters, targets = [], [], [], []
    # each input's kind (parameter, buffer, constant, input) and its name in the model
    sources: list[tuple[str, str]] = []
    for spec in specs:
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            assert spec.target is not None
            value = program.state_dict[spec.target]
            name = spec.target.replace(".", "_")
            parameters.append(name)
            targets.append(spec.target)
            sources.append((spec.kind.name.lower(), spec.target))
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            assert spec.target is not None
            value = program.constants[spec.target]
            name = spec.target.replace(".", "_")
            targets.append(spec.target)
            sources.append(("constant", spec.target))
        elif spec.kind == InputKind.USER_INPUT:
            value = next(user_inputs)
            name = spec.arg.name
            sources.append(("input", name))
        else:
            raise TorchFrontendError([f"{problem.path}: error: an input of kind {spec.kind.name} "
                                      f"is not supported"])
        names.append(name)
        tensors.append(value.detach())
    unsupported = [n for n in graph.nodes if n.op == "call_function" and n.target not in ATEN]
    # the bookkeeping of a data-dependent size (sym_size, its bounds' asserts) follows from the
    # tensor operator that made it: name only tensor operators when there are any
    tensor_ops = [n for n in unsupported if _makes_tensor(n)]
    if unsupported:
        raise TorchFrontendError([diagnose(problem, n, _unsupported_message(n))
                                  for n in tensor_ops or unsupported])
    dtypes = []
    for name, t in zip(names, tensors, strict=True):
        if t.dtype not in TORCH_DTYPES:
            raise TorchFrontendError([f"{problem.path}: error: input {name} has dtype {t.dtype}; "
                                      f"expected one of {', '.join(map(str, TORCH_DTYPES))}"])
        dtypes.append(TORCH_DTYPES[t.dtype])
    shapes = [list(t.shape) for t in tensors]
    dims = name_input_dims(problem, shapes, targets)
    sizes = {}
    for row, shape in zip(dims, shapes, strict=True):
        for d, extent in zip(row, shape, strict=True):
            if d.as_symbol is not None:
                sizes[d.as_symbol] = int(extent)
    fixed = dict(fixed or {})
    renamed = dict(renamed or {})
    dims = [[d.substitute(fixed) for d in row] for row in dims]
    dims = [[d.substitute({old: IntExpr.sym(new) for old, new in renamed.items()}) for d in row]
            for row in dims]
    sizes = {renamed.get(k, k): v for k, v in sizes.items() if k not in fixed}
    derived: dict[str, str] = {}
    if distinct:
        dims = _distinct_dims(dims, names, sizes, derived)
    for _ in range(len(sizes) + 1):
        try:
            fn = _build(problem, graph, placeholders, dims, dtypes, names, sizes, function_name)
            break
        except Substitute as sub:
            symbol, expr = sub.symbol, sub.expr
            other = expr.as_symbol
            if other is not None and other in derived and symbol not in derived:
                symbol, expr = other, IntExpr.sym(symbol)  # the problem's own name stays
            dims = [[d.substitute({symbol: expr}) for d in row] for row in dims]
            del sizes[symbol]
    else:  # a guard: each substitution removes a symbol, so a build ends the loop first
        raise TorchFrontendError([f"{problem.path}: error: the input sizes do not settle"])
    _erase_unused(fn)
    module = ModuleOp([fn])
    module.verify()
    arrays = [t.to(torch.float32).numpy() if t.is_floating_point() else t.numpy()
              for t in tensors]
    order = [renamed.get(k, k) for k in problem.sizes]
    ranked = dict(sorted(sizes.items(), key=lambda kv: (kv[0] not in order,
                                                        order.index(kv[0]) if kv[0] in order
                                                        else 0, kv[0])))
    return CapturedProblem(module, fn, names, arrays, parameters, ranked, fixed, sources,
                           renamed)


def _distinct_dims(dims: list[list[IntExpr]], names: Sequence[str], sizes: dict[str, int],
                   derived: dict[str, str]) -> list[list[IntExpr]]:
    """`dims` with each symbol that an earlier input has renamed `<symbol>_<input>` (added to
    `sizes` at the same value, and to `derived` with the symbol it came from)."""
    seen: set[str] = set()
    out = []
    for row, name in zip(dims, names, strict=True):
        symbols = {s for d in row for s in d.symbols()}
        fresh = {}
        for symbol in sorted(symbols & seen):
            new = f"{symbol}_{name}"
            while new in sizes:
                new += "_"
            fresh[symbol] = IntExpr.sym(new)
            sizes[new] = sizes[symbol]
            derived[new] = symbol
        seen |= symbols
        out.append([d.substitute(fresh) for d in row] if fresh else row)
    return out


def _erase_unused(fn: Any) -> None:
    """Erase the ops whose results nothing reads (a handler's shape probe, such as attention's
    `q @ k^T` that lets a size equation surface), last first so that a chain goes at once."""
    block = fn.body.block
    for op in reversed(list(block.ops)):
        if op is not block.last_op and op.results and all(not r.uses for r in op.results):
            op.detach()
            op.erase()


def _build(problem: LoadedProblem, graph: torch.fx.Graph, placeholders: list[torch.fx.Node],
           dims: list[list[IntExpr]], dtypes: list[str], names: list[str], sizes: dict[str, int],
           function_name: str) -> Any:
    arg_types = [TensorType(row, dtype) for row, dtype in zip(dims, dtypes, strict=True)]

    def body(builder: GraphBuilder, args: list[SSAValue]) -> list[SSAValue]:
        ctx = SizeContext(sizes)
        env: dict[torch.fx.Node, Any] = {
            n: Tensor(a, builder) for n, a in zip(placeholders, args, strict=True)}

        def value(arg: Any) -> Any:
            return torch.fx.node.map_arg(arg, lambda n: env[n])

        outputs: list[Any] = []
        for node in graph.nodes:
            if node.op == "call_function" and not node.users and node.target is operator.getitem:
                continue  # a result nothing reads (the indices of a max), never translated
            if node.op == "call_function":
                args_ = value(node.args)
                kwargs = {k: v for k, v in value(node.kwargs).items()
                          if k not in ("device", "pin_memory", "layout", "memory_format")}
                try:
                    env[node] = ATEN[node.target](ctx, *args_, **kwargs)
                except Unsupported as err:
                    raise TorchFrontendError([diagnose(
                        problem, node, f"unsupported operator {operator_name(node)}: {err}")]) \
                        from None
                except ShapeError as err:
                    raise TorchFrontendError([shape_failure(problem, node, err)]) from None
                except (TypeError, ValueError, IndexError) as err:  # arguments no handler reads
                    raise TorchFrontendError([diagnose(
                        problem, node, f"unsupported use of operator {operator_name(node)}: "
                                       f"{err}")]) from None
            elif node.op == "output":
                outputs = [env[n] for n in node.args[0] if n is not None]
        return bx.as_results(outputs, builder, function_name)

    return build_function(function_name, arg_types, body, names)
