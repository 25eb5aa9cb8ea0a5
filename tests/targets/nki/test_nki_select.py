"""Empirical selection of `--target nki` (`targets/nki/select.py`): every candidate emitted,
simulated, checked against the interpreter and priced; the cheapest right one wins, the
unfused chain and the split one (the last op apart) among them; a wrong candidate is
rejected; `--max-candidates` bounds the list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS, make_inputs
from axon.interpreter import run_function
from axon.targets.nki.command import NkiTargetError, emit_kernel
from axon.targets.nki.select import (
    MAX_TWINS,
    Candidate,
    KernelRunner,
    chain_module,
    check_close,
    choose_kernel,
    default_tolerance,
    dma_floor_s,
    first_kernel,
    random_inputs,
    single_module,
    split_functions,
)
from axon.tools.axon_main import main
from axon.tools.embed import parse_source


def program(name: str) -> FuncOp:
    """A suite program, parsed from its source."""
    (func,) = (op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp))
    return func


def test_the_cheapest_right_candidate_wins_over_both_chains(tmp_path: Path) -> None:
    # the kernels apart: the three of the unfused chain (16.8 us since the chain's matmuls take
    # their stationary tiles by DMA transpose, 14.0 since each block of a matmul's moving
    # operand is loaded once per column block) and, cheaper, the split chain's two (k.T @ v in
    # one kernel, 10.3 us); cheaper still, the fused `blocks_k` (7.0 us) since the emitter
    # computes k.T @ v once per column block (`grid_hoisting`), not once per row block of q
    func = program("linear_attention")
    sizes = {"M": 1024, "L": 512, "DK": 128, "DV": 128}
    said: list[str] = []
    chosen = choose_kernel(func, "trn2", sizes, said.append)
    right = [c for c in chosen.candidates if c.latency_s is not None]
    searched = [c for c in chosen.candidates if not c.ways]
    assert len(right) == len(chosen.candidates) and len(searched) == 8
    # the best printed the other ways that change it (blocks in dependence order), priced,
    # then the best of all two and four programs at a time (`pair.py`)
    other, *paired = (c for c in chosen.candidates if c.ways)
    assert other.ways == "dependence order" and other.label.startswith("blocks_k BM=128 ")
    assert [c.ways.rsplit(", ", 1)[-1] for c in paired] == [
        "two programs at a time", "four programs at a time"]
    # the program's tilings, the two chains, then the nu-graph variant's tilings
    assert [c.kind for c in searched[4:6]] == ["chain", "chain-split"]
    assert all(c.label.startswith("linear_attention_v1 ") for c in searched[6:])
    assert chosen.latency_s == min(c.latency_s for c in right if c.latency_s is not None)
    fused = [c for c in right if not c.kind.startswith("chain")]
    assert chosen.kind == "blocks_k" and chosen.chosen == "BM=128 BN=128 BK=128"
    # k.T @ v of each column block computed once, before the row blocks read it
    assert "moving=h0[0:DK, 0, 0:BN])" in chosen.module_text
    (chain,) = (c for c in chosen.candidates if c.kind == "chain")
    (split,) = (c for c in chosen.candidates if c.kind == "chain-split")
    assert chain.latency_s is not None and split.latency_s is not None
    assert chain.latency_s > split.latency_s > chosen.latency_s
    assert all(c.latency_s is not None and c.latency_s > chain.latency_s for c in fused
               if c.kind != "blocks_k")
    # each chain is one module: a kernel per part and a host function running them in order
    assert split.module is not None and split.module.text.count("@nki.jit") == 2
    assert "\ndef linear_attention(in0, in1, in2):" in split.module.text
    assert split.module is not None and [s.operands for s in split.module.steps] == \
        [(1, 2), (0, 3)]
    assert chain.module is not None and [s.operands for s in chain.module.steps] == \
        [(1,), (3, 2), (0, 4)]
    inputs = random_inputs(func, sizes)
    for c in (split, chain):
        assert c.module is not None
        out, latency = KernelRunner("trn2", tmp_path).run_module(c.module, inputs)
        (expected,) = run_function(func, inputs, sizes)
        assert latency == c.latency_s
        assert check_close(out, expected, default_tolerance(func)) == ""
    line = re.fullmatch(r"nki: @linear_attention: selection: space 27, pruned 19 by the bound "
                        r"\(--max-candidates 8\), checked 8 \(and the best printed 3 other "
                        r"ways\), rejected 0; chosen blocks_k BM=128 BN=128 BK=128, predicted "
                        r"7\.\d us \((\d+\.\d\d)x the DMA floor, (\d+\.\d) us\); \d+\.\d s",
                        said[-1])
    assert line, said[-1]
    # the floor: q, k, v and the result moved once each; the kernel no faster than it
    floor = dma_floor_s(func, sizes, "trn2")
    assert line.group(2) == f"{floor * 1e6:.1f}" and float(line.group(1)) >= 1.0
    assert line.group(1) == f"{chosen.latency_s / floor:.2f}"
    assert sum(1 for line in said if re.search(r" candidate \d+/8 ", line)) == 8


def test_a_fused_kernel_wins_where_the_cost_model_ranks_it_first() -> None:
    chosen = choose_kernel(program("matmul_transpose"), "trn2", {"M": 256, "N": 256, "K": 256},
                           lambda line: None)
    prices = {c.label: c.latency_s for c in chosen.candidates}
    assert "unfused chain" in prices and None not in prices.values()
    assert chosen.kind == "blocks_k" and chosen.latency_s == min(
        p for p in prices.values() if p is not None)
    assert prices["unfused chain"] is not None and prices["unfused chain"] > chosen.latency_s


def test_a_planted_wrong_candidate_is_rejected_though_it_is_cheaper(tmp_path: Path) -> None:
    sizes = {"M": 256, "N": 128}
    relu = first_kernel(program("relu"), "trn2", sizes, lambda line: None)
    planted = Candidate("planted relu", "planted",
                        module=single_module(relu.text, relu.name, 1))
    said: list[str] = []
    chosen = choose_kernel(program("softmax"), "trn2", sizes, said.append, extra=[planted])
    assert planted.rejected.startswith("wrong result: ") and planted.latency_s is None
    assert chosen.kind == "rows" and chosen.module_text != relu.text
    assert any(re.search(r"candidate \d+/\d+ planted relu: rejected: wrong result: \d+ of 32768 "
                         "elements off", line) for line in said)
    assert "wrong result: 1)" in said[-1]
    # it was the cheapest: relu's kernel costs less than softmax's
    inputs = random_inputs(program("softmax"), sizes)
    _, latency = KernelRunner("trn2", tmp_path).run(relu.text, inputs)
    assert latency < chosen.latency_s


@pytest.mark.parametrize("bound", [1, 2])
def test_the_bound_is_enforced(bound: int) -> None:
    said: list[str] = []
    chosen = choose_kernel(program("linear_attention"), "trn2",
                           {"M": 256, "L": 128, "DK": 128, "DV": 128}, said.append,
                           max_candidates=bound)
    # the bound is the search's; the best is then printed at most MAX_TWINS other ways
    assert len([c for c in chosen.candidates if not c.ways]) == bound
    assert len([c for c in chosen.candidates if c.ways]) <= MAX_TWINS
    kinds = [c.kind for c in chosen.candidates]
    # the chain keeps a slot once there are two
    assert ("chain" in kinds) == (bound > 1)
    assert f"pruned {chosen.space - bound} by the bound (--max-candidates {bound}), " \
           f"checked {bound}" in said[-1]


def test_the_command_line_takes_the_bound(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "kernel.py"
    main(["matmul_transpose", "--target", "nki", "--sizes", "M=128,N=128,K=128",
          "--max-candidates", "2", "--no-cache", "-o", str(out)])
    err = capsys.readouterr().err
    assert "checked 2" in err and "candidate 2/2 unfused chain" in err
    assert "@nki.jit" in out.read_text()
    module = parse_source(PROGRAMS["relu"].source, "relu.py")
    with pytest.raises(NkiTargetError, match="--max-candidates 0: expected at least 1"):
        emit_kernel(module, "relu.py", "trn2", "", lambda line: None, max_candidates=0)


def test_the_split_chain_fuses_every_op_but_the_last() -> None:
    func = program("rmsnorm_matmul")
    parts = split_functions(func)
    assert parts is not None and len(parts) == 2
    head, last = parts
    # the head: x and g in, the normalized rows out (all six elementwise and reduction ops)
    assert [type(op).__name__ for op in head.func.body.block.ops if op.name != "func.return"
            and op.name != "ax.constant"] == ["MulOp", "MeanOp", "AddOp", "RsqrtOp", "MulOp",
                                              "MulOp"]
    assert [a.index for a in head.operands] == [0, 1]  # type: ignore[attr-defined]
    assert last.op.name == "ax.matmul" and last.operands[1] is func.body.block.args[2]
    # a program of two ops: no split (its unfused chain is that)
    two = program("matmul_transpose")
    assert split_functions(two) is None


def test_a_matrix_vector_product_lowers_on_tensor_e(tmp_path: Path) -> None:
    # `x @ v` of a [M, K] matrix by a [K] vector: TensorE's stationary x.T, the vector as the
    # moving column, accumulated over K blocks in PSUM; K = 300 is past the 128 partitions a
    # whole row would put on them, so the K-looped tiling is the one that lowers, at the
    # fewest trips (BK = 128, not the BK = 2 that ties with it on traffic)
    (func,) = (op for op in parse_source(
        "def mv(x: bf16[M, K], v: bf16[K]):\n    return x @ v\n", "mv.py").ops
        if isinstance(op, FuncOp))
    sizes = {"M": 200, "K": 300}
    first = first_kernel(func, "trn2", sizes, lambda line: None)
    assert first.kind == "rows_k" and first.params == {"BM": 128, "BK": 128}
    # x's tile transposed on its way in (the fusion's DMA transpose), the vector read one
    # element a partition, the products accumulated by the matmul itself
    assert "nisa.dma_transpose(" in first.text and "nisa.nc_matmul(" in first.text
    assert "nisa.tensor_tensor(" not in first.text
    inputs = random_inputs(func, sizes)
    out, latency = KernelRunner("trn2", tmp_path).run(first.text, inputs)
    (expected,) = run_function(func, inputs, sizes)
    assert out.shape == (200,) and latency > 0
    assert check_close(out, expected, default_tolerance(func)) == ""


def test_a_variants_unfused_chain_reads_the_weight_once() -> None:
    # gemm_sum_scale's nu-graph variant `x @ sum(w, axis=1)`: unfused, w is read once by its
    # own kernel of row sums (every fused tiling reads it once per row block), and that
    # chain wins; it is checked against the program itself, like every candidate
    # (seven row blocks: a fused tiling's grid runs one program at a time, reading w seven
    # times; at two row blocks, printed two programs at a time, it reads w once and wins)
    p = PROGRAMS["gemm_sum_scale"]
    sizes = {"M": 896, "K": 1024, "N": 1024}
    chosen = choose_kernel(program("gemm_sum_scale"), "trn2", sizes, lambda line: None,
                           programs=4, inputs=make_inputs(p, sizes),
                           tolerance=p.tolerance_at(sizes))
    assert chosen.kind == "chain" and chosen.chosen.startswith(
        "unfused, of the nu-graph variant gemm_sum_scale_")
    own = [c.latency_s for c in chosen.candidates
           if c.program is None and c.latency_s is not None]
    assert own and chosen.latency_s < min(own)
    assert "\ndef gemm_sum_scale(in0, in1, in2):" in chosen.module_text
    # each variant's chain as written; right on these inputs, so none is widened
    variant_chains = [c for c in chosen.candidates if c.program is not None]
    assert len(variant_chains) == 3 and all(c.kind == "chain" for c in variant_chains)
    assert not any(c.widened for c in variant_chains)


def test_rope_holds_a_block_of_heads_a_program(tmp_path: Path) -> None:
    # rope's result [T, H, 2*D2] has no size last (its pairs): the column blocks split the
    # heads instead (tiling/kernels.py `_middle_dims`), a program holds [BM, BN, 2*D2] on all
    # 128 partitions, and its DMAs overlap the other programs' compute: 30.4 us as one
    # program of all heads, 19.7 at eight heads a program. The variant's tilings do not lower
    # (a rank-3 generic form); they are reported, and the bound counts the candidates that run
    func = program("rope")
    sizes = {"T": 128, "H": 32, "D2": 64}
    chosen = choose_kernel(func, "trn2", sizes, lambda line: None)
    assert chosen.kind == "blocks" and chosen.params["BM"] == 128 and chosen.params["BN"] < 32
    ran = [c for c in chosen.candidates if c.latency_s is not None and not c.ways]
    assert len(ran) == 8
    assert all(c.rejected.startswith("does not lower: ") for c in chosen.candidates
               if c.latency_s is None)
    (rows,) = (c for c in ran if c.kind == "rows" and c.params["BM"] == 128)
    assert rows.latency_s is not None and chosen.latency_s < 0.75 * rows.latency_s
    other = {"T": 5, "H": 3, "D2": 4}
    inputs = random_inputs(func, other)
    out, _ = KernelRunner("trn2", tmp_path).run(chosen.module_text, inputs, "rope")
    (want,) = run_function(func, inputs, other, exact=True)
    assert abs(out.astype("float64") - want).max() < 3e-2


def test_a_chains_one_op_kernels_are_answered_once_per_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a selection builds the same chain's one-op kernels again and again (the program's chain,
    # a variant's, the prologue's, the split's): each is tiled, lowered and proved once; a
    # refusal is answered again too, and past the bound the least recently asked is forgotten
    from collections import OrderedDict

    from axon.targets.nki import select

    asked: list[str] = []
    real = select.first_kernel

    def counted(func: FuncOp, *args: object, **kwargs: object) -> object:
        asked.append(func.sym_name.data)
        if func.sym_name.data.endswith("_exp"):
            raise select.NoKernel("planted")
        return real(func, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(select, "first_kernel", counted)
    monkeypatch.setattr(select, "_first_kernels", OrderedDict())
    func = parse_source("def f(x: f32[M, N]):\n    return relu(x) * x\n", "f.py").ops.first
    assert isinstance(func, FuncOp)
    sizes = {"M": 130, "N": 64}
    first = chain_module(func, "trn2", sizes)
    assert chain_module(func, "trn2", sizes).text == first.text
    assert asked == ["f_0_relu", "f_1_mul"]
    chain_module(func, "trn2", {"M": 131, "N": 64})  # other sizes: asked again
    assert len(asked) == 4
    refused = parse_source("def g(x: f32[M, N]):\n    return exp(x) * x\n", "g.py").ops.first
    assert isinstance(refused, FuncOp)
    for _ in range(2):
        with pytest.raises(select.NoKernel, match="'ax.exp' does not lower: planted"):
            chain_module(refused, "trn2", sizes)
    assert asked[4:] == ["g_0_exp"]
    monkeypatch.setattr(select, "FIRST_KERNELS_KEPT", 1)
    for _ in range(2):
        chain_module(func, "trn2", {"M": 132, "N": 64})
    assert asked[5:] == ["f_0_relu", "f_1_mul"] * 2
