"""Fuzz both commands end to end: every input ends in output or in a diagnostic with exit status 1,
never a traceback, never a hang past its budget, and the input file is never changed.

Inputs are the packaged benchmark programs, the lit tests' sources and the IR Axon prints for the
benchmarks, mutated at the token and the byte level (deletions, duplications, swaps, inserted
syntax, truncation, bytes that are not UTF-8), plus text drawn at random. Each runs in-process
through `axon-opt` (with one of a few pipelines) or `axon`.

CI runs `AXON_FUZZ_EXAMPLES` inputs per test (default 150); a local soak run sets it higher:

    AXON_FUZZ_EXAMPLES=5000 pytest tests/test_cli_fuzz.py
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axon.tools import axon_main, axon_opt
from axon.tools.embed import parse_source, print_ir
from axon.tools.user_errors import LOCATED

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("AXON_FUZZ_EXAMPLES", "150"))
BUDGET_S = 20
"""Seconds one input may take (parse, a short propagation, printing) before it counts as a hang."""

PY_SEEDS = [p.read_text() for p in sorted((ROOT / "benchmarks" / "programs").glob("*.py"))]
PY_SEEDS += [p.read_text() for p in sorted((ROOT / "lit_tests").rglob("*.py"))]
MLIR_SEEDS = [p.read_text() for p in sorted((ROOT / "lit_tests").rglob("*.mlir"))]
MLIR_SEEDS += [print_ir(parse_source(text, "seed.py")) for text in PY_SEEDS[:8]]

TOKEN = re.compile(rb"[A-Za-z_][A-Za-z_0-9.]*|\d+(?:\.\d*)?(?:e-?\d+)?|%\w+|!\w+|\S|\s+")
INSERTS = [b"(", b")", b"[", b"]", b"{", b"}", b"<", b">", b",", b":", b"=", b"->", b"%0", b"%x",
           b"!ax.tensor<[M], f32>", b"ax.add", b"ax.matmul", b"func.func", b"return ", b"def ",
           b"\n", b"    ", b"\t", b"#", b"\"", b"'", b"-1", b"0", b"1e309", b"nan", b"f32", b"bf16",
           b"exp(", b"axis=", b"x", b"M", b"@", b"**", b"\\", b"\xe9", b"\xff\xfe", b"\xef\xbb\xbf",
           b"\x00", "\u00e9".encode(), b"ax.generic", b"form = \"out[d0 < M] = in0[d0 + 5]\""]
PIPELINES: list[list[str]] = [
    [], ["-p", "canonicalize"], ["-p", "build-nugraph"],
    ["-p", "propagate{max_iterations=1 time_limit=2.0}"], ["-p", "verify-equivalence"],
]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> bytes:
    """A seed with one to four token- or byte-level mutations."""
    data = draw(st.sampled_from(seeds)).encode()
    for _ in range(draw(st.integers(1, 4))):
        tokens = TOKEN.findall(data) or [b""]
        at = draw(st.integers(0, len(tokens) - 1))
        how = draw(st.sampled_from(["delete", "duplicate", "insert", "swap", "truncate", "byte"]))
        if how == "delete":
            del tokens[at]
        elif how == "duplicate":
            tokens.insert(at, tokens[at])
        elif how == "insert":
            tokens.insert(at, draw(st.sampled_from(INSERTS)))
        elif how == "swap":
            other = draw(st.integers(0, len(tokens) - 1))
            tokens[at], tokens[other] = tokens[other], tokens[at]
        elif how == "truncate":
            tokens = tokens[:at]
        else:
            tokens.insert(at, bytes([draw(st.integers(0, 255))]))
        data = b"".join(tokens)
    return data


random_text = st.binary(max_size=200) | st.text(max_size=200).map(lambda s: s.encode())


@contextlib.contextmanager
def budget(seconds: int) -> Iterator[None]:
    """Fail the example (not the whole run) when it runs past `seconds`."""

    def hang(_signum: int, _frame: object) -> None:
        raise TimeoutError(f"input ran past its {seconds} s budget")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_tool(main: Callable[[list[str]], None], argv: list[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of one in-process run of a console entry point."""
    out, err = io.StringIO(), io.StringIO()
    status = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), budget(BUDGET_S):
        try:
            main(argv)
        except SystemExit as exit_:
            status = exit_.code if isinstance(exit_.code, int) else 1
    return status, out.getvalue(), err.getvalue()


def check_run(tool: str, main: Callable[[list[str]], None], path: Path,
              extra: list[str]) -> None:
    data = path.read_bytes()
    status, out, err = run_tool(main, [str(path), *extra])
    assert path.read_bytes() == data, "the input file was changed"
    assert TRACEBACK not in err and TRACEBACK not in out, err
    if status == 0:
        return
    assert status == 1, f"exit status {status}: {err}"
    first = err.strip().splitlines()[0] if err.strip() else ""
    assert LOCATED.match(first) or first.startswith(f"{tool}: error: "), (
        f"not a diagnostic: {err!r}")


TRACEBACK = "Traceback (most recent call last)"

FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(data=mutated(PY_SEEDS) | random_text, pipeline=st.sampled_from(PIPELINES))
def test_axon_opt_on_mutated_sources(workdir: Path, data: bytes, pipeline: list[str]) -> None:
    path = workdir / "prog.py"
    path.write_bytes(data)
    check_run("axon-opt", axon_opt.main, path, pipeline)


@FUZZ
@given(data=mutated(MLIR_SEEDS) | random_text, pipeline=st.sampled_from(PIPELINES))
def test_axon_opt_on_mutated_mlir(workdir: Path, data: bytes, pipeline: list[str]) -> None:
    path = workdir / "prog.mlir"
    path.write_bytes(data)
    check_run("axon-opt", axon_opt.main, path, pipeline)


@FUZZ
@given(data=mutated(PY_SEEDS) | random_text)
def test_axon_on_mutated_sources(workdir: Path, data: bytes) -> None:
    path = workdir / "main.py"
    path.write_bytes(data)
    check_run("axon", axon_main.main, path, ["--quiet"])
