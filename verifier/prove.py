"""prove_equivalent: Proved, Refuted (with a replayed counterexample) or Unknown.

The obligation: for all sizes >= 1 (and the assumptions), all input contents (reals) and every
output index in range, the two functions' outputs are equal as real numbers. Proved only on z3's
UNSAT for the negation; Refuted only when the reference interpreter reproduces a difference at the
model's (small) dims; anything else, including a query that runs out of its budget, is Unknown.

The budget (`budget.ProofBudget`) counts work: normalization steps and z3's resource units, so
a query it stops is stopped again by every run with the same budget. With a cache, such an
Unknown is stored under the query's key (both functions' text, the assumptions, the budget's
counts, the z3 version and the hash of Axon's code) and served without normalizing or calling
z3; a larger budget has another key and tries again. An Unknown the safety-net clock decided is
never stored. A proved or refuted query records, under the same key, the obligation it was
decided by: asked again (a step result checked on a warm run), it is served that obligation's
stored verdict without normalizing, as normalizing the same texts with the same code derives
the same obligation.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from io import StringIO

import numpy as np
import z3
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.printer import Printer

from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.intexpr import IntExpr, parse_int_expr
from axon.dialects.tile import ForOp, KernelOp
from axon.verifier import indices, induction, kernels, sums
from axon.verifier import terms as T
from axon.verifier.budget import (
    DEFAULT_BUDGET,
    OutOfBudget,
    OutOfTime,
    ProofBudget,
    TooLarge,
    expired,
    out_of_rlimit,
    remaining_ms,
    rlimit_left,
    spend_rlimit,
    spending,
)
from axon.verifier.cache import ProofCache, code_fingerprint
from axon.verifier.encode import Encoder
from axon.verifier.induction import NotInductive
from axon.verifier.inline import Output, Unsupported, inline_function, signature
from axon.verifier.replay import Replayed, replay, replayable
from axon.verifier.structure import shared_structure

#: bump whenever normalization (terms.py, sums.py, indices.py, inline.py) or the z3 encoding
#: changes: the obligation key includes it, so a persisted cache never serves an older verdict
ENCODING_REVISION = 19

#: z3 is asked first for a counterexample with every size at most this (small replays)
SMALL_DIM = 6
#: the ranges every size of a failed induction obligation's model is looked for in, in turn
#: (sizes of 1 hide wrong axes, and a replay runs every program of a kernel: 3 keeps it quick)
SMALL_BOUNDS = ((2, 3), (1, SMALL_DIM))
#: how many distinct candidate size assignments are replayed before giving up
CANDIDATES = 4
#: a kernel is replayed first with each tile parameter this and every other size
#: `KERNEL_SIZE`: several iterations of each loop, the last one partial (`_probe_kernel`)
KERNEL_BLOCK = 2
KERNEL_SIZE = 5
#: a size only a grid counts (a grid extent that is the size itself: one program per index,
#: no loop or tile over it) is replayed from this: every program runs the whole body, so
#: 5 x 6 x 7 batch indices were 210 programs where 2 x 3 x 4 are 24
GRID_SIZE = 2


@dataclass(frozen=True)
class Counterexample:
    """Concrete dims, an output (number and index), the inputs and both functions' values there."""

    sizes: dict[str, int]
    output: int
    index: tuple[int, ...]
    inputs: list[np.ndarray] = field(repr=False)
    value_a: float
    value_b: float
    shape_a: tuple[int, ...] | None = None
    shape_b: tuple[int, ...] | None = None
    dtype_a: str | None = None
    dtype_b: str | None = None
    #: the difference shows in the interpreter's exact mode (the real meaning), not necessarily
    #: after rounding to the program's dtypes
    exact: bool = False

    @property
    def by_type(self) -> bool:
        """Refuted by the results' types (shape or dtype) at `sizes`, not by values."""
        return self.shape_a is not None

    def shows_in(self, a: FuncOp, b: FuncOp) -> bool:
        """Whether the interpreter, run exactly on this counterexample's inputs and sizes, gives
        `a` and `b` different values at its output and index: a check anyone can repeat."""
        from axon.interpreter import run_function

        want = run_function(a, self.inputs, self.sizes, exact=True)[self.output]
        got = run_function(b, self.inputs, self.sizes, exact=True)[self.output]
        return not np.isclose(got[self.index], want[self.index])

    def __str__(self) -> str:
        dims = ", ".join(f"{k}={v}" for k, v in sorted(self.sizes.items())) or "no sizes"
        if self.shape_a is not None:
            return f"{dims}: result #{self.output} has type {list(self.shape_a)} " \
                   f"{self.dtype_a} vs {list(self.shape_b or ())} {self.dtype_b}"
        ix = ", ".join(str(i) for i in self.index)
        if self.exact:
            return f"{dims}: result #{self.output}[{ix}] is {self.value_a:.12g} vs " \
                   f"{self.value_b:.12g} in exact arithmetic"
        return f"{dims}: result #{self.output}[{ix}] is {self.value_a:.6g} vs {self.value_b:.6g}"


@dataclass(frozen=True)
class Proved:
    """z3 answered unsat: the two programs are equal for all sizes and contents (over the reals)."""

    proof_id: str
    seconds: float
    cached: bool = False
    verdict: str = "proved"
    obligation: str = ""
    """The obligation's cache key (what a step result that relies on this proof lists); empty
    when the verdict comes from elsewhere than `prove_equivalent`."""


@dataclass(frozen=True)
class Refuted:
    """The reference interpreter reproduced a difference; the counterexample says where."""

    counterexample: Counterexample
    seconds: float
    cached: bool = False
    verdict: str = "refuted"


@dataclass(frozen=True)
class Inconsistent:
    """No sizes satisfy the assumptions (with every size >= 1 and every dim >= 0): any claim
    would hold vacuously, so nothing is proved. Never a proof."""

    reason: str
    seconds: float
    verdict: str = "inconsistent"


@dataclass(frozen=True)
class Unknown:
    """Neither proved nor refuted (out of budget, unsupported, unreplayed model): never a
    proof."""

    reason: str
    seconds: float
    verdict: str = "unknown"
    limited: bool = False
    """A budget stopped the query (`budget` says which): with a larger one it may be decided."""
    budget: str = ""
    """The budget that ran out, when `limited`: "steps" or "rlimit" (counts of work: the same
    budget stops the same query again, so the verdict is stored and a step it shaped may store
    its result) or "seconds" (the safety-net clock: the verdict depends on the machine and its
    load, so neither it nor a result it shaped is stored)."""
    cached: bool = False

    @property
    def by_clock(self) -> bool:
        """The safety-net clock decided this verdict (another run may decide otherwise)."""
        return self.budget == "seconds"


Verdict = Proved | Refuted | Unknown | Inconsistent


def prove_equivalent(a: FuncOp, b: FuncOp, assumptions: Sequence[str] = (),
                     budget: ProofBudget = DEFAULT_BUDGET, cache: ProofCache | None = None,
                     texts: tuple[str | None, str | None] = (None, None)) -> Verdict:
    """Decide whether `a` and `b` compute the same results for all sizes and all inputs.

    `assumptions` are integer facts over size symbols, e.g. "K mod 4 == 0" or "M >= 2"
    (operators == != < <= > >=). Results are compared position by position, types first (shape
    and dtype), then values; parameters must have the same types. `budget` bounds the whole
    query (`budget.ProofBudget`): normalization's steps, the resource units of every z3 call
    together, and a safety-net clock that replaying counterexamples shares too. Running out
    gives Unknown, never Proved; with a `cache`, an Unknown that a count (not the clock)
    decided is stored under this budget and served again without any work. So does a failure
    inside the verifier itself give Unknown: a caller (propagation, the pass) then keeps going
    without the equality, and the reason names the failure so it can be reported. Assumptions
    that no sizes satisfy give `Inconsistent`. `texts`: `a`'s and `b`'s printed text where the
    caller holds it already (the query key's; a function's is printed here otherwise).
    """
    global _obligation
    start = time.perf_counter()
    query = query_key(a, b, assumptions, budget, texts) if cache is not None else ""
    if cache is not None:
        stored = cache.limited(query)
        if stored is not None:
            return _from_stored_unknown(stored, cache, time.perf_counter() - start)
        answered = cache.answered(query)
        if answered is not None:
            return _from_cache(answered[1], answered[0], time.perf_counter() - start)
    _obligation = ""
    # the memos open afresh, so the steps a query takes do not depend on the queries before it
    sums.reset()
    verdict: Verdict
    try:
        with spending(budget):
            verdict = _prove(a, b, tuple(assumptions), cache, start)
    except Unsupported as err:
        verdict = Unknown(str(err), time.perf_counter() - start)
    except OutOfBudget as err:
        verdict = Unknown(f"out of budget: {err} (budget {budget})", time.perf_counter() - start,
                          limited=True, budget=err.budget)
    except TooLarge as err:
        verdict = Unknown(f"too large: {err} during normalization", time.perf_counter() - start)
    except (ArithmeticError, AssertionError, KeyError, RecursionError, TypeError,
            ValueError, z3.Z3Exception) as err:
        verdict = Unknown(f"internal verifier error, please report: {type(err).__name__}: "
                          f"{err}", time.perf_counter() - start)
    if cache is not None and isinstance(verdict, Unknown) and verdict.limited \
            and not verdict.by_clock:
        cache.put(query, {"verdict": "unknown", "reason": verdict.reason,
                          "budget": verdict.budget, "obligation": _obligation})
    elif cache is not None and isinstance(verdict, (Proved, Refuted)) and _obligation:
        cache.answer(query, _obligation)
    return verdict


#: the obligation key of the query under way, once normalization has derived it (a stored
#: Unknown names it, so that a proof found since, with a larger budget, is served instead)
_obligation = ""


def query_key(a: FuncOp, b: FuncOp, assumptions: Sequence[str], budget: ProofBudget,
              texts: tuple[str | None, str | None] = (None, None)) -> str:
    """The key of a query: what determines its verdict (both functions' text, the assumptions,
    the budget's counts, z3's version, Axon's code and its encoding revision). An Unknown a
    count decided is stored under it, and so is the obligation a proved or refuted query was
    decided by (`ProofCache.answer`). `texts`: a function's printed text where the caller has
    it (a 10,000-statement function takes a second to print), None to print it here."""
    printed = []
    for func, given in zip((a, b), texts, strict=True):
        if given is None:
            out = StringIO()
            Printer(stream=out).print_op(func)
            given = out.getvalue()
        printed.append(given)
    text = "\n".join(["query", code_fingerprint(), f"encoding {ENCODING_REVISION}",
                      f"z3 {z3.get_version_string()}",
                      budget.key(), f"assume {' ; '.join(sorted(assumptions))}", *printed])
    return hashlib.sha256(text.encode()).hexdigest()


def _from_stored_unknown(record: dict, cache: ProofCache, seconds: float) -> Verdict:
    """A stored Unknown as a verdict; the verdict of its obligation instead, where the cache
    holds one (decided since, under a larger budget: a run with this budget meets it too)."""
    decided = cache.entries.get(record["obligation"]) if record["obligation"] else None
    if decided is not None:
        return _from_cache(decided, record["obligation"], seconds)
    return Unknown(record["reason"], seconds, limited=True, budget=record["budget"], cached=True)


def _prove(a: FuncOp, b: FuncOp, assumptions: tuple[str, ...], cache: ProofCache | None,
           start: float) -> Verdict:
    global _obligation
    sig_a, sig_b = signature(a), signature(b)
    if [str(t) for t in sig_a] != [str(t) for t in sig_b]:
        raise Unsupported(f"parameters differ: ({', '.join(map(str, sig_a))}) vs "
                          f"({', '.join(map(str, sig_b))})")
    # a tiled kernel's proof holds for every tile size its assumptions admit
    assumptions = tuple(sorted({*assumptions, *(text for f in (a, b) for op in f.walk()
                                                if isinstance(op, KernelOp)
                                                for text in kernels.assumptions(op))}))
    # the normal forms may use the assumptions' divisibility and order facts (`indices.assuming`)
    with indices.assuming(assumptions):
        return _prove_assumed(a, b, sig_a, assumptions, cache, start)


def _prove_assumed(a: FuncOp, b: FuncOp, sig_a: list[TensorType], assumptions: tuple[str, ...],
                   cache: ProofCache | None, start: float) -> Verdict:
    global _obligation
    shared = shared_structure(a, b)
    if shared is not None:
        # the same DAG of ops: equal by construction, once the premises are seen to hold
        key = hashlib.sha256(f"{ENCODING_REVISION}\nshared structure\nassume "
                             f"{' ; '.join(assumptions)}\n{shared}".encode()).hexdigest()
        _obligation = key
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            return _from_cache(hit, key, time.perf_counter() - start)
        premises = _premises(a, b, sig_a, assumptions, start)
        if not isinstance(premises, tuple):
            return premises
        proved = Proved(shared[:16], time.perf_counter() - start, obligation=key)
        if cache is not None:
            cache.put(key, _to_cache(proved))
        return proved
    kernel = any(isinstance(op, KernelOp) for f in (a, b) for op in f.walk())
    probed_premises: tuple[Encoder, z3.Solver] | None = None
    if kernel:
        # the interpreter looks first: a wrong kernel's terms may normalize slowly (blocks
        # that do not partition their dim), and one whose loops the verifier does not read
        # (an inner accumulator carried through the outer loop) is refuted only so
        premises = _premises(a, b, sig_a, assumptions, start)
        if not isinstance(premises, tuple):
            return premises
        probed = _probe_kernel(a, b, *premises, start) or _probe(a, b, *premises, start)
        if probed is not None:
            return probed
        probed_premises = premises  # the value query's too: the probes add nothing to them
    try:
        def witness(sizes: dict[str, int]) -> Replayed | None:
            return replay(a, b, sizes, None, None, attempts=1)

        inductive = [_inductive_loops(f, sig_a, assumptions, witness) for f in (a, b)]
        out_a, out_b = (inline_function(a, inductive[0], "a"),
                        inline_function(b, inductive[1], "b"))
    except NotInductive as err:
        return _not_inductive(a, b, sig_a, assumptions, start, err)
    except TooLarge:
        # the normal forms outgrew their limits (a long chain's coefficients): no proof, but the
        # interpreter may still show a difference
        premises = _premises(a, b, sig_a, assumptions, start)
        if not isinstance(premises, tuple):
            return premises
        probed = _probe(a, b, *premises, start)
        if probed is not None:
            return probed
        raise
    if len(out_a) != len(out_b):
        raise Unsupported(f"result counts differ: {len(out_a)} vs {len(out_b)}")
    text = obligation_text(sig_a, out_a, out_b, assumptions)
    # the revision keeps verdicts of an older normalization or encoding out of a persisted cache
    key = hashlib.sha256(f"{ENCODING_REVISION}\n{text}".encode()).hexdigest()
    _obligation = key
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return _from_cache(hit, key, time.perf_counter() - start)
    verdict = _decide(a, b, sig_a, out_a, out_b, assumptions, key, start,
                      premises=probed_premises)
    if cache is not None and isinstance(verdict, (Proved, Refuted)):
        cache.put(key, _to_cache(verdict))
    return verdict


def _inductive_loops(func: FuncOp, sig: Sequence[TensorType], assumptions: tuple[str, ...],
                     witness: Callable[[dict[str, int]], Replayed | None]
                     ) -> frozenset[ForOp]:
    """The loops of `func`'s kernels that state an invariant, each with its induction
    obligations proved (`induction.py`), in program order (a loop's obligations may read the
    results of the loops before it); NotInductive at the first obligation not proved."""
    proved: set[ForOp] = set()
    for kernel in (op for op in func.walk() if isinstance(op, KernelOp)):
        kernels.check_readable(kernel)
        for loop in induction.stated_loops(kernel):
            for ob in induction.obligations(kernel, loop, frozenset(proved)):
                _discharge(func, sig, assumptions, ob, witness)
            proved.add(loop)
    return frozenset(proved)


def _discharge(func: FuncOp, sig: Sequence[TensorType], assumptions: tuple[str, ...],
               ob: induction.Obligation,
               witness: Callable[[dict[str, int]], Replayed | None]) -> None:
    """Prove one obligation (z3 unsat of its negation, under the sizes' constraints and the
    assumptions); NotInductive with z3's sizes (small ones first) where it is false or z3 gives
    up (out of the query's budget: `OutOfBudget`). The query is asked first without the prefix
    sums' step instances (`Encoder.step_instances`), in a solver of its own: unsat without them
    is unsat with them (each is a true fact), and an online loop's step, whose sums meet at the
    same points, needs none (its sums' bodies holding an rmsnorm chain, it is decided in a
    second instead of not in minutes). A model of that first query is a candidate the
    functions are replayed at (`witness`, once) before the slower query with them: a wrong
    kernel is refuted there."""
    enc = Encoder()
    solver = z3.Solver(ctx=enc.ctx)
    solver.add(*_size_constraints(enc, sig, _result_types(func), assumptions))
    in_range = [z3.And(enc.int_var(n) >= 0, enc.int_var(n) < enc.int_expr(e, {}))
                for n, e in zip(ob.index, ob.extents, strict=True)]
    x, y = ob.loop_value, ob.invariant
    if isinstance(x, T.Bool) or isinstance(y, T.Bool):
        differ = _as_bool(enc, x) != _as_bool(enc, y)
    else:
        differ = enc.poly(x) != enc.poly(y)
    enc.close()
    solver.add(*enc.axioms)
    solver.add(*in_range, differ)
    where = f"@{func.sym_name.data}: tile.for {{iv = \"{ob.iv}\"}}: {ob.what} is not proved"
    if enc.pending_steps:
        lean = _without_steps(solver, enc)
        result = _check(lean, share=0.5)
        if result == z3.unsat:
            return
        if result == z3.sat:
            candidate = _small_model(enc, lean)
            found = witness(candidate) if candidate is not None else None
            if found is not None:
                raise NotInductive(f"{where}: a counterexample at {_shown(found.sizes)}",
                                   found.sizes, found)
        solver.add(*enc.step_instances())
    result = _check(solver)
    if result == z3.unsat:
        return
    if result == z3.unknown:
        raise NotInductive(f"{where} (z3: {solver.reason_unknown()})")
    sizes = _small_model(enc, solver)
    if sizes is None:
        raise NotInductive(f"{where} (z3: {solver.reason_unknown()})")
    # a model is a candidate only (sums and exp are uninterpreted there), as for any query
    raise NotInductive(f"{where}: z3 finds a candidate counterexample at {_shown(sizes)}",
                       sizes)


def _small_model(enc: Encoder, solver: z3.Solver) -> dict[str, int] | None:
    """The sizes of a model of `solver` (found satisfiable), in the first range of
    `SMALL_BOUNDS` that has one, else any; None where z3 does not find one again."""
    for low, high in SMALL_BOUNDS:
        solver.push()
        solver.add(*(z3.And(v >= low, v <= high) for v in enc.sizes.values()))
        small = _check(solver) == z3.sat
        sizes = _sizes(enc, solver.model()) if small else None
        solver.pop()
        if sizes is not None:
            return sizes
    return _sizes(enc, solver.model()) if _check(solver) == z3.sat else None


def _shown(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(sizes.items()))


def _not_inductive(a: FuncOp, b: FuncOp, sig: Sequence[TensorType],
                   assumptions: tuple[str, ...], start: float, err: NotInductive) -> Verdict:
    """A loop whose invariant is not proved is not read, so no proof; a wrong kernel is still
    refuted where the interpreter shows the two functions differ: at the sizes where the
    obligation failed (a kernel that breaks its own invariant there usually differs there),
    else at small random ones. Otherwise Unknown, naming the obligation."""
    premises = _premises(a, b, sig, assumptions, start)
    if not isinstance(premises, tuple):
        return premises
    if err.sizes is not None:
        found = err.witness or replay(a, b, err.sizes, None, None)
        if found is not None:
            cex = Counterexample(found.sizes, found.output, found.index, found.inputs,
                                 found.value_a, found.value_b, exact=found.exact)
            return Refuted(cex, time.perf_counter() - start)
    probed = _probe(a, b, *premises, start)
    if probed is not None:
        return probed
    return Unknown(str(err), time.perf_counter() - start)


def obligation_text(sig: Sequence[TensorType], out_a: Sequence[Output], out_b: Sequence[Output],
                    assumptions: Sequence[str]) -> str:
    """The canonical text of the obligation: its hash is the proof id and the cache key."""
    lines = [f"assume {' ; '.join(sorted(assumptions))}",
             f"params {', '.join(str(t) for t in sig)}"]
    for k, (x, y) in enumerate(zip(out_a, out_b, strict=True)):
        lines.append(f"out{k} [{', '.join(map(str, x.shape))}] {x.dtype} == "
                     f"[{', '.join(map(str, y.shape))}] {y.dtype}")
        lines.append(f"  {x.value}")
        lines.append(f"  {y.value}")
    return "\n".join(lines)


# ---- the z3 query --------------------------------------------------------------------------------
def _size_constraints(enc: Encoder, sig: Sequence[TensorType], results: Sequence[TensorType],
                      assumptions: Sequence[str]) -> list[z3.BoolRef]:
    facts: list[z3.BoolRef] = []
    dims = [d for t in sig for d in t.shape] + [d for t in results for d in t.shape]
    for name in sorted({s for d in dims for s in d.symbols()}):
        facts.append(enc.int_var(name) >= 1)
    for d in dims:
        facts.append(enc.int_expr(d, {}) >= 0)
    facts.extend(_assumption(enc, text) for text in assumptions)
    return facts


def _result_types(func: FuncOp) -> list[TensorType]:
    """The types of the values `func` returns (what its outputs' terms are elements of)."""
    ret = func.body.block.last_op if len(func.body.blocks) == 1 else None
    if not isinstance(ret, ReturnOp):
        raise Unsupported(f"@{func.sym_name.data} does not end in func.return")
    types = [v.type for v in ret.arguments]
    for k, t in enumerate(types):
        if not isinstance(t, TensorType):
            raise Unsupported(f"@{func.sym_name.data}: result #{k} is not an !ax.tensor")
    return types  # type: ignore[return-value]


def _assumption(enc: Encoder, text: str) -> z3.BoolRef:
    for op in ("==", "!=", "<=", ">=", "<", ">"):
        if op in text:
            lhs, rhs = (enc.int_expr(parse_int_expr(s.strip()), {}) for s in text.split(op, 1))
            return {"==": lhs == rhs, "!=": lhs != rhs, "<=": lhs <= rhs, ">=": lhs >= rhs,
                    "<": lhs < rhs, ">": lhs > rhs}[op]
    raise Unsupported(f"assumption '{text}' has no comparison (== != < <= > >=)")


def _premises(a: FuncOp, b: FuncOp, sig: Sequence[TensorType], assumptions: tuple[str, ...],
              start: float) -> tuple[Encoder, z3.Solver] | Verdict:
    """The sizes the obligation ranges over, in a solver, once they are seen to exist and the
    results' types to agree; else the verdict that settles it (Inconsistent premises, a
    refutation by types, or Unknown). Only the types are read, not the terms."""
    enc = Encoder()
    solver = z3.Solver(ctx=enc.ctx)
    types_a, types_b = _result_types(a), _result_types(b)
    results = [*types_a, *types_b]
    solver.add(*_size_constraints(enc, sig, results, assumptions))
    dims = [d for t in sig for d in t.shape] + [d for t in results for d in t.shape]
    if assumptions or not all(T.nonneg(d) for d in dims):
        # an unsatisfiable premise would make every claim "hold"; say so instead
        result = _check(solver)
        if result == z3.unsat:
            premise = f"the assumptions ({'; '.join(assumptions)})" if assumptions else "the types"
            return Inconsistent(f"no sizes satisfy {premise} with every size >= 1 and every "
                                "dim >= 0", time.perf_counter() - start)
        if result == z3.unknown:
            return Unknown(f"assumptions: z3 {solver.reason_unknown()}",
                           time.perf_counter() - start)
    if len(types_a) != len(types_b):
        raise Unsupported(f"result counts differ: {len(types_a)} vs {len(types_b)}")
    # results of different types (rank, dtype, then dims) are refuted by their types alone
    for k, (x, y) in enumerate(zip(types_a, types_b, strict=True)):
        if x.rank != y.rank or x.dtype != y.dtype:
            if _check(solver) != z3.sat:
                return Unknown(f"types of result #{k}: z3 {solver.reason_unknown()}",
                               time.perf_counter() - start)
            return _type_refutation(a, b, k, _sizes(enc, solver.model()), start)
        differs = [enc.int_expr(p, {}) != enc.int_expr(q, {})
                   for p, q in zip(x.shape, y.shape, strict=True) if p != q]
        if differs:
            solver.push()
            solver.add(z3.Or(*differs))
            result = _check(solver)
            if result == z3.sat:
                return _type_refutation(a, b, k, _sizes(enc, solver.model()), start)
            solver.pop()
            if result == z3.unknown:
                return Unknown(f"shapes of result #{k}: z3 {solver.reason_unknown()}",
                               time.perf_counter() - start)
    return enc, solver


def _decide(a: FuncOp, b: FuncOp, sig: Sequence[TensorType], out_a: Sequence[Output],
            out_b: Sequence[Output], assumptions: tuple[str, ...], key: str, start: float,
            premises: tuple[Encoder, z3.Solver] | None = None) -> Verdict:
    """The value query of the obligation. The interpreter looks for a difference first
    (`_probe`), unless `premises` are given: those the probes of a kernel's query were made
    under (`_premises`, its solver holding only the sizes' facts), after they found none."""
    probe = premises is None
    if premises is None:
        found = _premises(a, b, sig, assumptions, start)
        if not isinstance(found, tuple):
            return found
        premises = found
    enc, solver = premises
    probed = _probe(a, b, enc, solver, start) if probe else None
    if probed is not None:
        return probed
    disjuncts = []
    for x, y in zip(out_a, out_b, strict=True):
        in_range = [z3.And(enc.int_var(n) >= 0, enc.int_var(n) < enc.int_expr(d, {}))
                    for n, d in zip(x.index, x.shape, strict=True)]
        if isinstance(x.value, T.Bool) or isinstance(y.value, T.Bool):
            va, vb = _as_bool(enc, x.value), _as_bool(enc, y.value)
        else:
            va, vb = enc.poly(x.value), enc.poly(y.value)
        disjuncts.append(z3.And(*in_range, va != vb))
    enc.close()
    solver.add(*enc.axioms)
    solver.add(z3.Or(*disjuncts))
    result = _check_steps_last(solver, enc)
    if result == z3.unsat:
        return Proved(key[:16], time.perf_counter() - start, obligation=key)
    if result == z3.unknown:
        return Unknown(f"z3: {solver.reason_unknown()}", time.perf_counter() - start)
    return _refute(a, b, enc, solver, out_a, start)


def _probe(a: FuncOp, b: FuncOp, enc: Encoder, solver: z3.Solver, start: float
           ) -> Refuted | None:
    """A cheap first look for a counterexample before the value query: one random input at
    small sizes (each in [2, SMALL_DIM] where the premises allow; a size of 1 hides wrong axes).

    Most wrong rewrites differ everywhere, and z3 takes far longer to find a model than the
    interpreter takes to show a difference; the evidence is the same replay as for a model's
    (`replay.replay`), so this path refutes exactly what replay would confirm."""
    # a solver of its own, so the value query's solver does not keep these size bounds
    sizing = z3.Solver(ctx=enc.ctx)
    sizing.add(*solver.assertions())
    sizing.add(*(z3.And(v >= 2, v <= SMALL_DIM) for v in enc.sizes.values()))
    if _check(sizing) != z3.sat:
        return None
    found = replay(a, b, _sizes(enc, sizing.model()), None, None, attempts=1)
    if found is None:
        return None
    cex = Counterexample(found.sizes, found.output, found.index, found.inputs, found.value_a,
                         found.value_b, exact=found.exact)
    return Refuted(cex, time.perf_counter() - start)


def _probe_kernel(a: FuncOp, b: FuncOp, enc: Encoder, solver: z3.Solver, start: float
                  ) -> Refuted | None:
    """A look for a counterexample where a kernel's loops run several iterations, the last
    one partial: each tile parameter `KERNEL_BLOCK` and the other sizes `KERNEL_SIZE`,
    `KERNEL_SIZE + 1`, ... (distinct, so a read or a mean over the wrong dim shows), else all
    `KERNEL_SIZE`, where the premises admit them (`_probe`'s smallest sizes often give a loop
    one iteration). Sizes only a grid counts start from `GRID_SIZE` instead (distinct from
    each other and from the rest), for kernels whose inputs fit the replay's bound at the
    sizes above: a large fused kernel fits at the small grid sizes too, and replaying it would
    cost more than the look saves."""
    kernels = [op for f in (a, b) for op in f.walk() if isinstance(op, KernelOp)]
    params = {p for op in kernels for p in op.param_names()}
    others = sorted(n for n in enc.sizes if n not in params)
    counted = _grid_only(kernels)
    small = [n for n in others if n in counted]
    for distinct in (True, False):
        sizes = _kernel_sizes(enc, solver, params, {n: KERNEL_SIZE for n in others}, distinct)
        if sizes is None or not replayable(a, sizes):
            continue
        if small:
            # distinct from each other and from the sizes counted by more than a grid
            low = {n: GRID_SIZE for n in small}
            low.update({n: max(KERNEL_SIZE, GRID_SIZE + len(small)) for n in others
                        if n not in counted})
            sizes = _kernel_sizes(enc, solver, params, low, distinct) or sizes
        found = replay(a, b, sizes, None, None, attempts=1)
        if found is not None:
            cex = Counterexample(found.sizes, found.output, found.index, found.inputs,
                                 found.value_a, found.value_b, exact=found.exact)
            return Refuted(cex, time.perf_counter() - start)
    return None


def _grid_only(kernels: Sequence[KernelOp]) -> set[str]:
    """The sizes some grid counts one program per index of (a grid extent that is the size
    itself) and nothing else counts: no other grid extent and no loop's extent names it."""
    plain: set[str] = set()
    elsewhere: set[str] = set()
    for kernel in kernels:
        for g in kernel.grid_exprs():
            name = g.as_symbol
            if name is not None:
                plain.add(name)
            else:
                elsewhere |= g.symbols()
        for op in kernel.walk():
            if isinstance(op, ForOp):
                elsewhere |= op.extent_expr().symbols()
    return plain - elsewhere


def _kernel_sizes(enc: Encoder, solver: z3.Solver, params: set[str], low: dict[str, int],
                  distinct: bool) -> dict[str, int] | None:
    """Sizes the premises admit with each tile parameter `KERNEL_BLOCK` and each other size at
    its `low` value (plus its place among those of the same `low` where `distinct`); None
    where they admit none."""
    sizing = z3.Solver(ctx=enc.ctx)
    sizing.add(*solver.assertions())
    sizing.add(*(v == KERNEL_BLOCK for n, v in enc.sizes.items() if n in params))
    place: dict[int, int] = {}
    for n, value in low.items():
        k = place.get(value, 0)
        place[value] = k + 1
        sizing.add(enc.sizes[n] == value + (k if distinct else 0))
    return _sizes(enc, sizing.model()) if _check(sizing) == z3.sat else None


def _check(solver: z3.Solver, share: float = 1.0) -> z3.CheckSatResult:
    """solver.check() under what is left of the query's budget: it is charged the resource
    units the call used; `OutOfRlimit` when they were all that was left, `OutOfTime` when the
    safety-net clock stopped the call (z3 answers both with unknown). With `share` < 1 the call
    is a first look given that part of the units left: spending them answers unknown, and the
    query goes on (the count decides it, so it repeats)."""
    if expired():
        raise OutOfTime("the query ran past its safety net before a solver call")
    left = rlimit_left()
    limit = min(max(1, int(left * share)) if left else 0, _Z3_MAX_RLIMIT)
    solver.set("rlimit", limit)
    solver.set("timeout", remaining_ms())
    before = _resource_count(solver)
    result = solver.check()
    used = _resource_count(solver) - before
    spend_rlimit(used)
    if result == z3.unknown:
        if limit and used >= limit:
            if share < 1.0:
                return result
            raise out_of_rlimit()
        # z3 says "canceled" or "timeout" when its timer stopped it; other reasons (an
        # incomplete theory) are its own and repeat
        if expired() or solver.reason_unknown() in ("canceled", "timeout"):
            raise OutOfTime("the query ran past its safety net during a solver call")
    return result


def _check_steps_last(solver: z3.Solver, enc: Encoder) -> z3.CheckSatResult:
    """`_check` of the query, first without the prefix sums' step instances
    (`Encoder.step_instances`) under half of what remains of the budget (unsat without them is
    unsat with them, see `_discharge`), then with them (a model it then gives satisfies them
    too)."""
    if enc.pending_steps:
        if _check(_without_steps(solver, enc), share=0.5) == z3.unsat:
            return z3.unsat
        solver.add(*enc.step_instances())
    return _check(solver)


def _without_steps(solver: z3.Solver, enc: Encoder) -> z3.Solver:
    """A solver of its own holding `solver`'s assertions (no step instances yet): `solver`
    itself then meets them all in its first check, as a query without this first look did."""
    lean = z3.Solver(ctx=enc.ctx)
    lean.add(*solver.assertions())
    return lean


#: the largest rlimit z3 takes (an unsigned 32-bit parameter); 0 is "no limit"
_Z3_MAX_RLIMIT = 2**32 - 1


def _resource_count(solver: z3.Solver) -> int:
    """z3's resource count of the solver's context (every call in it adds to it)."""
    stats = solver.statistics()
    return int(stats.get_key_value("rlimit count")) if "rlimit count" in stats.keys() else 0


def _as_bool(enc: Encoder, v: T.Poly | T.Bool) -> z3.BoolRef:
    return enc.bool(v) if isinstance(v, T.Bool) else enc.poly(v) != 0


def _sizes(enc: Encoder, model: z3.ModelRef) -> dict[str, int]:
    return {n: model.eval(v, model_completion=True).as_long() for n, v in enc.sizes.items()}


def _refute(a: FuncOp, b: FuncOp, enc: Encoder, solver: z3.Solver, outs: Sequence[Output],
            start: float) -> Verdict:
    """Replay candidate models (small dims first, then any) through the interpreter."""
    solver.push()
    solver.add(*(v <= SMALL_DIM for v in enc.sizes.values()))
    small, tried = True, 0
    while tried < CANDIDATES:
        if _check(solver) != z3.sat:
            if small:
                solver.pop()  # no (further) small model: take any
                small = False
                continue
            break
        outcome = _try_model(a, b, enc, solver, outs, start, tried)
        if isinstance(outcome, Refuted):
            return outcome
        tried = outcome
    return Unknown("z3 found candidate counterexamples, but none replayed in the interpreter",
                   time.perf_counter() - start)


def _try_model(a: FuncOp, b: FuncOp, enc: Encoder, solver: z3.Solver, outs: Sequence[Output],
               start: float, tried: int) -> Refuted | int:
    model = solver.model()
    sizes = _sizes(enc, model)
    prefer = None
    for k, o in enumerate(outs):
        idx = tuple(model.eval(enc.int_var(n), model_completion=True).as_long() for n in o.index)
        if prefer is None and all(0 <= i for i in idx):
            prefer = (k, idx)
    found = replay(a, b, sizes, _model_inputs(a, enc, model, sizes), prefer)
    if found is not None:
        cex = Counterexample(found.sizes, found.output, found.index, found.inputs, found.value_a,
                             found.value_b, exact=found.exact)
        return Refuted(cex, time.perf_counter() - start)
    # next candidate: different dims
    if sizes:
        solver.add(z3.Or(*(enc.sizes[n] != v for n, v in sizes.items())))
    else:
        solver.add(z3.BoolVal(False, enc.ctx))
    return tried + 1


def _model_inputs(a: FuncOp, enc: Encoder, model: z3.ModelRef, sizes: dict[str, int]
                  ) -> list[np.ndarray] | None:
    """The tensor contents the model chose (unmentioned elements get the model's default)."""
    inputs = []
    for pos, t in enumerate(a.function_type.inputs.data):
        assert isinstance(t, TensorType)
        shape = tuple(d.evaluate(sizes) for d in t.shape)
        if any(n < 0 for n in shape) or int(np.prod(shape)) > 4096:
            return None
        fn = enc.tensors.get(f"a{pos}")
        arr = np.zeros(shape, dtype=bool if t.dtype == "i1" else np.float64)
        if fn is not None:
            for ix in np.ndindex(*shape):
                v = model.eval(fn(*(z3.IntVal(i, enc.ctx) for i in ix)), model_completion=True)
                arr[ix] = z3.is_true(v) if t.dtype == "i1" else _real(v)
        inputs.append(arr)
    return inputs


def _real(v: z3.ExprRef) -> float:
    if z3.is_rational_value(v):
        return v.numerator_as_long() / v.denominator_as_long()
    if z3.is_algebraic_value(v):
        return float(v.approx(12).as_decimal(12).rstrip("?"))
    return 0.0


def _type_refutation(a: FuncOp, b: FuncOp, k: int, sizes: dict[str, int], start: float
                     ) -> Refuted:
    """Result #k of the two functions has different shapes at `sizes`, or different dtypes."""
    ta, tb = a.function_type.outputs.data[k], b.function_type.outputs.data[k]
    assert isinstance(ta, TensorType) and isinstance(tb, TensorType)
    sa = tuple(IntExpr.evaluate(d, sizes) for d in ta.shape)
    sb = tuple(IntExpr.evaluate(d, sizes) for d in tb.shape)
    cex = Counterexample(sizes, k, (), [], float("nan"), float("nan"), sa, sb, ta.dtype, tb.dtype)
    return Refuted(cex, time.perf_counter() - start)


# ---- cache records -------------------------------------------------------------------------------
def _to_cache(v: Proved | Refuted) -> dict:
    if isinstance(v, Proved):
        return {"verdict": "proved", "proof_id": v.proof_id}
    c = v.counterexample
    return {"verdict": "refuted", "sizes": c.sizes, "output": c.output, "index": list(c.index),
            "inputs": [x.tolist() for x in c.inputs], "value_a": c.value_a, "value_b": c.value_b,
            "shape_a": None if c.shape_a is None else list(c.shape_a),
            "shape_b": None if c.shape_b is None else list(c.shape_b),
            "dtype_a": c.dtype_a, "dtype_b": c.dtype_b, "exact": c.exact}


def _from_cache(rec: dict, key: str, seconds: float) -> Verdict:
    if rec["verdict"] == "proved":
        return Proved(rec["proof_id"], seconds, cached=True, obligation=key)
    cex = Counterexample(
        dict(rec["sizes"]), rec["output"], tuple(rec["index"]),
        [np.asarray(x, dtype=np.float64) for x in rec["inputs"]], rec["value_a"], rec["value_b"],
        None if rec["shape_a"] is None else tuple(rec["shape_a"]),
        None if rec["shape_b"] is None else tuple(rec["shape_b"]),
        rec.get("dtype_a"), rec.get("dtype_b"), bool(rec.get("exact", False)))
    return Refuted(cex, seconds, cached=True)
