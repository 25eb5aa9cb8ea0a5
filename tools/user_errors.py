"""Turning user mistakes into one diagnostic on stderr and a non-zero exit, without a traceback.

Both console scripts (`axon-opt`, `axon`) run their body through `exit_on_user_error`. A user error
is something the user can fix by changing the input or the command line: malformed IR, IR that fails
verification, a located source-frontend error, a missing file, an unknown pass or bad pass options,
a bad command-line argument. It prints one diagnostic and exits with status 1.

Anything else is a bug in Axon: it prints one line, `tool: internal error: ...`, and exits with
status 2; run again with `--debug` for the traceback a bug report needs. Ctrl-C exits with 130.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from typing import NoReturn

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

#: `file:line:col: error:` at the start of a diagnostic
LOCATED = re.compile(r"^[^\s:][^:\n]*:\d+:\d+: error:")


#: exit statuses: a user error, a bug in Axon, an interrupt (128 + SIGINT)
USER_ERROR, INTERNAL_ERROR, INTERRUPTED = 1, 2, 130


class UsageError(Exception):
    """A mistake on the command line (unknown pass, bad pass options, output path = input path)."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with its errors as `UsageError`s: one line and status 1, like every other user
    error (argparse's own status 2 is the one an internal error exits with)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} ({self.prog} --help lists the options)")


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
        # xDSL's lexer forgets an f-string prefix: "Expected suffix identifier after {first_char}"
        message = err.msg.replace("{first_char}", repr(err.span.text[:1]))
        return f"{where.file}:{where.line}:{where.col}: error: {message}\n{context}"
    if isinstance(err, DiagnosticException | UsageError | ArgSpecParseError) or (
            source_error is not None and isinstance(err, source_error)):
        text = str(err)
        if not (LOCATED.match(text) or text.startswith("error: ")):
            text = f"error: {text}"
        return "\n".join([text, *getattr(err, "__notes__", [])]).rstrip()
    if isinstance(err, OSError) and err.filename is not None:
        return f"error: cannot open '{err.filename}': {err.strerror}"
    if isinstance(err, UnicodeDecodeError):  # an input read where no reader locates it
        return (f"error: the input is not UTF-8 text (byte 0x{err.object[err.start]:02x} at "
                f"offset {err.start})")
    return None


def internal_error(tool: str, err: BaseException) -> str:
    """The one line that reports a bug in Axon (the traceback is for `--debug`)."""
    text = str(err).strip().splitlines()
    detail = f"{type(err).__name__}: {text[0]}" if text else type(err).__name__
    return (f"{tool}: internal error: {detail} (a bug in Axon, not in the input; run again with "
            "--debug for the traceback)")


def exit_on_user_error(tool: str, body: Callable[[], object], debug: bool = False) -> None:
    """Run `body`; on a user error print the diagnostic to stderr and exit with status 1; on any
    other exception print one `internal error` line and exit with status 2 (with `debug`, let it
    propagate with its traceback instead).

    An unlocated diagnostic is prefixed with the tool's name (`axon-opt: error: ...`), as
    compilers do; a located one starts with its location."""
    try:
        body()
    except BrokenPipeError:
        # the reader (`| head`, a FileCheck that stopped early) went away: not worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(USER_ERROR)
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"{tool}: interrupted", file=sys.stderr)
        sys.exit(INTERRUPTED)
    except (Exception, ArgSpecParseError) as err:  # ArgSpecParseError is a BaseException
        message = describe(err)
        if message is None:
            if debug:
                raise
            print(internal_error(tool, err), file=sys.stderr)
            sys.exit(INTERNAL_ERROR)
        print(message if LOCATED.match(message) else f"{tool}: {message}", file=sys.stderr)
        sys.exit(USER_ERROR)
