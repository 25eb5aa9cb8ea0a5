"""`axon.tools.locations`: ops located in linear time, and the parse errors MLIR words better."""

from __future__ import annotations

import signal

import pytest
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Location, Span

from axon.tools import embed

T = "!ax.tensor<[M], f32>"


def chain(n: int) -> str:
    """A function of `n` dependent `ax.exp` ops, one per line."""
    body = "".join(f"  %v{i + 1} = ax.exp %v{i} : ({T}) -> {T}\n" for i in range(n))
    return f"func.func @f(%v0: {T}) -> {T} {{\n{body}  func.return %v{n} : {T}\n}}\n"


def parse_error(text: str) -> ParseError:
    with pytest.raises(ParseError) as caught:
        embed.parse_mlir(text, "in.mlir")
    return caught.value


def test_locating_ops_does_not_rescan_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """xDSL's `Span.get_location` counts the newlines from the start of the text: called once per
    op it made parsing quadratic (8000 ops: 35 s). Ops are located by bisection instead."""
    calls = []
    original = Span.get_location

    def counting(span: Span[str]) -> Location:
        calls.append(span)
        return original(span)

    monkeypatch.setattr(Span, "get_location", counting)
    module = embed.parse_mlir(chain(200), "chain.mlir")
    assert calls == []
    ops = list(module.walk())
    last_exp = [op for op in ops if op.name == "ax.exp"][-1]
    assert str(last_exp.location) == "loc(\"chain.mlir\":201:3)"


def test_unclosed_region_names_where_it_opened() -> None:
    text = f"func.func @f(%x: {T}) -> {T} {{\n  func.return %x : {T}\n"
    err = parse_error(text)
    assert err.msg == "expected '}' to close the region opened at 1:64; the input ends first"


def test_stray_token_in_a_region() -> None:
    err = parse_error(f"func.func @f(%x: {T}) -> {T} {{\n  )\n  func.return %x : {T}\n}}\n")
    assert err.msg == ("expected an operation or '}' to close the region opened at 1:64, "
                       "found ')'")
    assert err.span.get_location()[1:] == (2, 3)


def test_undefined_value_is_reported_at_its_use() -> None:
    text = (f"func.func @f(%x: {T}) -> {T} {{\n  %a = ax.exp %y : ({T}) -> {T}\n"
            f"  %b = ax.exp %z : ({T}) -> {T}\n  func.return %a : {T}\n}}\n")
    err = parse_error(text)
    assert err.msg == "value %y is used but never defined (also never defined: %z)"
    assert err.span.get_location()[1:] == (2, 15)


def test_empty_input_is_an_empty_module() -> None:
    for text in ("", "\n", "// only a comment\n"):
        assert embed.print_ir(embed.parse_mlir(text)) == "builtin.module {\n}\n"


def test_a_string_never_closed_fails_at_once() -> None:
    # xDSL's string-literal pattern backtracked exponentially here (found by the fuzz test: a
    # comment's `//` mutated into `"/`); the diagnostic must come in well under the alarm
    def hang(_signum: int, _frame: object) -> None:
        raise TimeoutError("lexing an unclosed string took over 10 s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(10)
    try:
        err = parse_error('"/ RUN: axon-opt %s -p build-nugraph | filecheck %s' + " x" * 150)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert "closing string literal" in err.msg
