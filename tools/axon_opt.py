"""`axon-opt`: xDSL's optimizer driver with Axon's dialects, passes and Python-source frontend.

Registrations plus thin hooks into xDSL's driver (as MLIR's `mlir-opt.cpp` is registrations plus
`MlirOptMain`): the dialects and passes come from `axon.tools.registry`, source locations from
`axon.tools.locations`, the error policy from `axon.tools.user_errors`. The hooks only translate:
exceptions into located diagnostics, a bad `-p` into a usage error.

    axon-opt in.mlir -p canonicalize,cse          # ax IR through xDSL passes
    axon-opt prog.py                               # a NumPy-subset program, parsed to ax IR
    axon-opt bad.mlir --split-input-file --verify-diagnostics   # print each diagnostic, exit 0

A user error (malformed or invalid IR, a located source error, a missing file, an unknown pass or
bad pass options) prints one diagnostic on stderr and exits with status 1.
"""

from __future__ import annotations

import os
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from axon.tools.embed import parse_source
from axon.tools.locations import LocatingParser, locate_verify_error
from axon.tools.registry import get_all_dialects, get_all_passes
from axon.tools.user_errors import UsageError, exit_on_user_error, source_error_type


class SourceDiagnostic(DiagnosticException):
    """A source-frontend error carried as an xDSL diagnostic, so that `--verify-diagnostics`
    prints it and exits 0, exactly as it does for verifier errors."""


class AxonOptMain(xDSLOptMain):
    """xDSL's `xdsl-opt` plus Axon's dialects, passes, the `.py` frontend, located verifier
    errors, and a refusal to overwrite the input file."""

    version_format = "axon-opt (xdsl {xdsl_version})"
    #: lines of the input file before the chunk being parsed (non-zero under --split-input-file)
    _chunk_line_offset: int = 0

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, factory in get_all_dialects().items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["mlir"] = self._parse_mlir
        self.available_frontends["py"] = self._parse_python_source

    def _parse_mlir(self, stream: IO[bytes]) -> ModuleOp:
        parser = LocatingParser(self.ctx, stream.read(), self.get_input_name(),
                                self._chunk_line_offset)
        return parser.parse_module(not self.args.no_implicit_module)

    def _parse_python_source(self, stream: IO[bytes]) -> ModuleOp:
        text = stream.read().decode()
        source_error = source_error_type()
        try:
            return parse_source("\n" * self._chunk_line_offset + text, self.get_input_name())
        except Exception as err:
            if source_error is not None and isinstance(err, source_error):
                raise SourceDiagnostic(str(err)) from None
            raise

    def parse_chunk(self, chunk: IO[bytes], file_extension: str,
                    start_offset: int = 0) -> ModuleOp | None:
        # Padding a `.py` chunk with the lines before it keeps `file:line:col` right under
        # --split-input-file (xDSL shifts MLIR parse errors itself).
        self._chunk_line_offset = start_offset
        return super().parse_chunk(chunk, file_extension, start_offset)

    def apply_passes(self, prog: ModuleOp) -> None:
        try:
            super().apply_passes(prog)
        except VerifyException as err:
            raise locate_verify_error(err, prog) from None

    def setup_pipeline(self) -> None:
        try:
            super().setup_pipeline()
        except (ValueError, ArgSpecParseError) as err:
            raise UsageError(f"invalid pass pipeline '{self.args.passes}': {err} "
                             "(axon-opt --help lists the passes)") from None

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        try:
            return super().prepare_input()
        except ValueError as err:  # an unknown file extension
            raise UsageError(f"{err} (use -f to pick a frontend: "
                             f"{', '.join(self.available_frontends)})") from None

    def run(self) -> None:
        out, src = self.args.output_file, self.args.input_file
        if out is not None and src is not None and os.path.exists(out) and os.path.samefile(
                out, src):
            raise UsageError(f"refusing to overwrite the input file '{src}' with -o")
        super().run()


def main(args: list[str] | None = None) -> None:
    """Console entry point (`axon-opt`)."""
    exit_on_user_error("axon-opt", lambda: AxonOptMain(
        description="Axon's modular optimizer driver", args=args).run())


if __name__ == "__main__":
    main()
