"""Symbolic evaluation of a `@triton.jit` kernel's body (its records and the analysis of its
accesses are in analysis.py).

    analysis = analyse_kernel(module, "matmul_kernel")
    access = analysis.accesses[0]         # the first tl.load / tl.store, in source order
    access.base, access.strides           # "a_ptr", (stride_am, stride_ak)
    access.origin, access.bounds          # BLOCK_M*pid0*stride_am + BLOCK_K*k*stride_ak, masks
    access.affine, access.reason          # raisable to xt / tile, or why not

The body is walked statement by statement over an explicit stack of frames (no recursion on the
kernel's size): `tl.program_id(axis)` is the symbol `pid<axis>`, a `tl.arange` lane of axis k
the symbol `lane<k>`, sizes and strides their parameters' names, so a pointer is a polynomial
(values.py) and a mask a conjunction of bounds. Loops are `for iv in range(...)` /
`tl.range` / `tl.static_range`: the iv is `start + step*it` over an iteration symbol, and each
value assigned in the body that lived before it is carried. A carried integer starts as
`init + c` for a fresh symbol `c`; when the body adds a loop-invariant `step` to it
(`a_ptrs += BLOCK_K * stride_ak`) `c` is bound to `it*step` once the body is read, and after the
loop the value is `init + trip*step`; any other update leaves `c` opaque, and an access that
depends on it is not affine. A carried block of data (`acc = tl.dot(a, b, acc)`) is a `carried`
node whose next value the Loop records. `if` takes the branch its condition selects when the
condition is known from constexpr values (the parameters' defaults and those given); anything
outside the supported constructs is a SourceError at its file:line:col saying what was
expected.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from axon.dialects.form.intexpr import IntExpr
from axon.frontend.diagnostics import SourceError
from axon.frontend.triton.analysis import Access, Carried, KernelAnalysis, Loop, classify
from axon.frontend.triton.parse import JitKernel, Loc, TritonModule
from axon.frontend.triton.values import (
    BlockPtrValue,
    Bound,
    DataValue,
    DtypeValue,
    FloatValue,
    IndexValue,
    MaskValue,
    NoneValue,
    Shape,
    StrValue,
    TupleValue,
    Value,
    broadcast_shapes,
    shape_text,
)

__all__ = ["analyse_kernel"]

TL = "triton.language."
#: elementwise math of one operand, by `tl` name
MATH_UNARY = frozenset({"exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sigmoid",
                        "abs", "cos", "sin", "erf", "floor", "ceil"})
#: elementwise math of two operands
MATH_BINARY = frozenset({"maximum", "minimum", "fdiv", "div_rn"})
#: reductions and the kind each performs
REDUCTIONS = {"sum": "add", "max": "max", "min": "min"}
#: compiler hints that return their first operand
HINTS = frozenset({"multiple_of", "max_contiguous", "max_constancy"})
#: calls kept for their checks or printing only
NO_VALUE = frozenset({"static_assert", "device_assert", "static_print", "device_print",
                      "debug_barrier"})
#: Triton's dtypes, by `tl` name
DTYPES = frozenset({"int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float8e4nv", "float8e5", "float8e4b15", "float16", "bfloat16",
                    "float32", "float64"})
#: how deep calls of jit helpers may nest
HELPER_DEPTH_MAX = 32
#: the `tl` builtins supported, for diagnostics
SUPPORTED = ("program_id", "num_programs", "arange", "cdiv", "load", "store", "make_block_ptr",
             "advance", "make_tensor_descriptor", "dot", "sum",
             "max", "min", "where", "zeros", "zeros_like", "full", "trans", "broadcast_to",
             "expand_dims", "range", "static_range", *sorted(MATH_UNARY | MATH_BINARY), "fma",
             *sorted(HINTS))
_BINOPS: dict[type[ast.operator], str] = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv", ast.Mod: "mod",
    ast.Div: "truediv", ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor",
    ast.LShift: "shl", ast.RShift: "shr", ast.Pow: "pow", ast.MatMult: "matmul"}
_CMPOPS: dict[type[ast.cmpop], str] = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def analyse_kernel(module: TritonModule, kernel: str | JitKernel,
                   constexprs: Mapping[str, int | bool] | None = None) -> KernelAnalysis:
    """Evaluate `kernel`'s body symbolically and analyse its accesses; SourceError on a
    construct outside the supported set. `constexprs` give values to constexpr parameters for
    the `if`s that test them (defaults are used otherwise); block sizes stay symbols."""
    if isinstance(kernel, str):
        if kernel not in module.kernels:
            raise KeyError(f"no @triton.jit kernel named '{kernel}' in {module.filename}")
        kernel = module.kernels[kernel]
    evaluator = _Evaluator(module, kernel, constexprs or {})
    evaluator.run()
    analysis = KernelAnalysis(module, kernel, {}, evaluator.pids, evaluator.nprogs,
                              evaluator.lanes, evaluator.loops, evaluator.accesses,
                              evaluator.values, evaluator.bindings, evaluator.opaque)
    classify(analysis)
    return analysis


@dataclass
class _Frame:
    stmts: list[ast.stmt]
    loop: Loop | None = None
    locals_: tuple[str, ...] = ()
    pos: int = 0


class _Names:
    """Fresh symbol names that clash with no parameter or module constant."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken:
            name, k = f"{base}_{k}", k + 1
        self.taken.add(name)
        return name


def _assigned(stmts: Sequence[ast.stmt]) -> list[str]:
    """Names stored anywhere in `stmts`, in order of first appearance."""
    names: dict[str, None] = {}
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.setdefault(node.id)
    return list(names)


class _Evaluator:
    """One kernel's symbolic evaluation (see the module docstring)."""

    def __init__(self, module: TritonModule, kernel: JitKernel,
                 constexprs: Mapping[str, int | bool]) -> None:
        self.module, self.kernel = module, kernel
        self.names = _Names({p.name for p in kernel.params} | set(module.constants))
        self.known: dict[str, int] = {}
        for p in kernel.params:
            if p.constexpr and isinstance(p.default_value, (bool, int)):
                self.known[p.name] = int(p.default_value)
        for name, value in constexprs.items():
            self.known[name] = int(value)
        self.constexpr_names = {p.name for p in kernel.params if p.constexpr}
        self.env: dict[str, Value] = {
            p.name: IndexValue((), module.loc(kernel.node), IntExpr.sym(p.name))
            for p in kernel.params}
        self.pids: dict[int, str] = {}
        self.nprogs: dict[int, str] = {}
        self.lanes: list[str] = []
        self.loops: list[Loop] = []
        self.loop_stack: list[Loop] = []
        self.loop_locals: dict[str, int] = {}
        self.accesses: list[Access] = []
        self.values: list[DataValue] = []
        self.bindings: dict[str, IntExpr] = {}
        self.opaque: dict[str, str] = {}
        self.helpers: list[str] = []

    # ---- helpers ------------------------------------------------------------------------------
    def error(self, node: ast.AST, message: str) -> SourceError:
        return self.module.error(node, message)

    def lane(self, axis: int) -> str:
        while len(self.lanes) <= axis:
            self.lanes.append(self.names.fresh(f"lane{len(self.lanes)}"))
        return self.lanes[axis]

    def data(self, op: str, operands: Sequence[Value], shape: Shape, where: ast.AST | Loc,
             **attrs: str) -> DataValue:
        loc = where if isinstance(where, tuple) else self.module.loc(where)
        value = DataValue(shape, loc, op, tuple(operands), dict(attrs),
                          len(self.values), tuple(loop.number for loop in self.loop_stack))
        self.values.append(value)
        return value

    def relabel(self, expr: IntExpr, mapping: Mapping[int, int]) -> IntExpr:
        """`expr` with lane i renamed lane mapping[i]."""
        env = {self.lane(i): IntExpr.sym(self.lane(j)) for i, j in mapping.items() if i != j}
        return expr.substitute(env) if env else expr

    def aligned(self, value: IndexValue | MaskValue, rank: int) -> IndexValue | MaskValue:
        """`value` with its lanes renamed for a broadcast to `rank` dims (right-aligned)."""
        shift = rank - len(value.shape)
        if shift == 0:
            return value
        mapping = {k: k + shift for k in range(len(value.shape))}
        if isinstance(value, IndexValue):
            return IndexValue(value.shape, value.loc, self.relabel(value.expr, mapping))
        return MaskValue(value.shape, value.loc, tuple(
            Bound(self.relabel(b.lhs, mapping), b.op, self.relabel(b.rhs, mapping))
            for b in value.bounds))

    def broadcast(self, node: ast.AST, *values: Value) -> Shape:
        shape: Shape = ()
        for v in values:
            out = broadcast_shapes(shape, v.shape)
            if out is None:
                raise self.error(node, f"cannot broadcast {shape_text(shape)} with "
                                       f"{shape_text(v.shape)}: expected dims that are equal "
                                       "or 1")
            shape = out
        return shape

    def static(self, value: Value) -> bool | None:
        """The truth of a condition when constexpr values decide it, else None."""
        stack: list[tuple[Value, bool]] = [(value, False)]
        truths: dict[int, bool | None] = {}
        while stack:
            v, expanded = stack.pop()
            if isinstance(v, DataValue) and v.op in ("or", "not", "and") and not expanded:
                stack.append((v, True))
                stack.extend((o, False) for o in v.operands)
                continue
            truths[id(v)] = self._static_leaf(v, truths)
        return truths[id(value)]

    def free_constexprs(self, value: Value) -> set[str]:
        """The constexpr parameters without a known value that a condition reads, when it
        reads nothing else that varies (else none)."""
        if isinstance(value, IndexValue):
            names = set(value.expr.substitute(self.known).symbols())
        elif isinstance(value, MaskValue):
            names = {n for b in value.bounds for n in
                     (b.lhs - b.rhs).substitute(self.known).symbols()}
        else:
            return set()
        return names if names <= self.constexpr_names else set()

    def _static_leaf(self, v: Value, truths: Mapping[int, bool | None]) -> bool | None:
        if isinstance(v, IndexValue):
            e = v.expr.substitute(self.known)
            return bool(e.value) if e.is_const else None
        if isinstance(v, MaskValue):
            each = [b.substitute(self.known).truth() for b in v.bounds]
            return False if False in each else True if all(t for t in each) else None
        if isinstance(v, DataValue) and v.op in ("or", "not", "and"):
            parts = [truths[id(o)] for o in v.operands]
            if v.op == "not":
                return None if parts[0] is None else not parts[0]
            if v.op == "or":
                return True if True in parts else None if None in parts else False
            return False if False in parts else None if None in parts else True
        return None

    # ---- statements ---------------------------------------------------------------------------
    def run(self) -> None:
        self.run_body(self.kernel.node.body)

    def run_body(self, body: list[ast.stmt]) -> Value | None:
        """Evaluate a function's statements; the value of its `return` (a jit helper's)."""
        depth = len(self.loop_stack)
        frames = [_Frame(list(body))]
        returned: Value | None = None
        while frames:
            frame = frames[-1]
            if frame.pos == len(frame.stmts):
                frames.pop()
                if frame.loop is not None:
                    self.end_loop(frame.loop, frame.locals_)
                continue
            stmt = frame.stmts[frame.pos]
            frame.pos += 1
            if isinstance(stmt, ast.Return):
                if stmt.value is not None and not self.helpers:
                    raise self.error(stmt.value, "a kernel returns nothing; expected a bare "
                                                 "`return`")
                if len(self.loop_stack) > depth:
                    raise self.error(stmt, "`return` inside a loop is not supported; expected "
                                           "it outside loops")
                if stmt.value is not None:
                    returned = self.expr(stmt.value)
                frames.clear()
                continue
            pushed = self.statement(stmt)
            if pushed is not None:
                frames.append(pushed)
        return returned

    def inline(self, node: ast.Call, helper: JitKernel, vals: list[Value]) -> Value:
        """A call of another `@triton.jit` function of the module: its body evaluated with
        its parameters bound to the arguments (constexpr defaults where none is given)."""
        if helper.name in self.helpers or helper is self.kernel:
            raise self.error(node, f"'{helper.name}' calls itself; expected no recursion")
        if len(self.helpers) >= HELPER_DEPTH_MAX:
            raise self.error(node, f"jit helpers nest more than {HELPER_DEPTH_MAX} deep")
        names = [p.name for p in helper.params]
        args = self.bind(node, vals, names, 0)
        env: dict[str, Value] = {}
        loc = self.module.loc(node)
        for p in helper.params:
            if p.name in args:
                env[p.name] = args[p.name]
            elif isinstance(p.default_value, float):
                env[p.name] = FloatValue((), loc, p.default_value)
            elif isinstance(p.default_value, (bool, int)):
                env[p.name] = IndexValue((), loc, IntExpr.const(int(p.default_value)))
            else:
                raise self.error(node, f"{helper.name} needs its argument '{p.name}'")
        caller, caller_locals = self.env, self.loop_locals
        self.env, self.loop_locals = env, {}
        self.helpers.append(helper.name)
        try:
            returned = self.run_body(helper.node.body)
        finally:
            self.env, self.loop_locals = caller, caller_locals
            self.helpers.pop()
        return returned if returned is not None else NoneValue((), loc)

    def statement(self, stmt: ast.stmt) -> _Frame | None:
        if isinstance(stmt, ast.Expr):
            if not (isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)):
                self.expr(stmt.value)
        elif isinstance(stmt, ast.Assign):
            value = self.expr(stmt.value)
            for target in stmt.targets:
                self.assign(target, value)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is None:
                raise self.error(stmt, "a declaration without a value; expected `name = value`")
            self.assign(stmt.target, self.expr(stmt.value))
        elif isinstance(stmt, ast.AugAssign):
            if not isinstance(stmt.target, ast.Name):
                raise self.error(stmt.target, "expected a name on the left of an augmented "
                                              "assignment")
            current = self.lookup(stmt.target.id, stmt.target)
            self.env[stmt.target.id] = self.binop(_BINOPS[type(stmt.op)], current,
                                                  self.expr(stmt.value), stmt)
        elif isinstance(stmt, ast.For):
            return self.begin_loop(stmt)
        elif isinstance(stmt, ast.If):
            test = self.expr(stmt.test)
            truth = self.static(test)
            if truth is None:
                unknown = sorted(self.free_constexprs(test))
                if unknown:
                    raise self.error(stmt.test, f"the condition depends on constexpr "
                                                f"{', '.join(unknown)}, which has no known "
                                                "value; expected a default or a literal at the "
                                                "launch (or -D NAME=VALUE)")
                raise self.error(stmt.test, "`if` on a value known only at run time is not "
                                            "supported; expected a condition on constexpr "
                                            "parameters with known values")
            return _Frame(list(stmt.body if truth else stmt.orelse))
        elif isinstance(stmt, ast.While):
            raise self.error(stmt, "while loops are not supported; expected `for ... in "
                                   "range(...)` or `tl.range(...)`")
        elif not isinstance(stmt, (ast.Pass, ast.Assert)):
            raise self.error(stmt, f"a {type(stmt).__name__} statement is not supported in a "
                                   "kernel; expected assignments, tl.store, `for` and `if`")
        return None

    def assign(self, target: ast.expr, value: Value) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, TupleValue) \
                and len(value.items) == len(target.elts) \
                and all(isinstance(e, ast.Name) for e in target.elts):
            for e, v in zip(target.elts, value.items, strict=True):
                assert isinstance(e, ast.Name)
                self.env[e.id] = v
            return
        raise self.error(target, "expected a name (or a tuple of names for a tuple of values) "
                                 "on the left of `=`")

    def lookup(self, name: str, node: ast.AST) -> Value:
        if name in self.env:
            return self.env[name]
        if name in self.module.constants:
            literal = self.module.constants[name]
            loc = self.module.loc(node)
            if isinstance(literal, float):
                return FloatValue((), loc, literal)
            return IndexValue((), loc, IntExpr.const(int(literal)))
        if name in self.loop_locals:
            raise self.error(node, f"'{name}' is defined only inside the loop at line "
                                   f"{self.loop_locals[name]}; expected it defined before the "
                                   "loop")
        raise self.error(node, f"unknown name '{name}'")

    def begin_loop(self, stmt: ast.For) -> _Frame:
        if stmt.orelse:
            raise self.error(stmt.orelse[0], "a loop's `else` is not supported")
        if not isinstance(stmt.target, ast.Name):
            raise self.error(stmt.target, "expected one name as the loop variable")
        call = stmt.iter
        q = self.module.qualified(call.func) if isinstance(call, ast.Call) else None
        is_range = isinstance(call, ast.Call) and (
            q in (TL + "range", TL + "static_range")
            or (isinstance(call.func, ast.Name) and call.func.id == "range"
                and "range" not in self.module.aliases))
        if not is_range or not isinstance(call, ast.Call):
            raise self.error(call, "expected `range(...)`, `tl.range(...)` or "
                                   "`tl.static_range(...)` to loop over")
        bounds: list[IntExpr] = []
        for arg in call.args:
            v = self.expr(arg)
            if not isinstance(v, IndexValue) or v.shape:
                raise self.error(arg, "expected an integer scalar as a loop bound")
            bounds.append(v.expr)
        if not 1 <= len(bounds) <= 3:
            raise self.error(call, "expected range(stop), range(start, stop) or "
                                   "range(start, stop, step)")
        zero, one = IntExpr.const(0), IntExpr.const(1)
        start, stop, step = (zero, bounds[0], one) if len(bounds) == 1 else \
            (bounds[0], bounds[1], bounds[2] if len(bounds) == 3 else one)
        if step.is_const and step.value <= 0:
            raise self.error(call, "expected a positive loop step")
        iv = stmt.target.id
        simple = start == zero and step == one
        it = self.names.fresh(iv if simple else f"{iv}_iter")
        trip = stop - start if step == one else (stop - start).ceildiv(step)
        loop = Loop(len(self.loops), iv, it, start, stop, step, trip, self.module.loc(stmt),
                    options={kw.arg or "**": self.module.segment(kw.value)
                             for kw in call.keywords})
        self.loops.append(loop)
        stored = _assigned(stmt.body)
        for name in stored:
            if name not in self.env or name == iv:
                continue
            init = self.env[name]
            if isinstance(init, IndexValue):
                c = self.names.fresh(f"{name}_carry")
                entry: Value = IndexValue(init.shape, init.loc, init.expr + IntExpr.sym(c))
                loop.carried.append(Carried(name, "index", init, entry, (c,), [None]))
            elif isinstance(init, BlockPtrValue) and not init.descriptor:
                cs = tuple(self.names.fresh(f"{name}_carry{d}") for d in range(len(init.dims)))
                entry = init.moved(tuple(o + IntExpr.sym(c) for o, c in
                                         zip(init.offsets, cs, strict=True)))
                loop.carried.append(Carried(name, "block_ptr", init, entry, cs,
                                            [None] * len(cs)))
            elif isinstance(init, (DataValue, FloatValue, MaskValue)):
                entry = self.data("carried", [init], init.shape, stmt, name=name,
                                  loop=str(loop.number))
                loop.carried.append(Carried(name, "data", init, entry))
            else:
                raise self.error(stmt, f"'{name}' holds no block or scalar, so the loop cannot "
                                       "carry it")
            self.env[name] = entry
        locals_ = tuple(n for n in [iv, *stored] if n not in self.env)
        self.env[iv] = IndexValue((), self.module.loc(stmt.target),
                                  start + step * IntExpr.sym(it))
        self.loop_stack.append(loop)
        return _Frame(list(stmt.body), loop, locals_)

    def end_loop(self, loop: Loop, locals_: tuple[str, ...]) -> None:
        # the integer slots: a carried integer, or one offset of a carried block pointer
        slots: list[tuple[str, Carried, int, IntExpr, IntExpr]] = []
        for c in loop.carried:
            end = self.env[c.name]
            same = type(end) is type(c.entry) or (
                c.kind == "data" and isinstance(end, (DataValue, FloatValue, MaskValue)))
            if isinstance(end, BlockPtrValue) and isinstance(c.entry, BlockPtrValue):
                same = (end.base, end.dims, end.strides) == \
                    (c.entry.base, c.entry.dims, c.entry.strides) and not end.descriptor
            if not same or end.shape != c.init.shape:
                raise self.module.error_at(
                    loop.loc,
                    f"'{c.name}' is {_kind(c.init)} of shape {shape_text(c.init.shape)} before "
                    f"the loop and {_kind(end)} of shape {shape_text(end.shape)} at the end of "
                    "its body; expected a loop-carried value to keep its kind and shape")
            c.next = end
            if isinstance(c.entry, IndexValue) and isinstance(end, IndexValue):
                slots.append((c.symbols[0], c, 0, c.entry.expr, end.expr))
            elif isinstance(c.entry, BlockPtrValue) and isinstance(end, BlockPtrValue):
                slots += [(symbol, c, d, c.entry.offsets[d], end.offsets[d])
                          for d, symbol in enumerate(c.symbols)]
        # a slot whose update adds a loop-invariant step has a closed form
        varying = {s[0] for s in slots} | {loop.iteration} | set(self.lanes) | set(self.opaque)
        changed = True
        while changed:
            changed = False
            for symbol, c, d, entry_expr, end_expr in slots:
                if c.steps[d] is not None:
                    continue
                delta = (end_expr - entry_expr).substitute(self.bindings)
                if not delta.symbols() & (varying - self.bindings.keys()):
                    c.steps[d] = delta
                    self.bindings[symbol] = IntExpr.sym(loop.iteration) * delta
                    changed = True
        after: dict[tuple[str, int], IntExpr] = {}
        reassigned: set[str] = set()
        for symbol, c, d, _, end_expr in slots:
            found = c.steps[d]
            if found is not None:
                after[(c.name, d)] = loop.trip * found
                continue
            why = f"'{c.name}', which the loop at line {loop.loc[0]} updates by no " \
                  "loop-invariant step"
            if symbol not in end_expr.symbols():
                reassigned.add(c.name)
                why = f"'{c.name}', which the loop at line {loop.loc[0]} reassigns (after " \
                      "the loop it holds the last iteration's value)"
            out = self.names.fresh(f"{c.name}_out")
            self.opaque[symbol] = self.opaque[out] = why
            after[(c.name, d)] = IntExpr.sym(out)
        for c in loop.carried:
            if isinstance(c.init, IndexValue):
                c.kind = "step" if c.steps[0] is not None else \
                    "last" if c.name in reassigned else "index"
                self.env[c.name] = IndexValue(c.init.shape, c.init.loc,
                                              c.init.expr + after[(c.name, 0)])
            elif isinstance(c.init, BlockPtrValue):
                self.env[c.name] = c.init.moved(tuple(
                    o + after[(c.name, d)] for d, o in enumerate(c.init.offsets)))
        self.loop_stack.pop()
        for c in loop.carried:
            if c.kind == "data":
                assert c.next is not None
                self.env[c.name] = self.data("loop_out", [c.next], c.init.shape,
                                             loop.loc, name=c.name,
                                             loop=str(loop.number))
        for name in locals_:
            self.env.pop(name, None)
            self.loop_locals[name] = loop.loc[0]

    # ---- expressions --------------------------------------------------------------------------
    def expr(self, root: ast.expr) -> Value:
        """The value of `root`, its sub-expressions evaluated over an explicit stack."""
        results: dict[int, Value] = {}
        stack: list[tuple[ast.expr, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            kids = self.children(node)
            if not expanded:
                stack.append((node, True))
                stack.extend((k, False) for k in reversed(kids))
                continue
            results[id(node)] = self.combine(node, [results.pop(id(k)) for k in kids])
        return results[id(root)]

    def callee(self, node: ast.Call) -> str | None:
        q = self.module.qualified(node.func)
        if q is not None and q.startswith(TL):
            return q[len(TL):].removeprefix("math.")
        if q == "triton.cdiv":
            return "cdiv"
        if isinstance(node.func, ast.Name) and node.func.id in ("min", "max", "float") \
                and node.func.id not in self.env:
            return "builtin." + node.func.id
        return None

    def children(self, node: ast.expr) -> list[ast.expr]:
        if isinstance(node, ast.BinOp):
            return [node.left, node.right]
        if isinstance(node, ast.UnaryOp):
            return [node.operand]
        if isinstance(node, ast.BoolOp):
            return list(node.values)
        if isinstance(node, ast.Compare):
            return [node.left, *node.comparators]
        if isinstance(node, ast.IfExp):
            return [node.test, node.body, node.orelse]
        if isinstance(node, (ast.Tuple, ast.List)):
            return list(node.elts)
        if isinstance(node, ast.Subscript):
            return [node.value]
        if isinstance(node, ast.Attribute):
            return [] if self.module.qualified(node) is not None else [node.value]
        if isinstance(node, ast.Call):
            args = [*node.args, *(kw.value for kw in node.keywords)]
            if self.callee(node) is None and isinstance(node.func, ast.Attribute) \
                    and self.module.qualified(node.func) is None:
                return [node.func.value, *args]
            return args
        return []

    def combine(self, node: ast.expr, vals: list[Value]) -> Value:
        loc = self.module.loc(node)
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, (bool, int)):
                return IndexValue((), loc, IntExpr.const(int(v)))
            if isinstance(v, float):
                return FloatValue((), loc, v)
            if isinstance(v, str):
                return StrValue((), loc, v)
            if v is None:
                return NoneValue((), loc)
            raise self.error(node, f"a constant {v!r} is not supported; expected a number, a "
                                   "bool or a string")
        if isinstance(node, ast.Name):
            return self.lookup(node.id, node)
        if isinstance(node, (ast.Tuple, ast.List)):
            return TupleValue((), loc, tuple(vals))
        if isinstance(node, ast.BinOp):
            return self.binop(_BINOPS[type(node.op)], vals[0], vals[1], node)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node, vals[0])
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And) and all(
                    isinstance(v, (IndexValue, MaskValue)) for v in vals):
                masks = [v if isinstance(v, MaskValue) else MaskValue(
                    v.shape, v.loc, (Bound(v.expr, "!=", IntExpr.const(0)),))
                    for v in vals if isinstance(v, (IndexValue, MaskValue))]
                return self.conjunction(node, masks)
            op = "and" if isinstance(node.op, ast.And) else "or"
            return self.data(op, vals, self.broadcast(node, *vals), node)
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.error(node, "chained comparisons are not supported; expected one "
                                       "comparison (join several with &)")
            return self.compare(node, _CMPOPS[type(node.ops[0])], vals[0], vals[1])
        if isinstance(node, ast.IfExp):
            truth = self.static(vals[0])
            if truth is None:
                raise self.error(node.test, "expected a condition on constexpr parameters "
                                            "with known values (use tl.where for a runtime "
                                            "choice)")
            return vals[1] if truth else vals[2]
        if isinstance(node, ast.Subscript):
            return self.subscript(node, vals[0])
        if isinstance(node, ast.Attribute):
            return self.attribute(node, vals)
        if isinstance(node, ast.Call):
            return self.call(node, vals)
        raise self.error(node, f"a {type(node).__name__} expression is not supported in a "
                               "kernel; expected arithmetic, comparisons, tl.* calls and "
                               "[:, None] indexing")

    def attribute(self, node: ast.Attribute, vals: list[Value]) -> Value:
        loc = self.module.loc(node)
        q = self.module.qualified(node)
        if q is not None:
            name = q.removeprefix(TL)
            if q.startswith(TL) and name in DTYPES:
                return DtypeValue((), loc, name)
            raise self.error(node, f"'{self.module.segment(node)}' is not supported here; "
                                   "expected a dtype such as tl.float32")
        (value,) = vals
        if node.attr == "T":
            return self.transpose(node, value)
        raise self.error(node, f"attribute '.{node.attr}' is not supported; expected .to(...) "
                               "or .T")

    def unary(self, node: ast.UnaryOp, v: Value) -> Value:
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.USub):
            if isinstance(v, IndexValue):
                return IndexValue(v.shape, v.loc, -v.expr)
            if isinstance(v, FloatValue):
                return FloatValue(v.shape, v.loc, -v.value)
            return self.data("neg", [v], v.shape, node)
        if isinstance(node.op, ast.Not):
            if isinstance(v, IndexValue):
                return MaskValue(v.shape, v.loc, (Bound(v.expr, "==", IntExpr.const(0)),))
            if isinstance(v, MaskValue) and len(v.bounds) == 1:
                (b,) = v.bounds
                return MaskValue(v.shape, v.loc, (Bound(b.lhs, _NEGATED[b.op], b.rhs),))
            return self.data("not", [v], v.shape, node)
        return self.data("invert", [v], v.shape, node)

    def binop(self, op: str, a: Value, b: Value, node: ast.AST) -> Value:
        shape = self.broadcast(node, a, b)
        if isinstance(a, IndexValue) and isinstance(b, IndexValue) \
                and op in ("add", "sub", "mul", "floordiv", "mod"):
            x = self.aligned(a, len(shape))
            y = self.aligned(b, len(shape))
            assert isinstance(x, IndexValue) and isinstance(y, IndexValue)
            loc = self.module.loc(node)
            if op == "add":
                return IndexValue(shape, loc, x.expr + y.expr)
            if op == "sub":
                return IndexValue(shape, loc, x.expr - y.expr)
            if op == "mul":
                return IndexValue(shape, loc, x.expr * y.expr)
            try:
                out = x.expr.floordiv(y.expr) if op == "floordiv" else x.expr.mod(y.expr)
            except ZeroDivisionError:
                raise self.error(node, "division by zero") from None
            return IndexValue(shape, loc, out)
        if op == "and" and isinstance(a, MaskValue) and isinstance(b, MaskValue):
            return self.conjunction(node, [a, b])
        return self.data(op, [a, b], shape, node)

    def conjunction(self, node: ast.AST, masks: Sequence[MaskValue]) -> MaskValue:
        shape = self.broadcast(node, *masks)
        bounds: list[Bound] = []
        for m in masks:
            aligned = self.aligned(m, len(shape))
            assert isinstance(aligned, MaskValue)
            bounds.extend(aligned.bounds)
        return MaskValue(shape, self.module.loc(node), tuple(bounds))

    def compare(self, node: ast.AST, op: str, a: Value, b: Value) -> Value:
        shape = self.broadcast(node, a, b)
        if isinstance(a, IndexValue) and isinstance(b, IndexValue):
            x = self.aligned(a, len(shape))
            y = self.aligned(b, len(shape))
            assert isinstance(x, IndexValue) and isinstance(y, IndexValue)
            lhs, rhs = x.expr, y.expr
            if op in (">", ">="):  # bounds read `index < limit`
                lhs, rhs, op = rhs, lhs, {">": "<", ">=": "<="}[op]
            return MaskValue(shape, self.module.loc(node), (Bound(lhs, op, rhs),))
        return self.data(op, [a, b], shape, node)

    def subscript(self, node: ast.Subscript, value: Value) -> Value:
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        mapping: dict[int, int] = {}
        shape: list[IntExpr] = []
        axis = 0
        for part in parts:
            if isinstance(part, ast.Constant) and part.value is None:
                shape.append(IntExpr.const(1))
            elif isinstance(part, ast.Slice) and part.lower is None and part.upper is None \
                    and part.step is None and axis < len(value.shape):
                mapping[axis] = len(shape)
                shape.append(value.shape[axis])
                axis += 1
            else:
                raise self.error(part, "expected `:` or `None` in a block's index (such as "
                                       "[:, None])")
        while axis < len(value.shape):
            mapping[axis] = len(shape)
            shape.append(value.shape[axis])
            axis += 1
        loc = self.module.loc(node)
        if isinstance(value, IndexValue):
            return IndexValue(tuple(shape), loc, self.relabel(value.expr, mapping))
        if isinstance(value, MaskValue):
            return MaskValue(tuple(shape), loc, tuple(
                Bound(self.relabel(b.lhs, mapping), b.op, self.relabel(b.rhs, mapping))
                for b in value.bounds))
        if isinstance(value, DataValue):
            return self.data("expand_dims", [value], tuple(shape), node,
                             index=self.module.segment(node.slice))
        raise self.error(node, "expected a block before [...]")

    def transpose(self, node: ast.AST, value: Value) -> Value:
        if len(value.shape) != 2:
            raise self.error(node, f"expected a 2-D block to transpose, not "
                                   f"{shape_text(value.shape)}")
        shape = (value.shape[1], value.shape[0])
        if isinstance(value, IndexValue):
            return IndexValue(shape, self.module.loc(node), self.relabel(value.expr,
                                                                         {0: 1, 1: 0}))
        return self.data("trans", [value], shape, node)

    # ---- calls --------------------------------------------------------------------------------
    def bind(self, node: ast.Call, vals: list[Value], names: Sequence[str], required: int,
             skip: int = 0) -> dict[str, Value]:
        """The call's arguments by parameter name (`skip` leading values are a receiver)."""
        what = self.module.segment(node.func)
        positional = vals[skip:skip + len(node.args)]
        if len(positional) > len(names):
            raise self.error(node.args[len(names)], f"{what} takes at most {len(names)} "
                                                    "positional arguments")
        out = dict(zip(names, positional, strict=False))
        for kw, v in zip(node.keywords, vals[skip + len(node.args):], strict=True):
            if kw.arg is None or kw.arg not in names:
                raise self.error(kw, f"{what} has no parameter "
                                           f"'{kw.arg or '**'}'; expected one of "
                                           f"{', '.join(names)}")
            if kw.arg in out:
                raise self.error(kw, f"{what} gets '{kw.arg}' twice")
            out[kw.arg] = v
        for name in names[:required]:
            if name not in out:
                raise self.error(node, f"{what} needs its argument '{name}'")
        return out

    def scalar_int(self, node: ast.AST, value: Value | None, what: str) -> IntExpr:
        if not isinstance(value, IndexValue) or value.shape:
            raise self.error(node, f"expected an integer scalar as {what}")
        return value.expr

    def static_int(self, node: ast.AST, value: Value | None, what: str) -> int:
        e = self.scalar_int(node, value, what).substitute(self.known)
        if not e.is_const:
            raise self.error(node, f"expected a constant integer as {what}")
        return e.value

    def shape_of(self, node: ast.AST, value: Value | None) -> Shape:
        items = value.items if isinstance(value, TupleValue) else (value,)
        return tuple(self.scalar_int(node, v, "a block dim") for v in items)

    def call(self, node: ast.Call, vals: list[Value]) -> Value:
        name = self.callee(node)
        if name is None:
            if isinstance(node.func, ast.Attribute) and self.module.qualified(node.func) is None:
                return self.method(node, node.func.attr, vals)
            q = self.module.qualified(node.func)
            what = q or self.module.segment(node.func)
            if isinstance(node.func, ast.Name) and node.func.id in self.module.kernels \
                    and node.func.id not in self.env:
                return self.inline(node, self.module.kernels[node.func.id], vals)
            raise self.error(node, f"'{what}' is not supported in a kernel; expected one of "
                                   f"tl.{', tl.'.join(SUPPORTED)}")
        handler: Callable[[ast.Call, str, list[Value]], Value] | None = {
            "program_id": self.program_id, "num_programs": self.program_id,
            "arange": self.arange, "cdiv": self.cdiv, "load": self.load, "store": self.store,
            "dot": self.dot, "where": self.where, "zeros": self.full, "full": self.full,
            "zeros_like": self.full, "trans": self.trans_call, "permute": self.trans_call,
            "broadcast_to": self.broadcast_to, "expand_dims": self.expand_dims,
            "builtin.min": self.min_max, "builtin.max": self.min_max,
            "builtin.float": self.float_call, "fma": self.math,
            "make_block_ptr": self.make_block_ptr, "make_tensor_descriptor": self.make_block_ptr,
            "advance": self.advance,
        }.get(name)
        if handler is not None:
            return handler(node, name, vals)
        if name in REDUCTIONS:
            return self.reduce(node, name, vals)
        if name in MATH_UNARY or name in MATH_BINARY:
            return self.math(node, name, vals)
        if name in HINTS:
            return self.bind(node, vals, ["input", "values"], 2)["input"]
        if name in NO_VALUE:
            return NoneValue((), self.module.loc(node))
        if name == "cast":
            args = self.bind(node, vals, ["input", "dtype", "fp_downcast_rounding", "bitcast"], 2)
            return self.convert(node, args["input"], args["dtype"])
        raise self.error(node, f"tl.{name} is not supported; expected one of "
                               f"tl.{', tl.'.join(SUPPORTED)}")

    def method(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        receiver = vals[0]
        if isinstance(receiver, BlockPtrValue) and receiver.descriptor \
                and name in ("load", "store"):
            return self.descriptor_access(node, name, vals)
        if name == "to":
            args = self.bind(node, vals, ["dtype", "fp_downcast_rounding", "bitcast"], 1, skip=1)
            return self.convert(node, receiver, args["dtype"])
        if name in REDUCTIONS:
            return self.reduce(node, name, vals, receiver)
        if name == "trans":
            return self.transpose(node, receiver)
        raise self.error(node.func, f"method '.{name}' is not supported; expected .to(dtype), "
                                    ".sum/.max/.min(axis) or .trans()")

    def convert(self, node: ast.Call, value: Value, dtype: Value | None) -> Value:
        if not isinstance(dtype, DtypeValue):
            raise self.error(node, "expected a dtype such as tl.float32")
        if isinstance(value, IndexValue) and dtype.name.lstrip("u").startswith("int"):
            return value
        return self.data("to", [value], value.shape, node, dtype=dtype.name)

    def program_id(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        axis = self.static_int(node, self.bind(node, vals, ["axis"], 1)["axis"], "the axis")
        if axis not in (0, 1, 2):
            raise self.error(node, f"axis {axis} is not 0, 1 or 2")
        table, prefix = (self.pids, "pid") if name == "program_id" else (self.nprogs, "nprog")
        if axis not in table:
            table[axis] = self.names.fresh(f"{prefix}{axis}")
        return IndexValue((), self.module.loc(node), IntExpr.sym(table[axis]))

    def arange(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        args = self.bind(node, vals, ["start", "end"], 2)
        start = self.scalar_int(node, args["start"], "tl.arange's start")
        end = self.scalar_int(node, args["end"], "tl.arange's end")
        for bound in (start, end):
            if not bound.symbols() <= self.constexpr_names:
                raise self.error(node, f"tl.arange's bounds must be constexpr; {bound} is not")
        return IndexValue((end - start,), self.module.loc(node), start + IntExpr.sym(self.lane(0)))

    def cdiv(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        args = self.bind(node, vals, ["x", "div"], 2)
        x = self.scalar_int(node, args["x"], "cdiv's dividend")
        d = self.scalar_int(node, args["div"], "cdiv's divisor")
        if d.is_const and d.value <= 0:
            raise self.error(node, "expected a positive divisor")
        return IndexValue((), self.module.loc(node), x.ceildiv(d))

    def min_max(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        if len(vals) != 2 or node.keywords:
            raise self.error(node, f"expected {name[8:]}(a, b) of two integer scalars")
        a = self.scalar_int(node, vals[0], "an operand")
        b = self.scalar_int(node, vals[1], "an operand")
        return IndexValue((), self.module.loc(node), a.min(b) if name == "builtin.min"
                          else a.max(b))

    def float_call(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        if len(vals) != 1 or not isinstance(vals[0], StrValue) \
                or vals[0].text.strip().lower() not in ("inf", "-inf", "nan", "+inf"):
            raise self.error(node, "expected float(\"inf\"), float(\"-inf\") or float(\"nan\")")
        return FloatValue((), self.module.loc(node), float(vals[0].text))

    def full(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        if name == "zeros_like":
            args = self.bind(node, vals, ["input", "dtype"], 1)
            return self.data("full", [], args["input"].shape, node, value="0")
        names = ["shape", "dtype"] if name == "zeros" else ["shape", "value", "dtype"]
        args = self.bind(node, vals, names, len(names))
        dtype = args["dtype"]
        if not isinstance(dtype, DtypeValue):
            raise self.error(node, "expected a dtype such as tl.float32")
        fill = args.get("value")
        if fill is None:
            text = "0"
        elif isinstance(fill, FloatValue):
            text = repr(fill.value)
        elif isinstance(fill, IndexValue) and not fill.shape:
            text = str(fill.expr)
        else:
            raise self.error(node, "expected a scalar fill value")
        return self.data("full", [], self.shape_of(node, args["shape"]), node, value=text,
                         dtype=dtype.name)

    def load(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        args = self.bind(node, vals, ["pointer", "mask", "other", "boundary_check",
                                      "padding_option", "cache_modifier", "eviction_policy",
                                      "volatile"], 1)
        pointer, mask, other = args["pointer"], _present(args.get("mask")), \
            _present(args.get("other"))
        via = "pointer"
        if isinstance(pointer, BlockPtrValue):
            if mask is not None or other is not None or pointer.descriptor:
                raise self.error(node, "a block pointer's load takes boundary_check and "
                                       "padding_option, not mask and other")
            via = "block_ptr"
            pointer, mask, other = self.through_block_ptr(node, pointer, pointer.offsets,
                                                          args.get("boundary_check"),
                                                          args.get("padding_option"))
        return self.record_load(node, pointer, mask, other, via)

    def record_load(self, node: ast.Call, pointer: Value, mask: Value | None,
                    other: Value | None, via: str) -> Value:
        self.check_block(node, pointer, mask, other)
        self.accesses.append(Access("load", self.module.loc(node), pointer.shape, pointer,
                                    mask, other, None,
                                    tuple(loop.number for loop in self.loop_stack), via,
                                    len(self.values)))
        operands = [v for v in (pointer, mask, other) if v is not None]
        return self.data("load", operands, pointer.shape, node,
                         access=str(len(self.accesses) - 1))

    def store(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        args = self.bind(node, vals, ["pointer", "value", "mask", "boundary_check",
                                      "cache_modifier", "eviction_policy"], 2)
        pointer, value, mask = args["pointer"], args["value"], _present(args.get("mask"))
        via = "pointer"
        if isinstance(pointer, BlockPtrValue):
            if mask is not None or pointer.descriptor:
                raise self.error(node, "a block pointer's store takes boundary_check, not mask")
            via = "block_ptr"
            pointer, mask, _ = self.through_block_ptr(node, pointer, pointer.offsets,
                                                      args.get("boundary_check"), None)
        return self.record_store(node, pointer, value, mask, via)

    def record_store(self, node: ast.Call, pointer: Value, value: Value, mask: Value | None,
                     via: str) -> Value:
        self.check_block(node, pointer, mask, value)
        self.accesses.append(Access("store", self.module.loc(node), pointer.shape, pointer,
                                    mask, None, value,
                                    tuple(loop.number for loop in self.loop_stack), via,
                                    len(self.values)))
        return NoneValue((), self.module.loc(node))

    def through_block_ptr(self, node: ast.Call, ptr: BlockPtrValue,
                          offsets: Sequence[IntExpr], checks: Value | None,
                          padding: Value | None) -> tuple[IndexValue, MaskValue | None,
                                                          FloatValue | None]:
        """A block pointer's access as pointer arithmetic: `base + sum of stride_d *
        (offset_d + lane_d)`, masked by `offset_d + lane_d < dim_d` on the checked dims."""
        rank = len(ptr.dims)
        checked: list[int] = []
        if checks is not None and not isinstance(checks, NoneValue):
            items = checks.items if isinstance(checks, TupleValue) else (checks,)
            checked = [self.static_int(node, c, "a checked dim") for c in items]
            if any(not 0 <= d < rank for d in checked):
                raise self.error(node, f"boundary_check names a dim outside 0..{rank - 1}")
        lanes = [o + IntExpr.sym(self.lane(d)) for d, o in enumerate(offsets)]
        expr = ptr.base
        for stride, index in zip(ptr.strides, lanes, strict=True):
            expr = expr + stride * index
        loc = self.module.loc(node)
        mask = MaskValue(ptr.shape, loc, tuple(Bound(lanes[d], "<", ptr.dims[d])
                                               for d in sorted(set(checked)))) \
            if checked else None
        other: FloatValue | None = None
        if isinstance(padding, StrValue) and padding.text in ("zero", "nan"):
            other = FloatValue((), loc, 0.0 if padding.text == "zero" else float("nan"))
        elif padding is not None and not isinstance(padding, NoneValue) and not (
                isinstance(padding, StrValue) and padding.text == ""):
            raise self.error(node, 'expected padding_option "zero" or "nan"')
        return IndexValue(ptr.shape, loc, expr), mask, other

    def ints(self, node: ast.AST, value: Value | None, what: str) -> tuple[IntExpr, ...]:
        """A tuple (or list) of integer scalars."""
        items = value.items if isinstance(value, TupleValue) else (value,)
        return tuple(self.scalar_int(node, v, what) for v in items)

    def make_block_ptr(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        descriptor = name == "make_tensor_descriptor"
        names = ["base", "shape", "strides", "block_shape", "padding_option"] if descriptor \
            else ["base", "shape", "strides", "offsets", "block_shape", "order"]
        args = self.bind(node, vals, names, 4 if descriptor else 6)
        base = self.scalar_int(node, args["base"], "the base pointer")
        dims = self.ints(node, args["shape"], "a tensor dim")
        strides = self.ints(node, args["strides"], "a stride")
        block = self.shape_of(node, args["block_shape"])
        offsets = (IntExpr.const(0),) * len(dims) if descriptor \
            else self.ints(node, args["offsets"], "an offset")
        order: tuple[int, ...] = ()
        if not descriptor:
            given = args["order"]
            items = given.items if isinstance(given, TupleValue) else (given,)
            order = tuple(self.static_int(node, v, "a dim of the order") for v in items)
        if not len(dims) == len(strides) == len(offsets) == len(block):
            raise self.error(node, f"{len(dims)} dims, {len(strides)} strides, {len(offsets)} "
                                   f"offsets and a block of rank {len(block)}; expected one "
                                   "of each per dim")
        return BlockPtrValue(block, self.module.loc(node), base, dims, strides, offsets, order,
                             descriptor)

    def advance(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        args = self.bind(node, vals, ["base", "offsets"], 2)
        ptr = args["base"]
        if not isinstance(ptr, BlockPtrValue) or ptr.descriptor:
            raise self.error(node, "expected a block pointer (tl.make_block_ptr) to advance")
        delta = self.ints(node, args["offsets"], "an offset")
        if len(delta) != len(ptr.offsets):
            raise self.error(node, f"{len(delta)} offsets for a block pointer of rank "
                                   f"{len(ptr.offsets)}")
        return ptr.moved(tuple(o + d for o, d in zip(ptr.offsets, delta, strict=True)))

    def descriptor_access(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        desc = vals[0]
        assert isinstance(desc, BlockPtrValue)
        names = ["offsets"] if name == "load" else ["offsets", "value"]
        args = self.bind(node, vals, names, len(names), skip=1)
        offsets = self.ints(node, args["offsets"], "an offset")
        if len(offsets) != len(desc.dims):
            raise self.error(node, f"{len(offsets)} offsets for a descriptor of rank "
                                   f"{len(desc.dims)}")
        zero = StrValue((), desc.loc, "zero")
        every = TupleValue((), desc.loc, tuple(IndexValue((), desc.loc, IntExpr.const(d))
                                               for d in range(len(desc.dims))))
        pointer, mask, other = self.through_block_ptr(node, desc, offsets, every,
                                                      zero if name == "load" else None)
        if name == "load":
            return self.record_load(node, pointer, mask, other, "descriptor")
        return self.record_store(node, pointer, args["value"], mask, "descriptor")

    def check_block(self, node: ast.Call, pointer: Value, *others: Value | None) -> None:
        if not isinstance(pointer, (IndexValue, DataValue)):
            raise self.error(node.args[0] if node.args else node,
                             "expected a pointer or a block of pointers")
        for other in others:
            if other is None or isinstance(other, NoneValue):
                continue
            if broadcast_shapes(pointer.shape, other.shape) != pointer.shape:
                raise self.error(node, f"a block of shape {shape_text(other.shape)} does not "
                                       f"broadcast to the pointers' {shape_text(pointer.shape)}")

    def dot(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        args = self.bind(node, vals, ["input", "other", "acc", "input_precision",
                                      "allow_tf32", "max_num_imprecise_acc", "out_dtype"], 2)
        a, b, acc = args["input"], args["other"], _present(args.get("acc"))
        if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
            raise self.error(node, f"tl.dot of {shape_text(a.shape)} and "
                                   f"{shape_text(b.shape)}: expected [M, K] and [K, N] blocks")
        shape = (a.shape[0], b.shape[1])
        if acc is not None and acc.shape != shape:
            raise self.error(node, f"the accumulator is {shape_text(acc.shape)}; expected "
                                   f"{shape_text(shape)}")
        return self.data("dot", [v for v in (a, b, acc) if v is not None], shape, node)

    def reduce(self, node: ast.Call, name: str, vals: list[Value],
               receiver: Value | None = None) -> Value:
        skip = 0 if receiver is None else 1
        names = ["axis", "keep_dims"] if receiver is not None else ["input", "axis", "keep_dims"]
        if name in ("max", "min"):
            names += ["return_indices", "return_indices_tie_break_left"]
        args = self.bind(node, vals, names, 0 if receiver is not None else 1, skip=skip)
        x = receiver if receiver is not None else args["input"]
        if args.get("return_indices") is not None and self.static(args["return_indices"]):
            raise self.error(node, "return_indices is not supported")
        keep = args.get("keep_dims")
        keep_dims = bool(keep is not None and self.static(keep))
        axis_value = _present(args.get("axis"))
        if axis_value is None:
            shape: Shape = tuple(IntExpr.const(1) for _ in x.shape) if keep_dims else ()
            return self.data("reduce", [x], shape, node, kind=REDUCTIONS[name], axis="None")
        axis = self.static_int(node, axis_value, "the axis")
        if not -len(x.shape) <= axis < len(x.shape):
            raise self.error(node, f"axis {axis} is not a dim of a block of shape "
                                   f"{shape_text(x.shape)}")
        axis %= len(x.shape)
        shape = tuple(IntExpr.const(1) if k == axis else d for k, d in enumerate(x.shape)
                      if keep_dims or k != axis)
        return self.data("reduce", [x], shape, node, kind=REDUCTIONS[name], axis=str(axis))

    def where(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        args = self.bind(node, vals, ["condition", "x", "y"], 3)
        operands = [args["condition"], args["x"], args["y"]]
        return self.data("where", operands, self.broadcast(node, *operands), node)

    def math(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        arity = 1 if name in MATH_UNARY else 3 if name == "fma" else 2
        names = ["x", "y", "z"][:arity]
        args = self.bind(node, vals, names + (["propagate_nan"] if arity == 2 else []), arity)
        operands = [args[n] for n in names]
        shape = self.broadcast(node, *operands)
        if name in ("minimum", "maximum") and all(isinstance(v, IndexValue) for v in operands):
            # integers: the exact min / max of the index expressions (a loop bound cut to a
            # diagonal, `tl.minimum(L, BLOCK_M*(pid + 1))`, stays a bound the analysis reads)
            x, y = (self.aligned(v, len(shape)) for v in operands)  # type: ignore[arg-type]
            assert isinstance(x, IndexValue) and isinstance(y, IndexValue)
            expr = x.expr.min(y.expr) if name == "minimum" else x.expr.max(y.expr)
            return IndexValue(shape, self.module.loc(node), expr)
        return self.data(name, operands, shape, node)

    def trans_call(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        args = self.bind(node, vals, ["input", "dims"], 1)
        dims = args.get("dims")
        if dims is not None and not isinstance(dims, NoneValue):
            order = [self.static_int(node, d, "a dim") for d in
                     (dims.items if isinstance(dims, TupleValue) else (dims,))]
            if order != [1, 0]:
                raise self.error(node, "expected a 2-D transpose (dims (1, 0))")
        return self.transpose(node, args["input"])

    def broadcast_to(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        args = self.bind(node, vals, ["input", "shape"], 2)
        x, shape = args["input"], self.shape_of(node, args["shape"])
        if broadcast_shapes(x.shape, shape) != shape:
            raise self.error(node, f"cannot broadcast {shape_text(x.shape)} to "
                                   f"{shape_text(shape)}")
        if isinstance(x, (IndexValue, MaskValue)):
            aligned = self.aligned(x, len(shape))
            if isinstance(aligned, IndexValue):
                return IndexValue(shape, self.module.loc(node), aligned.expr)
            return MaskValue(shape, self.module.loc(node), aligned.bounds)
        return self.data("broadcast_to", [x], shape, node)

    def expand_dims(self, node: ast.Call, name: str, vals: list[Value]) -> Value:
        args = self.bind(node, vals, ["input", "axis"], 2)
        x = args["input"]
        axis = self.static_int(node, args["axis"], "the axis")
        if not -len(x.shape) - 1 <= axis <= len(x.shape):
            raise self.error(node, f"axis {axis} is out of range")
        axis %= len(x.shape) + 1
        mapping = {k: k if k < axis else k + 1 for k in range(len(x.shape))}
        shape = (*x.shape[:axis], IntExpr.const(1), *x.shape[axis:])
        if isinstance(x, IndexValue):
            return IndexValue(shape, self.module.loc(node), self.relabel(x.expr, mapping))
        return self.data("expand_dims", [x], shape, node, axis=str(axis))


def _present(value: Value | None) -> Value | None:
    return None if value is None or isinstance(value, NoneValue) else value


def _kind(value: Value) -> str:
    return "an integer" if isinstance(value, IndexValue) else "a mask" \
        if isinstance(value, MaskValue) else "a block pointer" \
        if isinstance(value, BlockPtrValue) else "data"
