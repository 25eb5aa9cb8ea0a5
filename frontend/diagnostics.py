"""Located user errors of the source frontend: `file:line:col: error: message`, then the source
line and a caret."""

from __future__ import annotations


class SourceError(Exception):
    """A mistake in an Axon source file, with where it is.

    `str()` gives the compiler-style diagnostic:

        prog.py:3:9: error: unknown name 'expp'; did you mean 'exp'?
            y = expp(x)
                ^
    """

    def __init__(self, message: str, filename: str, line: int, column: int, source_line: str):
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.line = line
        self.column = column
        self.source_line = source_line

    def __str__(self) -> str:
        text = self.source_line.rstrip("\r\n").expandtabs(1)
        caret = " " * max(self.column - 1, 0) + "^"
        return (f"{self.filename}:{self.line}:{self.column}: error: {self.message}\n"
                f"{text}\n{caret}")


def source_error(message: str, text: str, filename: str, line: int, column: int) -> SourceError:
    """A SourceError at 1-based `line`:`column` of `text`."""
    lines = text.splitlines()
    source_line = lines[line - 1] if 0 < line <= len(lines) else ""
    return SourceError(message, filename, line, column, source_line)
