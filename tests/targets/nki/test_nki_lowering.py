"""The lowering from `tile` to `nki` and the NKI emitter: suite kernels tiled for Trn2 become
NKI instructions, each lowering proved equal to its tiled kernel (a wrong one refuted and
refused, what has no lowering refused with the reason); the proved kernels are printed as
current-API modules and run unchanged on the NKI simulator (Trn2 limits) against the reference
interpreter of the untiled program at three shapes: sizes that are no multiple of the tiles
(remainder tiles padded), sizes of 1, and several programs of full tiles with a remainder."""

from __future__ import annotations

import ast
import sys
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from axon.benchmarks.suite import PROGRAMS, make_inputs, small_sizes
from axon.dialects import nki
from axon.dialects.ax import MulOp
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.interface import has_form
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.form.scalar import Const, Read, ScalarExpr, call
from axon.dialects.tile import ForOp, FullOp, KernelOp, LoadOp, StoreOp, YieldOp
from axon.interpreter import run_function
from axon.targets.nki import lower
from axon.targets.nki.emit import EmittedKernel, _fill, emit_nki
from axon.targets.nki.lower import Refused, _reads, lower_and_prove, lower_function
from axon.targets.nki.simulator import KernelError, SimulationWarning, load_kernel, simulate
from axon.targets.nki.simulator_limits import load_limits
from axon.targets.profiles import load_profile
from axon.tiling.kernels import NotTileable, Tiling, tilings
from axon.tiling.search import profiled_kernel
from axon.tools.embed import parse_mlir, parse_source
from axon.verifier import Proved, prove_equivalent

#: (program, tiling) pairs the NKI lowering covers: elementwise (rows, and blocks of rows and
#: columns), row reductions, a row prefix sum, matmuls with the whole contraction on chip and
#: with a loop over K accumulating in PSUM
COVERED = [("mul", "rows"), ("relu", "rows"), ("relu", "blocks"), ("silu", "rows"),
           ("softmax", "rows"), ("rmsnorm", "rows"), ("cumsum", "rows"), ("matmul", "rows"),
           ("matmul", "rows_k"), ("matmul", "blocks_k")]


def program(name: str) -> FuncOp:
    """A suite program, parsed from its source."""
    (func,) = (op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp))
    return func


def trn2_kernel(func: FuncOp, kind: str, tiling: Tiling | None = None) -> FuncOp:
    """The `kind` tiling of `func` (or `tiling` itself: a program may have two of one kind) in
    SBUF with PSUM accumulators, assuming Trn2's limits."""
    if tiling is None:
        (tiling,) = [t for t in tilings(func) if t.kind == kind]
    return profiled_kernel(func, tiling, load_profile("trn2"))


def instructions(func: object) -> list[str]:
    """The names of the nki instructions of a lowered function, in order."""
    return [op.name for op in func.walk() if isinstance(op, nki.NkiOp)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("name", "kind"), COVERED)
def test_each_covered_kernel_lowers_to_instructions_and_is_proved(name: str, kind: str) -> None:
    lowered = lower_and_prove(trn2_kernel(program(name), kind))
    assert len(lowered.proof_id) == 16
    structure = (KernelOp, ForOp, LoadOp, StoreOp, FullOp, YieldOp)
    for op in lowered.func.walk():
        if has_form(op):  # every computing op is an instruction or a tile-level memory op
            assert isinstance(op, (nki.NkiOp, *structure)), op.name


def test_a_lowering_proved_once_is_served_to_the_next_call_in_the_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the NKI target proves through the process's cache: the same kernel lowered again (a
    # nested selection, the next test of the same program) is not proved again
    verdicts: list[object] = []
    prove = lower.prove_equivalent

    def recorded(*args: object, **kwargs: object) -> object:
        verdicts.append(prove(*args, **kwargs))  # type: ignore[arg-type]
        return verdicts[-1]

    monkeypatch.setattr(lower, "prove_equivalent", recorded)
    first = lower_and_prove(trn2_kernel(program("relu"), "rows"))
    again = lower_and_prove(trn2_kernel(program("relu"), "rows"))  # built afresh
    assert again.proof_id == first.proof_id
    assert isinstance(verdicts[-1], Proved) and verdicts[-1].cached


def test_the_instructions_each_op_family_becomes() -> None:
    mul = instructions(lower_function(trn2_kernel(program("mul"), "rows")))
    assert mul == ["nki.tensor_tensor"]  # written in bf16 by the instruction: no copy
    assert instructions(lower_function(trn2_kernel(program("silu"), "rows"))) == \
        ["nki.activation"]
    softmax = instructions(lower_function(trn2_kernel(program("softmax"), "rows")))
    assert softmax == ["nki.tensor_reduce", "nki.tensor_scalar", "nki.activation",
                       "nki.tensor_reduce", "nki.tensor_scalar"]
    rmsnorm = instructions(lower_function(trn2_kernel(program("rmsnorm"), "rows")))
    assert "nki.nc_matmul" in rmsnorm  # the weight row broadcast over the partitions
    matmul = lower_function(trn2_kernel(program("matmul"), "rows_k"))
    assert instructions(matmul) == ["nki.nc_transpose", "nki.tensor_copy", "nki.nc_matmul",
                                    "nki.tensor_tensor", "nki.tensor_copy"]
    # x.T @ w: the tile of x as loaded is the stationary operand, no transpose on chip
    transposed = instructions(lower_function(trn2_kernel(program("transpose_matmul"), "rows")))
    assert transposed == ["nki.nc_matmul", "nki.tensor_copy"]
    (acc,) = (op for op in matmul.walk() if isinstance(op, FullOp))
    assert acc.space.data == "psum" and acc.attrs()["dtype"] == "f32"


def _dtypes_of_products(name: str) -> list[tuple[str, list[str]]]:
    """Each [P, F] tensor_tensor product of the lowered `rows` kernel of `name`: its dtype and
    those of its operands."""
    func = lower_function(trn2_kernel(program(name), "rows"))
    return [(str(op.attrs()["dtype"]), [str(v.type.dtype) for v in op.operands])  # type: ignore[attr-defined]
            for op in func.walk() if isinstance(op, nki.TensorTensorOp)
            and op.attrs()["op"] == "multiply" and op.operands[0] is not op.operands[1]
            and str(op.operands[0].type.shape[1]) != "1"]  # type: ignore[attr-defined]


def test_a_factor_of_a_product_is_rounded_where_the_program_rounds_it() -> None:
    # rmsnorm: x * rstd (bf16 in the program) is written in bf16 by its tensor_scalar, so
    # `* g` reads a bf16 tile (one VectorE pass where fp32 takes two); the row g broadcast
    # stays as the matmul writes it (fp32 PSUM)
    assert _dtypes_of_products("rmsnorm") == [("bf16", ["bf16", "f32"])]
    # layernorm: (xc * rstd) * g is a term of a sum (+ b): rounded first it could cancel, so
    # it and its factors stay fp32
    assert _dtypes_of_products("layernorm") == [("f32", ["f32", "f32"])]


def test_a_wrong_lowering_is_refuted_and_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    wrong: dict[type[Operation], str] = {**lower._ALU, MulOp: "add"}
    monkeypatch.setattr(lower, "_ALU", wrong)
    with pytest.raises(Refused, match="not proved equal to the tiled kernel .refuted"):
        lower_and_prove(trn2_kernel(program("mul"), "rows"))


def test_what_has_no_lowering_is_refused_with_the_reason() -> None:
    # softmax's online kernel: a loop stating an invariant
    with pytest.raises(Refused, match="a sequential tile.for over 'k' stating an invariant"):
        lower_function(trn2_kernel(program("softmax"), "rows_multipass_online"))
    with pytest.raises(Refused, match="not one tile.kernel"):
        lower_function(program("mul"))


#: tile sizes: the NeuronCore's 128 partitions, and 128-deep contraction blocks
TILES = {"BM": 128, "BN": 128, "BK": 128}
#: three shapes per size symbol: remainders of every tile, all ones, several tiles
SHAPES = [{"M": 130, "N": 77, "K": 200}, {"M": 1, "N": 1, "K": 1},
          {"M": 300, "N": 512, "K": 300}]
#: a kernel holding the whole contraction on chip assumes K <= 128 (the partitions)
WHOLE_K = [{"M": 130, "N": 77, "K": 100}, {"M": 1, "N": 1, "K": 1},
           {"M": 300, "N": 512, "K": 128}]


def emitted(name: str, kind: str) -> EmittedKernel:
    """The module of the `kind` kernel of suite program `name`, lowered and proved."""
    return emit_nki(lower_and_prove(trn2_kernel(program(name), kind)).func, TILES)


def run(module: EmittedKernel, tmp_path: Path, inputs: list[np.ndarray]) -> np.ndarray:
    """The module's outputs on the simulator; a simulator warning (a read of bytes nothing
    wrote, an activation input out of range) fails the test."""
    path = tmp_path / f"{module.name}.py"
    path.write_text(module.text)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SimulationWarning)
        return simulate(load_kernel(path), *inputs, limits=load_limits("trn2"))


@pytest.mark.parametrize(("name", "kind"), COVERED)
def test_the_module_runs_on_the_simulator_and_matches_the_reference(
        name: str, kind: str, tmp_path: Path) -> None:
    module = emitted(name, kind)
    func = program(name)
    rtol, atol = DTYPES["bf16"].tolerance
    for shape in WHOLE_K if (name, kind) == ("matmul", "rows") else SHAPES:
        sizes = {s: shape[s] for s in PROGRAMS[name].symbols}
        inputs = make_inputs(PROGRAMS[name], sizes)
        out = run(module, tmp_path, inputs)
        (expected,) = run_function(func, inputs, sizes)
        assert out.dtype == np.dtype(ml_dtypes.bfloat16) and out.shape == expected.shape
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{name} {kind} {sizes}")


def test_the_module_is_current_api_and_self_contained() -> None:
    text = emitted("matmul", "rows_k").text
    tree = ast.parse(text)
    imports = [node for node in tree.body if isinstance(node, ast.Import)]
    assert [(a.name, a.asname) for node in imports for a in node.names] == \
        [("nki", None), ("nki.isa", "nisa"), ("nki.language", "nl")]
    (jit,) = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert [ast.unparse(d) for d in jit.decorator_list] == ["nki.jit"]
    assert [a.arg for a in jit.args.args] == ["in0", "in1"]
    assert "buffer=nl.shared_hbm" in text and "nl.sequential_range(" in text
    assert "nl.affine_range(" in text
    # the product accumulates into the PSUM tile itself, no add of two PSUM tiles
    assert "nisa.nc_matmul(dst=t0, " in text and "nisa.tensor_tensor" not in text


def test_a_wrong_module_is_told_apart(tmp_path: Path) -> None:
    module = emitted("softmax", "rows")
    wrong = EmittedKernel(module.name, module.text.replace("op=nl.exp", "op=nl.sigmoid"))
    assert wrong.text != module.text
    sizes = {"M": 130, "N": 77}
    inputs = make_inputs(PROGRAMS["softmax"], sizes)
    (expected,) = run_function(program("softmax"), inputs, sizes)
    out = run(wrong, tmp_path, inputs)
    assert not np.allclose(out.astype(np.float64), expected.astype(np.float64), rtol=1e-2,
                           atol=1e-2)


def test_sizes_past_the_kernels_assumptions_stop_at_an_assertion(tmp_path: Path) -> None:
    module = emitted("matmul", "rows_k")
    inputs = make_inputs(PROGRAMS["matmul"], {"M": 4, "N": 600, "K": 4})
    with pytest.raises(KernelError, match=r"matmul_rows_k.py:\d+: .*assumes 4\*N <= 2048"):
        run(module, tmp_path, inputs)


def test_missing_tile_sizes_are_refused() -> None:
    lowered = lower_and_prove(trn2_kernel(program("mul"), "rows"))
    with pytest.raises(Refused, match="no value for tile parameter.s. BM"):
        emit_nki(lowered.func, {})


SCALAR_KERNEL = """
func.func @f(%0: !ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  %1 = tile.kernel %0 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"],
                       params = ["BM"], assume = ["BM >= 1", "BM <= 128"]}
      : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, N], f32> {
  ^bb0(%2: !ax.tensor<[M, N], f32>):
    %3 = tile.load %2 {offsets = ["BM*i", "0"], shape = ["BM", "N"], pad = 0.0 : f64,
                       space = "sbuf"} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[BM, N], f32>
    %c = ax.constant {value = VALUE : f64, shape = [], dtype = f32} : !ax.tensor<[], f32>
    %4 = ax.OP LHS, RHS : (TYPES) -> !ax.tensor<[BM, N], f32>
    tile.store %4 {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, N], f32>
    tile.yield
  }
  func.return %1 : !ax.tensor<[M, N], f32>
}
"""


def scalar_kernel(op: str, value: float, constant_first: bool = False) -> FuncOp:
    """A kernel computing `x op value` (`value op x`) on row tiles of `x`."""
    tile_type, scalar_type = "!ax.tensor<[BM, N], f32>", "!ax.tensor<[], f32>"
    lhs, rhs, types = ("%3", "%c", f"{tile_type}, {scalar_type}")
    if constant_first:
        lhs, rhs, types = ("%c", "%3", f"{scalar_type}, {tile_type}")
    text = (SCALAR_KERNEL.replace("VALUE", format(value, ".17e")).replace("OP", op)
            .replace("LHS", lhs).replace("RHS", rhs).replace("TYPES", types))
    (func,) = (o for o in parse_mlir(text).ops if isinstance(o, FuncOp))
    return func


@pytest.mark.parametrize(("op", "value", "constant_first", "pieces"), [
    ("add", 1e-6, False, 2), ("sub", 1e-6, False, 2), ("sub", 1e-6, True, 2),
    ("sub", 1 / 3, True, 3), ("mul", 0.5, False, 1)])
def test_a_constant_fp32_does_not_hold_is_added_as_its_exact_fp32_pieces(
        op: str, value: float, constant_first: bool, pieces: int) -> None:
    # the engines hold immediates in fp32 and the nki IR holds fp32 immediates only (the op
    # verifier checks; nothing rounds them): the pieces sum to the constant exactly, so the
    # lowering is proved
    lowered = lower_and_prove(scalar_kernel(op, value, constant_first)).func
    immediates = [float(v) for o in lowered.walk() if isinstance(o, nki.TensorScalarOp)
                  for k, v in o.attrs().items() if k.startswith("scalar")]
    assert len(immediates) == pieces
    assert all(float(np.float32(v)) == v for v in immediates)


def test_a_product_by_a_constant_fp32_does_not_hold_is_refused() -> None:
    with pytest.raises(Refused, match="'ax.mul' by the constant 0.1, which fp32 does not hold"):
        lower_function(scalar_kernel("mul", 0.1))


def test_the_emitter_prints_fill_values_as_they_are_and_refuses_one_the_dtype_lacks() -> None:
    assert _fill(-float("inf"), "bf16") == "-inf" and _fill(0.375, "f32") == "0.375"
    with pytest.raises(Refused, match=r"the fill value 0.1 is not a bf16 value \(nisa.memset "
                                      r"takes the dst dtype's; the nearest is 0.10009765625\)"):
        _fill(0.1, "bf16")


ROW_SUM = """
func.func @row_sum(%0: !ax.tensor<[M, N], f32>) -> !ax.tensor<[M, 1], f32> {
  %1 = tile.kernel %0 {program_ids = ["i"], grid = ["(BM + M - 1) floordiv BM"],
                       params = ["BM", "BK"], assume = ["BM >= 1", "BK >= 1", "BM <= 128"]}
      : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[M, 1], f32> {
  ^bb0(%2: !ax.tensor<[M, N], f32>):
    %z = tile.full {value = 0.0 : f64, shape = ["BM", "1"], dtype = f32, space = "sbuf"}
        : !ax.tensor<[BM, 1], f32>
    %acc = tile.for %z {iv = "k", extent = "(BK + N - 1) floordiv BK"}
        : (!ax.tensor<[BM, 1], f32>) -> !ax.tensor<[BM, 1], f32> {
    ^bb1(%in: !ax.tensor<[BM, 1], f32>):
      %t = tile.load %2 {offsets = ["BM*i", "BK*k"], shape = ["BM", "BK"], pad = 0.0 : f64,
                         space = "sbuf"} : (!ax.tensor<[M, N], f32>) -> !ax.tensor<[BM, BK], f32>
      %r = ax.sum %t {axes = array<i64: 1>, keepdims = true}
          : (!ax.tensor<[BM, BK], f32>) -> !ax.tensor<[BM, 1], f32>
      %s = ax.add %in, %r : (!ax.tensor<[BM, 1], f32>, !ax.tensor<[BM, 1], f32>)
          -> !ax.tensor<[BM, 1], f32>
      LATER_READ
      tile.yield %s : !ax.tensor<[BM, 1], f32>
    }
    tile.store %acc {result = 0 : i64, offsets = ["BM*i", "0"]} : !ax.tensor<[BM, 1], f32>
    tile.yield
  }
  func.return %1 : !ax.tensor<[M, 1], f32>
}
"""


@pytest.mark.parametrize("later_read", [False, True])
def test_a_carried_tile_is_updated_in_place_unless_read_after_the_update(
        later_read: bool, tmp_path: Path) -> None:
    # a read of the carried value after the update must see the old value: the update then
    # goes to a tile of its own, copied into the carried one at the end of the iteration
    read = ("%u = ax.mul %in, %in : (!ax.tensor<[BM, 1], f32>, !ax.tensor<[BM, 1], f32>) "
            "-> !ax.tensor<[BM, 1], f32>")
    text = ROW_SUM.replace("LATER_READ", read if later_read else "")
    (func,) = (o for o in parse_mlir(text).ops if isinstance(o, FuncOp))
    lowered = lower_and_prove(func).func
    module = emit_nki(lowered, {"BM": 128, "BK": 64})
    copies = module.text.count("nisa.tensor_copy(")
    assert copies == (1 if later_read else 0), module.text
    x = np.random.default_rng(0).standard_normal((130, 200)).astype(np.float32)
    out = run(module, tmp_path, [x])
    np.testing.assert_allclose(out[:, 0], x.astype(np.float64).sum(axis=1), rtol=1e-5,
                               atol=1e-4)


#: suite programs beyond `COVERED` whose tilings lower: matmuls fed by elementwise ops and row
#: normalizations, chains of matmuls (nested loops), transposed operands
MORE = ["gated_mlp", "layernorm", "linear_attention", "lora", "matmul_red_div",
        "matmul_transpose", "mlp", "relu_matmul", "silu_matmul", "softmax_matmul",
        "transpose_matmul"]


@pytest.mark.parametrize("name", MORE)
def test_every_tiling_lowers_and_runs_at_tiles_of_two(name: str, tmp_path: Path) -> None:
    # tiles of 2 over sizes of 2..7: several programs and loop iterations, a remainder in
    # each dim; every tiling the tile pass proves is lowered; one that does not lower is one
    # holding an `ax.generic` with no lowering, the gaps docs/nki_lowering.md names
    func = program(name)
    sizes = small_sizes(PROGRAMS[name], 0)
    inputs = make_inputs(PROGRAMS[name], sizes)
    (expected,) = run_function(func, inputs, sizes)
    rtol, atol = DTYPES["bf16"].tolerance
    ran = []
    for tiling in tilings(func):
        try:
            kernel = trn2_kernel(func, tiling.kind, tiling)
        except NotTileable:  # proposed, but the tiler cannot build it (tiling/kernels.py)
            continue
        if not isinstance(prove_equivalent(kernel, func), Proved):
            continue  # a tiling the tile pass would not keep: nothing to lower
        try:
            lowered = lower_and_prove(kernel)
        except Refused as err:
            assert "'ax.generic' with the form" in str(err), err
            continue
        params = {p: 2 for op in kernel.walk() if isinstance(op, KernelOp)
                  for p in op.param_names()}
        out = run(emit_nki(lowered.func, params), tmp_path, inputs)
        np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{name} {tiling.kind}")
        ran.append(tiling.kind)
    assert ran


def test_a_deep_form_is_read_without_recursion() -> None:
    # a fused form of a long elementwise chain is as deep as the chain: the lowering's walks
    # over it use an explicit stack, past Python's recursion limit
    deep: ScalarExpr = Read(0, (IntExpr.sym("d0"),))
    for _ in range(5 * sys.getrecursionlimit()):
        deep = call("exp", deep)
    assert _reads(deep)
    flat: ScalarExpr = Const(1.0)
    for _ in range(5 * sys.getrecursionlimit()):
        flat = call("exp", flat)
    assert not _reads(flat)
