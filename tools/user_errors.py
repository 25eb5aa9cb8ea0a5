"""Turning user mistakes into one diagnostic on stderr and a non-zero exit, without a traceback.

Both console scripts (`axon-opt`, `axon`) run their body through `exit_on_user_error`. A user error
is something the user can fix by changing the input or the command line: malformed IR, IR that fails
verification, a located source-frontend error, a missing file, an unknown pass or bad pass options.
Anything else is a bug in Axon and keeps its traceback, because that is what a bug report needs.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

#: `file:line:col: error:` at the start of a diagnostic
LOCATED = re.compile(r"^[^\s:][^:\n]*:\d+:\d+: error:")


class UsageError(Exception):
    """A mistake on the command line (unknown pass, bad pass options, output path = input path)."""


def source_error_type() -> type[Exception] | None:
    """The source frontend's located error class, or None while that module does not exist.

    Imported lazily so the tools work before (and without) the Python frontend."""
    try:
        from axon.frontend.diagnostics import SourceError
    except ModuleNotFoundError as err:
        if err.name not in ("axon.frontend.diagnostics", "axon.frontend"):
            raise  # the module exists but is broken: a bug, keep the traceback
        return None
    return SourceError


def describe(err: BaseException) -> str | None:
    """The diagnostic for a user error, or None when `err` is not one (a bug in Axon).

    Located errors read `file:line:col: error: message`, then the source line and a caret."""
    source_error = source_error_type()
    if isinstance(err, ParseError):
        where = err.span.get_location()
        # xDSL's text is: the bare location, the source line, the carets, the message again
        context = str(err).split("\n", 1)[1].rstrip().removesuffix(err.msg).rstrip()
        return f"{where.file}:{where.line}:{where.col}: error: {err.msg}\n{context}"
    if isinstance(err, DiagnosticException | UsageError | ArgSpecParseError) or (
            source_error is not None and isinstance(err, source_error)):
        text = str(err)
        if not (LOCATED.match(text) or text.startswith("error: ")):
            text = f"error: {text}"
        return "\n".join([text, *getattr(err, "__notes__", [])]).rstrip()
    if isinstance(err, OSError) and err.filename is not None:
        return f"error: cannot open '{err.filename}': {err.strerror}"
    return None


def exit_on_user_error(tool: str, body: Callable[[], object]) -> None:
    """Run `body`; on a user error print the diagnostic to stderr and exit with status 1.

    An unlocated diagnostic is prefixed with the tool's name (`axon-opt: error: ...`), as
    compilers do; a located one starts with its location."""
    try:
        body()
    except BrokenPipeError:
        # the reader (`| head`, a FileCheck that stopped early) went away: not worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except (Exception, ArgSpecParseError) as err:  # ArgSpecParseError is a BaseException
        message = describe(err)
        if message is None:
            raise
        print(message if LOCATED.match(message) else f"{tool}: {message}", file=sys.stderr)
        sys.exit(1)
