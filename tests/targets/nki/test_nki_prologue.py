"""The prologue chain (`select.prologue_functions`): a matmul's right operand computed from the
inputs without a contraction (qknorm_gqa's `rmsnorm(k, g_k)` under `q @ k.T`) in a kernel of its
own, once, then the rest fused with it as a parameter; a fused kernel recomputes it in every
program of its grid. The parts, composed, are proved equal to the program (a planted wrong
part is refuted), and the chain runs on the simulator like the reference interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp
from xdsl.ir import BlockArgument

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import MatmulOp
from axon.interpreter import run_function
from axon.targets.nki.select import (
    Candidate,
    KernelRunner,
    OpKernel,
    _rest_selected,
    chain_module,
    check_close,
    default_tolerance,
    prologue_functions,
    random_inputs,
)
from axon.targets.nki.widen import chain_proof
from axon.tools.embed import parse_source


def source(text: str, name: str = "program.py") -> FuncOp:
    (func,) = (op for op in parse_source(text, name).ops if isinstance(op, FuncOp))
    return func


def program(name: str) -> FuncOp:
    return source(PROGRAMS[name].source, f"{name}.py")


def test_the_keys_norm_is_computed_apart_and_the_rest_reads_it() -> None:
    func = program("qknorm_gqa")
    parts = prologue_functions(func)
    assert parts is not None
    prologue, rest = parts
    # the prologue reads k and g_k and returns the normalized keys
    assert [a.name_hint for a in prologue.operands] == ["k", "g_k"]
    (out,) = prologue.func.function_type.outputs.data
    assert str(out) == "bf16[B, HKV, L, D]"
    # the rest reads q, v, g_q and the normalized keys, which its first matmul reads (through
    # the kv heads' views) where the program read its own norm
    assert [getattr(a, "name_hint", None) for a in rest.operands[:3]] == ["q", "v", "g_q"]
    assert rest.operands[3] is prologue.op.results[0]
    kn = rest.func.body.block.args[3]
    first = next(op for op in rest.func.body.block.ops if isinstance(op, MatmulOp))
    value = first.operands[1]
    while not isinstance(value, BlockArgument):
        value = value.owner.operands[0]  # type: ignore[union-attr]
    assert value is kn
    assert chain_proof(func, parts) is not None


def test_no_prologue_where_the_right_operands_are_inputs() -> None:
    # gqa's keys and values, rmsnorm_matmul's and mlp's weights are read as given
    for name in ("gqa", "rmsnorm_matmul", "matmul", "mlp", "softmax_matmul"):
        assert prologue_functions(program(name)) is None, name


def test_a_planted_wrong_prologue_is_refuted() -> None:
    # the keys normalized with the queries' gain g_q in place of g_k
    func = program("qknorm_gqa")
    parts = prologue_functions(func)
    assert parts is not None
    prologue, rest = parts
    g_q = next(a for a in func.body.block.args if a.name_hint == "g_q")
    planted = [OpKernel(prologue.op, prologue.func, (prologue.operands[0], g_q)), rest]
    assert chain_proof(func, planted) is None


def test_the_prologue_chain_runs_like_the_interpreter(tmp_path: Path) -> None:
    func = program("qknorm_gqa")
    parts = prologue_functions(func)
    assert parts is not None
    # (the rest, attention with the queries' norm, lowers fused where the whole program's
    # fused tilings do: key blocks that divide L; one kv head, remainders of the query
    # blocks: the chain of both operands apart below)
    for number, sizes in enumerate([{"B": 1, "HKV": 2, "G": 2, "S": 256, "L": 256, "D": 128}]):
        module = chain_module(func, "trn2", sizes, parts)
        assert module.text.count("@nki.jit") == 2 and len(module.steps) == 2
        inputs = random_inputs(func, sizes, seed=number)
        out, latency = KernelRunner("trn2", tmp_path).run_module(module, inputs)
        assert latency > 0
        # right as the selection judges: near the interpreter's rounded run or its exact one
        offs = [check_close(out, run_function(func, inputs, sizes, exact=exact)[0],
                            default_tolerance(func)) for exact in (False, True)]
        assert "" in offs, (sizes, offs)


def test_the_rest_is_selected_as_a_program_of_its_own(tmp_path: Path) -> None:
    # the rest (attention with the queries' norm) through the whole selection, every way it
    # is printed: one kernel, cheaper than its `first_kernel`, and the chain still right
    func = program("qknorm_gqa")
    parts = prologue_functions(func)
    assert parts is not None
    sizes = {"B": 1, "HKV": 1, "G": 2, "S": 256, "L": 256, "D": 128}
    c = Candidate("prologue chain", "chain-prologue", tiling=-3)
    chosen = _rest_selected(c, parts, "trn2", sizes)
    assert chosen is not None and list(chosen) == [1] and len(chosen[1].steps) == 1
    assert c.rest.startswith("batched_rows_k ") and c.label.endswith(f"(the rest: {c.rest})")
    # its emission and checks are the outer selection's selection time, not its symbolic phase
    assert c.rest_emit_s > 0
    inputs = random_inputs(func, sizes)
    runner = KernelRunner("trn2", tmp_path)
    first, first_s = runner.run_module(chain_module(func, "trn2", sizes, parts), inputs)
    out, out_s = runner.run_module(chain_module(func, "trn2", sizes, parts, chosen), inputs)
    assert out_s < first_s
    offs = [check_close(out, run_function(func, inputs, sizes, exact=exact)[0],
                        default_tolerance(func)) for exact in (False, True)]
    assert "" in offs, offs


def test_the_rests_selection_offers_no_prologue_of_its_own(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    # selections nest one deep at most: the rest is selected without a prologue chain
    from axon.targets.nki import select

    asked: list[dict[str, object]] = []

    def recorded(*args: object, **kwargs: object) -> None:
        asked.append(kwargs)
        raise select.NoKernel("recorded")

    monkeypatch.setattr(select, "choose_kernel", recorded)
    func = program("qknorm_gqa")
    parts = prologue_functions(func)
    c = Candidate("prologue chain", "chain-prologue", tiling=-3)
    sizes = {"B": 1, "HKV": 1, "G": 2, "S": 256, "L": 256, "D": 128}
    assert _rest_selected(c, parts, "trn2", sizes) is None and c.rest == ""
    assert [a["prologue"] for a in asked] == [False]


# ---- both operands apart (`prologue_functions(func, both=True)`) ----


def test_both_operands_apart_the_rest_reads_the_normalized_queries_and_keys() -> None:
    # qknorm_gqa's keys' norm first, then the queries', then the rest (gqa on both)
    func = program("qknorm_gqa")
    parts = prologue_functions(func, both=True)
    assert parts is not None
    keys, queries, rest = parts
    assert [a.name_hint for a in keys.operands] == ["k", "g_k"]
    assert [a.name_hint for a in queries.operands] == ["q", "g_q"]
    (out,) = queries.func.function_type.outputs.data
    assert str(out) == "bf16[B, G*HKV, S, D]"
    # the rest reads v and the two normalized values, nothing of the norms
    assert rest.operands[0].name_hint == "v"  # type: ignore[union-attr]
    assert rest.operands[1:] == (keys.op.results[0], queries.op.results[0])
    kn, qn = rest.func.body.block.args[1:]
    first = next(op for op in rest.func.body.block.ops if isinstance(op, MatmulOp))
    assert first.operands[0] is qn
    value = first.operands[1]
    while not isinstance(value, BlockArgument):
        value = value.owner.operands[0]  # type: ignore[union-attr]
    assert value is kn
    assert not any(op.name == "ax.rsqrt" for op in rest.func.walk())
    assert chain_proof(func, parts) is not None


def test_both_operands_need_a_left_one_computed_apart() -> None:
    # the keys' norm qualifies, the queries are an input: the right one alone, not both
    func = source("""def f(q: bf16[S, D], k: bf16[L, D], g_k: bf16[D]):
    kn = rmsnorm(k, g_k)
    return q @ transpose(kn, (1, 0))
""")
    parts = prologue_functions(func)
    assert parts is not None and len(parts) == 2
    assert prologue_functions(func, both=True) is None
    # and where the right operand is an input, neither
    assert prologue_functions(program("rmsnorm_matmul"), both=True) is None


def test_a_planted_wrong_left_prologue_is_refuted() -> None:
    # the queries normalized with the keys' gain g_k in place of g_q
    func = program("qknorm_gqa")
    parts = prologue_functions(func, both=True)
    assert parts is not None
    keys, queries, rest = parts
    g_k = next(a for a in func.body.block.args if a.name_hint == "g_k")
    planted = [keys, OpKernel(queries.op, queries.func, (queries.operands[0], g_k)), rest]
    assert chain_proof(func, planted) is None


def test_the_chain_of_both_operands_apart_runs_like_the_interpreter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the selection's candidate (`tiling=-4`): its parts proved, its module the two norms'
    # kernels and the rest's (here its `first_kernel`: the rest's own selection is
    # test_the_rest_is_selected_as_a_program_of_its_own's)
    from axon.targets.nki import select

    monkeypatch.setattr(select, "_rest_selected", lambda *args: None)
    func = program("qknorm_gqa")
    sizes = {"B": 1, "HKV": 1, "G": 2, "S": 130, "L": 128, "D": 64}
    c = Candidate("prologue chain, both operands", "chain-operands", tiling=-4)
    select._emit(c, func, "trn2", sizes, (), {})
    assert not c.rejected and c.chain_proof and c.module is not None
    module = c.module
    assert len(module.steps) == 3 and module.text.count("@nki.jit") == 3
    inputs = random_inputs(func, sizes, seed=3)
    out, latency = KernelRunner("trn2", tmp_path).run_module(module, inputs)
    assert latency > 0
    offs = [check_close(out, run_function(func, inputs, sizes, exact=exact)[0],
                        default_tolerance(func)) for exact in (False, True)]
    assert "" in offs, offs
