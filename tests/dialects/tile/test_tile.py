"""The tile dialect: kernels built in Python and read from text, run by the interpreter against
the untiled program at sizes that are and are not multiples of the tiles, and wrong tilings
caught (a gap or an overlap in the grid, a wrong accumulator start, a wrong pad)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.irdl import IRDLOperation

from axon.dialects.ax import AddOp, MatmulOp, TensorType
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp
from axon.interpreter import InterpreterError, run_module
from axon.tools.embed import parse_mlir, print_ir

A = TensorType(["M", "K"], "f32")
B = TensorType(["K", "N"], "f32")
C = TensorType(["M", "N"], "f32")
ACC = TensorType(["BM", "BN"], "f32")


def tiled_matmul(*, store: str = "i*BM", grid_m: str = "ceildiv(M, BM)", start: float = 0.0,
                 pad: float = 0.0) -> ModuleOp:
    """`@matmul`, C = A @ B as one kernel over (BM, BN) output tiles with a loop over K in
    steps of BK; the keywords plant the mistakes the tests look for."""
    func = FuncOp("matmul", ([A, B], [C]))
    a, b = func.body.block.args
    body = Block(arg_types=[A, B])
    x, y = body.args
    zero = FullOp.make([], value=start, shape=["BM", "BN"], dtype="f32", space="psum")
    loop_body = Block(arg_types=[ACC])
    (acc_in,) = loop_body.args
    p = LoadOp.make([x], offsets=["i*BM", "k*BK"], shape=["BM", "BK"], pad=pad, space="sbuf")
    q = LoadOp.make([y], offsets=["k*BK", "j*BN"], shape=["BK", "BN"], pad=pad, space="sbuf")
    r = MatmulOp.make([p.results[0], q.results[0]])
    s = AddOp.make([acc_in, r.results[0]])
    loop_body.add_ops([p, q, r, s, YieldOp(s.results[0])])
    loop = ForOp([zero.results[0]], "k", "ceildiv(K, BK)", Region(loop_body))
    body.add_ops([zero, loop, StoreOp(loop.results[0], 0, [store, "j*BN"]), YieldOp()])
    kernel = KernelOp([a, b], [C], ["i", "j"], [grid_m, "ceildiv(N, BN)"], ["BM", "BN", "BK"],
                      Region(body), assume=["BM >= 1", "BN >= 1", "BK >= 1"])
    func.body.block.add_ops([kernel, ReturnOp(kernel.results[0])])
    module = ModuleOp([func])
    module.verify()
    return module


def run(module: ModuleOp, m: int, k: int, n: int, tiles: tuple[int, int, int],
        seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's result and A @ B (float64) on random inputs."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    sizes = dict(zip(("BM", "BN", "BK"), tiles, strict=True))
    (c,) = run_module(module, "matmul", [a, b], sizes, exact=True)
    return c, a.astype(np.float64) @ b.astype(np.float64)


def test_the_kernel_prints_and_reads_back_as_itself() -> None:
    module = tiled_matmul()
    text = print_ir(module)
    assert 'tile.kernel %0, %1 {program_ids = ["i", "j"]' in text
    assert print_ir(parse_mlir(text, "matmul.mlir")) == text
    generic = print_ir(module, generic=True)
    assert print_ir(parse_mlir(generic, "matmul.mlir")) == text


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 9), k=st.integers(1, 9), n=st.integers(1, 9),
       tiles=st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5)))
def test_a_tiled_matmul_equals_the_matmul(m: int, k: int, n: int,
                                          tiles: tuple[int, int, int]) -> None:
    # sizes that are and are not multiples of the tiles, dims of 1, tiles larger than the sizes
    c, expected = run(tiled_matmul(), m, k, n, tiles)
    np.testing.assert_allclose(c, expected, rtol=1e-12, atol=1e-12)


def test_the_untiled_program_agrees_under_the_same_interpreter() -> None:
    untiled = parse_mlir("""
func.func @matmul(%a: !ax.tensor<[M, K], f32>, %b: !ax.tensor<[K, N], f32>)
    -> !ax.tensor<[M, N], f32> {
  %c = ax.matmul %a, %b : (!ax.tensor<[M, K], f32>, !ax.tensor<[K, N], f32>)
      -> !ax.tensor<[M, N], f32>
  func.return %c : !ax.tensor<[M, N], f32>
}""", "untiled.mlir")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((7, 5)), rng.standard_normal((5, 6))
    (want,) = run_module(untiled, "matmul", [a, b], exact=True)
    (got,) = run_module(tiled_matmul(), "matmul", [a, b], {"BM": 3, "BN": 4, "BK": 2},
                        exact=True)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize(("mistake", "message"), [
    ({"store": "i*BM + 1"}, r"result #0\[0, 0\] is written 0 time"),
    ({"grid_m": "ceildiv(M, BM) - 1"}, r"is written 0 time"),
    ({"grid_m": "ceildiv(M, BM) + 1", "store": "i*BM - BM"}, r"offset -\d+ is before the start"),
])
def test_a_grid_with_a_gap_or_an_overlap_is_an_error(mistake: dict[str, str],
                                                     message: str) -> None:
    with pytest.raises(InterpreterError, match=message):
        run(tiled_matmul(**mistake), 7, 5, 6, (3, 4, 2))  # type: ignore[arg-type]


def test_a_wrong_accumulator_start_shows_in_the_values() -> None:
    c, expected = run(tiled_matmul(start=1.0), 7, 5, 6, (3, 4, 2))
    assert np.allclose(c, expected + 1.0)


def test_a_wrong_pad_shows_only_where_a_tile_reaches_past_the_end() -> None:
    # pad 1.0 adds one product of pads per element whose K loop runs past K (K = 5, BK = 2)
    wrong, expected = run(tiled_matmul(pad=1.0), 4, 5, 4, (2, 2, 2))
    assert np.allclose(wrong, expected + 1.0)
    exact, expected = run(tiled_matmul(pad=1.0), 4, 4, 4, (2, 2, 2))
    assert np.allclose(exact, expected)


def test_tile_parameters_must_be_bound_and_meet_the_assumptions() -> None:
    module = tiled_matmul()
    a, b = np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)
    with pytest.raises(InterpreterError, match="no value for tile parameter"):
        run_module(module, "matmul", [a, b], {"BM": 1, "BN": 1})
    with pytest.raises(InterpreterError, match=r"assumption 'BK >= 1' does not hold"):
        run_module(module, "matmul", [a, b], {"BM": 1, "BN": 1, "BK": 0})


ROWS = """
func.func @scale_rows(%x: !ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  %c = tile.kernel %x {program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM", "SB"],
                       assume = ASSUME} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  ^bb0(%xg: !ax.tensor<[M, N], f32>):
    tile.for {iv = "s", extent = "ceildiv(BM, SB)", kind = "parallel"} : () -> () {
      %t = tile.load %xg {offsets = ["i*BM + s*SB", "0"], shape = ["SB", "N"], pad = 0.0 : f64,
                          space = "sbuf"} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[SB, N], f32>
      %u = ax.add %t, %t : (!ax.tensor<[SB, N], f32>, !ax.tensor<[SB, N], f32>)
          -> !ax.tensor<[SB, N], f32>
      tile.store %u {result = 0, offsets = ["i*BM + s*SB", "0"]} : !ax.tensor<[SB, N], f32>
      tile.yield
    }
    tile.yield
  }
  func.return %c : !ax.tensor<[M, N], f32>
}
"""


@pytest.mark.parametrize("tiles", [(4, 2), (4, 4), (6, 3), (1, 1), (8, 2)])
def test_a_parallel_loop_over_sub_tiles(tiles: tuple[int, int]) -> None:
    module = parse_mlir(ROWS.replace("ASSUME", '["SB >= 1", "BM mod SB == 0"]'), "rows.mlir")
    x = np.arange(7 * 3, dtype=np.float32).reshape(7, 3)
    (y,) = run_module(module, "scale_rows", [x], {"BM": tiles[0], "SB": tiles[1]})
    np.testing.assert_array_equal(y, 2 * x)


def test_sub_tiles_that_overlap_the_next_program_are_caught() -> None:
    # without BM mod SB == 0, the last sub-tile of a program (BM = 5, SB = 2) reaches into the
    # next program's rows, which that program writes too
    module = parse_mlir(ROWS.replace("ASSUME", '["SB >= 1"]'), "rows.mlir")
    x = np.ones((10, 2), dtype=np.float32)
    with pytest.raises(InterpreterError, match="written 2 time"):
        run_module(module, "scale_rows", [x], {"BM": 5, "SB": 2})


@pytest.mark.parametrize("op", [KernelOp, ForOp, LoadOp, FullOp, StoreOp], ids=lambda op: op.name)
def test_every_tile_op_has_lit_tests(op: type[IRDLOperation]) -> None:
    """A round-trip CHECK line printing the op and an invalid-IR chunk of its own diagnostic."""
    root = Path(__file__).resolve().parents[3] / "lit_tests" / "dialects"
    round_trip = (root / "tile.mlir").read_text()
    invalid = (root / "tile_invalid.mlir").read_text()
    assert re.search(rf"^// CHECK.*{re.escape(op.name)} ", round_trip, re.M)
    assert re.search(rf"^// CHECK: .* error: '{re.escape(op.name)}'", invalid, re.M)
