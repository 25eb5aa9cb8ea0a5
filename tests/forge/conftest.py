"""Shared helpers of the Forge tests: a rewritten module loaded from a temporary file and checked
against its problem's Model on Triton's CPU interpreter, in float32 (the interpreter's bf16
`tl.dot` is wrong)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

# Triton reads this when it is first imported (tests/conftest.py sets it too)
os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

from axon.benchmarks.forge import problem_set as forge  # noqa: E402

_count = itertools.count()


def _timer_double(kernel_call: Callable[[], object], quantiles: object = None) -> list[float]:
    """The autotuner's timer on a machine with no GPU timer: run the configuration once (so a
    configuration that fails, fails) and report a constant time."""
    kernel_call()
    return [1.0, 1.0, 1.0]


def load_text(source: str, tmp_path: Path) -> ModuleType:
    """Load a module text from a fresh file (Triton reads kernels from their file); every
    autotuned kernel in it gets `_timer_double`."""
    path = tmp_path / f"forge_kernel_{next(_count)}.py"
    path.write_text(source, encoding="utf-8")
    module = forge.load_file(path, path.stem)
    for value in vars(module).values():
        if type(value).__name__ == "Autotuner":
            value.__dict__["do_bench"] = _timer_double
    return module


def check_text(name: str, source: str, tmp_path: Path) -> forge.CheckResult:
    """`problem_set.check` of the module text at the problem's small sizes in float32."""
    return forge.check(name, forge.PROBLEMS[name].small_sizes, dtype=torch.float32,
                       kernel=load_text(source, tmp_path))


@pytest.fixture
def loaded(tmp_path: Path) -> Callable[[str], ModuleType]:
    """load_text bound to the test's temporary folder."""
    return lambda source: load_text(source, tmp_path)


@pytest.fixture
def checked(tmp_path: Path) -> Callable[[str, str], forge.CheckResult]:
    """check_text bound to the test's temporary folder."""
    return lambda name, source: check_text(name, source, tmp_path)


def _axon_forge(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    return subprocess.run([sys.executable, "-m", "axon.tools.axon_main", "forge", *args],
                          capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture
def axon_forge() -> Callable[..., subprocess.CompletedProcess[str]]:
    """`axon forge ARGS...` in a child process (Triton's CPU interpreter), its output captured."""
    return _axon_forge
