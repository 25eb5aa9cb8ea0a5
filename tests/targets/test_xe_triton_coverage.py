"""Which kernels of every Tier 1 and Tier 2 suite program lower to Triton: each tiling
`tilings` offers (of the program as the frontend gives it, and for the attention programs of
the program propagation picks, whose kv-head reads are the index map `b1 floordiv G`) is built,
lowered and, where it lowers, run with Triton's CPU interpreter in float32 against the
reference interpreter at three shapes (remainders of every block, and every size 1). The
expected outcome of each is in `EXPECTED` (docs/xe_triton.md has the table): a changed outcome,
or a tiling that appears or goes, fails here. Every program has a kernel that passes."""

from __future__ import annotations

import functools

import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import TensorType
from axon.targets.xe_triton.check import check_emitted
from axon.targets.xe_triton.emit import emit_triton
from axon.targets.xe_triton.lower import NotSupported
from axon.tiling.kernels import NotTileable, Tiling, tile_function, tilings
from axon.tools.embed import parse_source, run_pipeline

#: block sizes: powers of two that no size below is a multiple of (NB: a split loop's blocks
#: a stretch)
BLOCKS = {"BM": 2, "BN": 4, "BK": 4, "BL": 2, "NB": 2}
#: programs tiled as propagation leaves them (the frontend's repeated kv heads are a reshape of
#: a broadcast, which no batched tiling takes)
PROPAGATED = {"gqa", "qknorm_gqa"}
#: sizes for the attention programs (B, HKV, G, S, L, D): few programs per grid, the
#: interpreter runs each one
ATTENTION_SIZES = [(1, 2, 2, 3, 5, 3), (1, 1, 1, 1, 1, 1), (2, 1, 3, 2, 6, 5)]

PASSES = "passes"
#: a kernel the tile search refutes (so never emits): the interpreter check tells it apart too
WRONG = "wrong"
NOT_TILEABLE = "not tileable"
#: not supported by the lowering: a batched dot over whole heads with the kv head read as
#: `d1 floordiv G` inside the block (only the batched kernels, one head per program, lower)
HEADS_IN_BLOCK = "not supported: a read in1[d0, d1 floordiv G"

_PLAIN = {"rows": PASSES, "blocks": PASSES}
_MATMUL = {"rows": PASSES, "rows_k K": PASSES, "blocks": PASSES, "blocks_k K": PASSES}
_ROW_NORM = {"rows": PASSES, "blocks": NOT_TILEABLE, "rows_multipass N": PASSES}
_ATTENTION = {"rows": HEADS_IN_BLOCK, "rows_k L": HEADS_IN_BLOCK, "blocks": NOT_TILEABLE,
              "blocks_k L": NOT_TILEABLE, "rows_multipass D": HEADS_IN_BLOCK,
              "rows_k_online L": HEADS_IN_BLOCK, "blocks_k_online L": NOT_TILEABLE,
              "batched_rows": PASSES, "batched_rows_k L": PASSES,
              "batched_blocks": NOT_TILEABLE, "batched_blocks_k L": NOT_TILEABLE,
              "batched_rows_multipass D": PASSES, "batched_rows_k_online L": PASSES,
              "batched_blocks_k_online L": NOT_TILEABLE,
              "batched_rows_k_online_split L": PASSES,
              "batched_blocks_k_online_split L": NOT_TILEABLE}

#: program -> "kind red" -> outcome
EXPECTED: dict[str, dict[str, str]] = {
    "mul": _PLAIN, "relu": _PLAIN, "silu": _PLAIN,
    "softmax": {**_ROW_NORM, "rows_multipass_online N": PASSES},
    "cumsum": {"rows": PASSES, "blocks": WRONG},
    "cumsum_f32": {"rows": PASSES, "blocks": WRONG},
    "rmsnorm": _ROW_NORM, "layernorm": _ROW_NORM, "ntrans": _ROW_NORM,
    "rope": {"rows": PASSES, "blocks": PASSES, "batched_rows": PASSES},
    "matmul": _MATMUL, "transpose_matmul": _MATMUL, "silu_matmul": _MATMUL,
    "relu_matmul": _MATMUL, "rmsnorm_matmul": _MATMUL, "matmul_red_div": _MATMUL,
    "reduce_broadcast_mul": _MATMUL, "gated_mlp": _MATMUL,
    "matmul_transpose": _MATMUL,
    "softmax_matmul": {**_MATMUL, "rows_k_online K": NOT_TILEABLE,
                       "blocks_k_online K": NOT_TILEABLE},
    "mlp": {"rows": PASSES, "rows_k K": PASSES, "rows_k F": PASSES, "blocks": PASSES,
            "blocks_k K": PASSES, "blocks_k F": PASSES, "rows_k_nested F": PASSES,
            "blocks_k_nested F": PASSES},
    "lora": {"rows": PASSES, "rows_k K": PASSES, "rows_k R": PASSES, "blocks": PASSES,
             "blocks_k K": PASSES, "blocks_k R": PASSES},
    "gemm_sum_scale": {"rows": PASSES, "rows_k K": PASSES, "rows_k N": PASSES,
                       "rows_k_nested N": PASSES},
    "linear_attention": {"rows": PASSES, "rows_k L": PASSES, "rows_k DK": PASSES,
                         "blocks": PASSES, "blocks_k L": PASSES, "blocks_k DK": PASSES,
                         "rows_k_nested DK": PASSES, "blocks_k_nested DK": PASSES},
    "gqa": _ATTENTION,
    "qknorm_gqa": _ATTENTION,
}
CASES = [(name, key) for name in sorted(EXPECTED) for key in EXPECTED[name]]


def key_of(tiling: Tiling) -> str:
    return tiling.kind + (f" {tiling.red}" if tiling.red else "")


def program(name: str) -> FuncOp:
    """A suite program in float32 (the interpreter's bf16 `tl.dot` is wrong), as propagation
    leaves it for the attention programs."""
    return _program(name, name in PROPAGATED)


@functools.cache
def _program(name: str, propagated: bool) -> FuncOp:
    """A suite program in float32, as the frontend gives it or as propagation's top program
    at the program's last default sizes."""
    entry = PROGRAMS[name]
    module = parse_source(entry.retyped_source("f32"), f"{name}.py")
    if propagated:
        sizes = ",".join(f"{k}={v}" for k, v in entry.default_sizes[-1].items())
        run_pipeline(module, f'propagate{{emit="top-k" top_k=1 device=h200 sizes="{sizes}"}}')
    (func,) = (op for op in module.ops if isinstance(op, FuncOp))
    return func


@functools.cache
def tilings_by_key(name: str) -> dict[str, Tiling]:
    return {key_of(t): t for t in tilings(program(name))}


def shapes(name: str) -> list[dict[str, int]]:
    """Three shapes: past a multiple of every block, all ones, and larger remainders
    (neighbouring sizes differ, so a swapped dim shows)."""
    if name in PROPAGATED:
        return [dict(zip(("B", "HKV", "G", "S", "L", "D"), s, strict=True))
                for s in ATTENTION_SIZES]
    func = program(name)
    names = sorted({s for t in func.function_type.inputs.data if isinstance(t, TensorType)
                    for d in t.shape for s in d.symbols()})
    return [{s: max(1, n - k % 3) for k, s in enumerate(names)} for n in (5, 1, 7)]


def test_the_table_names_every_tier_1_and_2_program_and_every_tiling() -> None:
    assert set(EXPECTED) == {n for n, p in PROGRAMS.items() if p.tier in (1, 2)}
    for name, cases in EXPECTED.items():
        assert set(tilings_by_key(name)) == set(cases), name
        assert PASSES in cases.values(), f"{name}: no kernel lowers and passes"


@pytest.mark.parametrize(("name", "key"), CASES)
def test_the_kernel_lowers_and_computes_what_the_program_does(name: str, key: str) -> None:
    func = program(name)
    expected = EXPECTED[name][key]
    try:
        tiled = tile_function(func, tilings_by_key(name)[key], "registers", "registers")
    except NotTileable:
        assert expected == NOT_TILEABLE
        return
    assert expected != NOT_TILEABLE
    if expected.startswith("not supported"):
        with pytest.raises(NotSupported) as info:
            emit_triton(tiled, tile_sizes=BLOCKS)
        assert str(info.value).startswith(expected), info.value
        return
    report = check_emitted(func, tiled, shapes(name), BLOCKS)
    assert len(report.shapes) == 3
    assert report.passed == (expected == PASSES), report.shapes


@pytest.mark.parametrize(("name", "key", "construct"), [
    ("gqa", "batched_rows_k_online L", "tl.dot("), ("rope", "rows", "tl.split("),
    ("rope", "rows", "tl.join("), ("cumsum", "rows", "tl.cumsum(")])
def test_the_construct_is_triton_s_own(name: str, key: str, construct: str) -> None:
    # attention's contractions are dots on the matrix unit, not a broadcast product and sum
    tiled = tile_function(program(name), tilings_by_key(name)[key], "registers", "registers")
    assert construct in emit_triton(tiled, tile_sizes=BLOCKS).text


@pytest.mark.parametrize("kind", ["rows", "batched_rows"])
def test_propagated_rope_reads_its_pairs_inside_products_through_split(kind: str) -> None:
    # propagation fuses each pair read into its product (`in0[d0, d1, 2*d2] * in1[d0, d2]`):
    # the even and odd lanes come from tl.split of the row held as pairs, inside the map
    func = _program("rope", True)
    assert "in0[d0, d1, 2*d2] * in1[d0, d2]" in str(func)
    assert "in0[d0, d1, 2*d2 + 1] * in1[d0, d2]" in str(func)
    tiled = tile_function(func, {key_of(t): t for t in tilings(func)}[kind], "registers",
                          "registers")
    assert emit_triton(tiled, tile_sizes=BLOCKS).text.count("tl.split(") == 2
    report = check_emitted(func, tiled, shapes("rope"), BLOCKS)
    assert len(report.shapes) == 3
    assert report.passed, report.shapes
