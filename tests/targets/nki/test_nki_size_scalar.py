"""Rank-0 values of sizes (attention's `1 / sqrt(D)`) in NKI kernels: the tiled kernel keeps
`cast(idx(D), bf16)` and `sqrt` of it as rank-0 tiles; the lowering keeps the chain and, where a
`[P, F]` tile or a `[P, 1]` column reads it, makes it as a `[P, 1]` fp32 column (the size as a
count, then `activation` / `tensor_scalar`), computed once before the grid. Each kernel is
proved, emitted and run on the simulator against the reference interpreter at shapes with
partial tiles; planted wrong lowerings are refuted."""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, SSAValue

from axon.dialects import nki
from axon.dialects.ax import RsqrtOp, SqrtOp
from axon.dialects.form.intexpr import IntExpr
from axon.interpreter import run_function
from axon.targets.nki import lower
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.fuse import lower_and_fuse
from axon.targets.nki.lower import Refused, lower_and_prove, lower_function
from axon.targets.nki.select import KernelRunner, choose_kernel, first_kernel, op_functions
from axon.targets.profiles import load_profile
from axon.tiling.search import tile_program
from axon.tools.embed import parse_mlir, parse_source


def parse(source: str) -> FuncOp:
    (func,) = (op for op in parse_source(source, "f.py").ops if isinstance(op, FuncOp))
    return func


def proposals(func: FuncOp, sizes: dict[str, int]) -> dict[str, tuple[FuncOp, dict[str, int]]]:
    """Every proved tiling of `func` at `sizes` (Trn2): its kernel and best tile sizes."""
    result = tile_program([func], load_profile("trn2"), sizes)
    return {p.tiling.kind: (p.kernel, dict(p.candidates[0].params))
            for p in result.proved if p.candidates and p.kernel is not None}


def inputs_at(func: FuncOp, sizes: dict[str, int]) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.standard_normal([int(d.evaluate(sizes)) for d in a.type.shape])  # type: ignore[attr-defined]
            .astype(ml_dtypes.bfloat16) for a in func.body.block.args]


def simulate_text(text: str, name: str, tmp_path: Path, inputs: list[np.ndarray]) -> np.ndarray:
    """The module's output on the simulator (Trn2's limits, a warning an error)."""
    return KernelRunner("trn2", tmp_path).run(text, inputs, name)[0]


def check_against_interpreter(func: FuncOp, text: str, name: str, shapes: list[dict[str, int]],
                              tmp_path: Path) -> None:
    """The emitted module at each shape equals the interpreter's run of `func` within bf16's
    tolerance (the interpreter rounds `cast(D)` and `sqrt` to bf16; the kernel holds them in
    fp32 and rounds once, when stored)."""
    for sizes in shapes:
        inputs = inputs_at(func, sizes)
        out = simulate_text(text, name, tmp_path, inputs)
        (expected,) = run_function(func, inputs, sizes)
        assert out.shape == expected.shape and out.dtype == ml_dtypes.bfloat16
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   rtol=1e-2, atol=1e-2, err_msg=f"{name} {sizes}")


def hoisted(text: str, *lines: str) -> None:
    """Each of `lines` is printed before the grid's first loop (once, not per program)."""
    grid = text.index("nl.affine_range")
    for line in lines:
        assert re.search(line, text[:grid]), (line, text)


#: remainders of every tile, a size of one, several full tiles
ROW_SHAPES = [{"M": 130, "D": 77}, {"M": 1, "D": 1}, {"M": 300, "D": 512}]

ELEMENTWISE = [
    "def f(x: bf16[M, D]):\n    return x / sqrt(D)\n",
    "def f(x: bf16[M, D]):\n    return x * rsqrt(D)\n",
    "def f(x: bf16[M, D]):\n    return sqrt(D) - x\n",  # the scalar first: reverse0
    "def f(x: bf16[M, D]):\n    return sqrt(D) / x\n",
    "def f(x: bf16[M, D]):\n    return x * reciprocal(sqrt(D))\n",
    "def f(x: bf16[M, D]):\n    return x / sqrt(D * 2) + sqrt(sqrt(D))\n",
    "def f(x: bf16[M, D]):\n    return x / sqrt(D) / sqrt(M)\n",
    "def f(x: bf16[M, D]):\n    return exp(x / sqrt(D))\n",
    "def f(x: bf16[M, D]):\n    return softmax(x / sqrt(D), axis=-1)\n",
]


@pytest.mark.parametrize("source", ELEMENTWISE)
def test_a_tile_by_a_size_scalar_lowers_is_proved_and_runs(source: str, tmp_path: Path) -> None:
    func = parse(source)
    found = proposals(func, ROW_SHAPES[0])
    assert "rows" in found
    for kind, (kernel, params) in found.items():
        if kind.startswith("rows_multipass"):  # softmax's masked max: not this task's
            continue
        lowered = lower_and_prove(kernel)
        fused, _ = lower_and_fuse(kernel)
        module = emit_nki(fused.func, params)
        # the size is the count written by a memset, its functions after it, before the grid
        hoisted(module.text, r"nisa\.memset\(dst=t\d+, value=float\((2\*)?D\)\)")
        # no rank-0 value reaches the lowered kernel
        for op in lowered.func.walk():
            for r in op.results:
                assert getattr(r.type, "rank", 2) != 0, (kind, op.name)
        check_against_interpreter(func, module.text, module.name, ROW_SHAPES, tmp_path)


def test_the_column_is_made_once_before_the_grid_and_a_divide_multiplies() -> None:
    func = parse(ELEMENTWISE[0])
    kernel, params = proposals(func, ROW_SHAPES[0])["blocks"]
    lowered = lower_function(kernel)
    body = [op for op in lowered.walk() if isinstance(op, nki.NkiOp)]
    # the count [BM, D] summed, then sqrt: the column; the tile divided by it
    assert [op.name for op in body] == ["nki.memset", "nki.tensor_reduce", "nki.activation",
                                        "nki.tensor_scalar"]
    assert body[2].attrs()["func"] == "sqrt"
    assert _type_shape(body[0]) == [IntExpr.sym("BM"), IntExpr.sym("D")]
    assert body[3].attrs()["op0"] == "divide"
    # fusion: the divide becomes a multiply by the reciprocal column, ScalarE's to run
    fused, record = lower_and_fuse(kernel)
    assert "divide-reciprocal" in record.summary()
    text = emit_nki(fused.func, params).text
    hoisted(text, r"nisa\.activation\(dst=t\d+, op=nl\.sqrt",
            r"nisa\.tensor_scalar\(dst=t\d+, data=t\d+, op0=nl\.divide, operand0=1\.0, "
            r"reverse0=True\)")
    grid = text[text.index("nl.affine_range"):]
    assert "op0=nl.multiply" in grid and "nl.divide" not in grid and "nl.sqrt" not in grid


def _type_shape(op: nki.NkiOp) -> list[IntExpr]:
    return list(op.results[0].type.shape)  # type: ignore[attr-defined]


#: remainders of every tile, all ones, several full tiles (K <= 128: the rows tilings' x tile)
MATMUL_SHAPES = [{"M": 130, "N": 77, "K": 77}, {"M": 1, "N": 1, "K": 1},
                 {"M": 300, "N": 512, "K": 128}]
#: K over several K blocks, a remainder among them (the K-loop tilings)
LONG_K = [{"M": 130, "N": 77, "K": 200}, {"M": 129, "N": 512, "K": 384}]


def test_a_matmul_scaled_by_a_size_lowers_in_every_tiling_and_runs(tmp_path: Path) -> None:
    func = parse("def f(x: bf16[M, K], w: bf16[K, N]):\n    return (x @ w) / sqrt(K)\n")
    found = proposals(func, MATMUL_SHAPES[0])
    assert {"rows", "blocks", "rows_k", "blocks_k"} <= set(found)
    for kind, (kernel, params) in found.items():
        fused, _ = lower_and_fuse(kernel)
        module = emit_nki(fused.func, params)
        hoisted(module.text, r"value=float\(K\)")
        shapes = MATMUL_SHAPES + (LONG_K if kind.endswith("_k") else [])
        check_against_interpreter(func, module.text, f"{module.name}_{kind}", shapes, tmp_path)


@pytest.mark.parametrize("keepdims", [False, True])
def test_row_sums_scaled_by_a_size_lower_as_columns(keepdims: bool, tmp_path: Path) -> None:
    # a [P] per-row value (held as a [P, 1] column) or a [P, 1] column, by the scalar's column
    kept = ", keepdims=True" if keepdims else ""
    func = parse(f"def f(x: bf16[M, D]):\n    return sum(x, axis=-1{kept}) / sqrt(D)\n")
    found = proposals(func, ROW_SHAPES[0])
    assert "rows" in found
    for kind, (kernel, params) in found.items():
        fused, _ = lower_and_fuse(kernel)
        module = emit_nki(fused.func, params)
        check_against_interpreter(func, module.text, f"{module.name}_{kind}", ROW_SHAPES,
                                  tmp_path)


def test_first_kernel_and_choose_kernel_take_the_scaled_tile(tmp_path: Path) -> None:
    func = parse(ELEMENTWISE[0])
    said: list[str] = []
    first = first_kernel(func, "trn2", ROW_SHAPES[0], said.append)
    assert first.kind == "rows" and not said  # nothing refused on the way
    check_against_interpreter(func, first.text, first.name, ROW_SHAPES, tmp_path)
    chosen = choose_kernel(func, "trn2", ROW_SHAPES[0], said.append)
    assert chosen.latency_s > 0
    # every candidate runs, the unfused chain too: it reads sqrt(D) in place, as a constant
    assert not [c.rejected for c in chosen.candidates if c.latency_s is None]
    assert [k.op.name for k in op_functions(func)] == ["ax.div"]


# ---- constants combined with a size (IR written at the tiled level) ---------------------------

CONSTANT_KERNEL = """
func.func @f(%0: !ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  %1 = tile.kernel %0 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"],
                       params = ["BM"], assume = ["BM >= 1", "BM <= 128"]}
      : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  ^bb0(%2: !ax.tensor<[M, N], f32>):
    %3 = tile.load %2 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.0 : f64,
                       space = "sbuf"} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[BM, N], f32>
    %c = ax.constant {value = 2.0 : f64, shape = [], dtype = f32} : !ax.tensor<[], f32>
    %e = ax.constant {value = 1.0e-6 : f64, shape = [], dtype = f32} : !ax.tensor<[], f32>
    %n = ax.generic {form = "out[] = cast(idx(N), f32)", dtype = f32} : () -> !ax.tensor<[], f32>
    CHAIN
    tile.store %4 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], f32>
    tile.yield
  }
  func.return %1 : !ax.tensor<[M, N], f32>
}
"""

S = "!ax.tensor<[], f32>"
T = "!ax.tensor<[BM, N], f32>"
CHAINS = [
    # x * (2 / sqrt(N)): a constant over a size's function
    f"""%r = ax.sqrt %n : ({S}) -> {S}
    %q = ax.div %c, %r : ({S}, {S}) -> {S}
    %4 = ax.mul %3, %q : ({T}, {S}) -> {T}""",
    # x / sqrt(N * 2 + 1e-6): a constant fp32 lacks, added as its fp32 pieces
    f"""%m = ax.mul %n, %c : ({S}, {S}) -> {S}
    %a = ax.add %m, %e : ({S}, {S}) -> {S}
    %r = ax.sqrt %a : ({S}) -> {S}
    %4 = ax.div %3, %r : ({T}, {S}) -> {T}""",
    # x - (-N) * rsqrt(N): two chains of one size combined, then negated
    f"""%r = ax.rsqrt %n : ({S}) -> {S}
    %g = ax.neg %n : ({S}) -> {S}
    %p = ax.mul %g, %r : ({S}, {S}) -> {S}
    %4 = ax.sub %3, %p : ({T}, {S}) -> {T}""",
]


def constant_kernel(chain: str) -> FuncOp:
    (func,) = (o for o in parse_mlir(CONSTANT_KERNEL.replace("CHAIN", chain)).ops
               if isinstance(o, FuncOp))
    return func


@pytest.mark.parametrize("chain", CHAINS)
def test_constants_combine_with_a_size_scalar(chain: str, tmp_path: Path) -> None:
    kernel = constant_kernel(chain)
    fused, _ = lower_and_fuse(kernel)
    module = emit_nki(fused.func, {"BM": 128})
    hoisted(module.text, r"value=float\(N\)")
    for sizes in [{"M": 130, "N": 77}, {"M": 1, "N": 1}, {"M": 200, "N": 300}]:
        rng = np.random.default_rng(3)
        x = rng.standard_normal((sizes["M"], sizes["N"])).astype(np.float32)
        out = simulate_text(module.text, module.name, tmp_path, [x])
        (expected,) = run_function(kernel, [x], {**sizes, "BM": 128})
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5, err_msg=str(sizes))


# ---- planted wrong lowerings and refusals -----------------------------------------------------

def _count_one_more(self: lower._Lowering, partitions: IntExpr, size: IntExpr,
                    target: Block) -> SSAValue:
    """A planted wrong lowering: the count of `size + 1` (the wrong size)."""
    ones = self.add(target, nki.MemsetOp.make(
        [], value=1.0, shape=[partitions, size + IntExpr.const(1)], dtype="f32",
        buffer="sbuf"))
    return self.add(target, nki.TensorReduceOp.make(
        [ones], op="add", axes=(1,), keepdims=True, buffer="sbuf", dtype="f32"))


@pytest.mark.parametrize("source", [ELEMENTWISE[0], ELEMENTWISE[1]])
@pytest.mark.parametrize("plant", ["rsqrt for sqrt", "the wrong size"])
def test_a_wrong_size_scalar_lowering_is_refuted(source: str, plant: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, _ = proposals(parse(source), ROW_SHAPES[0])["rows"]
    if plant == "rsqrt for sqrt":
        op: type[Operation] = RsqrtOp if "rsqrt" in source else SqrtOp
        monkeypatch.setitem(lower._ACTIVATION, op, "sqrt" if op is RsqrtOp else "rsqrt")
    else:
        monkeypatch.setattr(lower._Lowering, "count", _count_one_more)
    with pytest.raises(Refused, match="not proved equal to the tiled kernel .refuted"):
        lower_and_prove(kernel)
    monkeypatch.undo()
    assert lower_and_prove(kernel).proof_id


def test_a_rank_zero_value_of_an_input_is_refused_with_the_reason() -> None:
    func = parse("def f(x: bf16[M, D], s: bf16[]):\n    return x / (s * sqrt(D))\n")
    (kernel, _) = proposals(func, ROW_SHAPES[0])["rows"]
    with pytest.raises(Refused, match=r"'ax\.mul' gives a rank-0 tile bf16\[\] .*it reads a "
                                      "value that is not made of sizes and constants"):
        lower_function(kernel)
