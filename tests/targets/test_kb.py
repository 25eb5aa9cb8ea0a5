"""The Intel Xe / Triton knowledge base: the shipped devices load with their constraints, a bad
file of each kind is a located error, the patterns pick what the reference's guidance says, and
the autotune grids stay within the devices' constraints."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from axon.targets.profiles import ProfileError, load_profile
from axon.targets.xe_triton.kb import (
    KB_DIR,
    Config,
    KernelFacts,
    autotune_grid,
    config_error,
    device_names,
    load_device,
    load_kb,
    patterns_for,
    settings_for,
)
from axon.targets.xe_triton.kb.__main__ import main
from axon.targets.xe_triton.kb.condition import ConditionError, parse_condition
from axon.targets.xe_triton.kb.device import PROFILE_FIELDS, load_device_file
from axon.targets.xe_triton.kb.pattern import FACTS, device_facts, load_pattern_file

INTEL = ["a770", "b580", "b60", "b70", "max1550"]


def test_every_device_of_the_issue_is_shipped() -> None:
    assert device_names() == ["a770", "b580", "b60", "b70", "h200", "max1550"]


@pytest.mark.parametrize("name", ["a770", "b580", "b60", "b70", "h200", "max1550"])
def test_every_device_has_the_constraints_and_sources(name: str) -> None:
    device = load_device(name)
    assert device.num_warps and all(w & (w - 1) == 0 for w in device.num_warps)
    assert device.sub_group_sizes and device.work_group_size_max == 1024
    assert max(device.num_warps) * min(device.sub_group_sizes) <= 1024
    assert device.cores > 0
    assert device.peaks is not None and device.peaks.matrix_bf16_flops is not None
    assert device.matrix, "every device lists its matrix unit"
    for key, quantity in device.quantities().items():
        assert quantity.value > 0 and len(quantity.source) > 10, key
    if device.vendor == "intel":
        assert device.registers is not None and device.registers.register_bytes is not None
        assert device.grf_modes()[0].mode == "128"
        assert device.memory is not None and device.memory.l1_bytes is not None


def test_the_intel_devices_differ_where_the_reference_says() -> None:
    pvc, b580, a770 = load_device("max1550"), load_device("b580"), load_device("a770")
    # 256-GRF halves the threads and caps the warps at 32; the A770 has no large GRF
    large = {m.mode: m for m in pvc.grf_modes()}["256"]
    assert (large.registers_per_thread, large.threads_per_eu, large.num_warps_max) == (256, 4, 32)
    assert [m.mode for m in a770.grf_modes()] == ["128"]
    assert a770.registers is not None and a770.registers.register_bytes is not None
    assert a770.registers.register_bytes.value == 32
    # DPAS at execution size 16 on PVC and BMG; the A770 has XMX but Triton does not use it
    for device in (pvc, b580):
        unit = device.dot_unit()
        assert unit is not None and unit.unit == "dpas" and unit.execution_size == 16
        shape = device.dot_shape("bf16")
        assert shape is not None and (shape.m, shape.n, shape.k) == (8, 16, 16)
    assert a770.dot_unit() is None and a770.matrix and not a770.matrix[0].used_by_triton
    assert a770.sub_group_sizes == (8, 16, 32)
    # SLM per work-group: 128 KB on PVC, 64 KB on DG2, not given for BMG
    assert pvc.memory and pvc.memory.slm_per_work_group_bytes
    assert pvc.memory.slm_per_work_group_bytes.value == 128 << 10
    assert a770.memory and a770.memory.slm_per_work_group_bytes
    assert a770.memory.slm_per_work_group_bytes.value == 64 << 10
    assert b580.memory is not None and b580.memory.slm_per_work_group_bytes is None
    # 2D block I/O rows of at most 512 bits, pitch 16 B aligned
    assert pvc.block_io and (pvc.block_io.row_bits_max, pvc.block_io.pitch_alignment_bytes) == (
        512, 16)
    assert pvc.peaks and pvc.peaks.memory_bytes_per_s
    assert pvc.peaks.memory_bytes_per_s.value == 3.2768e12
    # where the reference marks a figure unverified or missing, the file leaves it out
    b60 = load_device("b60")
    assert b60.peaks is not None and b60.peaks.memory_bytes_per_s is None
    assert b60.peaks.matrix_bf16_flops and b60.peaks.matrix_bf16_flops.estimate


def test_h200_takes_its_shared_numbers_from_the_cost_models_profile() -> None:
    h200, profile = load_device("h200"), load_profile("h200")
    assert profile.parallelism and profile.memory
    assert h200.num_warps == (1, 2, 4, 8, 16, 32)
    assert h200.sub_group_sizes == (32,)
    assert h200.cores == 132
    assert h200.peaks and h200.peaks.matrix_bf16_flops == profile.roofline.matrix_flops
    assert h200.memory and h200.memory.slm_per_work_group_bytes == (
        profile.memory.shared_per_program_bytes)
    assert h200.registers and h200.registers.per_thread_bytes == (
        profile.memory.registers_per_thread_bytes)
    # the KB file states none of them itself (only what the cost model does not read: a
    # plain launch's default stages)
    text = (KB_DIR / "devices" / "h200.yaml").read_text()
    assert not [key for key in PROFILE_FIELDS if f" {key.split('.')[1]}:" in text]
    assert text.count("value:") == 1 and h200.launch.num_stages_default is not None
    assert h200.launch.num_stages_default.value == 3
    assert device_facts(h200)["device.dot_unit"] == "mma"


# ---- bad files ----------------------------------------------------------------------------------
DEVICE = """\
name: dev
description: a test device
vendor: intel
arch: bmg
launch:
  num_warps: {values: [1, 2, 4, 8], source: test}
  num_warps_default: {value: 4, source: test}
  sub_group_sizes: {values: [16, 32], source: test}
  sub_group_size_default: {value: 32, source: test}
  work_group_size_max: {value: 1024, source: test}
registers:
  register_bytes: {value: 64, source: test}
  grf_modes:
    - {mode: "128", registers_per_thread: 128, threads_per_eu: 8, source: test}
matrix:
  - unit: dpas
    used_by_triton: true
    execution_size: 16
    systolic_depth: 8
    repeat_counts: [1, 2, 4, 8]
    shapes:
      - {dtype: bf16, m: 8, n: 16, k: 16}
    source: test
compute:
  cores: {value: 20, source: test}
peaks:
  matrix_bf16_flops: {value: 1e14, source: test}
"""


def device_error(tmp_path: Path, text: str, name: str = "dev") -> ProfileError:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        load_device_file(path)
    return info.value


def test_a_good_device_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "dev.yaml"
    path.write_text(DEVICE)
    device = load_device_file(path)
    assert device.num_warps == (1, 2, 4, 8) and device.cores == 20


@pytest.mark.parametrize(("old", "new", "at", "message"), [
    ("arch: bmg\n", "arch: bmg\nclock: 3\n", "clock: 3",
     "clock: unknown key; expected one of name, description, vendor, arch, launch, profile, "
     "registers, matrix, block_io, tma, pipeline, compute, memory, peaks"),
    ("{values: [1, 2, 4, 8], source: test}", "{values: [1, 2, 4, 8]}", "{values: [1, 2",
     "launch.num_warps: missing required key 'source'"),
    ("{value: 20, source: test}", "{value: 20}", "{value: 20}",
     "compute.cores: missing 'source' (every number carries its value and its source)"),
    ("{values: [1, 2, 4, 8], source: test}", "{values: [1, 2, 3, 8], source: test}", "3, 8]",
     "launch.num_warps: expected powers of two, got 3"),
    ("{values: [1, 2, 4, 8], source: test}", "{values: [1, 2, 4, 128], source: test}",
     "128]", "launch.num_warps: 128 sub-groups of 16 exceed the work-group size 1024"),
    ("{values: [1, 2, 4, 8], source: test}", "{values: [1, 2, four], source: test}", "four]",
     "launch.num_warps.values[2]: expected a positive integer, got 'four'"),
    ("vendor: intel\n", "vendor: amd\n", "amd",
     "vendor: expected one of intel, nvidia, got 'amd'"),
    ("{dtype: bf16, m: 8, n: 16, k: 16}", "{dtype: bf16, m: 8, n: 8, k: 16}", "8, k: 16}",
     "matrix[0].shapes[0].n: expected the execution size 16 (a DPAS N is the sub-group size), "
     "got 8"),
    ("    execution_size: 16\n", "    execution_size: 8\n", "8",
     "matrix[0].execution_size: expected the smallest sub-group size 16, got 8"),
    ("{dtype: bf16, m: 8, n: 16, k: 16}", "{dtype: bf16, m: 8, n: 16, k: 32}", "32}",
     "matrix[0].shapes[0].k: expected systolic depth 8 x 2 bf16 per channel = 16, got 32"),
    ("{dtype: bf16, m: 8, n: 16, k: 16}", "{dtype: bf16, m: 3, n: 16, k: 16}", "3, n: 16",
     "matrix[0].shapes[0].m: expected a repeat count (1, 2, 4, 8), got 3"),
    ("  num_warps_default: {value: 4, source: test}\n", "", "num_warps: {values",
     "launch: missing required key 'num_warps_default'"),
    ("  register_bytes: {value: 64, source: test}\n", "", "grf_modes:",
     "registers: missing required key 'register_bytes' (an Intel device's GRF)"),
    ("threads_per_eu: 8, source: test}", "threads_per_eu: 8, num_warps_max: 16, source: test}",
     "16, source",
     "registers.grf_modes[0].num_warps_max: expected one of launch.num_warps, got 16"),
    ("arch: bmg\n", "arch: bmg\nprofile: h300\n", "h300",
     "profile: unknown profile 'h300'; known: h200, trn1, trn2"),
])
def test_a_bad_device_file_is_a_located_error(tmp_path: Path, old: str, new: str, at: str,
                                              message: str) -> None:
    """`at`: the text the error's line and column point at."""
    assert DEVICE.count(old) == 1
    text = DEVICE.replace(old, new)
    err = device_error(tmp_path, text)
    assert err.message == message
    assert text.splitlines()[err.line - 1][err.column - 1:].startswith(at)
    assert str(err) == f"{tmp_path / 'dev.yaml'}:{err.line}:{err.column}: error: {message}"


def test_a_device_may_not_restate_its_profiles_number(tmp_path: Path) -> None:
    text = (KB_DIR / "devices" / "h200.yaml").read_text().replace(
        "profile: h200\n", "profile: h200\npeaks:\n  matrix_bf16_flops: {value: 1e15, source: x}\n")
    err = device_error(tmp_path, text, "h200")
    assert err.message == ("peaks.matrix_bf16_flops: given by profile 'h200' "
                           "(roofline.matrix_flops); a number is stated once")
    assert text.splitlines()[err.line - 1][err.column - 1:].startswith("{value: 1e15")


PATTERNS = """\
patterns:
  - id: big_tiles
    summary: a test pattern
    when: device.vendor == intel and kernel.tile_bytes >= 1024
    sets: {grf_mode: ["256"], num_warps: [32, 16]}
    priority: 10
    source: test
"""


def pattern_error(tmp_path: Path, text: str) -> ProfileError:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        load_pattern_file(path)
    return info.value


@pytest.mark.parametrize(("old", "new", "at", "message"), [
    ("kernel.tile_bytes", "kernel.tile_byte", "kernel.tile_byte >=",
     "patterns[0].when: unknown fact 'kernel.tile_byte'; known: " + ", ".join(sorted(FACTS))),
    ("== intel", "== intle", "intle",
     "patterns[0].when: device.vendor: expected one of intel, nvidia, got 'intle'"),
    (">= 1024", ">= big", "big", "patterns[0].when: '>=' expects a number, got a name"),
    (">= 1024", ">=", "",
     "patterns[0].when: expected a number, a fact, a name or '(', got the end of the condition"),
    ("device.vendor == intel and", "device.vendor and", "device.vendor and",
     "patterns[0].when: 'and' expects a condition, got a name"),
    ("[32, 16]", "[32, 12]", "12]", "patterns[0].sets.num_warps[1]: expected a power of two, "
                                      "got 12"),
    ('["256"]', '["384"]', '"384"',
     "patterns[0].sets.grf_mode[0]: expected one of default, auto, 128, 256, 512, got '384'"),
    ("    source: test\n", "", "id: big_tiles", "patterns[0]: missing required key 'source'"),
    ("    priority: 10\n", "    priority: high\n", "high",
     "patterns[0].priority: expected a positive integer, got 'high'"),
    ("    summary: a test pattern\n", "    summary: a test pattern\n    stage: x\n", "stage",
     "patterns[0].stage: unknown key; expected one of id, summary, when, sets, priority, "
     "source, estimate"),
])
def test_a_bad_pattern_file_is_a_located_error(tmp_path: Path, old: str, new: str, at: str,
                                               message: str) -> None:
    """`at`: the text the error's line and column point at ("": the end of the line)."""
    assert PATTERNS.count(old) == 1
    text = PATTERNS.replace(old, new)
    err = pattern_error(tmp_path, text)
    assert err.message == message
    rest = text.splitlines()[err.line - 1][err.column - 1:]
    assert rest.startswith(at) and (at or rest == "")


def test_two_patterns_may_not_share_an_id(tmp_path: Path) -> None:
    err = pattern_error(tmp_path, PATTERNS + PATTERNS.removeprefix("patterns:\n"))
    assert err.message == f"patterns[1].id: duplicate id 'big_tiles' (first in {tmp_path}/p.yaml)"
    assert (err.line, err.column) == (8, 9)  # the second `big_tiles`


def test_conditions_evaluate_without_eval() -> None:
    condition = parse_condition("kernel.m + 1 < device.cores * 2 and not (kernel.dtype in "
                                "[fp32, 'tf32'])", FACTS)
    assert condition.facts() == {"kernel.m", "device.cores", "kernel.dtype"}
    assert condition.holds({"kernel.m": 10, "device.cores": 8, "kernel.dtype": "bf16"})
    assert not condition.holds({"kernel.m": 20, "device.cores": 8, "kernel.dtype": "bf16"})
    assert not condition.holds({"kernel.m": 1, "device.cores": 8, "kernel.dtype": "tf32"})
    with pytest.raises(ConditionError, match="unexpected character '_'|expected"):
        parse_condition("__import__('os')", FACTS)
    with pytest.raises(ConditionError, match="expected a condition"):
        parse_condition("kernel.m", FACTS)


# ---- selection and grids ------------------------------------------------------------------------
def big_bf16_matmul(**changes: int) -> KernelFacts:
    """A 4096^3 bf16 matmul tiled 256 x 256 x 32 over a 2-D grid."""
    facts = {"m": 4096, "n": 4096, "k": 4096, "grid_dims": 2,
             "tile_bytes": 256 * 256 * 4 + 2 * 256 * 32 * 2, "programs": 256, **changes}
    return KernelFacts("matmul", "bf16", has_dot=True, **facts)


def ids(device: str, kernel: KernelFacts) -> list[str]:
    return [p.id for p in patterns_for(load_device(device), kernel)]


def test_a_big_bf16_matmul_on_pvc_takes_large_grf_descriptors_and_the_swizzle() -> None:
    settings = settings_for(load_device("max1550"), big_bf16_matmul())
    assert settings.grf_mode == ("256",)
    assert settings.block_io == "tensor_descriptor"
    assert settings.group_size_m == (4,)
    assert settings.warp_size == (16,)
    assert settings.explicit_accumulator
    assert "xpu_large_grf_for_big_dot_tiles" in ids("max1550", big_bf16_matmul())
    # small tiles keep both GRF modes in the sweep
    small = settings_for(load_device("max1550"), big_bf16_matmul(tile_bytes=4096))
    assert small.grf_mode == ("256", "128")


@pytest.mark.parametrize("name", ["b580", "b60", "b70"])
def test_xe2_takes_tensor_descriptors_and_large_grf(name: str) -> None:
    settings = settings_for(load_device(name), big_bf16_matmul())
    assert (settings.block_io, settings.grf_mode) == ("tensor_descriptor", ("256",))


def test_the_a770_gets_no_dpas_nor_large_grf_patterns() -> None:
    found = ids("a770", big_bf16_matmul())
    assert not any(i in found for i in ("xpu_large_grf_for_big_dot_tiles", "xpu_gemm_grid",
                                        "xpu_dpas_sub_group_16",
                                        "xpu_tensor_descriptors_for_dots"))
    assert "xpu_grouped_program_order" in found


def test_the_h200_takes_the_cuda_grid_and_a_wider_swizzle() -> None:
    settings = settings_for(load_device("h200"), big_bf16_matmul())
    assert settings.group_size_m == (8,) and settings.grf_mode is None
    assert settings.block_io == "host_descriptor"  # TMA descriptors the host makes
    assert not any(i.startswith("xpu_") for i in ids("h200", big_bf16_matmul()))


def launch(config: Config) -> tuple[int | None, ...]:
    return (config.block_m, config.block_n, config.block_k, config.num_warps, config.num_stages)


def test_the_h200_small_and_skinny_gemms_start_from_the_measured_launches() -> None:
    h200 = load_device("h200")
    cube = KernelFacts("matmul", "bf16", has_dot=True, m=1024, n=1024, k=1024, grid_dims=2)
    assert launch(autotune_grid(h200, cube)[0]) == (64, 128, 128, 4, 4)
    # a few rows: 16-row tiles, narrow column blocks, deep K steps (over the small-GEMM grid)
    for m, n in ((2, 6144), (16, 4096)):
        skinny = KernelFacts("matmul", "bf16", has_dot=True, m=m, n=n, k=4096, grid_dims=2)
        found = ids("h200", skinny)
        assert found.index("cuda_skinny_gemm_grid") < found.index("cuda_small_gemm_grid")
        grid = autotune_grid(h200, skinny)
        assert launch(grid[0]) == (16, 64, 256, 4, 4)
        assert {c.block_m for c in grid} == {16}
        assert settings_for(h200, skinny).block_io == "host_descriptor"
    # not measured with two dots (a gated MLP), nor past 16 rows
    gated = KernelFacts("matmul", "bf16", has_dot=True, m=8, n=4096, k=4096, grid_dims=2,
                        dots=2)
    assert "cuda_skinny_gemm_grid" not in ids("h200", gated)
    rows = KernelFacts("matmul", "bf16", has_dot=True, m=64, n=4096, k=4096, grid_dims=2)
    assert "cuda_skinny_gemm_grid" not in ids("h200", rows)
    assert "cuda_skinny_gemm_grid" not in ids("max1550", big_bf16_matmul(m=16, programs=8))


def test_h200_gemm_of_two_accumulators_starts_from_half_the_columns_at_4_warps() -> None:
    """Measured on an H100 (problem 05, silu(x @ wg.T) * (x @ wu.T)): 128x64x64 at 4 warps and
    3 stages was the fastest launch of the two-accumulator kernel, the one-accumulator grid's
    first (128x128 or wider at 8 warps) 14% slower; one accumulator keeps its grid."""
    h200 = load_device("h200")
    one = KernelFacts("matmul", "bf16", has_dot=True, m=2048, n=5632, k=2048, grid_dims=2)
    two = KernelFacts("matmul", "bf16", has_dot=True, m=2048, n=5632, k=2048, grid_dims=2,
                      dots=2)
    assert "cuda_multi_accumulator_gemm_grid" in ids("h200", two)
    assert "cuda_multi_accumulator_gemm_grid" not in ids("h200", one)
    grid = autotune_grid(h200, two)
    assert [launch(c) for c in grid[:3]] == [(128, 64, 64, 4, 3), (128, 64, 64, 4, 4),
                                             (128, 64, 64, 8, 3)]
    assert grid[0].group_size_m == 8
    # the measured launches are all in it, and two 128x128 accumulators never at 4 warps
    measured = {(128, 64, 64, 4, 3), (128, 64, 64, 8, 3), (128, 64, 64, 4, 4),
                (64, 128, 64, 4, 4), (128, 128, 64, 8, 4), (128, 128, 64, 8, 3)}
    assert measured <= {launch(c) for c in grid}
    assert all(c.block_m * c.block_n * 2 <= 128 * c.num_warps * 32 for c in grid
               if c.block_m and c.block_n and c.num_warps)
    assert launch(autotune_grid(h200, one)[0]) == (128, 256, 64, 8, 3)
    # a small gated GEMM keeps the small-GEMM grid (higher priority), Intel its own
    small = KernelFacts("matmul", "bf16", has_dot=True, m=1024, n=1024, k=1024, grid_dims=2,
                        dots=2)
    assert ids("h200", small).index("cuda_small_gemm_grid") < ids("h200", small).index(
        "cuda_multi_accumulator_gemm_grid")
    assert "cuda_multi_accumulator_gemm_grid" not in ids("max1550", big_bf16_matmul(dots=2))


def test_h200_attention_tiles_follow_the_head_dim() -> None:
    """64 query rows at 4 warps first where the head dim is 64 or less (measured on problem
    20); 128 rows at 8 warps at 128 and where the head dim is not known."""
    h200 = load_device("h200")

    def attention(head_dim: int | None) -> KernelFacts:
        extra = {} if head_dim is None else {"head_dim": head_dim}
        return KernelFacts("attention", "bf16", has_dot=True, m=2048, n=2048, grid_dims=2,
                           dots=2, **extra)

    def tiles(config: Config) -> tuple[int | None, ...]:
        return config.block_m, config.block_n, config.num_warps, config.num_stages

    for small in (32, 64):
        assert "cuda_flash_attention_small_head" in ids("h200", attention(small))
        grid = autotune_grid(h200, attention(small), limit=4)
        assert tiles(grid[0]) == (64, 64, 4, 3)
    for large in (128, None):
        assert "cuda_flash_attention_small_head" not in ids("h200", attention(large))
        assert tiles(autotune_grid(h200, attention(large))[0]) == (128, 64, 8, 4)
    # decode (few query rows) keeps its own grid whatever the head dim
    decode = KernelFacts("attention", "bf16", has_dot=True, m=1, n=4096, grid_dims=2, dots=2,
                         head_dim=64)
    assert {c.block_m for c in autotune_grid(h200, decode)} == {16}
    assert "cuda_flash_attention_small_head" not in ids("max1550", attention(64))


def test_a_1_d_grid_gets_no_swizzle_and_a_batch_goes_to_axis_1() -> None:
    assert settings_for(load_device("b580"), big_bf16_matmul()).group_size_m == (4,)
    assert settings_for(load_device("b580"), big_bf16_matmul(grid_dims=1)).group_size_m is None
    one_dim = KernelFacts("softmax", "fp32", m=4096, n=4096)
    assert settings_for(load_device("b580"), one_dim).group_size_m is None
    batched = KernelFacts("batched_matmul", "bf16", has_dot=True, batch=8, m=512, n=512,
                          k=512, grid_dims=2)
    assert settings_for(load_device("max1550"), batched).tiles_on_axis_0


def test_priorities_decide_and_skinny_m_overrides_the_gemm_grid() -> None:
    skinny = big_bf16_matmul(m=16, programs=8)
    found = ids("max1550", skinny)
    assert found.index("xpu_skinny_m_gemm") < found.index("xpu_gemm_grid")
    settings = settings_for(load_device("max1550"), skinny)
    assert (settings.block_m, settings.group_size_m, settings.persistent) == ((8,), (1,), True)


@pytest.mark.parametrize("name", ["h200", "b70", "max1550", "a770"])
def test_dot_free_loops_are_pipelined_where_loads_are_staged(name: str) -> None:
    """`tl.range` stages for a loop without a dot only where the pipeliner copies loads ahead
    into shared memory (NVIDIA); never for a kernel with a dot (its loads are the
    pipeliner's already)."""
    device = load_device(name)
    row = KernelFacts("norm", "bf16", has_dot=False)
    staged = device.pipeline is not None and device.pipeline.stages_in_shared_memory
    assert staged == (name == "h200")
    assert settings_for(device, row).loop_num_stages == ((2, 3) if staged else None)
    assert settings_for(device, big_bf16_matmul()).loop_num_stages is None
    assert ("pipelined_dot_free_loops" in ids(name, row)) == staged


def test_fp32_dots_compute_in_ieee() -> None:
    fp32 = KernelFacts("matmul", "fp32", has_dot=True, m=1024, n=1024, k=1024, grid_dims=2)
    for device in ("max1550", "h200"):
        assert settings_for(load_device(device), fp32).input_precision == "ieee"


KERNELS = [big_bf16_matmul(), big_bf16_matmul(m=16, programs=8), big_bf16_matmul(tile_bytes=1),
           KernelFacts("attention", "bf16", has_dot=True, m=4096, n=4096, k=128, grid_dims=2,
                       tile_bytes=1 << 17),
           KernelFacts("softmax", "fp32", m=4096, n=32768),
           KernelFacts("matmul", "fp32", has_dot=True, m=1024, n=1024, k=1024, grid_dims=2)]


@pytest.mark.parametrize("name", ["a770", "b580", "b60", "b70", "h200", "max1550"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_autotune_grids_are_bounded_distinct_and_valid(name: str, kernel: KernelFacts) -> None:
    device = load_device(name)
    grid = autotune_grid(device, kernel, limit=24)
    assert 1 <= len(grid) <= 24 and len(set(grid)) == len(grid)
    for config in grid:
        assert config_error(device, kernel, config) is None
        assert config.num_warps in device.num_warps
        warp_size = config.warp_size or (16 if device.dot_unit() and kernel.has_dot
                                         and device.vendor == "intel" else 32)
        assert config.num_warps * warp_size <= device.work_group_size_max
        if config.grf_mode == "256":
            assert device.vendor == "intel" and config.num_warps <= 32
        if device.vendor == "nvidia":
            assert config.grf_mode is None and config.num_warps <= 32
        for block, size in ((config.block_m, kernel.m), (config.block_n, kernel.n),
                            (config.block_k, kernel.k)):
            assert block is None or block <= max(size, 16)


def test_the_grid_drops_what_the_device_cannot_run() -> None:
    pvc, h200 = load_device("max1550"), load_device("h200")
    grid = autotune_grid(pvc, big_bf16_matmul(tile_bytes=1), limit=200)
    # 64 warps run only at the small GRF
    assert {c.grf_mode for c in grid if c.num_warps == 64} == {"128"}
    assert any(c.grf_mode == "256" and c.num_warps == 32 for c in grid)
    # on the H200 every stage buffers its tiles in shared memory: 227 KiB at most
    for config in autotune_grid(h200, big_bf16_matmul(), limit=200):
        assert config.block_m and config.block_n and config.block_k and config.num_stages
        assert config.num_stages * (config.block_m + config.block_n) * config.block_k * 2 <= (
            227 << 10)
    assert config_error(h200, big_bf16_matmul(), Config(block_m=256, block_n=256, block_k=128,
                                                       num_stages=4, num_warps=8)) == (
        "4 stages of 131072 B exceed the 232448 B of shared memory")
    assert config_error(pvc, big_bf16_matmul(), Config(num_warps=64, grf_mode="256")) == (
        "grf_mode 256 allows at most 32 warps")
    assert config_error(pvc, big_bf16_matmul(), Config(num_warps=8, warp_size=32)) == (
        "a DPAS dot runs at warp_size 16")
    assert config_error(h200, big_bf16_matmul(), Config(num_warps=64)) == (
        "num_warps 64 is not one of (1, 2, 4, 8, 16, 32)")


# ---- the check command --------------------------------------------------------------------------
def test_the_check_command_summarizes_the_shipped_kb(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check"]) == 0
    out = capsys.readouterr().out
    kb = load_kb()
    assert f"devices: 6 ({', '.join(device_names())})" in out
    assert f"patterns: {len(kb.patterns)} (" in out
    assert f"sources: {len(kb.sources())} distinct" in out


def test_the_check_command_reports_a_bad_file(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(KB_DIR / "devices", tmp_path / "devices")
    shutil.copytree(KB_DIR / "patterns", tmp_path / "patterns")
    assert main(["--check", "--kb", str(tmp_path)]) == 0
    bad = tmp_path / "devices" / "b580.yaml"
    bad.write_text(bad.read_text().replace("values: [1, 2, 4, 8, 16, 32, 64]",
                                           "values: [1, 2, 4, 6, 16, 32, 64]"))
    capsys.readouterr()
    assert main(["--check", "--kb", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    line = bad.read_text().splitlines().index("    values: [1, 2, 4, 6, 16, 32, 64]") + 1
    column = "    values: [1, 2, 4, 6, 16, 32, 64]".index("6,") + 1
    assert err == f"{bad}:{line}:{column}: error: launch.num_warps: expected powers of two, got 6"


def test_nvidia_accumulators_that_would_spill_and_two_dots_stages_are_dropped() -> None:
    h200 = load_device("h200")
    one, two = big_bf16_matmul(), big_bf16_matmul(dots=2)
    assert config_error(h200, one, Config(block_m=128, block_n=256, num_warps=4)) == (
        "1 accumulator(s) of 128x256 hold 256 values a thread (at most 128)")
    assert config_error(h200, one, Config(block_m=128, block_n=128, num_warps=4)) is None
    assert config_error(h200, two, Config(block_m=128, block_n=128, num_warps=4)) == (
        "2 accumulator(s) of 128x128 hold 256 values a thread (at most 128)")
    # a gated MLP's stage holds one A and two B tiles: 3 stages of 128x256x64 do not fit
    assert config_error(h200, two, Config(block_m=128, block_n=256, block_k=64, num_stages=3,
                                          num_warps=16)) == (
        "3 stages of 81920 B exceed the 232448 B of shared memory")
    assert all(c.num_warps != 4 or (c.block_m or 0) * (c.block_n or 0) <= 128 * 128
               for c in autotune_grid(h200, one, limit=200))
    # Intel's registers are another matter: its grid keeps 256x256 tiles
    pvc = load_device("max1550")
    assert config_error(pvc, one, Config(block_m=256, block_n=256, num_warps=32)) is None
