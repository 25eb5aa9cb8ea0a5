"""A kernel that breaks a rule gets a clear error at its own line, never a silent wrong answer:
writing past a buffer, 129 partitions, SBUF and PSUM overflow, matmul limits, misaligned
partitions, undefined PSUM accumulation, and the kernel's own exceptions."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from axon.targets.nki.simulator import (
    HardwareLimits,
    KernelError,
    SimulationError,
    SimulationWarning,
    simulate,
)
from axon.targets.nki.simulator import api as nki
from axon.targets.nki.simulator import isa as nisa
from axon.targets.nki.simulator import language as nl


def failure(body: Callable[..., Any], *inputs: Any, limits: HardwareLimits,
            grid: tuple[int, ...] | None = None) -> KernelError:
    """The KernelError `body` run as a kernel raises; its line is checked to be the body's line
    holding the `# fails here` marker."""
    with pytest.raises(KernelError) as info:
        simulate(nki.jit(body), *inputs, limits=limits, grid=grid)
    err = info.value
    lines, first = inspect.getsourcelines(body)
    marked = [first + n for n, text in enumerate(lines) if "# fails here" in text]
    assert err.file == __file__
    assert [err.line] == marked, str(err)
    assert str(err).startswith(f"{__file__}:{err.line}: error: ")
    return err


X = np.zeros((128, 64), dtype=np.float32)


def test_a_dma_past_the_end_of_an_hbm_tensor(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x)
        nisa.dma_copy(dst=out[64:192], src=tile)  # fails here
        return out

    err = failure(body, X, limits=trn2)
    assert "slice 64:192 is out of bounds for dim 0 (size 128)" in err.message


def test_an_instruction_past_the_end_of_a_tile(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=tile[:, 32:80], value=0.0)  # fails here
        return x

    err = failure(body, X, limits=trn2)
    assert "slice 32:80 is out of bounds for dim 1 (size 64)" in err.message


def test_129_partitions(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        nl.ndarray((129, 64), dtype=nl.float32, buffer=nl.sbuf)  # fails here
        return x

    err = failure(body, X, limits=trn2)
    assert err.message == ("nl.ndarray: a SBUF tile of shape (129, 64) spans 129 partitions; "
                           "limit partitions=128 (trn2)")


def test_psum_overflow_by_a_ninth_bank(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        banks = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(8)]
        extra = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.psum)  # fails here
        return banks, extra

    err = failure(body, X, limits=trn2)
    assert err.message.startswith("nl.ndarray: PSUM overflow")
    assert "8 live tiles" in err.message and "psum_banks=8" in err.message


def test_tiles_no_longer_held_are_freed(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        for _ in range(100):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.memset(dst=acc, value=0.0)
        return x

    out = simulate(nki.jit(body), X, limits=trn2)
    assert out.shape == X.shape


def test_sbuf_overflow(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        big = nl.ndarray((128, 40000), dtype=nl.float32, buffer=nl.sbuf)
        more = nl.ndarray((128, 20000), dtype=nl.float32, buffer=nl.sbuf)  # fails here
        return big, more

    err = failure(body, X, limits=trn2)
    assert re.search(r"SBUF overflow: a tile of 80000 bytes per partition does not fit beside "
                     r"\d+ live tiles \(160\d+ bytes per partition\); limit "
                     r"sbuf_partition_bytes=212984 bytes \(trn2\)", err.message), err.message


def test_matmul_moving_free_size_over_512(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        a = nl.zeros((128, 128), dtype=nl.bfloat16)
        b = nl.zeros((128, 513), dtype=nl.bfloat16)
        acc = nl.ndarray((128, 513), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=a, moving=b)  # fails here
        return x

    err = failure(body, X, limits=trn2)
    assert err.message == ("nisa.nc_matmul: moving free size 513; limit "
                           "matmul_moving_free_max=512 (trn2)")


def test_matmul_result_across_a_psum_bank_boundary(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        a = nl.zeros((128, 128), dtype=nl.bfloat16)
        b = nl.zeros((128, 512), dtype=nl.bfloat16)
        acc = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc[:, 256:768], stationary=a, moving=b)  # fails here
        return x

    err = failure(body, X, limits=trn2)
    assert "across a bank boundary" in err.message and "psum_bank_bytes=2048" in err.message


def test_accumulating_onto_psum_no_matmul_wrote(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        a = nl.zeros((128, 128), dtype=nl.bfloat16)
        acc = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=a, moving=a, accumulate=True)  # fails here
        return x

    err = failure(body, X, limits=trn2)
    assert "accumulate=True onto PSUM elements no matmul has written" in err.message


def test_misaligned_partition_start(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=tile[16:48], value=1.0)  # fails here
        return x

    err = failure(body, X, limits=trn2)
    assert err.message == ("nisa.memset: dst covers 32 partitions starting at partition 16; an "
                           "engine access of 32 partitions must start at 0, 32, 64, 96")


def test_gpsimd_cannot_touch_psum(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        acc = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.memset(dst=acc, value=0.0, engine=nisa.engine.gpsimd)  # fails here
        return x

    err = failure(body, X, limits=trn2)
    assert "dst is a psum tensor (128, 64) float32; expected it in SBUF" in err.message


def test_dma_element_counts_must_match(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x)  # fails here
        return x

    err = failure(body, X, limits=trn2)
    assert "has 8192 elements but dst sbuf tensor (128, 32) float32 4096" in err.message


def test_the_kernels_own_exception(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        rows = x.shape[0]
        return rows // (rows - 128)  # fails here

    err = failure(body, X, limits=trn2)
    assert err.message == "ZeroDivisionError: integer division or modulo by zero"
    assert isinstance(err.__cause__, ZeroDivisionError)


def test_an_output_must_be_in_hbm(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        return tile

    with pytest.raises(KernelError, match="outputs must be nl.shared_hbm tensors"):
        simulate(nki.jit(body), X, limits=trn2)


def test_fresh_tiles_hold_nan_or_four(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        floats = nl.ndarray((128, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        ints = nl.ndarray((128, 8), dtype=nl.int32, buffer=nl.sbuf)
        out_f = nl.ndarray((128, 8), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        out_i = nl.ndarray((128, 8), dtype=nl.int32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out_f, src=floats)
        nisa.dma_copy(dst=out_i, src=ints)
        return out_f, out_i

    with pytest.warns(SimulationWarning) as caught:
        out_f, out_i = simulate(nki.jit(body), X, limits=trn2)
    assert np.isnan(out_f.astype(np.float32)).all() and (out_i == 4).all()
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert "warning: nisa.dma_copy: src reads 1024 of 1024 elements of a sbuf tensor (128, 8) " \
           "bfloat16 that nothing wrote" in messages[0]
    assert "src reads 1024 of 1024 elements of a sbuf tensor (128, 8) int32" in messages[1]


def test_an_output_partly_never_written(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x)
        nisa.dma_copy(dst=out[0:100], src=tile[0:100])
        return out

    with pytest.warns(SimulationWarning, match="kernel output 0 has 1792 of 8192 elements the "
                                               "kernel never wrote"):
        out = simulate(nki.jit(body), X, limits=trn2)
    assert np.isnan(out[100:]).all() and (out[:100] == 0).all()


def test_a_loop_warns_once_per_line(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        for _ in range(5):
            tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=out, src=tile)
        return out

    with pytest.warns(SimulationWarning) as caught:
        simulate(nki.jit(body), X, limits=trn2)
    assert len(caught) == 1


def test_an_input_of_a_dtype_nki_lacks(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(SimulationError, match="input 0: dtype float64 is not an NKI dtype"):
        simulate(nki.jit(body), np.zeros((4, 4)), limits=trn2)


def test_calling_a_kernel_directly_says_how_to_run_it() -> None:
    kernel = nki.jit(lambda x: x)
    with pytest.raises(SimulationError, match=r"runs through the simulator: simulate\("):
        kernel(X)


def test_activation_inputs_outside_scalar_engine_range_are_flagged(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x)
        res = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=res, op=nl.rsqrt, data=tile)  # warns here
        return store_hbm(res)

    x = np.ones((128, 64), dtype=np.float32)
    x[3, :5] = 0.0
    with pytest.warns(SimulationWarning) as caught:
        out = simulate(nki.jit(body), x, limits=trn2)
    lines, first = inspect.getsourcelines(body)
    line = first + next(n for n, text in enumerate(lines) if "# warns here" in text)
    assert [str(w.message) for w in caught] == [
        f"{__file__}:{line}: warning: nisa.activation: 5 of 8192 inputs of rsqrt lie outside "
        f"x in [6.46235e-27, 1.58456e+29], where ScalarE's approximation is invalid (the "
        f"simulator computes exact values)"]
    assert np.isinf(out[3, :5]).all() and (out[3, 5:] == 1.0).all()


def test_activation_inputs_in_range_are_not_flagged(trn2: HardwareLimits,
                                                    recwarn: pytest.WarningsRecorder) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x)
        res = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=res, op=nl.reciprocal, data=tile, scale=-1.0)
        return store_hbm(res)

    out = simulate(nki.jit(body), np.full((128, 64), 4.0, dtype=np.float32), limits=trn2)
    assert (out == -0.25).all()
    assert not [w for w in recwarn if issubclass(w.category, SimulationWarning)]


def store_hbm(tile: Any) -> Any:
    """A shared_hbm output holding a tile."""
    out = nl.ndarray(tile.shape, dtype=tile.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=tile)
    return out


def test_dma_cannot_read_psum(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.psum)
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=acc)  # fails here
        return out

    err = failure(body, X, limits=trn2)
    assert err.message == ("nisa.dma_copy: src is a psum tensor (128, 64) float32; expected it "
                           "in HBM or SBUF")


def test_matmul_operands_fp32_on_both_sides_or_neither(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        a = nl.zeros((128, 128), dtype=nl.float32)
        b = nl.zeros((128, 128), dtype=nl.bfloat16)
        acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=a, moving=b)  # fails here
        return x

    err = failure(body, X, limits=trn2)
    assert "if one is fp32 both must be" in err.message


def test_reducing_the_partition_axis(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.zeros((128, 64), dtype=nl.float32)
        res = nl.ndarray((1, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=res, op=nl.add, data=tile, axis=0)  # fails here
        return x

    err = failure(body, X, limits=trn2)
    assert "never the partition axis 0" in err.message


def test_matmul_of_integers(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        a = nl.zeros((128, 128), dtype=nl.int32)
        acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=a, moving=a)  # fails here
        return x

    err = failure(body, X, limits=trn2)
    assert err.message.startswith("nisa.nc_matmul: stationary is int32; TensorE multiplies "
                                  "float8_e4m3, ")


def test_capacity_follows_the_profile(trn2: HardwareLimits) -> None:
    from axon.targets.nki.simulator_limits import load_limits

    def body(x):  # type: ignore[no-untyped-def]
        # 50,000 fp32 = 200,000 bytes a partition: within Trn2's 212,984, past Trn1's 196,608
        big = nl.ndarray((128, 50000), dtype=nl.float32, buffer=nl.sbuf)  # fails here
        return big

    with pytest.raises(KernelError, match="outputs must be nl.shared_hbm"):
        simulate(nki.jit(body), X, limits=trn2)
    err = failure(body, X, limits=load_limits("trn1"))
    assert err.message.endswith("limit sbuf_partition_bytes=196608 bytes (trn1)")


def test_programs_of_a_grid_must_agree_on_shared_outputs(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        rows = 4 + nl.program_id(0)
        out = nl.ndarray((rows, 8), dtype=nl.float32, buffer=nl.shared_hbm)  # fails here
        return out

    err = failure(body, X, limits=trn2, grid=(2,))
    assert err.message == ("nl.ndarray: program (1,)'s shared_hbm tensor (5, 8) float32 differs "
                           "from program 0's (4, 8) float32")
