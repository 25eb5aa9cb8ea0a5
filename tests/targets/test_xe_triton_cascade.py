"""The verification cascade: each step rejects what it should, with its reason, and stops there;
a good candidate passes steps 1-3 on the CPU interpreter (float32 twin) and step 4 says timing
was skipped without a GPU; every emitted kernel passes step 2 on every Intel device of the KB;
the footprint estimate counts what a program holds at once."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.dialects import xt
from axon.dialects.form.dtypes import DTYPES
from axon.targets.xe_triton.cascade import (
    Job,
    api_error,
    check_job,
    footprint,
    footprint_error,
    structure_error,
)
from axon.targets.xe_triton.emit import emit_triton
from axon.targets.xe_triton.kb import device_names, load_device
from axon.targets.xe_triton.lower import lower_function
from axon.targets.xe_triton.select import Candidate, make_job
from axon.tiling.kernels import tile_function, tilings
from axon.tools.embed import parse_source

#: the emitter's test kernels: elementwise, rows, multipass rows, matmul blocks with a K loop
KERNELS = [("mul", "blocks"), ("relu", "rows"), ("softmax", "rows_multipass"),
           ("softmax", "rows_multipass_online"), ("rmsnorm", "rows"), ("matmul", "blocks_k"),
           ("matmul", "rows_k"), ("rmsnorm_matmul", "blocks_k"), ("silu_matmul", "blocks_k"),
           ("transpose_matmul", "blocks_k")]
SIZES = {"M": 64, "N": 64, "K": 64}
INTEL = [d for d in device_names() if load_device(d).vendor == "intel"]


def program(name: str) -> FuncOp:
    (func,) = [op for op in parse_source(PROGRAMS[name].source, f"{name}.py").ops
               if isinstance(op, FuncOp)]
    return func


def tiled(func: FuncOp, kind: str) -> FuncOp:
    (tiling,) = [t for t in tilings(func) if t.kind == kind]
    return tile_function(func, tiling, "registers", "registers")


def job(name: str, kind: str, kwargs: dict[str, Any], device: str = "h200") -> Job:
    func = program(name)
    candidate = Candidate(f"{name}.{kind}", name, kind, "", kwargs, 0.0, "test",
                          tiled(func, kind))
    made, _ = make_job(candidate, func, load_device(device), SIZES, time_on_gpu=True,
                       program=name)
    return made


def test_a_good_candidate_passes_and_timing_is_skipped_without_a_gpu() -> None:
    verdict = check_job(job("softmax", "rows_multipass", {"BM": 4, "BK": 8, "num_warps": 4}))
    assert verdict.passed and verdict.step == "" and verdict.measured_ms is None
    assert verdict.timing == "timing skipped: no GPU"


def test_the_correctness_shapes_are_not_multiples_of_the_blocks() -> None:
    made = job("matmul", "blocks_k", {"BM": 16, "BN": 32, "BK": 8, "num_warps": 4})
    assert len(made.check_shapes) >= 3
    assert {"M": 1, "N": 1, "K": 1} in made.check_shapes
    blocks = {"M": 16, "N": 32, "K": 8}  # each size's block: over the grid or the K loop
    assert any(all(blocks[s] < v < 2 * blocks[s] for s, v in shape.items())
               for shape in made.check_shapes)


def test_a_module_that_does_not_parse_stops_at_syntax() -> None:
    made = job("mul", "blocks", {"BM": 16, "BN": 16, "num_warps": 4})
    broken = replace(made, module_text=made.module_text.replace("def mul_blocks(", "def (", 1))
    verdict = check_job(broken)
    assert (verdict.passed, verdict.step) == (False, "syntax")
    assert verdict.reason.startswith("line ")


def test_a_call_the_xpu_backend_lacks_is_a_structure_rejection() -> None:
    made = job("mul", "blocks", {"BM": 16, "BN": 16, "num_warps": 4})
    vendor = replace(made, module_text=made.module_text.replace(
        "tl.load(", "tl.extra.cuda.libdevice.load(", 1))
    verdict = check_job(vendor)
    assert (verdict.step, verdict.passed) == ("structure", False)
    assert "tl.extra is not a Triton 3.6 API the Intel XPU backend takes" in verdict.reason
    assert api_error("from triton.language.extra import libdevice\n") == (
        "line 1: imports libdevice from triton.language.extra")
    # the host-made TMA descriptor is Triton's own host class
    assert api_error("from triton.tools.tensor_descriptor import TensorDescriptor\n") is None


def test_rope_s_split_and_join_are_portable() -> None:
    # rope's pairs: tl.split of a row held as pairs, tl.join of the rotated halves
    text = emit_triton(tiled(program("rope"), "rows"), tile_sizes={"BM": 2}).text
    assert "tl.split(" in text and "tl.join(" in text
    assert api_error(text) is None


def test_a_launch_the_device_cannot_run_is_a_structure_rejection() -> None:
    # 16 warps of 32 threads at 256-GRF: the max1550 allows at most 32 warps, and a DPAS dot
    # needs N in multiples of 16
    made = job("matmul", "blocks_k", {"BM": 16, "BN": 8, "BK": 16, "num_warps": 16}, "max1550")
    assert structure_error(made) == "max1550: block_n 8 is not a multiple of the bf16 dot's 16"
    made = job("matmul", "blocks_k", {"BM": 16, "BN": 16, "BK": 16, "num_warps": 64}, "max1550")
    (launch,) = made.launches
    made = replace(made, launches=(replace(launch, kwargs={**launch.kwargs, "grf_mode": "256"}),))
    assert structure_error(made) == "max1550: grf_mode 256 allows at most 32 warps"


def test_tiles_that_overflow_the_registers_are_a_structure_rejection() -> None:
    # 512 rows of 64 a program: the row block loaded in bf16, then computed in f32 in its place
    made = job("relu", "rows", {"BM": 512, "num_warps": 1})
    verdict = check_job(made)
    assert verdict.step == "structure"
    live = 512 * 64 * 4 // 1024
    budget = 32 * 1020 // 1024  # one warp of 32 threads of 255 registers
    assert verdict.reason == (f"h200: an estimated {live} KiB of live tiles exceed the {budget} "
                              "KiB of registers of 1 warps of 32 threads")


def test_a_wrong_kernel_is_a_correctness_rejection() -> None:
    made = job("softmax", "rows_multipass", {"BM": 4, "BK": 8, "num_warps": 4})
    wrong = replace(made, check_text=made.check_text.replace("tl.exp(", "tl.exp2("))
    verdict = check_job(wrong)
    assert (verdict.step, verdict.passed) == ("correctness", False)
    assert verdict.reason.startswith("differs from the reference interpreter at M=")


def test_the_footprint_counts_the_tiles_live_at_once() -> None:
    func = program("matmul")
    (kernel,) = [op for op in lower_function(tiled(func, "blocks_k")).walk()
                 if isinstance(op, xt.KernelOp)]
    env = {"M": 4096, "N": 4096, "K": 4096, "BM": 128, "BN": 256, "BK": 64}
    on_h200 = footprint(kernel, load_device("h200"), env)
    accumulator, a, b = 128 * 256 * 4, 128 * 64 * 2, 64 * 256 * 2
    # at the dot: the carried accumulator and both operand tiles (the result takes their place)
    assert on_h200.register_bytes == accumulator + a + b
    # NVIDIA's pipeliner buffers Triton's 3 stages of the loop's loads in shared memory
    assert on_h200.shared_bytes == 3 * (a + b)
    assert footprint(kernel, load_device("max1550"), env).shared_bytes == 0


@pytest.mark.parametrize("block_io", ["host_descriptor", "tensor_descriptor"])
def test_a_tile_stored_through_a_descriptor_is_staged_in_shared_memory(block_io: str) -> None:
    # 05's raised GEMM (BM=128 BN=256 BK=64, 3 stages, its f32 result stored through a host
    # descriptor) asked the H100 for 278552 bytes of shared memory, past its 232448: the
    # stages' 147456 and the stored tile's 131072 (and 24 of barriers); step 2 counted the
    # stages only and the candidate crashed on the GPU
    func = program("matmul")
    (kernel,) = [op for op in lower_function(tiled(func, "blocks_k")).walk()
                 if isinstance(op, xt.KernelOp)]
    env = {"M": 4096, "N": 4096, "K": 4096, "BM": 128, "BN": 256, "BK": 64}
    h200 = load_device("h200")
    stages = 3 * (128 * 64 + 64 * 256) * 2
    tile = 128 * 256 * DTYPES[kernel.output_types()[0].dtype].storage.itemsize
    assert footprint(kernel, h200, env, 3, block_io).shared_bytes == stages + tile
    for plain in (None, "pointer", "block_ptr"):  # no descriptor: nothing staged
        assert footprint(kernel, h200, env, 3, plain).shared_bytes == stages
    # an f32 result of that size is past the H200's share: step 2 now says so
    wide = replace(footprint(kernel, h200, env, 3, block_io), shared_bytes=stages + 128 * 256 * 4)
    error = footprint_error(h200, {"num_warps": 8}, wide)
    assert error is not None and "KiB of shared memory exceed the 227 KiB" in error
    assert footprint(kernel, load_device("max1550"), env, 3, block_io).shared_bytes == 0

def test_a_dot_operand_loaded_outside_the_loops_is_held_in_shared_memory() -> None:
    # matmul's `blocks` kernel loads x's [BM, K] rows and w's [K, BN] columns once and dots
    # them: on the H200 both sit in shared memory for the matrix unit (mlp's staged GEMM with
    # a [64, 1024] x block overflowed it on the GPU, 278 KiB, while step 2 counted 114)
    func = program("matmul")
    (kernel,) = [op for op in lower_function(tiled(func, "blocks")).walk()
                 if isinstance(op, xt.KernelOp)]
    env = {"M": 1024, "N": 1024, "K": 1024, "BM": 64, "BN": 128}
    assert footprint(kernel, load_device("h200"), env).shared_bytes == (64 + 128) * 1024 * 2
    assert footprint(kernel, load_device("max1550"), env).shared_bytes == 0


@pytest.mark.parametrize("device", INTEL)
def test_every_emitted_kernel_passes_step_2_on_every_intel_device(device: str) -> None:
    assert len(INTEL) == 5
    launch = load_device(device).launch
    assert launch.num_warps_default is not None
    warps = int(launch.num_warps_default.value)
    for name, kind in KERNELS:
        params = {"BM": 16, "BN": 16, "BK": 16, "num_warps": warps}
        kernel = tiled(program(name), kind)
        (lowered,) = [op for op in lower_function(kernel).walk() if isinstance(op, xt.KernelOp)]
        kwargs = {k: v for k, v in params.items()
                  if k in lowered.param_names() or k == "num_warps"}
        made = job(name, kind, kwargs, device)
        assert structure_error(made) is None, (name, kind, structure_error(made))
