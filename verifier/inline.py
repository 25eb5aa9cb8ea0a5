"""Symbolic inlining: a `func.func` of `ax` ops becomes one term per output element.

Each op's meaning is read from `op.generic_form()` only: parallel dims are bound to the index at
which the consumer reads, reads of operands recurse into their producers, reductions become
canonical sums (`sums.py`) or reduction atoms, derived scalar functions are `expand()`ed into
primitives. Function parameters become tensor atoms named by position (`a0`, `a1`, ...), so two
functions with the same signature are compared on the same inputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.generic_form import GenericForm, Instance, LoopDim, instantiate
from axon.dialects.form.interface import generic_form, has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import (
    Call,
    Const,
    Index,
    Read,
    Reduced,
    ScalarExpr,
    expand,
    map_index,
    substitute,
)
from axon.dialects.form.scalar import reads as form_reads
from axon.dialects.tile import ForOp, KernelOp, invariant_forms
from axon.verifier import kernels
from axon.verifier import terms as T
from axon.verifier.budget import Unsupported
from axon.verifier.indices import Ranges, decide, pin, simplify
from axon.verifier.sums import fold, fresh, make_reduce, make_sum

Value = T.Poly | T.Bool


@dataclass(frozen=True)
class Output:
    """One result of a function: its shape, dtype and its element at symbolic `index`."""

    shape: tuple[IntExpr, ...]
    dtype: str
    index: tuple[str, ...]
    value: Value


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_size_names(func: FuncOp, form: Callable[[Operation], GenericForm]) -> None:
    """Every size symbol of `func` (its types and its ops' forms) is an identifier.

    The verifier's own variables start with `$` (`terms.INTERNAL`), which no identifier has, so
    this check is what keeps the two namespaces apart: a program can never name a size after a
    loop variable of the encoding (which would capture it and make range constraints vacuous).
    """
    names: set[str] = set()
    for t in [*func.function_type.inputs.data, *func.function_type.outputs.data]:
        if isinstance(t, TensorType):
            names |= {s for d in t.shape for s in d.symbols()}
    for op in func.walk():
        if has_form(op):
            names |= form(op).size_symbols()
            names |= {s for r in op.results if isinstance(r.type, TensorType)
                      for d in r.type.shape for s in d.symbols()}
    bad = sorted(n for n in names if not _IDENTIFIER.fullmatch(n))
    if bad:
        raise Unsupported(f"@{func.sym_name.data}: size symbol(s) {', '.join(bad)} are not "
                          "identifiers")


def signature(func: FuncOp) -> list[TensorType]:
    types = list(func.function_type.inputs.data)
    for i, t in enumerate(types):
        if not isinstance(t, TensorType):
            raise Unsupported(f"@{func.sym_name.data}: parameter #{i} has type {t}, not !ax.tensor")
    return types  # type: ignore[return-value]


def inline_function(func: FuncOp, inductive: frozenset[ForOp] = frozenset(), tag: str = ""
                    ) -> list[Output]:
    """The element of every result at index `$o<k>_<i>`, as a term.

    Precondition, checked: `func` is straight-line, one block of form ops and tiled kernels
    (`kernels.py` says which it reads) ending in `func.return`. Loops (`scf.for`, loops inside
    kernels) are not read yet; a function with them is Unsupported, never misread. A loop that
    states an invariant is read through it only when it is in `inductive`: the loops whose
    induction obligations (`induction.py`) the caller has proved. `tag` keeps the atoms of
    carried values apart when two functions are compared (each function its own)."""
    if len(func.body.blocks) != 1 or any(op.regions and not isinstance(op, KernelOp)
                                         for op in func.body.block.ops):
        raise Unsupported(f"@{func.sym_name.data}: the verifier reads straight-line functions "
                          "(one block, no ops with regions but tiled kernels)")
    for op in func.body.block.ops:
        if isinstance(op, KernelOp):
            kernels.check_readable(op)
    inliner = Inliner(inductive, tag=tag)
    check_size_names(func, inliner.form)
    ret = func.body.block.last_op
    if not isinstance(ret, ReturnOp):
        raise Unsupported(f"@{func.sym_name.data} does not end in func.return")
    outputs = []
    for k, value in enumerate(ret.arguments):
        t = value.type
        if not isinstance(t, TensorType):
            raise Unsupported(f"@{func.sym_name.data}: result #{k} is not an !ax.tensor")
        names = tuple(f"{T.OUTPUT_INDEX}{k}_{i}" for i in range(t.rank))
        ranges = {n: (IntExpr.const(0), d) for n, d in zip(names, t.shape, strict=True)}
        idx = tuple(IntExpr.sym(n) for n in names)
        outputs.append(Output(t.shape, t.dtype, names, inliner.value(value, idx, ranges)))
    return outputs


@dataclass(frozen=True, eq=False)
class Def:
    """Auxiliary tensor #`number` of a loop's `defs`: what an invariant reads that no SSA value
    holds (one object per def and inliner, so it keys the memo by identity like a value)."""

    loop: ForOp
    number: int


#: what a demand reads: an SSA value, or a def of a loop's invariant
Target = SSAValue | Def
#: program ids of the kernel a value is read in (and the ivs of the loops it is read in),
#: replaced by what they are at the element read
ProgramEnv = tuple[tuple[str, IntExpr], ...]
Demand = tuple[Target, tuple[IntExpr, ...], Ranges, ProgramEnv]


@dataclass
class _Plan:
    """One form's element at one index, before its operands' terms are known: the form bound
    at the index (`instantiate`: reduced dims under fresh binders), the ranges of every loop
    variable in scope, and the operand reads the body makes."""

    form: GenericForm
    instance: Instance
    ranges: Ranges
    reads: dict[Read, Demand]


class Inliner:
    """Terms of values at symbolic indices, memoized by (value, index).

    The program is walked with an explicit stack of demands, never by recursion, so a chain of
    thousands of ops inlines without touching Python's recursion limit. A loop variable has one
    range wherever it occurs (output indices and fresh binders are unique), so the memo may ignore
    the ranges a demand comes with.

    Loops that state an invariant: a carried value (the loop body's block argument) read where
    the loop's iv is `K` is the value after K iterations: the start when K is 0, else the
    invariant's form at K (`hypotheses`: the loops whose invariant may be assumed, the loop being
    proved among them), or, where the invariant says nothing of it, an uninterpreted atom of K,
    the program and the element. A loop's result is its carried value at K = extent, read so
    only for the loops in `inductive` (their obligations proved).
    """

    def __init__(self, inductive: frozenset[ForOp] = frozenset(),
                 hypotheses: frozenset[ForOp] = frozenset(), tag: str = "") -> None:
        self.memo: dict[tuple[int, str], Value] = {}
        self.forms: dict[Operation, GenericForm] = {}
        self.inductive = inductive
        self.hypotheses = hypotheses | inductive
        self._stated: dict[ForOp, tuple[list[GenericForm], list[GenericForm | None]]] = {}
        self._defs: dict[tuple[ForOp, int], Def] = {}
        #: each loop's name in the atoms of its unstated carried values, by first use
        self._loop_names: dict[ForOp, str] = {}
        self.tag = tag

    def form(self, op: Operation) -> GenericForm:
        """The op's generic form, derived once per query (deriving it re-runs shape inference)."""
        if op not in self.forms:
            self.forms[op] = generic_form(op)
        return self.forms[op]

    def value(self, v: Target, index: tuple[IntExpr, ...], ranges: Ranges,
              env: ProgramEnv = ()) -> Value:
        root = self._key(v, index, ranges, env)
        plans: dict[tuple[int, str], _Plan | _LoopPlan] = {}
        stack: list[Demand] = [(v, index, ranges, env)]
        while stack:
            value, idx, rng, env = stack[-1]
            key = self._key(value, idx, rng, env)
            if key in self.memo:
                stack.pop()
                continue
            same = self._same_element(value, idx, rng, env)
            if same is not None:  # a kernel's input or result: another value's element
                if self._key(*same) in self.memo:
                    self.memo[key] = self.memo[self._key(*same)]
                    stack.pop()
                else:
                    stack.append(same)
                continue
            carried = self._carried(value)
            if isinstance(value, BlockArgument) and carried is None:
                self.memo[key] = _parameter(value, _simplified(idx, rng))
                stack.pop()
                continue
            plan = plans.get(key)
            if plan is None:
                if carried is not None:
                    loop, number = carried
                    if self.stated(loop)[1][number] is None:
                        name = self._loop_names.setdefault(
                            loop, f"{T.INTERNAL}c{self.tag}{len(self._loop_names)}")
                        self.memo[key] = _unstated(loop, name, number, _simplified(idx, rng),
                                                   env)
                        stack.pop()
                        continue
                    plan = self.invariant_plan(loop, number, _simplified(idx, rng), rng, env)
                elif isinstance(value, Def):
                    plan = self._def_plan(value, _simplified(idx, rng), rng, env)
                elif isinstance(value, OpResult) and isinstance(value.owner, ForOp):
                    plan = _loop_plan(value, _simplified(idx, rng), rng, env)
                else:
                    plan = self._plan(value, _simplified(idx, rng), rng, env)
                plans[key] = plan
            missing = [d for d in plan.reads.values() if self._key(*d) not in self.memo]
            if missing:
                stack.extend(missing)
                continue
            self.memo[key] = self._build(plan)
            del plans[key]
            stack.pop()
        return self.memo[root]

    def plan_value(self, plan: _Plan) -> Value:
        """The term of a plan built outside `value` (an invariant whose reads are redirected)."""
        for demand in plan.reads.values():
            self.value(*demand)
        return self._build(plan)

    # ---- loops with an invariant --------------------------------------------------------------
    def stated(self, loop: ForOp) -> tuple[list[GenericForm], list[GenericForm | None]]:
        """A loop's parsed defs and invariant forms."""
        if loop not in self._stated:
            kernel = loop.parent_op()
            while kernel is not None and not isinstance(kernel, KernelOp):
                kernel = kernel.parent_op()
            if kernel is None:
                raise Unsupported("a tile.for outside a tile.kernel")
            self._stated[loop] = invariant_forms(kernel, loop)
        return self._stated[loop]

    def _carried(self, value: Target) -> tuple[ForOp, int] | None:
        """(loop, number) when `value` is a carried value of a loop whose invariant is
        assumed here; Unsupported for one of a loop whose invariant is not."""
        if not isinstance(value, BlockArgument):
            return None
        loop = value.owner.parent_op()
        if not isinstance(loop, ForOp):
            return None
        if loop not in self.hypotheses:
            raise Unsupported("a carried value of a tile.for is read outside the reading of "
                              "its loop (a loop whose invariant is not proved)")
        return loop, value.index

    def _operands(self, loop: ForOp) -> list[Target]:
        """What an invariant form's `in<q>` reads: the kernel's inputs, the defs, the carried
        values (block arguments, after as many iterations as the iv says)."""
        kernel = loop.parent_op()
        while not isinstance(kernel, KernelOp):
            assert kernel is not None
            kernel = kernel.parent_op()
        defs = [self._defs.setdefault((loop, k), Def(loop, k))
                for k in range(len(self.stated(loop)[0]))]
        return [*kernel.body.block.args, *defs, *loop.body.block.args]

    def invariant_plan(self, loop: ForOp, number: int, index: tuple[IntExpr, ...],
                       ranges: Ranges, env: ProgramEnv,
                       carried: Callable[[int], tuple[Target, ProgramEnv]] | None = None
                       ) -> _Plan:
        """Invariant #`number` of `loop` at `index`, its iv and program ids as `env` says; the
        carried values it reads are read as `carried` says (by default: at the same env)."""
        form = self.stated(loop)[1][number]
        assert form is not None
        operands = self._operands(loop)
        first_carried = len(operands) - len(loop.body.block.args)

        def operand(q: int) -> tuple[Target, ProgramEnv]:
            if q >= first_carried and carried is not None:
                return carried(q - first_carried)
            return operands[q], env

        return self._bind(form, index, ranges, env, operand)

    def _def_plan(self, d: Def, index: tuple[IntExpr, ...], ranges: Ranges,
                  env: ProgramEnv) -> _Plan:
        operands = self._operands(d.loop)
        return self._bind(self.stated(d.loop)[0][d.number], index, ranges, env,
                          lambda q: (operands[q], env))

    # ---- plans --------------------------------------------------------------------------------
    def _plan(self, v: Target, index: tuple[IntExpr, ...], ranges: Ranges,
              env: ProgramEnv) -> _Plan:
        """Bind the producer's form at `index` (inside a kernel: its program ids replaced as
        `env` says, indices simplified) and list the operand reads its body makes."""
        assert isinstance(v, OpResult)
        op = v.owner
        if not has_form(op):
            raise Unsupported(f"op '{op.name}' has no generic form")
        return self._bind(self.form(op), index, ranges, env, lambda q: (op.operands[q], env))

    @staticmethod
    def _bind(form: GenericForm, index: tuple[IntExpr, ...], ranges: Ranges, env: ProgramEnv,
              operand: Callable[[int], tuple[Target, ProgramEnv]]) -> _Plan:
        inst = instantiate(form, index, fresh)
        local = dict(ranges)
        if env:
            inst = _in_program(inst, dict(env))
        local.update((d.name, (d.lower, d.upper)) for d in inst.reduced)
        if env:
            inst = Instance(inst.reduced, map_index(inst.body, lambda e: simplify(e, local)),
                            inst.finalize)
        inst = Instance(inst.reduced, _in_branches(inst.body, local), inst.finalize)
        reads: dict[Read, Demand] = {}
        for r in form_reads(inst.body):
            target, read_env = operand(r.operand)
            reads[r] = (target, r.index, local, read_env)
        return _Plan(form, inst, local, reads)

    @staticmethod
    def _key(v: Target, index: tuple[IntExpr, ...], ranges: Ranges,
             env: ProgramEnv) -> tuple[int, str]:
        where = "; ".join(f"{p} = {e}" for p, e in env)
        return id(v), ", ".join(str(i) for i in _simplified(index, ranges)) + f" | {where}"

    def _build(self, plan: _Plan | _LoopPlan) -> Value:
        if isinstance(plan, _LoopPlan):
            return plan.build({k: self.memo[self._key(*d)] for k, d in plan.reads.items()})
        form, inst = plan.form, plan.instance

        def read(r: Read) -> Value:
            return self.memo[self._key(*plan.reads[r])]

        # the instance has every dim substituted already: no further environment
        acc = _scalar(expand(inst.body), read, {}, None, plan.ranges)
        if form.reduction is None:
            return acc
        # the innermost sum is built first
        for d in reversed(inst.reduced):
            if isinstance(acc, T.Bool):
                raise Unsupported("reduction of a boolean body")
            acc = (make_sum(d.name, d.lower, d.upper, acc) if form.reduction == "add"
                   else make_reduce(form.reduction, d.name, d.lower, d.upper, acc))
        if inst.finalize is None:
            return acc
        return _scalar(expand(inst.finalize), _no_read, {}, acc, plan.ranges)

    def _same_element(self, value: Target, index: tuple[IntExpr, ...], ranges: Ranges,
                      env: ProgramEnv) -> Demand | None:
        """The demand whose element this one is, for a value that only passes elements on: an
        input of a kernel, read inside it, is the kernel's operand outside it; a kernel's result
        is a stored tile's element in one program (`kernels.store_read`); the result of a loop
        with a proved invariant is its carried value after all its iterations, and a carried
        value after no iteration is the loop's start."""
        if isinstance(value, BlockArgument):
            parent = value.owner.parent_op()
            kernel = kernels.kernel_of_argument(parent)
            if kernel is not None:
                return kernel.operands[value.index], index, ranges, ()
            if isinstance(parent, ForOp) and parent in self.hypotheses:
                iv = parent.iv.data
                if dict(env).get(iv) == IntExpr.const(0):
                    outside = tuple((n, e) for n, e in env if n != iv)
                    return parent.inits[value.index], index, ranges, outside
            return None
        if isinstance(value, OpResult) and isinstance(value.owner, KernelOp):
            found = kernels.store_read(value.owner, value.index, _simplified(index, ranges))
            return found.value, found.tile_index, ranges, found.env
        if isinstance(value, OpResult) and isinstance(value.owner, ForOp):
            loop = value.owner
            if loop.invariant is None:
                return None
            if loop not in self.inductive:
                raise Unsupported("tile.for states an invariant whose induction obligations are "
                                  "not proved")
            iv = loop.iv.data
            end = loop.extent_expr().substitute(dict(env))
            at_end = tuple(sorted((*((n, e) for n, e in env if n != iv), (iv, end))))
            return loop.body.block.args[value.index], index, ranges, at_end
        return None


def _unstated(loop: ForOp, name: str, number: int, index: tuple[IntExpr, ...],
              env: ProgramEnv) -> Value:
    """Carried value #`number` of a loop whose invariant says nothing of it, after as many
    iterations as `env` gives its iv: an uninterpreted function of the iteration count, the
    program and the element (any value at all, so whatever is proved of the others holds for
    the value the loop computes). `name` is the loop's, one per loop and function."""
    where = dict(env)
    kernel = loop.parent_op()
    while not isinstance(kernel, KernelOp):
        assert kernel is not None
        kernel = kernel.parent_op()
    point = [where.get(p, IntExpr.sym(p)) for p in kernel.program_names()]
    return T.atom(T.Read(f"{name}_{number}", (where[loop.iv.data], *point, *index)))


def _simplified(index: tuple[IntExpr, ...], ranges: Ranges) -> tuple[IntExpr, ...]:
    return tuple(simplify(i, ranges) for i in index)


@dataclass
class _LoopPlan:
    """A sequential loop's carried value at one index: its start and its step at a bound
    variable standing for the iteration (`kernels.accumulations`), folded by its kind."""

    accumulation: kernels.Accumulation
    binder: str
    extent: IntExpr
    reads: dict[str, Demand]

    def build(self, terms: dict[str, Value]) -> Value:
        start, step = terms["init"], terms["step"]
        if isinstance(start, T.Bool) or isinstance(step, T.Bool):
            raise Unsupported("a loop accumulating booleans")
        return fold(self.accumulation.kind, self.binder, self.extent, start, step)


def _loop_plan(value: OpResult, index: tuple[IntExpr, ...], ranges: Ranges,
               env: ProgramEnv) -> _LoopPlan:
    loop = value.owner
    assert isinstance(loop, ForOp)
    acc = kernels.accumulations(loop)[value.index]
    binder = fresh()
    extent = loop.extent_expr().substitute(dict(env))
    inside = dict(ranges)
    inside[binder] = (IntExpr.const(0), extent)
    step_env = tuple(sorted((*env, (loop.iv.data, IntExpr.sym(binder)))))
    return _LoopPlan(acc, binder, extent, {"init": (acc.init, index, ranges, env),
                                            "step": (acc.step, index, inside, step_env)})


def _in_program(inst: Instance, env: dict[str, IntExpr]) -> Instance:
    """An instance inside a kernel with its program ids replaced (they are free in the forms of
    the kernel's ops, as sizes are; after `instantiate` no name of the form's own is left).
    Reduced dims' bounds are simplified once substituted: an invariant's prefix
    `[0, min(k*BN, N))` at the loop's end `k = ceildiv(N, BN)` is `[0, N)`."""
    reduced = tuple(LoopDim(d.name, simplify(d.lower.substitute(env), {}),
                            simplify(d.upper.substitute(env), {}))
                    for d in inst.reduced)
    finalize = None if inst.finalize is None else substitute(inst.finalize, env)
    return Instance(reduced, substitute(inst.body, env), finalize)


def _in_branches(body: ScalarExpr, ranges: Ranges) -> ScalarExpr:
    """`body` with each read inside a select's branch taken at the index that the branch's
    integer conditions pin (`indices.pin`): a concat's piece of extent 1 is read at 0, not at
    `d - k`. The branch's value is used only where its conditions hold, so this changes no
    value the select gives. Rebuilt on an explicit stack (a fused body is as deep as the ops
    fused into it)."""
    if not any(isinstance(n, Call) and n.fn == "select"
               and (_conditions(n.args[0], True) or _conditions(n.args[0], False))
               for n in _nodes(body)):
        return body
    done: list[ScalarExpr] = []
    stack: list[tuple[ScalarExpr, tuple[IntExpr, ...], bool]] = [(body, (), False)]
    while stack:
        node, facts, built = stack.pop()
        kids = node.children()
        if isinstance(node, Read):
            done.append(Read(node.operand, pin(node.index, [*facts], ranges)) if facts else node)
        elif not kids:
            done.append(node)
        elif built:
            args = tuple(done[len(done) - len(kids):])
            del done[len(done) - len(kids):]
            done.append(node.with_children(args))
        else:
            stack.append((node, facts, True))
            kid_facts = [facts] * len(kids)
            if isinstance(node, Call) and node.fn == "select":
                cond = node.args[0]
                kid_facts = [facts, (*facts, *_conditions(cond, True)),
                             (*facts, *_conditions(cond, False))]
            stack.extend(reversed(list(zip(kids, kid_facts, [False] * len(kids),
                                           strict=True))))
    (out,) = done
    return out


def _nodes(body: ScalarExpr) -> list[ScalarExpr]:
    """Every node of a scalar expression tree (on an explicit stack)."""
    found, stack = [], [body]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children())
    return found


_FLIPPED = {"gt": "lt", "ge": "le"}


def _conditions(cond: ScalarExpr, value: bool) -> tuple[IntExpr, ...]:
    """Integer facts `f <= 0` that hold where `cond` has `value`: comparisons of index
    expressions, through `and` (taken true), `or` (taken false) and `not`."""
    found: list[IntExpr] = []
    work = [(cond, value)]
    while work:
        c, v = work.pop()
        if not isinstance(c, Call):
            continue
        if c.fn == "not":
            work.append((c.args[0], not v))
        elif (c.fn == "and" and v) or (c.fn == "or" and not v):
            work.extend((a, v) for a in c.args)
        elif c.fn in ("lt", "le", "gt", "ge", "eq") and all(isinstance(a, Index)
                                                             for a in c.args):
            a, b = (x.expr for x in c.args)  # type: ignore[attr-defined]
            fn = c.fn
            if fn in _FLIPPED:
                a, b, fn = b, a, _FLIPPED[fn]
            if fn == "eq":
                found.extend((a - b, b - a) if v else ())
            elif fn == "lt":
                found.append(a - b + 1 if v else b - a)
            else:
                found.append(a - b if v else b - a + 1)
    return tuple(found)


def _parameter(v: BlockArgument, index: tuple[IntExpr, ...]) -> Value:
    """Parameters are tensor atoms named by position, so both sides read the same inputs."""
    t = v.type
    assert isinstance(t, TensorType)
    name = f"a{v.index}"
    return T.bread(name, index) if t.dtype == "i1" else T.atom(T.Read(name, index))


def _no_read(r: Read) -> Value:
    raise Unsupported(f"finalizer reads {r}")


def _scalar(e: ScalarExpr, read: Callable[[Read], Value], env: dict[str, IntExpr],
            reduced: Value | None, ranges: Ranges) -> Value:
    """The term of a scalar-language expression (after expand()); integer comparisons that the
    loop `ranges` settle become constants (a concat's branch condition under a slice)."""
    if isinstance(e, Const):
        if isinstance(e.value, bool):
            return T.bconst(e.value)
        return T.const(e.value)  # an infinity is Unsupported there
    if isinstance(e, Read):
        return read(e)
    if isinstance(e, Index):
        return T.idx(e.expr.substitute(env))
    if isinstance(e, Reduced):
        assert reduced is not None
        return reduced
    assert isinstance(e, Call)
    args = [_scalar(a, read, env, reduced, ranges) for a in e.args]
    out = _call(e.fn, args, e.param)
    return decide(out, ranges) if isinstance(out, T.Bool) else out


def _num(v: Value) -> T.Poly:
    """A boolean used as a number is 1 or 0."""
    return T.select(v, T.ONE, T.ZERO) if isinstance(v, T.Bool) else v


def _bool(v: Value) -> T.Bool:
    return v if isinstance(v, T.Bool) else T.compare("ne", v, T.ZERO)


def _call(fn: str, args: list[Value], param: float | str | None) -> Value:
    if fn in ("and", "or", "not"):
        bs = [_bool(a) for a in args]
        return T.band(*bs) if fn == "and" else T.bor(*bs) if fn == "or" else T.bnot(bs[0])
    if fn in ("eq", "ne", "lt", "le", "gt", "ge"):
        a, b = args
        if isinstance(a, T.Bool) or isinstance(b, T.Bool):
            if fn not in ("eq", "ne"):
                a, b = _num(a), _num(b)
            else:
                ba, bb = _bool(a), _bool(b)
                same = T.bor(T.band(ba, bb), T.band(T.bnot(ba), T.bnot(bb)))
                return same if fn == "eq" else T.bnot(same)
        return T.compare(fn, _num(a), _num(b))
    if fn == "select":
        c, a, b = args
        if isinstance(a, T.Bool) and isinstance(b, T.Bool):
            cb = _bool(c)
            return T.bor(T.band(cb, a), T.band(T.bnot(cb), b))
        return T.select(_bool(c), _num(a), _num(b))
    if fn == "cast":
        (x,) = args
        if param == "i1":
            return _bool(x)
        if param == "i32":
            return T.apply("trunc", _num(x)) if not isinstance(x, T.Bool) else _num(x)
        return _num(x)  # float casts: the identity on reals (rounding is checked numerically)
    nums = [_num(a) for a in args]
    if fn == "add":
        return nums[0] + nums[1]
    if fn == "sub":
        return nums[0] - nums[1]
    if fn == "mul":
        return nums[0] * nums[1]
    if fn == "div":
        return nums[0] * T.inv(nums[1])
    if fn == "neg":
        return -nums[0]
    if fn == "exp":
        return T.exp(nums[0])
    if fn == "log":
        return T.log(nums[0])
    if fn == "pow":
        assert isinstance(param, float)
        return T.power(nums[0], param)
    if fn in ("max", "min", "abs", "sqrt", "rsqrt", "tanh", "sigmoid", "erf"):
        return T.apply(fn, *nums)
    raise Unsupported(f"scalar function '{fn}'")
