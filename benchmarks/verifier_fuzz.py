"""Differential fuzzing of the SMT verifier against the reference interpreter; not a test.

    python -m axon.benchmarks.verifier_fuzz --pairs 20000 --seed 0 [--every 500]

Each pair is a random program over symbolic sizes and a random change of it: a meaning-preserving
rewrite (commuting, distributing, transposing a product, linearity of sums and scans, ...) or a
mistake (off-by-one slice, wrong axis, swapped operands, changed constant or op, result dtype).
Every verdict is checked: a proof must agree with the interpreter, run in exact (float64) mode at
several sizes (all ones, unequal, random) on small-integer inputs; a disagreement is an UNSOUND
PROOF. A refutation's counterexample must replay (the types differ, or the values differ at its
sizes, inputs and index). Unknown is only counted. tests/verifier/test_fuzz.py and
tests/verifier/test_property.py use the generator and the checks below.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from xdsl.dialects.func import FuncOp

from axon.benchmarks import proof_budget
from axon.benchmarks.verifier_corpus import program
from axon.dialects.ax.tensor_type import TensorType
from axon.interpreter import run_function
from axon.verifier import ProofBudget, Proved, Refuted, prove_equivalent
from axon.verifier.budget import DEFAULT_BUDGET
from axon.verifier.replay import confirms, differs

#: every program takes all of these; z's extra column makes off-by-one slices expressible
PARAMS = "x: f32[M, N], y: f32[M, N], v: f32[1, N], r: f32[M, 1], w: f32[N, N], " \
         "u: f32[N, K], z: f32[M, N + 1]"
LEAVES = {"x": ("M", "N"), "y": ("M", "N"), "v": ("1", "N"), "r": ("M", "1"),
          "w": ("N", "N"), "u": ("N", "K")}
BINARY = ("+", "-", "*", "maximum", "minimum")
UNARY = ("exp", "relu", "square", "neg", "abs", "tanh")
REDUCTIONS = ("sum", "max", "min", "mean")
COMPARISONS = ("<", "<=", ">", ">=")
#: size assignments a proof is checked at: all ones, unequal, and (added per pair) random ones
SIZES = ({"M": 1, "N": 1, "K": 1}, {"M": 2, "N": 3, "K": 1}, {"M": 3, "N": 2, "K": 4})

#: a program tree: `(kind, *fields)`, where a field that is a tuple is a child tree and the others
#: are strings and ints (see `shape` and `text` for each kind's fields)
Node = tuple[Any, ...]
Tree = Node
Shape = tuple[str, ...]
Path = tuple[int, ...]
T = TypeVar("T")


class Chooser:
    """The source of random choices: `random.Random` here, a hypothesis draw in the tests."""

    def __init__(self, pick: Callable[[list[Any]], Any]) -> None:
        self._pick = pick

    def choice(self, options: Sequence[T]) -> T:
        picked: T = self._pick(list(options))
        return picked

    def coin(self) -> bool:
        return bool(self.choice([False, True]))


def random_chooser(rng: random.Random) -> Chooser:
    return Chooser(rng.choice)


# ---- shapes and text -----------------------------------------------------------------------------
def broadcast(a: Shape, b: Shape) -> Shape | None:
    """NumPy broadcasting over symbolic dims (a dim broadcasts only when it is literally 1)."""
    if len(a) != len(b):
        return None
    out: list[str] = []
    for p, q in zip(a, b, strict=True):
        if p != q and "1" not in (p, q):
            return None
        out.append(q if p == "1" else p)
    return tuple(out)


def shape(t: Tree) -> Shape | None:
    """The result's symbolic shape, or None when the tree is ill-shaped (mutations may do that)."""
    kind = t[0]
    if kind == "leaf":
        return LEAVES[t[1]]
    if kind == "slice":  # z[:, off:N + off]
        return ("M", "N")
    if kind == "const":
        return shape(t[2])
    maybe_kids = [shape(c) for c in t[1:] if isinstance(c, tuple)]
    kids = [k for k in maybe_kids if k is not None]
    if len(kids) != len(maybe_kids):
        return None
    if kind == "bin":
        return broadcast(kids[0], kids[1])
    if kind in ("un", "cumsum"):
        return kids[0] if kind == "un" or t[1] < len(kids[0]) else None
    if kind == "red":
        _, _, axis, keep, _ = t
        s = kids[0]
        if axis >= len(s):
            return None
        return s[:axis] + ("1",) * keep + s[axis + 1:]
    if kind == "mm":
        a, b = kids
        return (a[0], b[1]) if len(a) == len(b) == 2 and a[1] == b[0] else None
    if kind == "T":
        return kids[0][::-1] if len(kids[0]) == 2 else None
    if kind == "flat":
        s = kids[0]
        return (f"{s[0]}*{s[1]}",) if len(s) == 2 else None
    if kind == "catsl":  # concatenate([a, b], axis)[part]: shape of a, if a and b agree
        _, axis, _, _, _ = t
        return kids[0] if kids[0] == kids[1] and axis < len(kids[0]) else None
    if kind == "where":
        c = broadcast(kids[0], kids[1])
        d = broadcast(kids[2], kids[3])
        return broadcast(c, d) if c is not None and d is not None else None
    raise ValueError(kind)


def text(t: Tree) -> str:
    kind = t[0]
    if kind == "leaf":
        return t[1]
    if kind == "slice":
        return f"z[:, {t[1]}:N + {t[1]}]"
    if kind == "const":
        return f"({text(t[2])} * {t[1]})"
    if kind == "bin":
        op = t[1]
        if op in ("maximum", "minimum"):
            return f"{op}({text(t[2])}, {text(t[3])})"
        return f"({text(t[2])} {op} {text(t[3])})"
    if kind == "un":
        return f"(-{text(t[2])})" if t[1] == "neg" else f"{t[1]}({text(t[2])})"
    if kind == "red":
        return f"{t[1]}({text(t[4])}, axis={t[2]}, keepdims={bool(t[3])})"
    if kind == "cumsum":
        return f"cumsum({text(t[2])}, axis={t[1]})"
    if kind == "mm":
        return f"({text(t[1])} @ {text(t[2])})"
    if kind == "T":
        return f"{text(t[1])}.T"
    if kind == "flat":
        s = shape(t[1])
        assert s is not None, "text of an ill-shaped tree"
        return f"reshape({text(t[1])}, ({s[0]}*{s[1]},))"
    if kind == "catsl":
        _, axis, part, a, b = t
        s = shape(a)
        assert s is not None, "text of an ill-shaped tree"
        dims = [":"] * len(s)
        dims[axis] = f"0:{s[axis]}" if part == 0 else f"{s[axis]}:2*{s[axis]}"
        return f"concatenate([{text(a)}, {text(b)}], axis={axis})[{', '.join(dims)}]"
    if kind == "where":
        _, op, a, b, c, d = t
        return f"where({text(a)} {op} {text(b)}, {text(c)}, {text(d)})"
    raise ValueError(kind)


# ---- random programs -----------------------------------------------------------------------------
def random_tree(ch: Chooser, depth: int = 3) -> Tree:
    """A random well-shaped tree of at most `depth` levels (retrying ill-shaped combinations)."""
    while True:
        t = _grow(ch, depth)
        if shape(t) is not None:
            return t


def _grow(ch: Chooser, depth: int) -> Tree:
    if depth == 0 or ch.choice([0, 1, 2]) == 0:
        return ("slice", ch.choice([0, 1])) if ch.choice(range(8)) == 0 else \
            ("leaf", ch.choice(sorted(LEAVES)))
    kind = ch.choice(["bin", "bin", "un", "red", "mm", "T", "cumsum", "const", "catsl", "where",
                      "flat"])
    sub = lambda: _grow(ch, depth - 1)  # noqa: E731
    if kind == "bin":
        return ("bin", ch.choice(BINARY), sub(), sub())
    if kind == "un":
        return ("un", ch.choice(UNARY), sub())
    if kind == "red":
        return ("red", ch.choice(REDUCTIONS), ch.choice([0, 1]), ch.choice([0, 1]), sub())
    if kind == "mm":
        return ("mm", sub(), ("leaf", ch.choice(["w", "u"])))
    if kind == "T":
        return ("T", sub())
    if kind == "cumsum":
        return ("cumsum", ch.choice([0, 1]), sub())
    if kind == "const":
        return ("const", ch.choice(["2.0", "0.5", "-1.0"]), sub())
    if kind == "catsl":
        a = sub()
        return ("catsl", ch.choice([0, 1]), ch.choice([0, 1]), a, sub())
    if kind == "where":
        return ("where", ch.choice(COMPARISONS), sub(), sub(), sub(), sub())
    return ("flat", sub())


def nodes(t: Tree) -> list[Path]:
    """Paths of every node (child positions)."""
    out: list[Path] = [()]
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


def mutate(t: Tree, ch: Chooser) -> Tree:
    """A random local mistake: op, axis, operand order, a leaf, a slice offset, a constant, a
    concat part, a comparison, keepdims, or dropping a function. Not always meaning-changing."""
    path = ch.choice(nodes(t))
    node = at(t, path)
    kind = node[0]
    new: Node
    if kind == "leaf":
        new = ("leaf", ch.choice(sorted(LEAVES)))
    elif kind == "slice":
        new = ("slice", 1 - node[1])
    elif kind == "const":
        new = ("const", ch.choice(["2.0", "0.5", "-1.0", "1.0"]), node[2])
    elif kind == "bin":
        new = ("bin", ch.choice(BINARY), node[2], node[3]) if ch.coin() else \
            ("bin", node[1], node[3], node[2])
    elif kind == "un":
        new = ("un", ch.choice(UNARY), node[2]) if ch.coin() else node[2]
    elif kind == "red":
        _, fn, axis, keep, a = node
        new = ch.choice([("red", fn, 1 - axis, keep, a), ("red", ch.choice(REDUCTIONS), axis,
                                                              keep, a),
                         ("red", fn, axis, 1 - keep, a)])
    elif kind == "cumsum":
        new = ("cumsum", 1 - node[1], node[2]) if ch.coin() else node[2]
    elif kind == "catsl":
        _, axis, part, a, b = node
        new = ch.choice([("catsl", axis, 1 - part, a, b), ("catsl", 1 - axis, part, a, b),
                         ("catsl", axis, part, b, a)])
    elif kind == "where":
        _, op, a, b, c, d = node
        new = ("where", ch.choice(COMPARISONS), a, b, c, d) if ch.coin() else \
            ("where", op, a, b, d, c)
    elif kind == "mm":
        new = ("mm", ("T", node[1]), node[2]) if ch.coin() else node[1]
    else:  # T, flat: drop it
        new = node[1]
    return replace(t, path, new)


def rewrite(t: Tree, ch: Chooser) -> Tree:
    """A meaning-preserving change at a random node where one applies (else the program itself)."""
    options = [(p, r) for p in nodes(t) for r in _rewrites(at(t, p))]
    if not options:
        return t
    path, new = ch.choice(options)
    return replace(t, path, new)


def _rewrites(n: Tree) -> list[Tree]:
    kind = n[0]
    out: list[Tree] = []
    if kind == "bin":
        _, op, a, b = n
        if op in ("+", "*", "maximum", "minimum"):
            out.append(("bin", op, b, a))
        if op == "-":
            out.append(("un", "neg", ("bin", "-", b, a)))
        if op == "*" and b[0] == "bin" and b[1] in ("+", "-"):
            out.append(("bin", b[1], ("bin", "*", a, b[2]), ("bin", "*", a, b[3])))
    elif kind == "un":
        _, fn, a = n
        out.append({"relu": ("bin", "maximum", a, ("const", "0.0", a)),
                    "square": ("bin", "*", a, a),
                    "neg": ("const", "-1.0", a),
                    "abs": ("bin", "maximum", a, ("un", "neg", a))}.get(fn, ("T", ("T", n))))
    elif kind == "red":
        _, fn, axis, keep, a = n
        same = shape(a)
        if fn == "sum" and a[0] == "bin" and a[1] in ("+", "-") and \
                shape(a[2]) == shape(a[3]) == same:
            out.append(("bin", a[1], ("red", fn, axis, keep, a[2]), ("red", fn, axis, keep, a[3])))
        if fn in ("sum", "mean") and a[0] == "const":
            out.append(("const", a[1], ("red", fn, axis, keep, a[2])))
    elif kind == "cumsum":
        _, axis, a = n
        if a[0] == "bin" and a[1] in ("+", "-") and shape(a[2]) == shape(a[3]) == shape(a):
            out.append(("bin", a[1], ("cumsum", axis, a[2]), ("cumsum", axis, a[3])))
    elif kind == "mm":
        _, a, b = n
        out.append(("T", ("mm", ("T", b), ("T", a))))
        if a[0] == "const":
            out.append(("const", a[1], ("mm", a[2], b)))
    elif kind == "catsl":
        _, axis, part, a, b = n
        out.append(a if part == 0 else b)
        out.append(("catsl", axis, 1 - part, b, a))
    elif kind == "where":
        _, op, a, b, c, d = n
        flip = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
        out.append(("where", flip, a, b, d, c))
    elif kind == "T" and n[1][0] == "T":
        out.append(n[1][1])
    return out


# ---- checks --------------------------------------------------------------------------------------
@dataclass
class Pair:
    """One fuzzed pair: the programs' texts, whether the change was a rewrite, and the functions."""

    a: str
    b: str
    rewrite: bool
    fa: FuncOp
    fb: FuncOp


def make_pair(ch: Chooser, depth: int = 3, dtype_change: float = 0.05) -> Pair | None:
    """A random program and a rewrite or mutation of it; None when the mutant is ill-shaped."""
    tree = random_tree(ch, depth)
    is_rewrite = ch.coin()
    other = rewrite(tree, ch) if is_rewrite else mutate(tree, ch)
    if shape(other) is None:
        return None
    ta, tb = text(tree), text(other)
    if not is_rewrite and ch.choice(range(round(1 / dtype_change))) == 0:
        tb = f"astype({tb}, {ch.choice(['i32', 'bf16', 'f16'])})"
    return Pair(ta, tb, is_rewrite, program("a", PARAMS, ta), program("b", PARAMS, tb))


def _inputs(func: FuncOp, sizes: dict[str, int], rng: np.random.Generator) -> list[np.ndarray]:
    out = []
    for t in func.function_type.inputs.data:
        assert isinstance(t, TensorType)
        # small integers: exact in f32 and in float64, so only the algebra can differ
        out.append(rng.integers(-2, 3, tuple(d.evaluate(sizes) for d in t.shape))
                   .astype(np.float64))
    return out


def disagreement(a: FuncOp, b: FuncOp, rng: np.random.Generator) -> str | None:
    """Where the interpreter (exact mode) tells two proved-equal functions apart, else None."""
    extra = {k: int(rng.integers(1, 5)) for k in ("M", "N", "K")}
    for sizes in (*SIZES, extra):
        inputs = _inputs(a, sizes, rng)
        with np.errstate(all="ignore"):
            ra = [np.asarray(r, dtype=np.float64) for r in run_function(a, inputs, sizes,
                                                                         exact=True)]
            rb = [np.asarray(r, dtype=np.float64) for r in run_function(b, inputs, sizes,
                                                                         exact=True)]
        for k, (x, y) in enumerate(zip(ra, rb, strict=True)):
            if x.shape != y.shape:
                return f"{sizes}: result #{k} has shape {x.shape} vs {y.shape}"
            for ix in np.ndindex(*x.shape):
                if differs(float(x[ix]), float(y[ix]), "f32"):
                    return f"{sizes}: result #{k}{list(ix)} is {x[ix]} vs {y[ix]}"
    return None


def replays(a: FuncOp, b: FuncOp, verdict: Refuted) -> bool:
    """Does the counterexample reproduce in the interpreter?"""
    cex = verdict.counterexample
    if cex.shape_a is not None:  # refuted by the result types
        ta, tb = (f.function_type.outputs.data[cex.output] for f in (a, b))
        assert isinstance(ta, TensorType) and isinstance(tb, TensorType)
        sa = tuple(d.evaluate(cex.sizes) for d in ta.shape)
        sb = tuple(d.evaluate(cex.sizes) for d in tb.shape)
        return (sa, ta.dtype) != (sb, tb.dtype)
    return confirms(a, b, cex.sizes, cex.inputs, cex.output, cex.index, cex.exact)


@dataclass
class Summary:
    pairs: int = 0
    proved: int = 0
    refuted: int = 0
    unknown: int = 0
    unproved_rewrites: int = 0
    unsound: list[str] = field(default_factory=list)
    not_replayed: list[str] = field(default_factory=list)

    def line(self, seconds: float) -> str:
        return (f"pairs {self.pairs}: proved {self.proved}, refuted {self.refuted}, unknown "
                f"{self.unknown} (rewrites not proved {self.unproved_rewrites}); unsound proofs "
                f"{len(self.unsound)}, non-replaying refutations {len(self.not_replayed)}; "
                f"{seconds:.1f}s")


def judge(pair: Pair, summary: Summary, rng: np.random.Generator, budget: ProofBudget
          ) -> None:
    """Run the verifier on one pair and check its verdict; failures go into the summary."""
    verdict = prove_equivalent(pair.fa, pair.fb, budget=budget)
    summary.pairs += 1
    if isinstance(verdict, Proved):
        summary.proved += 1
        bad = disagreement(pair.fa, pair.fb, rng)
        if bad is not None:
            summary.unsound.append(f"a: {pair.a}\n  b: {pair.b}\n  {bad}")
    elif isinstance(verdict, Refuted):
        summary.refuted += 1
        if not replays(pair.fa, pair.fb, verdict):
            summary.not_replayed.append(f"a: {pair.a}\n  b: {pair.b}\n  {verdict.counterexample}")
    else:
        summary.unknown += 1
    if pair.rewrite and not isinstance(verdict, Proved):
        summary.unproved_rewrites += 1


def fuzz(pairs: int, seed: int, every: int = 0, budget: ProofBudget = DEFAULT_BUDGET,
         depth: int = 3) -> Summary:
    """Judge `pairs` random pairs from `seed`; print progress every `every` pairs (0: never)."""
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    ch, summary, start = random_chooser(rng), Summary(), time.perf_counter()
    while summary.pairs < pairs:
        pair = make_pair(ch, depth)
        if pair is None:
            continue
        judge(pair, summary, nrng, budget)
        if every and summary.pairs % every == 0:
            print(summary.line(time.perf_counter() - start), flush=True)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--every", type=int, default=500, help="progress line every N pairs")
    proof_budget.add_arguments(parser, DEFAULT_BUDGET)
    parser.add_argument("--depth", type=int, default=3, help="program tree depth")
    args = parser.parse_args()
    start = time.perf_counter()
    summary = fuzz(args.pairs, args.seed, args.every, proof_budget.from_arguments(args),
                   args.depth)
    print(summary.line(time.perf_counter() - start))
    for line in summary.unsound:
        print(f"UNSOUND PROOF\n  {line}")
    for line in summary.not_replayed:
        print(f"NON-REPLAYING REFUTATION\n  {line}")


if __name__ == "__main__":
    main()
