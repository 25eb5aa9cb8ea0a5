"""Device profiles: the shipped YAML files load with their cited numbers, a bad file is a located
error, and `propagate{device=...}` takes every profile by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import DiagnosticException

from axon.nugraph.cost import RooflineCost
from axon.targets import profiles
from axon.targets.profiles import (
    DeviceProfile,
    ProfileError,
    load_profile,
    load_profile_file,
    profile_names,
    profile_paths,
)
from axon.tools import embed


def roofline_numbers(profile: DeviceProfile) -> tuple[float, float, float, float]:
    roof = profile.roofline
    return (roof.matrix_flops.value, roof.vector_flops.value, roof.bytes_per_s.value,
            roof.op_overhead_s.value)


def test_every_target_profile_is_found() -> None:
    assert profile_names() == ["h200", "trn1", "trn2"]


def test_h200_and_trn1_keep_the_numbers_the_cost_used_before() -> None:
    assert roofline_numbers(load_profile("h200")) == (790e12, 67e12, 4.3e12, 4e-6)
    assert roofline_numbers(load_profile("trn1")) == (92e12, 128 * 1.12e9, 410e9, 2e-6)


def test_trn2_follows_the_nki_reference() -> None:
    trn2 = load_profile("trn2")
    # TensorE 79 TF bf16; VectorE 256 elements/cycle at 0.96 GHz; HBM 2.9 TB/s over 8 cores
    assert roofline_numbers(trn2) == (79e12, 256 * 0.96e9, 2.9e12 / 8, 2e-6)
    assert trn2.roofline.op_overhead_s.estimate
    assert trn2.memory is not None and trn2.limits is not None
    assert trn2.memory.partitions is not None and trn2.memory.partitions.value == 128
    assert trn2.memory.sbuf_partition_bytes is not None
    assert trn2.memory.sbuf_partition_bytes.value == 224 * 1024
    assert trn2.memory.sbuf_partition_usable_bytes is not None
    assert trn2.memory.sbuf_partition_usable_bytes.value == 212_984
    assert trn2.memory.psum_banks is not None and trn2.memory.psum_banks.value == 8
    assert trn2.limits.matmul_moving_free_max is not None
    assert trn2.limits.matmul_moving_free_max.value == 512


def test_the_neuron_cores_differ_where_the_reference_says() -> None:
    trn1, trn2 = load_profile("trn1"), load_profile("trn2")
    assert trn1.memory is not None and trn2.memory is not None
    assert trn1.memory.sbuf_bytes is not None and trn2.memory.sbuf_bytes is not None
    assert (trn1.memory.sbuf_bytes.value, trn2.memory.sbuf_bytes.value) == (24 << 20, 28 << 20)
    assert trn1.memory.psum_bytes is not None and trn2.memory.psum_bytes is not None
    assert trn1.memory.psum_bytes.value == trn2.memory.psum_bytes.value == 2 << 20
    assert trn1.memory.sbuf_partition_usable_bytes is None  # not given for NC-v2


@pytest.mark.parametrize("name", ["h200", "trn1", "trn2"])
def test_every_number_has_a_source(name: str) -> None:
    quantities = load_profile(name).quantities()
    assert {"roofline.matrix_flops", "roofline.vector_flops", "roofline.bytes_per_s",
            "roofline.op_overhead_s"} <= set(quantities)
    for key, quantity in quantities.items():
        assert quantity.value > 0, key
        assert len(quantity.source) > 10, key


def test_the_neuron_core_sources_are_cited_as_the_reference_names_them() -> None:
    for name, arch in (("trn1", "trainium_inferentia2_arch.rst"), ("trn2", "trainium2_arch.rst")):
        roofline = load_profile(name).roofline
        assert f"SDK@HEAD:nki/guides/architecture/{arch}" in roofline.matrix_flops.source


GOOD = """\
name: dev
description: a test device
roofline:
  matrix_flops:
    value: 1e12
    source: datasheet
  vector_flops: {value: 1.0e+11, source: datasheet}
  bytes_per_s:
    value: 1e11
    source: datasheet
  op_overhead_s:
    value: 1e-6
    source: our guess
    estimate: true
"""


def write(tmp_path: Path, text: str, name: str = "dev") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def error_of(tmp_path: Path, text: str) -> ProfileError:
    with pytest.raises(ProfileError) as info:
        load_profile_file(write(tmp_path, text))
    return info.value


def test_a_good_file_loads(tmp_path: Path) -> None:
    profile = load_profile_file(write(tmp_path, GOOD))
    assert roofline_numbers(profile) == (1e12, 1e11, 1e11, 1e-6)
    assert profile.roofline.op_overhead_s.estimate and not profile.roofline.bytes_per_s.estimate
    assert profile.memory is None and profile.limits is None


def test_a_file_is_parsed_once_per_text_and_read_again_each_time(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    first = load_profile_file(path)
    assert load_profile_file(path) is first  # the same text: not parsed again
    path.write_text(GOOD.replace("value: 1e11\n", "value: 2e11\n", 1))
    assert roofline_numbers(load_profile_file(path))[2] == 2e11  # an edited file: its new text
    path.write_text(GOOD.replace("name: dev\n", "name: other\n"))
    for _ in range(2):  # an error is raised on every read, not remembered as a result
        with pytest.raises(ProfileError, match="does not match the file name"):
            load_profile_file(path)


@pytest.mark.parametrize(("old", "new", "where", "message"), [
    ("value: 1e11\n", "value: fast\n", (9, 12),
     "roofline.bytes_per_s: expected a positive number, got 'fast'"),
    ("value: 1e11\n", "value: -4.3e12\n", (9, 12),
     "roofline.bytes_per_s: expected a positive number, got '-4.3e12'"),
    ("value: 1e11\n", "value: .inf\n", (9, 12),
     "roofline.bytes_per_s: expected a positive number, got '.inf'"),
    ("    value: 1e11\n    source: datasheet\n", "    value: 1e11\n", (9, 5),
     "roofline.bytes_per_s: missing 'source' (every number carries its value and its source)"),
    ("    source: our guess\n", "    source: ''\n", (13, 13),
     "roofline.op_overhead_s.source: expected a non-empty string, got ''"),
    ("  bytes_per_s:\n", "  fast_flops: {value: 1, source: x}\n  bytes_per_s:\n", (8, 3),
     "roofline.fast_flops: unknown key; expected one of matrix_flops, vector_flops, "
     "bytes_per_s, op_overhead_s, loop_iteration_s, unpipelined_loop_iteration_s"),
    ("    estimate: true\n", "    estimate: true\n    unit: s\n", (15, 5),
     "roofline.op_overhead_s.unit: unknown key; expected one of value, source, estimate"),
    ("    estimate: true\n", "    estimate: maybe\n", (14, 15),
     "roofline.op_overhead_s.estimate: expected true or false, got 'maybe'"),
    ("name: dev\n", "name: dev\nname: dev\n", (2, 1), "name: duplicate key"),
    ("description: a test device\n", "", (1, 1), "profile: missing required key 'description'"),
    ("name: dev\n", "name: other\n", (1, 7),
     "name: 'other' does not match the file name 'dev.yaml'"),
    ("  vector_flops: {value: 1.0e+11, source: datasheet}\n",
     "  vector_flops: {value: 1.0e+11, source: datasheet\n", (8, 14),
     "invalid YAML: expected ',' or '}', but got ':' (while parsing a flow mapping from 7:17)"),
])
def test_a_bad_file_is_a_located_error(tmp_path: Path, old: str, new: str,
                                       where: tuple[int, int], message: str) -> None:
    assert GOOD.count(old) == 1
    err = error_of(tmp_path, GOOD.replace(old, new))
    assert (err.line, err.column) == where
    assert err.message == message
    assert str(err) == f"{tmp_path / 'dev.yaml'}:{where[0]}:{where[1]}: error: {message}"


def test_an_empty_file_is_an_error(tmp_path: Path) -> None:
    err = error_of(tmp_path, "")
    assert (err.line, err.column) == (1, 1) and err.message.startswith("empty profile")


def test_a_shipped_file_is_named_from_the_package_root(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = load_profile_file(profile_paths()["trn2"])
    assert shipped.name == "trn2"
    broken = profile_paths()["trn2"].read_text().replace("value: 362.5e9", "value: fast")
    folder = tmp_path / "targets" / "nki" / "profiles"
    folder.mkdir(parents=True)
    (folder / "trn2.yaml").write_text(broken)
    monkeypatch.setattr(profiles, "TARGETS_DIR", tmp_path / "targets")
    with pytest.raises(ProfileError) as info:
        load_profile_file(profile_paths()["trn2"])
    err = info.value
    assert str(err) == (f"targets/nki/profiles/trn2.yaml:{err.line}:{err.column}: error: "
                        "roofline.bytes_per_s: expected a positive number, got 'fast'")
    assert broken.splitlines()[err.line - 1][err.column - 1:] == "fast"


def test_two_targets_may_not_define_one_name(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for target in ("a", "b"):
        (tmp_path / target / "profiles").mkdir(parents=True)
        write(tmp_path / target / "profiles", GOOD)
    monkeypatch.setattr(profiles, "TARGETS_DIR", tmp_path)
    with pytest.raises(ProfileError, match="profile 'dev' is also defined in"):
        profile_paths()


def test_an_unknown_device_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown device profile 'nope'; known: h200, trn1, trn2"):
        load_profile("nope")


PROGRAM = "def f(x: f32[M, K], w: f32[K, N]):\n    return sum(x @ w, axis=1)\n"


def test_propagate_takes_the_trn2_profile() -> None:
    module = embed.parse_source(PROGRAM, "f.py")
    embed.run_pipeline(module, 'propagate{device="trn2" sizes="M=128,K=512,N=512"}')
    module.verify()
    func = next(op for op in module.walk() if isinstance(op, FuncOp))
    assert any(op.name.startswith("ax.") for op in func.walk())
    # the cost the pass builds from the name is the file's
    assert RooflineCost("trn2").profile == load_profile("trn2")


def test_propagate_with_an_unknown_device_is_a_diagnostic() -> None:
    module = embed.parse_source(PROGRAM, "f.py")
    with pytest.raises(DiagnosticException,
                       match="propagate: unknown device 'nope'; known: h200, trn1, trn2"):
        embed.run_pipeline(module, 'propagate{device="nope"}')


def test_h200_gives_the_on_chip_numbers_the_tiled_cost_model_needs() -> None:
    h200 = load_profile("h200")
    memory, parallelism = h200.memory, h200.parallelism
    assert memory is not None and parallelism is not None
    assert parallelism.cores is not None and parallelism.cores.value == 132
    assert parallelism.programs_per_core_max is not None
    assert parallelism.programs_per_core_max.value == 32
    # 60 MiB of L2, 228 KiB of shared memory per SM (227 KiB per block), 64K 4-byte registers
    assert memory.l2_bytes is not None and memory.l2_bytes.value == 60 << 20
    assert memory.shared_per_core_bytes is not None
    assert memory.shared_per_core_bytes.value == 228 << 10
    assert memory.shared_per_program_bytes is not None
    assert memory.shared_per_program_bytes.value == 227 << 10
    assert memory.registers_per_core_bytes is not None
    assert memory.registers_per_core_bytes.value == 65536 * 4
    assert memory.partitions is None and memory.sbuf_bytes is None


@pytest.mark.parametrize("name", ["trn1", "trn2"])
def test_a_neuron_core_profile_is_one_core_without_a_cache(name: str) -> None:
    profile = load_profile(name)
    assert profile.parallelism is not None and profile.parallelism.cores is not None
    assert profile.parallelism.cores.value == 1
    assert profile.memory is not None and profile.memory.l2_bytes is None
