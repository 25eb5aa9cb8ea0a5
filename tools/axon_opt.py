"""`axon-opt`: xDSL's optimizer driver with Axon's dialects, passes and Python-source frontend.

Registrations plus thin hooks into xDSL's driver (as MLIR's `mlir-opt.cpp` is registrations plus
`MlirOptMain`): the dialects and passes come from `axon.tools.registry`, source locations from
`axon.tools.locations`, the error policy from `axon.tools.user_errors`, `expected-error` checking
from `axon.tools.expected_diagnostics`, progress lines from `axon.tools.progress`. The hooks only
translate: exceptions into located diagnostics, a bad `-p` or `-t` into a usage error.

    axon-opt in.mlir -p canonicalize,cse          # ax IR through passes
    axon-opt prog.py                               # a NumPy-subset program, parsed to ax IR
    cat prog.py | axon-opt - -f py                 # `-` (or no file) reads stdin
    axon-opt bad.mlir --split-input-file --verify-diagnostics   # print each diagnostic, exit 0;
                                                   # with expected-error annotations, check them

A user error (malformed or invalid IR, a located source error, a missing file, an unknown pass,
bad pass options, a target that cannot print Axon IR) prints one diagnostic on stderr and exits
with status 1; a bug in Axon prints one `internal error` line and exits with 2 (`--debug` shows
its traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
from io import BytesIO
from typing import IO, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    ShrinkException,
    VerifyException,
)
from xdsl.utils.lexer import Input, Span
from xdsl.xdsl_opt_main import xDSLOptMain

from axon.tools import progress
from axon.tools.embed import parse_source
from axon.tools.expected_diagnostics import Produced, find_annotations, mismatches
from axon.tools.locations import LocatingParser, locate_verify_error
from axon.tools.pass_options import PassOptionError, describe_options, pass_summary
from axon.tools.registry import (
    AXON_TARGETS,
    DIALECT_SUMMARIES,
    GENERIC_UPSTREAM_PASSES,
    PassNameError,
    check_pass_names,
    get_all_dialects,
    get_all_passes,
    upstream_passes,
    upstream_targets,
)
from axon.tools.user_errors import UsageError, exit_on_user_error, source_error_type
from axon.tools.version import axon_version

#: a line no MLIR text starts with and most NumPy-subset programs do
_PYTHON_DEF = re.compile(r"^[ \t]*def[ \t]+\w+[ \t]*\(", re.M)


def passes_help() -> str:
    """Axon's passes with their options, one line each (in `--help` and in docs/cli.md).

    It imports the passes (for their options), so only `--help` builds it."""
    lines = []
    for name, factory in get_all_passes().items():
        pass_class = factory()
        lines.append(f"  {name:<20}{pass_summary(pass_class)}")
        lines += [f"      {line}" for line in describe_options(pass_class)]
    return "\n".join(lines)


def help_text() -> str:
    """What `axon-opt --help` shows first: Axon's dialects, passes and their options."""
    lines = ["Axon's pass driver: reads MLIR (.mlir; stdin with - or no file) or a NumPy-subset",
             "program (.py, docs/language.md), runs a pass pipeline (-p) and prints MLIR.", "",
             "Axon's dialects:"]
    lines += [f"  {name:<6}{summary}" for name, summary in DIALECT_SUMMARIES.items()]
    lines += ["", "Axon's passes (-p 'name{option=value ...}', several joined by commas; "
              "docs/cli.md):", passes_help()]
    lines += ["", f"xDSL passes that take Axon IR: {', '.join(GENERIC_UPSTREAM_PASSES)}",
              "Output: MLIR (-t mlir); xDSL's other targets and passes are for its own dialects."]
    return "\n".join(lines)


class SourceDiagnostic(DiagnosticException):
    """A source-frontend error carried as an xDSL diagnostic, so that `--verify-diagnostics`
    prints it and exits 0, exactly as it does for verifier errors."""


class AxonOptMain(xDSLOptMain):
    """xDSL's `xdsl-opt` plus Axon's dialects, passes, the `.py` frontend, located verifier
    errors, `expected-error` checking, progress lines and a refusal to overwrite the input."""

    version_format = f"axon-opt {axon_version()} (xdsl {{xdsl_version}})"
    #: lines of the input file before the chunk being parsed (non-zero under --split-input-file)
    _chunk_line_offset: int = 0

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        # Axon's first (the order --help lists them in), then xDSL's generic ones
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)
        upstream = upstream_passes()
        for name in GENERIC_UPSTREAM_PASSES:
            self.register_pass(name, upstream[name])

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets = {name: self.available_targets[name] for name in AXON_TARGETS}

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["mlir"] = self._parse_mlir
        self.available_frontends["py"] = self._parse_python_source

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        # the pass listing keeps its layout; argparse's errors become one-line usage errors
        arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
        arg_parser.error = self._command_line_error  # type: ignore[method-assign]
        shown = arg_parser.add_mutually_exclusive_group()
        shown.add_argument("-q", "--quiet", action="store_true",
                           help="no progress lines on stderr (the default when stderr is not "
                                "a terminal)")
        shown.add_argument("--progress", action="store_true",
                           help="a progress line on stderr for each step longer than 2 s, even "
                                "when stderr is not a terminal")
        arg_parser.add_argument("--debug", action="store_true",
                                help="show the traceback of an internal error")

    def _command_line_error(self, message: str) -> NoReturn:
        target = re.match(r"argument -t/--target: invalid choice: '([^']*)'", message)
        if target is None:
            raise UsageError(f"{message} (axon-opt --help lists the options)")
        name = target[1]
        what = (f"'{name}' is an xDSL target for its own dialects; it cannot print Axon IR"
                if name in upstream_targets() else f"unknown target '{name}'")
        raise UsageError(f"{what} (axon-opt prints MLIR: -t {', '.join(AXON_TARGETS)})")

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        if self.args.input_file == "-":
            return sys.stdin.buffer, "mlir"
        return super().get_input_stream()

    def get_input_name(self) -> str:
        return "stdin" if self.args.input_file in (None, "-") else str(self.args.input_file)

    def _parse_mlir(self, stream: IO[bytes]) -> ModuleOp:
        data = stream.read()
        try:
            text = data.decode()
        except UnicodeDecodeError as err:
            line = data.count(b"\n", 0, err.start) + 1 + self._chunk_line_offset
            col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
            raise DiagnosticException(
                f"{self.get_input_name()}:{line}:{col}: error: the input is not UTF-8 text "
                f"(byte 0x{data[err.start]:02x})") from None
        try:  # the parser lexes its first token as it starts
            parser = LocatingParser(self.ctx, text, self.get_input_name(),
                                    self._chunk_line_offset)
            return parser.parse_module(not self.args.no_implicit_module)
        except ParseError as err:
            looks_like_python = _PYTHON_DEF.search(text)
            if looks_like_python is None:
                raise
            raise ParseError(
                Span(looks_like_python.start(), looks_like_python.end(),
                     Input(text, self.get_input_name())),
                "expected MLIR, but this looks like a NumPy-subset program: read it with -f py "
                "(a .py file name picks that frontend)") from err

    def _parse_python_source(self, stream: IO[bytes]) -> ModuleOp:
        text = stream.read()
        source_error = source_error_type()
        try:
            return parse_source(b"\n" * self._chunk_line_offset + text, self.get_input_name())
        except Exception as err:
            if source_error is not None and isinstance(err, source_error):
                raise SourceDiagnostic(str(err)) from None
            raise

    def parse_chunk(self, chunk: IO[bytes], file_extension: str,
                    start_offset: int = 0) -> ModuleOp | None:
        # Padding a `.py` chunk with the lines before it keeps `file:line:col` right under
        # --split-input-file (xDSL shifts MLIR parse errors itself).
        self._chunk_line_offset = start_offset
        with progress.step(f"parsing {self.get_input_name()}"):
            return super().parse_chunk(chunk, file_extension, start_offset)

    def apply_passes(self, prog: ModuleOp) -> None:
        try:
            with progress.step(f"-p {self.args.passes}"):
                super().apply_passes(prog)
        except VerifyException as err:
            raise locate_verify_error(err, prog) from None

    def setup_pipeline(self) -> None:
        try:
            check_pass_names(self.args.passes)
            super().setup_pipeline()
        except (PassNameError, PassOptionError) as err:
            raise UsageError(str(err)) from None
        except (ValueError, ArgSpecParseError) as err:
            raise UsageError(f"invalid pass pipeline '{self.args.passes}': {err}") from None

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        try:
            return super().prepare_input()
        except ValueError as err:  # an unknown file extension
            raise UsageError(f"{err} (use -f to pick a frontend: "
                             f"{', '.join(self.available_frontends)})") from None

    def run(self) -> None:
        out, src = self.args.output_file, self.args.input_file
        if out is not None and src not in (None, "-") and os.path.exists(out) and (
                os.path.samefile(out, src)):
            raise UsageError(f"refusing to overwrite the input file '{src}' with -o")
        # axon-opt's stderr is often read by scripts and FileCheck: progress lines only on a
        # terminal unless asked for (as git does); `axon` shows them by default
        if self.args.progress or (not self.args.quiet and sys.stderr.isatty()):
            progress.enable("axon-opt")
        try:
            self._run_chunks()
        finally:
            progress.disable()

    def _run_chunks(self) -> None:
        """xDSL's loop over the input's chunks, collecting each chunk's diagnostic for
        `expected-error` checking."""
        streams, file_extension = self.prepare_input()
        chunks = []
        for stream, offset in streams:
            chunks.append((stream.read(), offset))
            stream.close()
        expected = [find_annotations(data.decode(errors="replace"), offset + 1)
                    for data, offset in chunks] if self.args.verify_diagnostics else []
        checking = any(expected)
        problems: list[str] = []
        output = self.prepare_output()
        try:
            for i, (data, offset) in enumerate(chunks):
                if i > 0:
                    output.write("// -----\n")
                produced = self._run_chunk(data, offset, file_extension, output, checking)
                if checking:
                    problems += mismatches(self.get_input_name(), expected[i], produced)
        except ShrinkException:
            print("Success, can shrink")  # xDSL's --shrink protocol (for shrinkray)
            sys.exit(0)
        finally:
            if output is not sys.stdout:
                output.close()
        if self.args.shrink:
            print("Failure, can't shrink")
            sys.exit(1)
        if problems:
            raise DiagnosticException("\n".join(problems))

    def _run_chunk(self, data: bytes, offset: int, file_extension: str, output: IO[str],
                   checking: bool) -> list[Produced]:
        """Parse, transform and print one chunk; its diagnostic when one is printed rather than
        raised (--verify-diagnostics, --parsing-diagnostics)."""
        try:
            module = self.parse_chunk(BytesIO(data), file_extension, offset)
            if module is not None:
                self.apply_passes(module)
                output.write(self.output_resulting_program(module))
            output.flush()
        except ParseError as err:
            err.span = dataclasses.replace(err.span, line_offset=offset)
            if not (self.args.parsing_diagnostics or checking):
                raise
            print(err)
            return [Produced.of_parse_error(err)]
        except DiagnosticException as err:
            if not self.args.verify_diagnostics:
                raise
            print(err)
            for note in getattr(err, "__notes__", []):
                print(note)
            return [Produced.of_text(str(err))]
        return []


def main(args: list[str] | None = None) -> None:
    """Console entry point (`axon-opt`)."""
    argv = sys.argv[1:] if args is None else args
    wants_help = any(a in ("-h", "--help") or (len(a) > 3 and "--help".startswith(a))
                     for a in argv)
    description = help_text() if wants_help else "Axon's pass driver"
    def body() -> None:
        AxonOptMain(description=description, args=argv).run()

    exit_on_user_error("axon-opt", body, debug="--debug" in argv)


if __name__ == "__main__":
    main()
