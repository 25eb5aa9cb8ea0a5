"""The NKI lowering of the suite programs that had no NKI kernel: `ax.broadcast_to`
(reduce_broadcast_mul), rank-1 per-row tiles (gemm_sum_scale), rank-3 tiles (rope). Each
lowering is proved equal to its tiled kernel, emitted and run on the simulator against the
reference interpreter at three shapes with partial tiles; planted wrong lowerings are
refuted."""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, SSAValue

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.dialects import nki
from axon.dialects.ax import BroadcastToOp
from axon.dialects.tile import KernelOp
from axon.interpreter import run_function
from axon.targets.nki import lower
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.lower import Refused, lower_and_prove, lower_function
from axon.targets.nki.select import KernelRunner, op_functions
from axon.targets.profiles import load_profile
from axon.tiling.kernels import tilings
from axon.tiling.search import profiled_kernel
from axon.tools.embed import parse_source


def parse(source: str, name: str = "f") -> FuncOp:
    (func,) = (op for op in parse_source(source, f"{name}.py").ops if isinstance(op, FuncOp))
    return func


def program(name: str) -> FuncOp:
    return parse(PROGRAMS[name].source, name)


def trn2_kernel(func: FuncOp, kind: str) -> FuncOp:
    """The `kind` tiling of `func` with Trn2's limits assumed."""
    (tiling,) = [t for t in tilings(func) if t.kind == kind]
    return profiled_kernel(func, tiling, load_profile("trn2"))


def simulate_text(text: str, name: str, tmp_path: Path, inputs: list[np.ndarray]) -> np.ndarray:
    """The module's output on the simulator (Trn2's limits, a warning an error)."""
    return KernelRunner("trn2", tmp_path).run(text, inputs, name)[0]


def check_runs(func: FuncOp, kind: str, tiles: dict[str, int], shapes: list[dict[str, int]],
               tmp_path: Path, name: str | None = None, inputs_of=None) -> None:  # type: ignore[no-untyped-def]
    """`func`'s `kind` tiling lowers, is proved, and runs on the simulator like the reference
    interpreter at each of `shapes` (for suite program `name`: its inputs, numpy reference and
    tolerance; else `inputs_of`'s inputs, the interpreter and bf16's tolerance)."""
    if name is not None:
        inputs_of = suite_inputs(name)
    lowered = lower_and_prove(trn2_kernel(func, kind))
    assert len(lowered.proof_id) == 16
    module = emit_nki(lowered.func, tiles)
    for sizes in shapes:
        inputs = inputs_of(sizes)
        out = simulate_text(module.text, module.name, tmp_path, inputs)
        if name is None:
            (expected,) = run_function(func, inputs, sizes)
        else:  # the fused kernel rounds once, as the numpy reference does (the benchmark's check)
            expected = np.asarray(PROGRAMS[name].reference(*inputs))
        assert out.shape == expected.shape and out.dtype == ml_dtypes.bfloat16
        rtol, atol = (1e-2, 1e-2) if name is None else PROGRAMS[name].tolerance_at(
            {s: sizes[s] for s in PROGRAMS[name].symbols})
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{kind} {sizes}")


def suite_inputs(name: str):  # type: ignore[no-untyped-def]
    return lambda sizes: make_inputs(PROGRAMS[name], {s: sizes[s] for s in
                                                      PROGRAMS[name].symbols})


def random_inputs(func: FuncOp):  # type: ignore[no-untyped-def]
    def inputs(sizes: dict[str, int]) -> list[np.ndarray]:
        rng = np.random.default_rng(1)
        out = []
        for arg in func.body.block.args:
            shape = [int(d.evaluate(sizes)) for d in arg.type.shape]  # type: ignore[attr-defined]
            out.append(rng.standard_normal(shape).astype(ml_dtypes.bfloat16))
        return out
    return inputs


# ---- broadcast_to --------------------------------------------------------------------------------

#: remainders of every tile (several K blocks), all ones, several full tiles
MATMUL_SHAPES = [{"M": 130, "N": 77, "K": 200}, {"M": 1, "N": 1, "K": 1},
                 {"M": 300, "N": 512, "K": 256}]


@pytest.mark.parametrize(("kind", "tiles"), [("rows_k", {"BM": 128, "BK": 64}),
                                             ("blocks_k", {"BM": 128, "BN": 128, "BK": 64})])
def test_reduce_broadcast_mul_lowers_is_proved_and_runs(kind: str, tiles: dict[str, int],
                                                        tmp_path: Path) -> None:
    func = program("reduce_broadcast_mul")
    lowered = lower_function(trn2_kernel(func, kind))
    assert not any(isinstance(op, BroadcastToOp) for op in lowered.walk())
    # the row sum scales the K loop's sum once, on its way out of PSUM: no [P, F] broadcast
    assert not any(isinstance(op, nki.MemsetOp) and op.value.value.data == 1.0
                   for op in lowered.walk())
    check_runs(func, kind, tiles, MATMUL_SHAPES, tmp_path,
               "reduce_broadcast_mul")


def test_a_broadcast_column_is_read_by_tensor_scalar(tmp_path: Path) -> None:
    func = program("reduce_broadcast_mul")
    lowered = lower_function(trn2_kernel(func, "rows"))
    (scale,) = [op for op in lowered.walk() if isinstance(op, nki.TensorScalarOp)]
    assert scale.attrs()["op0"] == "multiply"
    assert isinstance(scale.operands[1].owner, nki.TensorReduceOp)  # the row sum itself
    check_runs(func, "rows", {"BM": 128}, [{"M": 130, "N": 77, "K": 100},
                                           {"M": 1, "N": 1, "K": 1},
                                           {"M": 256, "N": 512, "K": 128}], tmp_path,
               "reduce_broadcast_mul")


ROW_SHAPES = [{"M": 130, "N": 77}, {"M": 1, "N": 1}, {"M": 300, "N": 512}]

BROADCASTS = [
    # a column read by an activation: ones * column, a [P, F] tile of its own
    ("def f(a: bf16[M, 1], x: bf16[M, N]):\n    return exp(broadcast_to(a, [M, N])) * x\n",
     nki.TensorScalarOp),
    # a column on the left of a difference: tensor_scalar reversed
    ("def f(a: bf16[M, 1], x: bf16[M, N]):\n    return broadcast_to(a, [M, N]) - x\n",
     nki.TensorScalarOp),
    # a row [N] and a row [1, N] over the partitions: a ones column times the row
    ("def f(b: bf16[N], x: bf16[M, N]):\n    return exp(broadcast_to(b, [M, N])) + x\n",
     nki.NcMatmulOp),
    ("def f(b: bf16[1, N], x: bf16[M, N]):\n    return exp(broadcast_to(b, [M, N])) + x\n",
     nki.NcMatmulOp),
]


@pytest.mark.parametrize(("source", "instruction"), BROADCASTS)
@pytest.mark.parametrize(("kind", "tiles"), [("rows", {"BM": 128}),
                                             ("blocks", {"BM": 128, "BN": 64})])
def test_a_broadcast_lowers_is_proved_and_runs(source: str, instruction: type, kind: str,
                                               tiles: dict[str, int], tmp_path: Path) -> None:
    func = parse(source)
    lowered = lower_function(trn2_kernel(func, kind))
    assert any(isinstance(op, instruction) for op in lowered.walk())
    check_runs(func, kind, tiles, ROW_SHAPES, tmp_path, inputs_of=random_inputs(func))


def _ones_plus_column(self: lower._Lowering, op: BroadcastToOp, target: Block) -> SSAValue:
    """A planted wrong lowering: the column added to a ones tile (c + 1, not c)."""
    (x,) = op.operands
    t = op.results[0].type
    ones = self.add(target, nki.MemsetOp.make(
        [], value=1.0, shape=list(t.shape), dtype="f32", buffer="sbuf"))  # type: ignore[attr-defined]
    return self.add(target, nki.TensorScalarOp.make(
        [ones, self.column(x, target)], op0="add", buffer="sbuf", dtype="f32"))


def _column_as_divisor(self: lower._Lowering, op: BroadcastToOp, target: Block) -> SSAValue:
    """A planted wrong lowering: a ones tile divided by the column (1 / c, not c)."""
    (x,) = op.operands
    ones = self.add(target, nki.MemsetOp.make(
        [], value=1.0, shape=list(op.results[0].type.shape),  # type: ignore[attr-defined]
        dtype="f32", buffer="sbuf"))
    return self.add(target, nki.TensorScalarOp.make(
        [ones, self.column(x, target)], op0="divide", buffer="sbuf", dtype="f32"))


@pytest.mark.parametrize("planted", [_ones_plus_column, _column_as_divisor])
def test_a_wrong_broadcast_lowering_is_refuted(planted: object,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = trn2_kernel(program("reduce_broadcast_mul"), "rows")
    monkeypatch.setattr(lower._Lowering, "lower_broadcast", planted)
    with pytest.raises(Refused, match="not proved equal to the tiled kernel .refuted"):
        lower_and_prove(kernel)
    monkeypatch.undo()
    assert lower_and_prove(kernel).proof_id


def test_a_broadcast_it_cannot_place_is_refused() -> None:
    # a [1, 1] tile to [P, F]: neither a column over the free dim nor a row of F
    func = parse("def f(a: bf16[1, 1], x: bf16[M, N]):\n"
                 "    return exp(broadcast_to(a, [M, N])) + x\n")
    with pytest.raises(Refused, match="'ax.broadcast_to' of .* \\(a \\[P, 1\\] column"):
        lower_function(trn2_kernel(func, "rows"))


def test_the_naive_chain_reads_a_broadcast_in_place() -> None:
    # a broadcast is no kernel of its own (its sizes bound by no input of its own): each
    # reader's function clones it, as it does constants
    kernels = op_functions(program("reduce_broadcast_mul"))
    assert [k.op.name for k in kernels] == ["ax.sum", "ax.mul", "ax.matmul"]
    product = kernels[1].func
    assert [str(a.type) for a in product.body.block.args] == ["bf16[M, K]", "bf16[M, 1]"]
    assert any(isinstance(op, BroadcastToOp) for op in product.walk())
    for k in kernels:
        lower_and_prove(trn2_kernel(k.func, "rows"))


# ---- rank-1 per-row tiles ----------------------------------------------------------------------

#: gemm_sum_scale's tilings: (kind, which of that kind, tile sizes)
GEMM_SUM_SCALE = [("rows", 0, {"BM": 128}), ("rows_k", 0, {"BM": 128, "BK": 64}),
                  ("rows_k", 1, {"BM": 128, "BK": 64}),
                  ("rows_k_nested", 0, {"BM": 128, "BK": 64, "BL": 32})]
#: remainders of every tile, all ones, several full tiles (K <= 128: the rows tilings' x tile)
SUM_SHAPES = [{"M": 130, "K": 77, "N": 200}, {"M": 1, "K": 1, "N": 1},
              {"M": 300, "K": 128, "N": 512}]


def nth_kernel(func: FuncOp, kind: str, nth: int) -> FuncOp:
    tiling = [t for t in tilings(func) if t.kind == kind][nth]
    return profiled_kernel(func, tiling, load_profile("trn2"))


@pytest.mark.parametrize(("kind", "nth", "tiles"), GEMM_SUM_SCALE)
def test_gemm_sum_scale_holds_its_row_sums_as_columns(kind: str, nth: int,
                                                      tiles: dict[str, int],
                                                      tmp_path: Path) -> None:
    func = program("gemm_sum_scale")
    kernel = nth_kernel(func, kind, nth)
    lowered = lower_and_prove(kernel)
    # every on-chip value is a [P, F] tile; the rank-1 result leaves as the column [BM, 1]
    for op in lowered.func.walk():
        if isinstance(op, nki.NkiOp) and op.buffer_name() != "hbm":
            assert op.results[0].type.rank == 2  # type: ignore[attr-defined]
    (store,) = [op for op in lowered.func.walk() if isinstance(op, nki.DmaCopyOp)
                and op.buffer_name() == "hbm"]
    assert str(store.operands[0].type) == "bf16[BM, 1]"
    module = emit_nki(lowered.func, tiles)
    assert "src=in2.reshape((1, 1))" in module.text  # the scalar s
    for sizes in SUM_SHAPES:
        inputs = make_inputs(PROGRAMS["gemm_sum_scale"], sizes)
        out = simulate_text(module.text, module.name, tmp_path, inputs)
        want = np.asarray(PROGRAMS["gemm_sum_scale"].reference(*inputs))
        assert out.shape == want.shape == (sizes["M"],)
        rtol, atol = PROGRAMS["gemm_sum_scale"].tolerance_at(sizes)
        np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{kind} {sizes}")


def test_a_rank_one_load_is_read_into_a_column(tmp_path: Path) -> None:
    # the naive chain's `sum(...) * s`: a [BM] block of per-row values times a scalar input
    (mul,) = [k.func for k in op_functions(program("gemm_sum_scale")) if k.op.name == "ax.mul"]
    lowered = lower_and_prove(trn2_kernel(mul, "rows"))
    copies = [op for op in lowered.func.walk() if isinstance(op, nki.DmaCopyOp)]
    assert [str(op.results[0].type) for op in copies] == [
        "bf16[BM, 1]", "bf16[1, 1]", "bf16[BM]"]
    module = emit_nki(lowered.func, {"BM": 128})
    # the [BM] block straight into the column, one element per partition, and back out
    assert re.search(r"nisa\.dma_copy\(dst=t\d+\[0:(n\d+), 0:1\], src=in0\[BM\*i:BM\*i \+ \1\]\)",
                     module.text)
    assert re.search(r"nisa\.dma_copy\(dst=out0\[BM\*i:BM\*i \+ (n\d+)\], src=t\d+\[0:\1, 0:1\]\)",
                     module.text)
    for sizes in ({"M": 130}, {"M": 1}, {"M": 384}):
        rng = np.random.default_rng(3)
        inputs = [rng.standard_normal(sizes["M"]).astype(ml_dtypes.bfloat16),
                  np.asarray(rng.standard_normal(), dtype=ml_dtypes.bfloat16)]
        out = simulate_text(module.text, module.name, tmp_path, inputs)
        (expected,) = run_function(mul, inputs, sizes)
        np.testing.assert_array_equal(out, expected)  # one rounding of one product


def _ones_for_the_scalar(self: lower._Lowering, value: SSAValue, partitions: object,
                         target: Block) -> SSAValue:
    """A planted wrong lowering: the scalar input read as 1."""
    return self.add(target, nki.MemsetOp.make([], value=1.0, shape=[partitions, "1"],
                                              dtype="f32", buffer="sbuf"))


def _row_max(self: lower._Lowering, op: object, reduce: str, target: Block) -> SSAValue:
    """A planted wrong lowering: the per-row sum taken as a max."""
    (x,) = op.operands  # type: ignore[attr-defined]
    return self.add(target, nki.TensorReduceOp.make(
        [self.tile(x)], op="maximum", axes=(1,), keepdims=True, buffer="sbuf", dtype="f32"))


@pytest.mark.parametrize(("method", "planted"), [("scalar_column", _ones_for_the_scalar),
                                                 ("lower_reduce", _row_max)])
def test_a_wrong_per_row_lowering_is_refuted(method: str, planted: object,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = trn2_kernel(program("gemm_sum_scale"), "rows")
    monkeypatch.setattr(lower._Lowering, method, planted)
    with pytest.raises(Refused, match="not proved equal to the tiled kernel .refuted"):
        lower_and_prove(kernel)
    monkeypatch.undo()
    assert lower_and_prove(kernel).proof_id


# ---- tiles of more than one free dim (rope) -----------------------------------------------------

#: remainders of the row tile, all ones, two whole tiles of 64-wide heads
ROPE_SHAPES = [{"T": 130, "H": 3, "D2": 5}, {"T": 1, "H": 1, "D2": 1},
               {"T": 256, "H": 4, "D2": 64}]


def test_rope_reads_its_pairs_in_place_and_is_proved(tmp_path: Path) -> None:
    func = program("rope")
    lowered = lower_and_prove(trn2_kernel(func, "rows"))
    layouts = [op.layout.data for op in lowered.func.walk() if isinstance(op, nki.AccessOp)]
    assert layouts.count("slice") == 2 and layouts.count("broadcast_to") == 2
    assert "concat" in layouts
    module = emit_nki(lowered.func, {"BM": 128})
    text = module.text
    # x read in place at free stride 2; cos and sin loaded once per token and read over the
    # heads through an on-chip pattern of stride 0 (not a stride-0 DMA moving them H times);
    # out_even and out_odd written into their windows of the interleaved tile
    assert "0:2*D2 - 1:2]" in text and "1:2*D2:2]" in text
    assert re.search(r"src=in1\.ap\(pattern=\[\[D2, n\d+\], \[1, D2\]\]", text)
    assert text.count(".ap(pattern=[[D2, BM], [0, H], [1, D2]], offset=0)") == 4
    assert "op=nl.subtract" in text and re.search(r"dst=t\d+\[:, :, :, 0\], .*nl\.subtract", text)
    assert re.search(r"dst=t\d+\[:, :, :, 1\], .*nl\.add", text)
    assert text.count("nisa.dma_copy(") == 4  # x, cos, sin in; the result out
    # VectorE's passes split with GpSimd (the engine balance): three of the six tensor_tensors
    # (12 passes: 6 on each), none reading PSUM
    assert text.count("nisa.tensor_tensor(") == 6
    assert text.count("engine=nisa.engine.gpsimd") == 3
    for sizes in ROPE_SHAPES:
        inputs = make_inputs(PROGRAMS["rope"], sizes)
        out = simulate_text(text, module.name, tmp_path, inputs)
        want = np.asarray(PROGRAMS["rope"].reference(*inputs))
        assert out.shape == want.shape
        rtol, atol = PROGRAMS["rope"].tolerance_at(sizes)
        np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"rope {sizes}")


def _odd_for_even(self: lower._Lowering, op: object, target: Block) -> SSAValue:
    """A planted wrong lowering: every strided slice starts at 1 (the odd elements)."""
    attrs = dict(op.attrs())  # type: ignore[attr-defined]
    if "start" in attrs:
        attrs["start"] = [*attrs["start"][:-1], "1"]
        attrs["stop"] = [*attrs["stop"][:-1], "2*D2"]
    return self.add(target, nki.AccessOp.make(
        [self.tile(v) for v in op.operands], buffer="sbuf",  # type: ignore[attr-defined]
        layout={"ax.slice": "slice", "ax.reshape": "reshape", "ax.concat": "concat",
                "ax.broadcast_to": "broadcast_to"}[op.name], **attrs))  # type: ignore[attr-defined]


def _pairs_swapped(self: lower._Lowering, op: object, target: Block) -> SSAValue:
    """A planted wrong lowering: the concatenation's operands in the other order."""
    operands = [self.tile(v) for v in op.operands]  # type: ignore[attr-defined]
    name = op.name  # type: ignore[attr-defined]
    if name == "ax.concat":
        operands.reverse()
    return self.add(target, nki.AccessOp.make(
        operands, buffer="sbuf", layout=name.removeprefix("ax."), **dict(op.attrs())))  # type: ignore[attr-defined]


@pytest.mark.parametrize("planted", [_odd_for_even, _pairs_swapped])
def test_a_wrong_access_is_refuted(planted: object, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = trn2_kernel(program("rope"), "rows")
    monkeypatch.setattr(lower._Lowering, "lower_access", planted)
    with pytest.raises(Refused, match="not proved equal to the tiled kernel .refuted"):
        lower_and_prove(kernel)
    monkeypatch.undo()
    assert lower_and_prove(kernel).proof_id


def test_an_access_across_partitions_is_refused() -> None:
    # a reshape that moves elements between partitions is no access pattern
    func = parse("def f(x: bf16[M, N]):\n    return exp(reshape(x, [N, M]))\n")
    with pytest.raises(Refused, match="a reshape access keeps the partition dim"):
        lower_function(trn2_kernel(func, "rows"))


def test_the_naive_rope_chain_runs_each_op(tmp_path: Path) -> None:
    # rope's one-op kernels (slices, reshapes, products by a [T, 1, D2] input stretched over
    # the heads, the concatenation): each lowers, is proved and runs like the interpreter
    kernels = op_functions(program("rope"))
    sizes = {"T": 130, "H": 3, "D2": 5}
    for k in kernels:
        kind = next(t.kind for t in tilings(k.func))
        lowered = lower_and_prove(trn2_kernel(k.func, kind))
        kernel = next(op for op in lowered.func.walk() if isinstance(op, KernelOp))
        tiles = {p: 128 if p == "BM" else 4 for p in kernel.param_names()}
        module = emit_nki(lowered.func, tiles)
        inputs = random_inputs(k.func)(sizes)
        out = simulate_text(module.text, module.name, tmp_path, inputs)
        (expected,) = run_function(k.func, inputs, sizes)
        np.testing.assert_array_equal(out, expected, err_msg=k.func.sym_name.data)


def test_sizes_no_input_gives_apart_are_refused_when_emitted() -> None:
    # qknorm_gqa's q * q: its [1, 1, BM, D] tiles lower, but the kernel's inputs give only
    # the product HKV*G, not G (which the grid needs): a diagnostic, not a NameError at run
    func = parse("def f(q: bf16[B, HKV*G, S, D]):\n    return q * q\n")
    lowered = lower_and_prove(trn2_kernel(func, "batched_rows"))
    kernel = next(op for op in lowered.func.walk() if isinstance(op, KernelOp))
    with pytest.raises(Refused, match="do not give the sizes G, HKV apart .dims G\\*HKV"):
        emit_nki(lowered.func, dict.fromkeys(kernel.param_names(), 4))
