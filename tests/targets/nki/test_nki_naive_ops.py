"""gqa's naive chain, one kernel per op: the one-op functions whose sizes their tensors do not
all give. `reshape(broadcast_to(k))` names the broadcast's `G` in its result alone, so its
kernel is printed specialized at the size it is chosen at; `scores / sqrt(D)` reads a value of
`D`, which its `[B, HKV*G, S, L]` scores lack, so the value is a rank-0 parameter the caller
computes. Each kernel is run on the simulator against the reference interpreter."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects.ax import TensorType
from axon.interpreter import run_function
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.fuse import lower_and_fuse
from axon.targets.nki.lower import Refused
from axon.targets.nki.select import (
    KernelRunner,
    OpKernel,
    chain_module,
    check_close,
    default_tolerance,
    first_kernel,
    op_functions,
    random_inputs,
    sizes_value,
    symbols,
    tiled_programs,
)
from axon.targets.profiles import load_profile
from axon.tiling.search import tile_program
from axon.tools.embed import parse_source

SIZES = {"B": 1, "HKV": 2, "G": 2, "S": 5, "L": 3, "D": 4}


def gqa() -> FuncOp:
    (func,) = (op for op in parse_source(PROGRAMS["gqa"].source, "gqa.py").ops
               if isinstance(op, FuncOp))
    return func


def one_op(name: str) -> OpKernel:
    (k,) = (k for k in op_functions(gqa()) if k.func.sym_name.data == name)
    return k


def own(k: OpKernel, sizes: dict[str, int]) -> dict[str, int]:
    return {s: v for s, v in sizes.items() if s in symbols(k.func)}


def inputs_of(k: OpKernel, sizes: dict[str, int]) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    args = []
    for a in k.func.body.block.args:
        t = a.type
        assert isinstance(t, TensorType)
        args.append(rng.standard_normal([int(d.evaluate(sizes)) for d in t.shape])
                    .astype(ml_dtypes.bfloat16))
    return args


def test_the_broadcast_kernel_is_specialized_at_the_size_no_input_gives(
        tmp_path: Path) -> None:
    k = one_op("gqa_2_reshape")  # reshape(broadcast_to(reshape(k)), [B, HKV*G, L, D])
    (arg,) = k.func.function_type.inputs.data
    assert isinstance(arg, TensorType) and "G" not in {s for d in arg.shape
                                                        for s in d.symbols()}
    sizes = own(k, SIZES)
    chosen = first_kernel(k.func, "trn2", sizes, lambda line: None)
    assert "    G = 2  # no input gives G: specialized at it" in chosen.text
    runner = KernelRunner("trn2", tmp_path)
    args = inputs_of(k, sizes)
    out, _ = runner.run(chosen.text, args, chosen.name)
    (expected,) = run_function(k.func, args, sizes)
    assert out.shape == (1, 4, 3, 4)
    np.testing.assert_array_equal(out.astype(np.float32), expected.astype(np.float32))


def test_without_the_size_the_emitter_refuses_the_kernel() -> None:
    k = one_op("gqa_2_reshape")
    sizes = own(k, SIZES)
    # the function's own tilings do not take the reshape's tiles; the nu-graph's read
    # `k[b, h floordiv G, ...]` does
    (variant, *_) = tiled_programs(k.func, "trn2", sizes, 4)[1:]
    result = tile_program([variant], load_profile("trn2"), sizes)
    proposal = next(p for p in result.proved if p.candidates and p.kernel is not None)
    assert proposal.kernel is not None
    lowered, _ = lower_and_fuse(proposal.kernel)
    params = dict(proposal.candidates[0].params)
    with pytest.raises(Refused, match="no input of the kernel gives the size G of its results"):
        emit_nki(lowered.func, params)
    assert "G = 2" in emit_nki(lowered.func, params, sizes).text


def test_a_value_of_sizes_the_scores_lack_is_a_parameter(tmp_path: Path) -> None:
    k = one_op("gqa_10_div")  # scores / sqrt(D)
    scores, root = k.operands
    assert isinstance(root.type, TensorType) and root.type.rank == 0
    assert len(k.func.function_type.inputs.data) == 2
    value = sizes_value(root, SIZES)
    assert value.dtype == ml_dtypes.bfloat16 and float(value) == 2.0  # sqrt(4)
    sizes = own(k, SIZES)
    chosen = first_kernel(k.func, "trn2", sizes, lambda line: None)
    args = [inputs_of(k, SIZES)[0], value]
    out, _ = KernelRunner("trn2", tmp_path).run(chosen.text, args, chosen.name)
    (expected,) = run_function(k.func, args, sizes)
    np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64),
                               rtol=1e-2, atol=1e-2)
    # the unfused chain computes it at the sizes it is specialized at, and runs right
    func = gqa()
    module = chain_module(func, "trn2", SIZES)
    assert [float(c) for c in module.constants] == [2.0]
    assert "= np.asarray(2.0, dtype=nl.bfloat16)  # a value of sizes, at D=4" in \
        module.text
    inputs = random_inputs(func, SIZES)
    out, _ = KernelRunner("trn2", tmp_path).run_module(module, inputs, "gqa_chain")
    (expected,) = run_function(func, inputs, SIZES)
    assert check_close(out, expected, default_tolerance(func)) == ""


def test_a_value_of_sizes_the_tensors_give_is_cloned_in() -> None:
    # x / sqrt(D) with D the row size x gives: cloned in, no parameter
    (func,) = (op for op in parse_source(
        "def f(x: bf16[M, D]):\n    return x / sqrt(D)\n", "f.py").ops
        if isinstance(op, FuncOp))
    (k,) = op_functions(func)
    assert len(k.operands) == 1 and len(k.func.function_type.inputs.data) == 1
