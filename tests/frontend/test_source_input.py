"""What the source frontend reads: a file's bytes, UTF-8 with an optional byte-order mark; any
other bytes are a located error, from the library and from both commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from axon.frontend.diagnostics import SourceError
from axon.frontend.numpy_subset import decode_source, parse_file, parse_source
from axon.tools import axon_main, axon_opt, embed

PROGRAM = "def f(x: f32[N]):\n    return x\n"
BOM = b"\xef\xbb\xbf"
LATIN1 = b"# caf\xe9\n" + PROGRAM.encode()


def _error(source: str | bytes) -> list[str]:
    with pytest.raises(SourceError) as info:
        parse_source(source, "prog.py")
    return str(info.value).split("\n")


def test_bytes_that_are_not_utf8_are_a_located_error() -> None:
    first, source_line, caret = _error(LATIN1)
    assert first.startswith("prog.py:1:6: error: source is not valid UTF-8: byte 0xe9"), first
    assert source_line == "# caf\ufffd"
    assert caret == "     ^"


def test_the_column_counts_characters_and_the_line_is_the_bad_bytes_line() -> None:
    good = "def f(x: f32[N]):\n    # é ü\n    return x  # ñ"
    first, _, caret = _error(good.encode() + b"\xff\n")
    column = len(good.rsplit("\n", 1)[1]) + 1
    assert first.startswith(f"prog.py:3:{column}: error: source is not valid UTF-8: byte 0xff")
    assert caret == " " * (column - 1) + "^"


def test_a_byte_order_mark_is_not_counted_in_the_column() -> None:
    first, _, _ = _error(BOM + LATIN1)
    assert first.startswith("prog.py:1:6: error: source is not valid UTF-8")


@pytest.mark.parametrize("source", [BOM + PROGRAM.encode(), "\ufeff" + PROGRAM, PROGRAM.encode()],
                         ids=["bom bytes", "bom text", "bytes"])
def test_utf8_bytes_and_a_byte_order_mark_are_accepted(source: str | bytes) -> None:
    assert str(parse_source(source, "prog.py")) == str(parse_source(PROGRAM, "prog.py"))


def test_decode_source() -> None:
    assert decode_source(BOM + "é = 1\n".encode()) == "é = 1\n"
    with pytest.raises(SourceError, match=r"^x\.py:2:1: error: source is not valid UTF-8"):
        decode_source(b"ok\n\x80\n", "x.py")


def test_parse_file_and_embed_read_bytes(tmp_path: Path) -> None:
    path = tmp_path / "latin.py"
    path.write_bytes(LATIN1)
    with pytest.raises(SourceError, match=r"latin\.py:1:6: error: source is not valid UTF-8"):
        parse_file(path)
    with pytest.raises(SourceError, match=r"^f\.py:1:6: error: source is not valid UTF-8"):
        embed.parse_source(LATIN1, "f.py")
    path.write_bytes(BOM + PROGRAM.encode())
    assert "func.func @f" in str(parse_file(path))


@pytest.mark.parametrize("main", [axon_opt.main, axon_main.main], ids=["axon-opt", "axon"])
def test_commands_report_non_utf8_files_and_accept_a_bom(
        main: Callable[[list[str]], None], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    latin = tmp_path / "latin.py"
    latin.write_bytes(LATIN1)
    with pytest.raises(SystemExit) as exited:
        main([str(latin)])
    err = capsys.readouterr().err
    assert exited.value.code == 1
    assert err.startswith(f"{latin}:1:6: error: source is not valid UTF-8: byte 0xe9"), err
    assert "Traceback" not in err
    bom = tmp_path / "bom.py"
    bom.write_bytes(BOM + PROGRAM.encode())
    main([str(bom)])
    assert "func.func @f" in capsys.readouterr().out
