"""Instruction fusion of lowered NKI kernels (`targets/nki/fuse.py`): each rule applied to a
suite program's kernel tiled for Trn2, proved, and the fused kernel emitted and run unchanged
on the simulator against the reference interpreter (remainder tiles, sizes of 1, several
tiles); planted wrong fusions (a bias after the function, the row sum taken before it, the two
ops of a tensor_scalar swapped, a transpose dropped) refuted and never admitted; a proof out of
budget never admits either."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.dialects import nki
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.tile import KernelOp
from axon.interpreter import run_function
from axon.targets.nki import fuse
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.fuse import FusedKernel, Rule, fuse_kernel, lower_and_fuse
from axon.targets.nki.lower import lower_and_prove
from axon.targets.nki.select import first_kernel, random_inputs
from axon.targets.nki.simulator import SimulationWarning, load_kernel, simulate
from axon.targets.nki.simulator_limits import load_limits
from axon.targets.profiles import load_profile
from axon.tiling.kernels import tile_function, tilings
from axon.tiling.profiles import kernel_constraints, tile_spaces
from axon.tools.embed import parse_mlir, parse_source
from axon.verifier import ProofBudget

#: each rule and a suite kernel it fuses (program, tiling)
WHERE = {"activation-scale-bias": ("softmax", "rows"), "reduce-negate": ("softmax", "rows"),
         "activation-reduce": ("softmax", "rows"), "square-reduce": ("rmsnorm", "rows"),
         "tensor-scalar-chain": ("layernorm", "rows"), "dma-transpose": ("matmul", "blocks_k"),
         "divide-reciprocal": ("softmax", "rows"), "column-scale-bias": ("rmsnorm", "rows")}
TILES = {"BM": 128, "BN": 128, "BK": 128}
#: remainders of every tile, all ones, several tiles (rmsnorm and layernorm broadcast their
#: weight rows by one matmul: N <= 512)
SHAPES = [{"M": 130, "N": 77, "K": 200}, {"M": 1, "N": 1, "K": 1},
          {"M": 300, "N": 512, "K": 300}]


def program(name: str) -> FuncOp:
    """A suite program, parsed from its source."""
    (func,) = (op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp))
    return func


def tiled(name: str | FuncOp, kind: str) -> FuncOp:
    """The `kind` tiling of suite program `name` (or of `name` itself) for Trn2 (SBUF, PSUM
    accumulators)."""
    func = program(name) if isinstance(name, str) else name
    (tiling,) = [t for t in tilings(func) if t.kind == kind]
    profile = load_profile("trn2")
    kernel = tile_function(func, tiling, *tile_spaces(profile))
    (op,) = (o for o in kernel.body.block.ops if isinstance(o, KernelOp))
    op.assume_also(kernel_constraints(profile, op))
    return kernel


def lowered(name: str | FuncOp, kind: str) -> FuncOp:
    """That tiling lowered to `nki` and proved."""
    return lower_and_prove(tiled(name, kind)).func


def instructions(func: FuncOp) -> list[str]:
    return [op.name.removeprefix("nki.") for op in func.walk() if isinstance(op, nki.NkiOp)]


def run(func: FuncOp, tmp_path: Path, inputs: list[np.ndarray]) -> np.ndarray:
    """The emitted module of `func` run on the simulator (Trn2 limits, warnings as errors)."""
    module = emit_nki(func, TILES)
    path = tmp_path / f"{module.name}.py"
    path.write_text(module.text)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SimulationWarning)
        return simulate(load_kernel(path), *inputs, limits=load_limits("trn2"))


#: the rules by name
RULE = {rule.name: rule for rule in fuse.RULES}


def verdicts(fused: FusedKernel) -> list[tuple[str, str]]:
    return [(a.rule, a.verdict) for a in fused.attempts]


def test_softmax_absorbs_its_bias_negates_its_max_and_reads_its_sum_from_the_activation() -> None:
    fused = fuse_kernel(lowered("softmax", "rows"))
    assert verdicts(fused) == [("activation-scale-bias", "proved"), ("reduce-negate", "proved"),
                               ("activation-reduce", "proved"), ("divide-reciprocal", "proved")]
    # the divide by the row sum: its reciprocal ([P, 1]) times the exponentials
    assert instructions(fused.func) == ["tensor_reduce", "activation", "activation_reduce",
                                        "tensor_scalar", "tensor_scalar"]
    reciprocal, scaled = [op for op in fused.func.walk() if isinstance(op, nki.TensorScalarOp)]
    assert reciprocal.attrs()["op0"] == "divide" and reciprocal.attrs()["reverse0"]
    assert scaled.attrs()["op0"] == "multiply" and scaled.operands[1] is reciprocal.results[0]
    text = emit_nki(fused.func, TILES).text
    # both results of exp from one instruction: the activation and its row sum (once in each
    # of the kernel's two grids: its loads ahead of the grid, or not)
    assert text.count("nisa.activation_reduce(") == 2 and "nisa.activation(" not in text
    assert "negate=True" in text


def test_rmsnorm_sums_its_squares_in_the_activation() -> None:
    before = lowered("rmsnorm", "rows")
    fused = fuse_kernel(before)
    assert verdicts(fused) == [("square-reduce", "proved"), ("column-scale-bias", "proved")]
    assert instructions(before)[:2] == ["tensor_tensor", "tensor_reduce"]
    assert instructions(fused.func)[0] == "activation_reduce"


def test_rmsnorm_takes_its_rsqrt_of_the_mean_plus_eps_in_one_activation() -> None:
    # rsqrt(sum / N + eps): the count's reciprocal as the activation's scale and eps (two fp32
    # pieces) as its bias, both columns of constants that the emitter computes before the grid
    before = lowered("rmsnorm", "rows")
    assert [op.attrs()["op"] for op in before.walk() if isinstance(op, nki.TensorTensorOp)
            and _columns(op)] == ["divide"]
    fused = fuse_kernel(before).func
    assert not [op for op in fused.walk() if isinstance(op, nki.TensorTensorOp) and _columns(op)]
    (rsqrt,) = [op for op in fused.walk() if isinstance(op, nki.ActivationOp)
                and op.attrs()["func"] == "rsqrt"]
    data, bias, scale = rsqrt.operands
    assert isinstance(data.owner, nki.ActivationReduceOp)  # the sum of squares itself
    assert fuse._constant_made(bias) and fuse._constant_made(scale)
    text = emit_nki(fused, TILES).text
    grid = text.index("for i in nl.affine_range")
    assert text.index("operand0=1.0, reverse0=True") < grid  # 1 / N, once
    assert text.index("value=9.99999997") < grid  # eps's first piece, once
    assert "op=nl.rsqrt, data=" in text[grid:] and ", bias=" in text[grid:]


def test_layernorm_takes_eps_in_three_pieces_as_its_rsqrt_bias() -> None:
    fused = fuse_kernel(lowered("layernorm", "rows"))
    assert ("column-scale-bias", "proved") in verdicts(fused)
    (rsqrt,) = [op for op in fused.func.walk() if isinstance(op, nki.ActivationOp)
                and op.attrs()["func"] == "rsqrt"]
    assert len(rsqrt.operands) == 3 and isinstance(rsqrt.operands[0].owner,
                                                   nki.ActivationReduceOp)
    # 1e-5 is three fp32 pieces: a memset of the first, one tensor_scalar adding the others
    bias = rsqrt.operands[1].owner
    assert isinstance(bias, nki.TensorScalarOp) and bias.attrs()["op1"] == "add"
    assert isinstance(bias.operands[0].owner, nki.MemsetOp)


def _columns(op: Operation) -> bool:
    return all(str(t.shape[1]) == "1" for t in (v.type for v in op.operands))  # type: ignore[attr-defined]


def test_layernorm_chains_centring_and_scaling_into_one_tensor_scalar() -> None:
    fused = fuse_kernel(lowered("layernorm", "rows"))
    assert verdicts(fused) == [("square-reduce", "proved"), ("activation-scale-bias", "proved"),
                               ("tensor-scalar-chain", "proved"), ("column-scale-bias", "proved")]
    two_op = [op for op in fused.func.walk() if isinstance(op, nki.TensorScalarOp)
              and op.attrs().get("op1") == "multiply"]
    assert [(op.attrs()["op0"], len(op.operands)) for op in two_op] == [("subtract", 3)]


def test_a_matmul_transposes_its_stationary_tile_by_dma_on_the_way_in() -> None:
    fused = fuse_kernel(lowered("matmul", "blocks_k"))
    assert verdicts(fused) == [("dma-transpose", "proved")]
    assert "nc_transpose" not in instructions(fused.func)
    text = emit_nki(fused.func, TILES).text
    assert "nisa.nc_transpose(" not in text
    # one DMA from HBM, transposing: no copy of the tile before it (once in each of the
    # kernel's three grids: x and w each read once, w alone, neither: emit.py's streaming)
    assert text.count("nisa.dma_transpose(dst=") == 3
    assert all("src=in0[" in part.split("\n")[0] for part in text.split("nisa.dma_transpose(")[1:])


@pytest.mark.parametrize("rule", sorted(WHERE))
def test_each_fused_kernel_runs_on_the_simulator_and_matches_the_reference(
        rule: str, tmp_path: Path) -> None:
    name, kind = WHERE[rule]
    fused = fuse_kernel(lowered(name, kind))
    assert (rule, "proved") in verdicts(fused)
    func = program(name)
    rtol, atol = DTYPES["bf16"].tolerance
    for shape in SHAPES:
        sizes = {s: shape[s] for s in PROGRAMS[name].symbols}
        inputs = make_inputs(PROGRAMS[name], sizes)
        out = run(fused.func, tmp_path, inputs)
        (expected,) = run_function(func, inputs, sizes)
        (exact,) = run_function(func, inputs, sizes, exact=True)
        # a fused kernel keeps fp32 intermediates: within the tolerance of the rounded run or
        # of the exact one (select.py's rule; layernorm's centred rows cancel near zero)
        near = [np.allclose(out.astype(np.float64), want.astype(np.float64), rtol=rtol,
                            atol=atol) for want in (expected, exact)]
        assert any(near), f"{rule}: {name} {kind} {sizes}"


# ---- planted wrong fusions ----------------------------------------------------------------------
def _bias_after(ops: tuple[Operation, ...]) -> None:
    """exp(x) - max instead of exp(x - max): the tensor_scalar moved after the function."""
    act, ts = ops
    block = act.parent_block()
    assert block is not None
    early = nki.ActivationOp.make([ts.operands[0]], **act.attrs())  # type: ignore[attr-defined]
    block.insert_op_before(early, act)
    late = nki.TensorScalarOp.make([early.results[0], *ts.operands[1:]],
                                   **ts.attrs())  # type: ignore[attr-defined]
    block.insert_op_before(late, act)
    act.results[0].replace_all_uses_with(late.results[0])
    block.erase_op(act)
    block.erase_op(ts)


def _sum_before(ops: tuple[Operation, ...]) -> None:
    """The row sum of the activation's input, not of its output."""
    reduce, act = ops
    block = reduce.parent_block()
    assert block is not None
    wrong = nki.TensorReduceOp.make([act.operands[0]], **reduce.attrs())  # type: ignore[attr-defined]
    block.insert_op_before(wrong, reduce)
    reduce.results[0].replace_all_uses_with(wrong.results[0])
    block.erase_op(reduce)


def _swapped(ops: tuple[Operation, ...]) -> None:
    """(x op1 b) op0 a instead of (x op0 a) op1 b: the chain's ops in the wrong order."""
    block = ops[0].parent_block()
    assert block is not None
    RULE["tensor-scalar-chain"].rewrite(ops)
    (chained,) = [op for op in block.ops
                  if isinstance(op, nki.TensorScalarOp) and len(op.operands) == 3]
    a = chained.attrs()
    vectors = list(chained.operands[1:])
    swapped = nki.TensorScalarOp.make(
        [chained.operands[0], vectors[1], vectors[0]], op0=a["op1"], reverse0=False,
        op1=a["op0"], reverse1=False, buffer=a["buffer"], dtype=a["dtype"])
    block.insert_op_before(swapped, chained)
    chained.results[0].replace_all_uses_with(swapped.results[0])
    block.erase_op(chained)


def _transpose_dropped(ops: tuple[Operation, ...]) -> None:
    """The stationary tile used as loaded: a copy, no transpose (the square tiles of a matmul
    at BM = BK keep it well typed)."""
    copy, transpose = ops
    block = copy.parent_block()
    assert block is not None
    plain = nki.TensorCopyOp.make([transpose.operands[0]], buffer="sbuf")
    block.insert_op_before(plain, copy)
    copy.results[0].replace_all_uses_with(plain.results[0])
    block.erase_op(copy)
    block.erase_op(transpose)


def _times_the_column(ops: tuple[Operation, ...]) -> None:
    """x * s instead of x / s: the column itself where its reciprocal belongs."""
    (divide,) = ops
    block = divide.parent_block()
    assert block is not None
    wrong = nki.TensorScalarOp.make(list(divide.operands), **{
        **divide.attrs(), "op0": "multiply"})  # type: ignore[attr-defined]
    block.insert_op_before(wrong, divide)
    divide.results[0].replace_all_uses_with(wrong.results[0])
    block.erase_op(divide)


def _count_as_scale(ops: tuple[Operation, ...]) -> None:
    """rsqrt(sum * N + eps) instead of rsqrt(sum / N + eps): the count as the scale, not its
    reciprocal."""
    block = ops[0].parent_block()
    assert block is not None
    RULE["column-scale-bias"].rewrite(ops)
    (rsqrt,) = [op for op in block.ops if isinstance(op, nki.ActivationOp)
                and op.attrs()["func"] == "rsqrt"]
    reciprocal = rsqrt.operands[2].owner
    assert isinstance(reciprocal, nki.TensorScalarOp)
    rsqrt.operands[2] = reciprocal.operands[0]
    block.erase_op(reciprocal)


#: each planted rule, the right rule whose finder it uses, and the kernel it is tried on
PLANTED = {
    "times-the-column": ("divide-reciprocal", _times_the_column, ("softmax", "rows")),
    "count-as-scale": ("column-scale-bias", _count_as_scale, ("rmsnorm", "rows")),
    "bias-after-the-function": ("activation-scale-bias", _bias_after, ("softmax", "rows")),
    "sum-before-the-function": ("activation-reduce", _sum_before, ("softmax", "rows")),
    "two-op-order-swapped": ("tensor-scalar-chain", _swapped, ("layernorm", "rows")),
}


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_a_wrong_fusion_is_refuted_and_never_admitted(planted: str) -> None:
    rule, rewrite, (name, kind) = PLANTED[planted]
    before = lowered(name, kind)
    right = RULE[rule]
    # the layernorm chain only appears once its centred rows have one reader: the other
    # rules first
    others = [r for r in fuse.RULES if r is not right]
    start = fuse_kernel(before, rules=others).func if rule == "tensor-scalar-chain" \
        else before
    text = str(start)
    fused = fuse_kernel(start, rules=[Rule(planted, right.find, rewrite)])
    assert [a.verdict for a in fused.attempts] == ["refuted"]
    assert fused.attempts[0].detail  # the counterexample
    assert fused.func is start and str(fused.func) == text
    # the right rule on the same kernel is proved
    assert (right.name, "proved") in verdicts(fuse_kernel(start, rules=[right]))


def test_a_wrong_dma_transpose_is_refuted() -> None:
    # matmul's stationary tile [BM, BK]: without the transpose it is typed [BM, BK] where
    # [BK, BM] is read, so the planted rewrite is tried where BM and BK are one symbol
    before = lowered("matmul", "blocks_k")
    source = str(before).replace('"BN", "BK"]', '"BN"]').replace("BK", "BM")
    (square,) = (op for op in parse_mlir(source).ops if isinstance(op, FuncOp))
    right = RULE["dma-transpose"]
    fused = fuse_kernel(square, rules=[Rule("transpose-dropped", right.find,
                                            _transpose_dropped)])
    assert [a.verdict for a in fused.attempts] == ["refuted"]
    assert fused.func is square


def _gpsimd_reads_psum(ops: tuple[Operation, ...]) -> None:
    """The chained tensor_scalar put on GpSimd, which cannot touch PSUM: here its data is in
    SBUF, so make its dst PSUM (an NKI rule broken, whatever the values)."""
    second, first = ops
    a = dict(first.attrs())  # type: ignore[attr-defined]
    wrong = nki.TensorScalarOp.make(list(first.operands), **{**a, "engine": "gpsimd",
                                                             "buffer": "psum"})
    block = second.parent_block()
    assert block is not None
    block.insert_op_before(wrong, first)


def test_a_fusion_that_breaks_an_nki_rule_is_invalid_and_not_admitted() -> None:
    func = source("def f(x: bf16[M, N]):\n    return exp(x * 0.5 + 1.0)\n")
    before = lowered(func, "rows")
    right = RULE["tensor-scalar-chain"]
    fused = fuse_kernel(before, rules=[Rule("gpsimd-psum", right.find, _gpsimd_reads_psum)])
    ((verdict, detail),) = [(a.verdict, a.detail) for a in fused.attempts]
    assert verdict == "invalid" and "GpSimd" in detail
    assert fused.func is before and "invalid 1" in fused.summary()


def test_a_fusion_whose_proof_runs_out_of_budget_is_not_admitted() -> None:
    before = lowered("softmax", "rows")
    fused = fuse_kernel(before, budget=ProofBudget(1, 1, 5.0))
    assert fused.attempts and {a.verdict for a in fused.attempts} == {"unknown"}
    assert fused.func is before
    assert fused.summary().startswith("fused 0;")


def test_selection_takes_the_fused_kernels() -> None:
    lowered_kernel, fused = lower_and_fuse(tiled("softmax", "rows"))
    assert lowered_kernel.func is fused.func and len(lowered_kernel.proof_id) == 16
    chosen = first_kernel(program("softmax"), "trn2", {"M": 256, "N": 128}, lambda _: None)
    assert "nisa.activation_reduce(" in chosen.text



def source(text: str) -> FuncOp:
    (func,) = (op for op in parse_source(text, "program.py").ops if isinstance(op, FuncOp))
    return func


def check_runs(func: FuncOp, fused: FuncOp, tmp_path: Path) -> None:
    """`fused`, emitted, on the simulator against the interpreter of `func`, three shapes."""
    rtol, atol = DTYPES["bf16"].tolerance
    for shape in SHAPES:
        sizes = {"M": shape["M"], "N": shape["N"]}
        inputs = random_inputs(func, sizes)
        out = run(fused, tmp_path, inputs)
        wants = [run_function(func, inputs, sizes, exact=e)[0] for e in (False, True)]
        assert any(np.allclose(out.astype(np.float64), w.astype(np.float64), rtol=rtol,
                               atol=atol) for w in wants), sizes


def test_only_the_reduction_of_an_activation_used_and_its_scale_and_bias_constants(
        tmp_path: Path) -> None:
    # x * 0.5 + 1.0 chained into one tensor_scalar, absorbed by exp as scale 0.5 and a bias
    # column of 1.0; the row sum read from the activation, which nothing else reads
    func = source("def f(x: bf16[M, N]):\n"
                  "    return sum(exp(x * 0.5 + 1.0), axis=-1, keepdims=True)\n")
    fused = fuse_kernel(lowered(func, "rows"))
    assert verdicts(fused) == [("tensor-scalar-chain", "proved"),
                               ("activation-scale-bias", "proved"),
                               ("activation-reduce", "proved")]
    (reduce,) = [op for op in fused.func.walk() if isinstance(op, nki.ActivationReduceOp)]
    assert reduce.attrs().get("scale") == 0.5 and len(reduce.operands) == 2
    assert instructions(fused.func) == ["memset", "activation_reduce"]
    check_runs(func, fused.func, tmp_path)


def test_a_square_and_its_row_sum_both_used_are_one_instruction(tmp_path: Path) -> None:
    func = source("def f(x: bf16[M, N]):\n"
                  "    y = x * x\n"
                  "    return y / sum(y, axis=-1, keepdims=True)\n")
    fused = fuse_kernel(lowered(func, "rows"))
    assert verdicts(fused) == [("square-reduce", "proved"), ("divide-reciprocal", "proved")]
    assert instructions(fused.func) == ["activation", "activation_reduce", "tensor_scalar",
                                        "tensor_scalar"]
    text = emit_nki(fused.func, TILES).text
    assert text.count("nisa.activation_reduce(") == 2 and "nisa.activation(" not in text
    check_runs(func, fused.func, tmp_path)


def test_a_quotient_then_a_difference_reaches_the_activation_pair_as_scale_and_bias(
        tmp_path: Path) -> None:
    # attention's exp(s / c - m) with its row sum: the two steps chain into one tensor_scalar,
    # exp and its row sum become one pair of readers, the quotient a product by 1 / c; the
    # pair then absorbs it together (scale 1 / c, bias -m) and reads s itself (c kept away
    # from 0 so that the random inputs' exponentials are finite)
    func = source("def f(x: bf16[M, N], c: bf16[M, 1], m: bf16[M, 1]):\n"
                  "    e = exp(x / (c * c + 1.0) - m)\n"
                  "    return e / sum(e, axis=-1, keepdims=True)\n")
    fused = fuse_kernel(lowered(func, "rows"))
    assert ("activation-scale-bias", "proved") in verdicts(fused)
    assert not [a for a in fused.attempts if a.verdict != "proved"]
    pair = [op for op in fused.func.walk()
            if isinstance(op, (nki.ActivationOp, nki.ActivationReduceOp))]
    assert len(pair) == 2 and list(pair[0].operands) == list(pair[1].operands)
    data, bias, scale = pair[0].operands
    assert not isinstance(data.owner, nki.TensorScalarOp)  # x itself, not x / c - m
    maker = scale.owner
    assert isinstance(maker, nki.TensorScalarOp)
    steps = maker.attrs()  # 1 / (c * c + 1), its last step chained onto the sum's
    assert (steps.get("op1"), steps.get("reverse1")) == ("divide", True)
    text = emit_nki(fused.func, TILES).text
    assert "nisa.activation(" not in text and "op0=nl.divide, operand0=t" not in text
    check_runs(func, fused.func, tmp_path)
