"""Index chains of reshapes, strided slices and concatenations (`verifier/indices.py`): each rule
checked against the integers it claims to preserve at every size from 1 to 4 and every point of
the ranges (or of the facts, for `pin`), applied where its side conditions hold and left alone
where they fail; then the programs they make provable (rope's interleaved pairs, its rows
kernel) next to wrong variants refuted with a counterexample the interpreter replays."""

from __future__ import annotations

import itertools

import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.benchmarks.verifier_corpus import program
from axon.dialects.form.intexpr import IntExpr, parse_int_expr
from axon.interpreter import run_function
from axon.tiling.kernels import Tiling, tile_function
from axon.tools.embed import parse_mlir, parse_source
from axon.verifier import ProofBudget, Proved, Refuted, prove_equivalent
from axon.verifier.indices import bounds, decide, pin, simplify
from axon.verifier.terms import icompare

SIZES = range(1, 5)


def _ranges(spec: dict[str, str]) -> dict[str, tuple[IntExpr, IntExpr]]:
    """Loop variables `$name` over [0, extent)."""
    return {f"${v}": (IntExpr.const(0), parse_int_expr(e)) for v, e in spec.items()}


def _expr(text: str) -> IntExpr:
    """Index text with the loop variables o, p, q spelled `$o`, `$p`, `$q`."""
    return parse_int_expr(text).substitute({v: IntExpr.sym(f"${v}") for v in "opq"})


def _points(e: IntExpr, ranges: dict[str, tuple[IntExpr, IntExpr]]):
    """Every assignment of sizes (1..4) and loop variables (within their ranges)."""
    sizes = sorted({s for x in (e, *(b for r in ranges.values() for b in r))
                    for s in x.symbols() if not s.startswith("$")})
    for values in itertools.product(SIZES, repeat=len(sizes)):
        env = dict(zip(sizes, values, strict=True))
        extents = [range(ranges[v][0].evaluate(env), ranges[v][1].evaluate(env)) for v in ranges]
        for point in itertools.product(*extents):
            yield {**env, **dict(zip(ranges, point, strict=True))}


@pytest.mark.parametrize(("text", "spec", "expected"), [
    # the quotient and remainder of a multiple plus anything: no range needed
    ("(2*p*N + o) floordiv 2", {"p": "M", "o": "3*N"}, "p*N + o floordiv 2"),
    ("(2*p*N + o) mod 2", {"p": "M", "o": "3*N"}, "o mod 2"),
    ("(p*D*H + q) floordiv (D*H)", {"p": "M", "q": "3*D*H"}, "p + q floordiv (D*H)"),
    # a remainder the ranges put in [0, n): a reshape's flatten then unflatten
    ("(p*N + o) floordiv N", {"p": "M", "o": "N"}, "p"),
    ("(o floordiv 2) mod D", {"o": "2*D"}, "o floordiv 2"),
    ("((p*H + q)*N + o) floordiv N mod H", {"p": "M", "q": "H", "o": "N"}, "q"),
    # ... or in [-n, 0)
    ("(p*N + o - N) floordiv N", {"p": "M", "o": "N"}, "p - 1"),
    ("(p*N + o - N) mod N", {"p": "M", "o": "N"}, "o"),
    # ... or split by a part of the divisor: a kv head repeated G times, then flattened
    ("(o + p*D + q*D*L) floordiv (D*G*L)", {"o": "D", "p": "L", "q": "2*G"}, "q floordiv G"),
    ("(o + p*D + q*D*L) mod (D*G*L)", {"o": "D", "p": "L", "q": "2*G"},
     "o + p*D + (q mod G)*D*L"),
    # not applied: the remainder may reach n (or the part of it), or the divisor may be 0
    ("(o + p*D + q*D*L) floordiv (D*G*L)", {"o": "D + 1", "p": "L", "q": "2*G"},
     "(o + p*D + q*D*L) floordiv (D*G*L)"),
    ("(o floordiv 2) mod D", {"o": "2*D + 1"}, "(o floordiv 2) mod D"),
    ("(p*N + o) floordiv N", {"p": "M", "o": "N + 1"}, "p + o floordiv N"),
    ("(p*(K - M) + o) floordiv (K - M)", {"p": "M", "o": "K"},
     "(p*(K - M) + o) floordiv (K - M)"),
    ("(o*p + 1) mod o", {"o": "N", "p": "N"}, "(o*p + 1) mod o"),
])
def test_simplify_keeps_the_value_at_every_point(text: str, spec: dict[str, str],
                                                 expected: str) -> None:
    ranges = _ranges(spec)
    e = _expr(text)
    got = simplify(e, ranges)
    assert got == _expr(expected), got
    for env in _points(e, ranges):
        try:
            want = e.evaluate(env)
        except ZeroDivisionError:
            continue  # a divisor of 0: the index has no value there
        assert got.evaluate(env) == want, env


@pytest.mark.parametrize(("text", "spec", "low", "high"), [
    ("o floordiv 2", {"o": "2*D"}, "0", "D - 1"),
    ("2*(o floordiv 2) + 1", {"o": "2*D"}, "1", "2*D - 1"),
    ("o mod BM", {"o": "T"}, "0", "BM - 1"),
    ("p*D + o mod D", {"p": "H", "o": "N"}, "0", "H*D - 1"),
    ("-(o mod 3)", {"o": "N"}, "-2", "0"),
])
def test_bounds_of_floordiv_and_mod_atoms(text: str, spec: dict[str, str], low: str,
                                          high: str) -> None:
    ranges = _ranges(spec)
    found = bounds(_expr(text), ranges)
    assert found == (_expr(low), _expr(high))
    for env in _points(_expr(text), ranges):
        assert found[0].evaluate(env) <= _expr(text).evaluate(env) <= found[1].evaluate(env)


def test_bounds_of_a_product_with_a_factor_of_unknown_sign_are_not_claimed() -> None:
    ranges = {"$o": (IntExpr.const(0), IntExpr.sym("N")),
              "$p": (IntExpr.const(-2), IntExpr.const(3))}
    assert bounds(_expr("(o mod 3)*p"), ranges) is None


def test_a_strided_slice_mask_is_decided_by_the_bounds_of_its_quotient() -> None:
    ranges = _ranges({"o": "2*D"})
    # the odd slice's element 2*(o floordiv 2) + 1 < 2*D everywhere, one more is not
    assert decide(icompare("lt", _expr("2*(o floordiv 2) + 1 - 2*D")), ranges).args == (True,)
    undecided = icompare("lt", _expr("2*(o floordiv 2) + 2 - 2*D"))
    assert decide(undecided, ranges) == undecided


@pytest.mark.parametrize(("index", "facts", "spec", "expected"), [
    # a concat of [.., 1] pieces: the first read where o mod 2 < 1, the second where not
    ("o mod 2", ["o mod 2"], {"o": "2*D"}, "0"),
    ("o mod 2 - 1", ["1 - o mod 2"], {"o": "2*D"}, "0"),
    ("p*N + q", ["q"], {"p": "M", "q": "2"}, "p*N"),
    ("o - N", ["N - o"], {"o": "N + 1"}, "0"),
    # not pinned: the fact leaves two values, or bounds a term with a coefficient of 2
    ("o mod 3", ["o mod 3 - 1"], {"o": "N"}, "o mod 3"),
    ("o", ["2*o - 1"], {"o": "N"}, "o"),
    ("o - N", ["N - o"], {"o": "N + 2"}, "o - N"),
])
def test_pin_replaces_an_atom_the_facts_fix(index: str, facts: list[str], spec: dict[str, str],
                                            expected: str) -> None:
    ranges = _ranges(spec)
    (got,) = pin((_expr(index),), [_expr(f) for f in facts], ranges)
    assert got == _expr(expected), got
    for env in _points(_expr(index), ranges):
        if all(_expr(f).evaluate(env) <= 0 for f in facts):
            assert got.evaluate(env) == _expr(index).evaluate(env), env


# ---- programs -----------------------------------------------------------------------------------
PAIRS = "a: f32[T, D], b: f32[T, D]"
INTERLEAVED = ("reshape(concatenate([reshape(a, (T, D, 1)), reshape(b, (T, D, 1))], axis=2), "
               "(T, 2*D))")


@pytest.mark.parametrize(("a", "b"), [
    (f"{INTERLEAVED}[:, 0:2*D - 1:2]", "a"),
    (f"{INTERLEAVED}[:, 1::2]", "b"),
    (f"reshape({INTERLEAVED}, (T, D, 2))[:, :, 1]", "b"),
])
def test_interleaved_pairs_are_read_back(a: str, b: str) -> None:
    verdict = prove_equivalent(program("a", PAIRS, a), program("b", PAIRS, b))
    assert isinstance(verdict, Proved), verdict


@pytest.mark.parametrize(("a", "b"), [
    (f"{INTERLEAVED}[:, 1::2]", "a"),
    (f"{INTERLEAVED}[:, 1:2*D:2]", "concatenate([b[:, 1:], a[:, 0:1]], axis=1)"),
])
def test_interleaved_pairs_read_off_by_one_are_refuted(a: str, b: str) -> None:
    fa, fb = program("a", PAIRS, a), program("b", PAIRS, b)
    verdict = prove_equivalent(fa, fb)
    assert isinstance(verdict, Refuted), verdict
    _replays(fa, fb, verdict)


HEADS = "k: f32[H, L], w: f32[G]"  # w only names G
REPEATED = "reshape(broadcast_to(reshape(k, (H, 1, L)), (H, G, L)), (H*G, L))"


def test_kv_heads_repeated_by_reshape_and_broadcast_are_proved() -> None:
    other = ("reshape(transpose(broadcast_to(reshape(k, (1, H, L)), (G, H, L)), (1, 0, 2)), "
             "(H*G, L))")
    verdict = prove_equivalent(program("a", HEADS, REPEATED), program("b", HEADS, other))
    assert isinstance(verdict, Proved), verdict


def test_kv_heads_tiled_are_not_kv_heads_repeated() -> None:
    tiled = "reshape(broadcast_to(reshape(k, (1, H, L)), (G, H, L)), (H*G, L))"
    fa, fb = program("a", HEADS, REPEATED), program("b", HEADS, tiled)
    verdict = prove_equivalent(fa, fb)
    assert isinstance(verdict, Refuted), verdict
    _replays(fa, fb, verdict)


def _replays(fa: FuncOp, fb: FuncOp, verdict: Refuted) -> None:
    """The counterexample's inputs give different results in the interpreter."""
    cex = verdict.counterexample
    got = [run_function(f, cex.inputs, cex.sizes, exact=True)[cex.output][cex.index]
           for f in (fa, fb)]
    assert got[0] != pytest.approx(got[1]), cex


def _rope() -> FuncOp:
    module = parse_source(PROGRAMS["rope"].source, "rope.py")
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    return func


def test_ropes_rows_kernel_is_proved_within_the_pass_budget() -> None:
    func = _rope()
    kernel = tile_function(func, Tiling("T"), "sbuf", "psum")
    verdict = prove_equivalent(kernel, func, budget=ProofBudget.nominal(5.0))
    assert isinstance(verdict, Proved), verdict


def test_ropes_rows_kernel_with_its_even_slice_off_by_one_is_refuted() -> None:
    func = _rope()
    text = str(tile_function(func, Tiling("T"), "sbuf", "psum"))
    even = ('start = ["0", "0", "0"], stop = ["BM", "H", "2*D2 - 1"]')
    assert even in text
    # the even slice one element on: it reads the odd elements (the same shape)
    wrong = parse_mlir(text.replace(even, 'start = ["0", "0", "1"], stop = ["BM", "H", "2*D2"]'))
    (kernel,) = (op for op in wrong.ops if isinstance(op, FuncOp))
    verdict = prove_equivalent(kernel, func, budget=ProofBudget.nominal(5.0))
    assert isinstance(verdict, Refuted), verdict
    _replays(kernel, func, verdict)
