"""`propagate`'s options: typed and range-checked when the pipeline is parsed, before any work;
`sizes` names checked against the program's size symbols."""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import DiagnosticException

from axon.passes.propagate import PropagatePass
from axon.tools import embed
from axon.tools.pass_options import PassOptionError, describe_options

PROGRAM = "def f(x: f32[M, K], w: f32[K, N]):\n    return sum(x @ w, axis=1)\n"


def test_an_integer_is_a_valid_float() -> None:
    (made,) = embed.parse_pipeline("propagate{time_limit=5}").passes
    assert isinstance(made, PropagatePass) and made.time_limit == 5.0
    assert isinstance(made.time_limit, float)


@pytest.mark.parametrize("options, message", [
    ('emit="top-k" top_k=0', "propagate: top_k must be an integer >= 1, not 0"),
    ("top_k=-3", "propagate: top_k must be an integer >= 1, not -3"),
    ("max_iterations=0", "propagate: max_iterations must be an integer >= 1, not 0"),
    ("max_nodes=-1", "propagate: max_nodes must be an integer >= 1, not -1"),
    ("proof_rlimit=0", "propagate: proof_rlimit must be an integer >= 1, not 0"),
    ("proof_seconds=0", "propagate: proof_seconds must be a number > 0, not 0.0"),
    ("time_limit=0", "propagate: time_limit must be a number > 0, not 0.0"),
    ("max_iterations=2.5", "propagate: max_iterations must be an integer >= 1, not 2.5"),
    ('max_iterations="many"', "propagate: max_iterations must be an integer >= 1, not 'many'"),
    ("report=1", "propagate: report must be true or false, not 1"),
    ('emit="bogus"', "propagate: emit must be one of best, graph, top-k, not 'bogus'"),
    ('device="a100"', "propagate: unknown device 'a100'; known: h200, "),
    ('sizes="=5"', "propagate: sizes entry '=5' is not NAME=INTEGER (e.g. sizes=\"M=1024"),
    ('sizes="M=1,K"', "propagate: sizes entry 'K' is not NAME=INTEGER"),
    ('sizes="M=0"', "propagate: sizes entry 'M=0' gives M the size 0; sizes are at least 1"),
])
def test_bad_options_are_refused_when_the_pipeline_is_parsed(options: str, message: str) -> None:
    with pytest.raises(PassOptionError) as refused:
        embed.parse_pipeline(f"propagate{{{options}}}")
    assert str(refused.value).startswith(message)


def test_a_size_the_program_does_not_have_is_an_error() -> None:
    module = embed.parse_source(PROGRAM, "f.py")
    with pytest.raises(DiagnosticException) as refused:
        embed.run_pipeline(module, 'propagate{sizes="M=64,Q=5"}')
    assert str(refused.value) == ("propagate: sizes names Q, which is not a size symbol of the "
                                  "program; its size symbols: K, M, N")


def test_sizes_bind_the_named_symbols() -> None:
    made = PropagatePass(sizes=" M=64 , K=8,")
    assert made.size_bindings() == {"M": 64, "K": 8}


def test_every_option_is_documented() -> None:
    lines = describe_options(PropagatePass)
    assert [line.split("=")[0] for line in lines] == [
        "max_iterations", "max_nodes", "max_proofs", "time_limit", "proof_steps", "proof_rlimit",
        "proof_seconds", "device", "sizes", "emit", "top_k", "report", "cache"]
    assert "top_k=3: programs that emit=\"top-k\" prints (an integer >= 1)" in lines
