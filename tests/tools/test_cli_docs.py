"""docs/cli.md stays in step with the commands: the pass options as `axon-opt --help` lists them,
every option of `axon` and of `axon-bench`, and Axon's own options of `axon-opt`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from axon.tools import axon_bench, axon_main, axon_opt

ROOT = Path(__file__).resolve().parents[2]
CLI = (ROOT / "docs" / "cli.md").read_text()


def test_pass_options_are_documented() -> None:
    assert axon_opt.passes_help() in CLI, (
        "docs/cli.md's pass list is stale: paste in the output of "
        "`python -c 'from axon.tools.axon_opt import passes_help; print(passes_help())'`")


def test_every_axon_option_is_documented(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        axon_main.main(["--help"])
    options = set(re.findall(r"(?<![\w-])--?[a-z][a-z-]*", capsys.readouterr().out))
    missing = sorted(o for o in options - {"-h", "--help"} if f"`{o}" not in CLI)
    assert not missing, f"docs/cli.md does not document axon's {missing}"


@pytest.mark.parametrize("option", ["-p", "-o", "-f", "-t", "--split-input-file",
                                    "--verify-diagnostics", "--parsing-diagnostics", "--progress",
                                    "--quiet", "--debug", "--version"])
def test_axon_opt_options_are_documented(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        axon_opt.main(["--help"])
    assert option in capsys.readouterr().out
    assert f"`{option}" in CLI


def test_every_axon_bench_option_is_documented() -> None:
    options = {o for action in axon_bench.parser()._actions for o in action.option_strings}
    missing = sorted(o for o in options - {"-h", "--help"} if f"`{o}" not in CLI)
    assert not missing, f"docs/cli.md does not document axon-bench's {missing}"
    assert options >= {"--run", "--json", "--plot", "--cases", "--repeats", "--timeout"}
