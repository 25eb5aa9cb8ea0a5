"""Property tests: random small programs and random mutations of them.

Whenever the verifier says proved, the reference interpreter agrees at random sizes and inputs;
whenever it says refuted, the counterexample reproduces in the interpreter. Unknown is allowed (it
claims nothing).

Example counts (run in CI with the rest of the suite): `test_mutations_are_judged_soundly` runs
150 examples (program, mutant) pairs, `test_rewrites_are_proved` 60 examples of
meaning-preserving rewrites, which must all be proved.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from axon.benchmarks.verifier_corpus import program
from axon.interpreter import run_function
from axon.verifier import Proved, Refuted, prove_equivalent
from axon.verifier.replay import differs

PARAMS = "x: f32[M, N], y: f32[M, N], v: f32[1, N], r: f32[M, 1], w: f32[N, N]"
#: leaf -> (has an M dim, has an N dim); size-1 dims broadcast
LEAVES = {"x": (True, True), "y": (True, True), "v": (False, True), "r": (True, False)}

Tree = tuple


def shape(t: Tree) -> tuple[bool, bool]:
    kind = t[0]
    if kind == "leaf":
        return LEAVES[t[1]]
    if kind == "bin":
        (m1, n1), (m2, n2) = shape(t[2]), shape(t[3])
        return m1 or m2, n1 or n2
    if kind == "red":
        m, n = shape(t[3])
        return (m, False) if t[2] == 1 else (False, n)
    return shape(t[2])  # unary, matmul keep the shape


def well_shaped(t: Tree) -> bool:
    """Matmul by w needs an N dim on its left operand (mutations may break that)."""
    if t[0] == "leaf":
        return True
    if t[0] == "mm" and not shape(t[2])[1]:
        return False
    return all(well_shaped(c) for c in t[1:] if isinstance(c, tuple))


def text(t: Tree) -> str:
    kind = t[0]
    if kind == "leaf":
        return t[1]
    if kind == "bin":
        return f"({text(t[2])} {t[1]} {text(t[3])})"
    if kind == "red":
        return f"{t[1]}({text(t[3])}, axis={t[2]}, keepdims=True)"
    if kind == "un":
        return f"{t[1]}({text(t[2])})"
    return f"({text(t[2])} @ w)"


def _extend(children: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
    return st.one_of(
        st.tuples(st.just("bin"), st.sampled_from(["+", "-", "*"]), children, children),
        st.tuples(st.just("red"), st.sampled_from(["sum", "max"]), st.sampled_from([0, 1]),
                  children),
        st.tuples(st.just("un"), st.sampled_from(["exp", "relu", "square"]), children),
        st.tuples(st.just("mm"), st.just("@"), children).filter(lambda t: shape(t[2])[1]),
    )


TREES = st.recursive(st.tuples(st.just("leaf"), st.sampled_from(sorted(LEAVES))), _extend,
                     max_leaves=5)


def nodes(t: Tree) -> list[tuple[int, ...]]:
    """Paths of every node (child positions)."""
    out = [()]
    for i, child in enumerate(t):
        if isinstance(child, tuple):
            out.extend((i, *p) for p in nodes(child))
    return out


def at(t: Tree, path: tuple[int, ...]) -> Tree:
    return t if not path else at(t[path[0]], path[1:])


def replace(t: Tree, path: tuple[int, ...], new: Tree) -> Tree:
    if not path:
        return new
    i = path[0]
    return (*t[:i], replace(t[i], path[1:], new), *t[i + 1:])


def mutate(t: Tree, data: st.DataObject) -> Tree:
    """A random local change: operator, axis, operand order, a leaf, or dropping a function."""
    path = data.draw(st.sampled_from(nodes(t)))
    node = at(t, path)
    kind = node[0]
    if kind == "leaf":
        new = ("leaf", data.draw(st.sampled_from(sorted(LEAVES))))
    elif kind == "bin":
        choice = data.draw(st.sampled_from(["op", "swap"]))
        new = (("bin", data.draw(st.sampled_from(["+", "-", "*"])), node[2], node[3])
               if choice == "op" else ("bin", node[1], node[3], node[2]))
    elif kind == "red":
        new = ("red", node[1], 1 - node[2], node[3]) if data.draw(st.booleans()) else \
            ("red", "max" if node[1] == "sum" else "sum", node[2], node[3])
    else:
        new = node[-1]  # drop the function / the matmul
    return replace(t, path, new)


def rewrite(t: Tree, data: st.DataObject) -> Tree:
    """A meaning-preserving change: commute + or *, or distribute * over +/-."""
    bins = [p for p in nodes(t) if at(t, p)[0] == "bin"]
    if not bins:
        return t  # nothing to rewrite: the program itself
    path = data.draw(st.sampled_from(bins))
    _, op, a, b = at(t, path)
    if op in ("+", "*") and (op == "+" or b[0] != "bin" or data.draw(st.booleans())):
        return replace(t, path, ("bin", op, b, a))
    if op == "*" and b[0] == "bin" and b[1] in ("+", "-"):
        return replace(t, path, ("bin", b[1], ("bin", "*", a, b[2]), ("bin", "*", a, b[3])))
    return replace(t, path, ("bin", "+", b, a) if op == "+" else ("bin", op, a, b))


def _wrap(t: Tree) -> str:
    # a common result shape [M, N] keeps shape refutations out of the value check
    return f"broadcast_to({text(t)}, (M, N))"


def _check_agrees(a, b, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(3):
        sizes = {"M": int(rng.integers(1, 4)), "N": int(rng.integers(1, 4))}
        shapes = [(sizes["M"], sizes["N"])] * 2 + [(1, sizes["N"]), (sizes["M"], 1),
                                                  (sizes["N"], sizes["N"])]
        inputs = [rng.uniform(-1.5, 1.5, s) for s in shapes]
        with np.errstate(all="ignore"):
            ra = np.asarray(run_function(a, inputs, sizes)[0], dtype=np.float64)
            rb = np.asarray(run_function(b, inputs, sizes)[0], dtype=np.float64)
        for ix in np.ndindex(*ra.shape):
            assert not differs(float(ra[ix]), float(rb[ix]), "f32"), (sizes, ix, ra, rb)


def _check_replays(a, b, verdict: Refuted) -> None:
    cex = verdict.counterexample
    ra = run_function(a, cex.inputs, cex.sizes)[cex.output]
    rb = run_function(b, cex.inputs, cex.sizes)[cex.output]
    assert differs(float(ra[cex.index]), float(rb[cex.index]), "f32")


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                       HealthCheck.data_too_large])


@settings(max_examples=150, **SETTINGS)
@given(TREES, st.data())
def test_mutations_are_judged_soundly(tree: Tree, data: st.DataObject) -> None:
    mutant = mutate(tree, data)
    assume(well_shaped(mutant))
    a, b = program("a", PARAMS, _wrap(tree)), program("b", PARAMS, _wrap(mutant))
    verdict = prove_equivalent(a, b)
    if isinstance(verdict, Proved):
        _check_agrees(a, b, data.draw(st.integers(0, 2**16)))
    elif isinstance(verdict, Refuted):
        _check_replays(a, b, verdict)


@settings(max_examples=60, **SETTINGS)
@given(TREES, st.data())
def test_rewrites_are_proved(tree: Tree, data: st.DataObject) -> None:
    other = rewrite(tree, data)
    a, b = program("a", PARAMS, _wrap(tree)), program("b", PARAMS, _wrap(other))
    verdict = prove_equivalent(a, b)
    assert isinstance(verdict, Proved), (text(tree), text(other), verdict)
    _check_agrees(a, b, data.draw(st.integers(0, 2**16)))
