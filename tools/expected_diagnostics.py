"""`expected-error` annotations, checked by `axon-opt --verify-diagnostics` as `mlir-opt
-verify-diagnostics` checks them.

An input that holds annotations states which diagnostic each chunk must produce:

    // expected-error {{result type is}}          the diagnostic is on this line
    // expected-error @+1 {{'ax.exp': operand}}   on the next line (@-2: two lines up)
    // expected-error @below {{...}}              on the next line that is not an annotation
    // expected-error @unknown {{...}}            a diagnostic without a location

(`#` instead of `//` in a `.py` program). The text between `{{` and `}}` must occur in the
diagnostic's message. Every annotation must be met by a diagnostic of its chunk, and every
diagnostic of the input must be annotated; each miss is one located line, and the command exits 1.
An input without any annotation is not checked: its diagnostics are printed, as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.utils.exceptions import ParseError

ANNOTATION = re.compile(
    r"(?://|#)\s*expected-(?P<kind>error|warning|note|remark)\s*"
    r"(?:@(?P<where>[+-]\d+|above|below|unknown))?\s*\{\{(?P<text>.*?)\}\}")
#: `file:line:col: error: message` at the start of a diagnostic
_LOCATED = re.compile(
    r"^(?P<file>[^\s:][^:\n]*):(?P<line>\d+):(?P<column>\d+): error: (?P<message>.*)", re.S)


@dataclass(frozen=True)
class Expected:
    """One annotation: what kind and text it expects, on which line of the input (None:
    `@unknown`, a diagnostic without a location); where it is written, for reporting a miss."""

    kind: str
    text: str
    line: int | None
    written_at: tuple[int, int]


@dataclass(frozen=True)
class Produced:
    """One diagnostic: its line and column in the input (None: unlocated) and its message."""

    line: int | None
    column: int | None
    message: str

    @staticmethod
    def of_parse_error(err: ParseError) -> Produced:
        where = err.span.get_location()
        return Produced(where.line, where.col, err.msg)

    @staticmethod
    def of_text(text: str) -> Produced:
        """A diagnostic's text: `file:line:col: error: message` (then the source line), or a
        message without a location."""
        located = _LOCATED.match(text)
        if located is None:
            return Produced(None, None, text)
        return Produced(int(located["line"]), int(located["column"]), located["message"])


def find_annotations(text: str, first_line: int = 1) -> list[Expected]:
    """The annotations of a chunk whose first line is line `first_line` of the input."""
    lines = text.split("\n")
    annotated = {i for i, line in enumerate(lines) if ANNOTATION.search(line)}
    found = []
    for i, line in enumerate(lines):
        for match in ANNOTATION.finditer(line):
            where = match["where"]
            target: int | None
            if where is None:
                target = i
            elif where == "unknown":
                target = None
            elif where in ("above", "below"):
                step = -1 if where == "above" else 1
                target = i + step
                while target in annotated:
                    target += step
            else:
                target = i + int(where)
            found.append(Expected(match["kind"], match["text"],
                                  None if target is None else target + first_line,
                                  (i + first_line, match.start() + 1)))
    return found


def mismatches(filename: str, expected: list[Expected], produced: list[Produced]) -> list[str]:
    """One located line per annotation no diagnostic met and per diagnostic no annotation
    expected; none when they agree."""
    unmet = list(expected)
    problems = []
    for diagnostic in produced:
        match = next((e for e in unmet if e.kind == "error" and e.line == diagnostic.line
                      and e.text in diagnostic.message), None)
        if match is not None:
            unmet.remove(match)
            continue
        first = diagnostic.message.strip().splitlines()[0] if diagnostic.message.strip() else ""
        if diagnostic.line is None:
            problems.append(f"{filename}:1:1: error: unexpected error without a location (an "
                            f"expected-error @unknown annotation expects one): {first}")
        else:
            problems.append(f"{filename}:{diagnostic.line}:{diagnostic.column}: error: "
                            f"unexpected error: {first}")
    for e in unmet:
        at = "@unknown" if e.line is None else f"line {e.line}"
        problems.append(f"{filename}:{e.written_at[0]}:{e.written_at[1]}: error: expected "
                        f"{e.kind} at {at} was not produced: {{{{{e.text}}}}}")
    return problems
