"""The benchmark suite: one entry per Tier 1 and Tier 2 program of the project's benchmark list.

Each `Program` names its NumPy-subset source (`benchmarks/programs/<name>.py`, parsed by the source
frontend, never executed), its float32 NumPy reference (`benchmarks/references.py`), the default
shapes of the benchmark list as size-symbol bindings, its tier and dtype, and how to draw
well-conditioned inputs for it. `make_inputs` draws the inputs; `small_sizes` gives the small
bindings tests run on.

The parameter shapes are read from the program's own signature (`def f(x: bf16[M, K], ...)`), so the
source file is the one place they are written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from axon.benchmarks import references
from axon.dialects.form.dtypes import DTYPES, numpy_dtype
from axon.dialects.form.intexpr import IntExpr, parse_int_expr

PROGRAM_DIR = Path(__file__).resolve().parent / "programs"

Sizes = Mapping[str, int]
Scale = Callable[[Sizes], float]


@dataclass(frozen=True)
class Param:
    """One tensor parameter of a program: its name, dtype and dims (integer expressions)."""

    name: str
    dtype: str
    dims: tuple[IntExpr, ...]

    def shape(self, sizes: Sizes) -> tuple[int, ...]:
        """The concrete shape under the size bindings `sizes`."""
        return tuple(d.evaluate(sizes) for d in self.dims)


@dataclass(frozen=True)
class Init:
    """How to draw one input.

    `dist` is "normal" (mean 0, std 1), "uniform" (in [low, high)), or "cos"/"sin" (rotary tables
    cos/sin(t * 10000^(-i / D2)) for a [T, D2] parameter, deterministic). The drawn values are
    multiplied by `scale(sizes)`; the usual scale is 1/sqrt(fan-in) for a matmul operand, so
    products stay of order one and bf16 rounding of intermediates stays below the tolerances."""

    dist: str = "normal"
    low: float = 0.0
    high: float = 1.0
    scale: Scale | None = None


def _inv_sqrt(symbol: str) -> Scale:
    """The scale 1/sqrt(sizes[symbol])."""
    return lambda sizes: float(sizes[symbol]) ** -0.5


def _inv(symbol: str) -> Scale:
    """The scale 1/sizes[symbol]."""
    return lambda sizes: 1.0 / float(sizes[symbol])


NORMAL = Init()
GAIN = Init("uniform", 0.5, 1.5)


def _weight(fan_in: str) -> Init:
    """A matmul operand contracted over `fan_in`: normal with std 1/sqrt(fan_in)."""
    return Init(scale=_inv_sqrt(fan_in))


@dataclass(frozen=True)
class Program:
    """One benchmark program.

    `default_sizes` are the shapes of benchmarks.md as bindings of the program's size symbols.
    `tolerance_scale` widens the dtype's (rtol, atol) for programs whose numerics need it (1 for
    none; a widening must say why beside the entry). `inits` overrides the standard-normal input
    distribution per parameter name. `scan` names the size symbol a running sum runs along (its
    tolerance then grows with that length: `tolerance_at`)."""

    name: str
    tier: int
    dtype: str
    default_sizes: tuple[Sizes, ...]
    reference: Callable[..., np.ndarray]
    inits: Mapping[str, Init] = field(default_factory=dict)
    tolerance_scale: float = 1.0
    scan: str | None = None

    @property
    def source_path(self) -> Path:
        """The program's NumPy-subset source file."""
        return PROGRAM_DIR / f"{self.name}.py"

    @property
    def source(self) -> str:
        """The text of the source file."""
        return self.source_path.read_text()

    @cached_property
    def params(self) -> tuple[Param, ...]:
        """The parameters of the program's `def`, read from its signature."""
        match = re.search(rf"^def\s+{re.escape(self.name)}\s*\((.*?)\)\s*:", self.source,
                          re.MULTILINE | re.DOTALL)
        if match is None:
            raise ValueError(f"{self.source_path}: no 'def {self.name}(...)'")
        params = []
        for pm in re.finditer(r"(\w+)\s*:\s*(\w+)\s*\[([^\]]*)\]", match.group(1)):
            name, dtype, dims = pm.groups()
            exprs = tuple(parse_int_expr(d.strip()) for d in dims.split(",") if d.strip())
            params.append(Param(name, dtype, exprs))
        return tuple(params)

    @property
    def symbols(self) -> tuple[str, ...]:
        """The size symbols of the signature, in order of first appearance."""
        seen: dict[str, None] = {}
        for p in self.params:
            for d in p.dims:
                for s in sorted(d.symbols()):
                    seen.setdefault(s, None)
        return tuple(seen)

    def retyped_source(self, dtype: str) -> str:
        """The source with every parameter of the program's dtype given `dtype` instead (the
        program's meaning with a different rounding; used to check it in f32)."""
        return re.sub(rf"\b{re.escape(self.dtype)}\[", f"{dtype}[", self.source)

    @property
    def tolerance(self) -> tuple[float, float]:
        """(rtol, atol) for comparing a result against the reference."""
        rtol, atol = DTYPES[self.dtype].tolerance
        return rtol * self.tolerance_scale, atol * self.tolerance_scale

    def tolerance_at(self, sizes: Sizes) -> tuple[float, float]:
        """(rtol, atol) for comparing a result at `sizes`: `tolerance`, its atol grown by a
        scan's reassociation error (`scan_error`) for a program with a `scan`."""
        rtol, atol = self.tolerance
        if self.scan is None:
            return rtol, atol
        return rtol, atol + scan_error(sizes[self.scan])


# A scan's kernel and the reference both add in float32, but in different orders (tl.cumsum's
# tree against the reference's own), so each prefix differs by the rounding of a reassociated
# sum, which the dtype tolerance (one rounding of a result of order one) does not cover once
# the scan is long: cumsum_f32 over 1024 lanes was 5.3e-5 off at most (on the H200), against
# the f32 atol of 2e-6. The error of a sum of n terms is at most about n * eps * its largest
# partial sum (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., 4.2), and
# typically sqrt(n) * eps * that (rounding errors of either sign); the suite's unit-normal
# inputs make the partial sums of order sqrt(n) themselves, so the typical error grows as
# n * eps: 1024 lanes give 1.2e-4 (the measured 5.3e-5 is 0.43 of it), 32768 lanes 3.9e-3
# (half of bf16's atol: a bf16 scan is bounded by its result's rounding, not by this).
#: float32's machine epsilon: every suite scan accumulates in float32 (the kernels compute
#: floats in fp32, the reference in float32)
SCAN_EPS = 2.0 ** -23


def scan_error(length: int) -> float:
    """The absolute error a running sum of `length` unit-scale terms may carry from the order
    of its float32 additions (see `SCAN_EPS`): `length * SCAN_EPS`."""
    return length * SCAN_EPS


def _program(name: str, tier: int, default_sizes: list[dict[str, int]],
              inits: Mapping[str, Init] | None = None, dtype: str = "bf16",
              tolerance_scale: float = 1.0, scan: str | None = None) -> Program:
    return Program(name, tier, dtype, tuple(default_sizes), getattr(references, name),
                   dict(inits or {}), tolerance_scale, scan)


def _square(*symbols: str, n: int) -> dict[str, int]:
    return dict.fromkeys(symbols, n)


_MATMUL_W = {"w": _weight("K")}

# Tolerance widenings. The dtype tolerances fit one rounding of the result; the reference
# interpreter rounds every intermediate to bf16 (as eager execution does), and where a rounded
# intermediate feeds a reduction or a sum that cancels, near-zero results keep an absolute error
# of several bf16 ulps of the intermediates. The factors below were measured as the worst ratio of
# |actual - reference| to the bf16 tolerance over 30 seeds at the two small bindings and 5 seeds
# at sizes 32..50, and set so that ratio stays below 0.9 of the widened tolerance.

#: a bf16-rounded operand (normalized rows, a scaled x, silu(a) * b, x @ a) contracted by a matmul
#: or added to another rounded product: the contraction sums the operand's rounding errors over
#: the reduced dim, and the result can cancel (measured up to 1.2x the bf16 tolerance)
_ROUNDED_OPERAND = 2.0
#: softmax turns the bf16 rounding of the scores (absolute error up to |score| * 2^-9, and the
#: rounding of 1/sqrt(D)) into a relative error of every probability, and p @ v cancels to near
#: zero in places (measured up to 2.1x for gqa and 3.3x for qknorm_gqa, whose normalized q and k
#: give larger scores)
_ATTENTION = 4.0

_PROGRAM_LIST = [
    # ---- Tier 1 ---------------------------------------------------------------------------------
    _program("mul", 1, [_square("M", "N", n=1024), _square("M", "N", n=4096)]),
    _program("relu", 1, [_square("M", "N", n=1024), _square("M", "N", n=8192)]),
    _program("silu", 1, [_square("M", "N", n=1024), _square("M", "N", n=8192)]),
    _program("softmax", 1, [_square("M", "N", n=1024), _square("M", "N", n=4096)]),
    _program("cumsum", 1, [_square("M", "N", n=1024), {"M": 128, "N": 32768},
                           _square("M", "N", n=4096)], scan="N"),
    # benchmarks.md times cumsum [1024, 1024] in fp32 as well; the dtype is part of a program's
    # signature, so the fp32 case is its own program
    _program("cumsum_f32", 1, [_square("M", "N", n=1024)], dtype="f32", scan="N"),
    _program("rmsnorm", 1, [_square("M", "N", n=1024), {"M": 1024, "N": 4096},
                            {"M": 128, "N": 8192}, _square("M", "N", n=4096)],
             {"g": GAIN}),
    # widened 2x: the output is the bf16 sum of two rounded terms of magnitude up to ~5 (the
    # normalized row times the gain, and the bias), which cancel in places; a near-zero result
    # keeps their rounding errors (~2 * 2^-9 * 5), above the bf16 atol (measured: up to 1.6x)
    _program("layernorm", 1, [{"M": 128, "N": 8192}, _square("M", "N", n=4096)], {"g": GAIN},
             tolerance_scale=2.0),
    # [128, 4096] is 128 tokens of 32 heads x 128 (D = 2 * D2)
    _program("rope", 1, [{"T": 128, "H": 32, "D2": 64}, {"T": 4096, "H": 32, "D2": 64}],
             {"cos": Init("cos"), "sin": Init("sin")}),
    _program("matmul", 1, [_square("M", "N", "K", n=1024), _square("M", "N", "K", n=4096)],
             _MATMUL_W),
    # ---- Tier 2 ---------------------------------------------------------------------------------
    _program("transpose_matmul", 2,
             [_square("M", "N", "K", n=1024), _square("M", "N", "K", n=4096)], _MATMUL_W),
    _program("matmul_transpose", 2, [_square("M", "N", "K", n=1024)], _MATMUL_W),
    _program("silu_matmul", 2, [_square("M", "N", "K", n=1024)], _MATMUL_W),
    _program("relu_matmul", 2, [_square("M", "N", "K", n=1024)], _MATMUL_W),
    _program("rmsnorm_matmul", 2,
             [_square("M", "N", "K", n=1024), {"M": 2, "K": 4096, "N": 6144},
              {"M": 16, "K": 4096, "N": 4096}, _square("M", "N", "K", n=4096)],
             {"g": GAIN, **_MATMUL_W}, tolerance_scale=_ROUNDED_OPERAND),
    _program("softmax_matmul", 2, [_square("M", "N", "K", n=1024)], _MATMUL_W),
    # y's row sums are about 1 (y positive, scaled by 1/K), so the quotient stays of order one
    _program("matmul_red_div", 2, [_square("M", "N", "K", n=1024)],
             {"y": Init("uniform", 0.5, 1.5, _inv("K")), **_MATMUL_W}),
    _program("reduce_broadcast_mul", 2, [_square("M", "N", "K", n=1024)],
             {"y": _weight("K"), **_MATMUL_W}, tolerance_scale=_ROUNDED_OPERAND),
    _program("gated_mlp", 2,
             [{"M": 8, "K": 4096, "N": 4096}, {"M": 4096, "K": 4096, "N": 11008}],
             {"w1": _weight("K"), "w2": _weight("K")}),
    _program("mlp", 2, [_square("M", "K", "F", "N", n=1024)],
             {"w1": _weight("K"), "w2": _weight("K"), "w3": _weight("F")},
             tolerance_scale=_ROUNDED_OPERAND),
    _program("lora", 2, [{"M": 16, "K": 4096, "N": 4096, "R": 16}],
             {"w": _weight("K"), "a": _weight("K"), "b": _weight("R")},
             tolerance_scale=_ROUNDED_OPERAND),
    _program("ntrans", 2, [{"M": 8, "N": 4096}, {"M": 64, "N": 4096}],
             {"alpha": Init("uniform", 0.05, 0.5), "g_h": GAIN, "g_out": GAIN}),
    # positive operands: the row sum of x @ w has no cancellation, so bf16 rounding of the
    # [M, N] intermediate stays relative to the result
    _program("gemm_sum_scale", 2, [{"M": 1024, "K": 8192, "N": 8192}],
             {"x": Init("uniform", 0.0, 1.0), "w": Init("uniform", 0.0, 1.0, _inv("K")),
              "s": GAIN}),
    # prefill: B1 Hq32 Hkv8 S4096 D128 (G = Hq / Hkv = 4); decode: Q[2, 8, 64] is batch 2, 8 query
    # heads of D 64, one query token against 4096 keys, with the prefill case's group size 4
    _program("gqa", 2, [{"B": 1, "HKV": 8, "G": 4, "S": 4096, "L": 4096, "D": 128},
                        {"B": 2, "HKV": 2, "G": 4, "S": 1, "L": 4096, "D": 64}],
             tolerance_scale=_ATTENTION),
    _program("qknorm_gqa", 2, [{"B": 1, "HKV": 8, "G": 4, "S": 4096, "L": 4096, "D": 128},
                               {"B": 2, "HKV": 2, "G": 4, "S": 1, "L": 4096, "D": 64}],
             {"g_q": GAIN, "g_k": GAIN}, tolerance_scale=_ATTENTION),
    # [1024, 1024, 128, 512]: M queries, L keys, key dim DK, value dim DV
    _program("linear_attention", 2, [{"M": 1024, "L": 1024, "DK": 128, "DV": 512}],
             {"q": _weight("DK"), "k": _weight("L")}),
]

#: Every benchmark program by name.
PROGRAMS: dict[str, Program] = {p.name: p for p in _PROGRAM_LIST}


def _rotary_angles(shape: tuple[int, ...]) -> np.ndarray:
    """theta[t, i] = t * 10000^(-i / D2) for a [T, D2] table (the usual rotary frequencies)."""
    t_len, half = shape
    inv_freq = 10000.0 ** (-np.arange(half, dtype=np.float64) / max(half, 1))
    return np.arange(t_len, dtype=np.float64)[:, None] * inv_freq[None, :]


def make_inputs(program: Program, sizes: Sizes, seed: int = 0) -> list[np.ndarray]:
    """Inputs for `program` under `sizes`, in the parameters' storage dtypes, drawn from
    `program.inits` (standard normal by default) with a generator seeded by `seed`."""
    missing = set(program.symbols) - set(sizes)
    if missing:
        raise ValueError(f"{program.name}: no size for {', '.join(sorted(missing))}")
    rng = np.random.default_rng(seed)
    inputs = []
    for param in program.params:
        shape = param.shape(sizes)
        init = program.inits.get(param.name, NORMAL)
        if init.dist == "normal":
            value = rng.standard_normal(shape)
        elif init.dist == "uniform":
            value = rng.uniform(init.low, init.high, shape)
        elif init.dist in ("cos", "sin"):
            value = getattr(np, init.dist)(_rotary_angles(shape))
        else:
            raise ValueError(f"{program.name}.{param.name}: unknown distribution {init.dist!r}")
        if init.scale is not None:
            value = value * init.scale(sizes)
        inputs.append(np.asarray(value, dtype=np.float32).astype(numpy_dtype(param.dtype)))
    return inputs


#: Small sizes per variant, handed to a program's symbols in order of first appearance: distinct
#: within a variant (so M != K and a transposed or misread dim shows), different across variants,
#: and variant 1 has a 16 in second place (the contracted or reduced dim of most programs).
_SMALL = ((3, 5, 7, 2, 6, 4, 8), (6, 16, 2, 5, 3, 4, 7))


def small_sizes(program: Program, variant: int) -> dict[str, int]:
    """A small binding (dims 2..16) of `program`'s size symbols; variants 0 and 1 differ."""
    values = _SMALL[variant]
    if len(program.symbols) > len(values):
        raise ValueError(f"{program.name}: more size symbols than small sizes")
    return dict(zip(program.symbols, values, strict=False))
