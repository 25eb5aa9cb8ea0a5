"""Loading a kernel file: `import nki` resolves to the simulator's surface for that file only,
only the given file runs, and its failures point at its own lines."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from axon.targets.nki.simulator import HardwareLimits, KernelError, load_kernel, simulate

from .conftest import KERNELS

HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"
COPY_KERNEL = HEADER + """
@nki.jit
def copy(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    nisa.dma_copy(dst=out, src=tile)
    return out
"""


def write(tmp_path: Path, text: str, name: str = "kernel.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_runs_a_file_and_leaves_sys_modules_as_it_was(tmp_path: Path,
                                                      trn2: HardwareLimits) -> None:
    path = write(tmp_path, "from nki import language\nimport numpy as np\nimport math\n"
                 + COPY_KERNEL)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    before = set(sys.modules)
    out = simulate(load_kernel(path), x, limits=trn2)
    assert set(sys.modules) == before
    np.testing.assert_array_equal(out, x)
    assert "nki" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        __import__("nki")


def test_a_main_block_does_not_run(tmp_path: Path, trn2: HardwareLimits) -> None:
    path = write(tmp_path, COPY_KERNEL + "\nif __name__ == '__main__':\n    raise SystemExit(3)\n")
    x = np.ones((2, 2), dtype=np.float32)
    np.testing.assert_array_equal(simulate(load_kernel(path), x, limits=trn2), x)


@pytest.mark.parametrize("statement, message", [
    ("import torch", "import of 'torch' is not allowed in a simulated kernel"),
    ("import os.path", "import of 'os.path' is not allowed"),
    ("from .helpers import tile", "relative import of 'helpers'"),
    ("import nki.collectives", "'nki.collectives' is not part of the simulated NKI surface"),
    ("from neuronxcc import nki", "the legacy NKI API (neuronxcc.nki)"),
])
def test_other_imports_are_errors_at_their_line(tmp_path: Path, statement: str,
                                                message: str) -> None:
    path = write(tmp_path, COPY_KERNEL + "\n" + statement + "\n")
    with pytest.raises(KernelError) as info:
        load_kernel(path)
    assert info.value.line == COPY_KERNEL.count("\n") + 2
    assert message in info.value.message
    assert str(info.value).startswith(f"{path}:{info.value.line}: error: ImportError: ")


def test_a_syntax_error_is_located(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + "def broken(:\n")
    with pytest.raises(KernelError, match=r"kernel.py:4: error: syntax error"):
        load_kernel(path)


def test_a_failing_instruction_is_located_in_the_file(tmp_path: Path,
                                                      trn2: HardwareLimits) -> None:
    path = write(tmp_path, COPY_KERNEL.replace("nisa.dma_copy(dst=tile, src=x)",
                                               "nisa.dma_copy(dst=tile[0:2], src=x)"))
    with pytest.raises(KernelError) as info:
        simulate(load_kernel(path), np.ones((3, 4), dtype=np.float32), limits=trn2)
    assert (info.value.file, info.value.line) == (str(path), 9)
    assert "nisa.dma_copy: src hbm tensor (3, 4) float32 has 12 elements" in info.value.message


def test_choosing_among_several_kernels(tmp_path: Path) -> None:
    path = write(tmp_path, COPY_KERNEL + COPY_KERNEL.replace("def copy", "def other")
                 .replace(HEADER, ""))
    with pytest.raises(KernelError, match="expected exactly one @nki.jit kernel .* copy, other"):
        load_kernel(path)
    assert load_kernel(path, "other").__name__ == "other"
    with pytest.raises(KernelError, match="no @nki.jit kernel named 'third'"):
        load_kernel(path, "third")


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(KernelError, match="cannot read the kernel file"):
        load_kernel(tmp_path / "absent.py")


def test_the_tutorial_kernels_all_load() -> None:
    names = sorted(p.stem for p in KERNELS.glob("*.py"))
    assert names == ["cumsum", "matmul_tiled", "rmsnorm", "softmax", "tensor_add",
                     "transpose2d"]
    for name in names:
        assert load_kernel(KERNELS / f"{name}.py").__name__ == name
