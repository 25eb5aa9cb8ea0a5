"""The embedding API: Axon's IR, frontend and pass pipelines for another compiler, in-process.

The same registry as `axon-opt` (`axon.tools.registry`) backs it, so a pipeline string that works
on the command line works here, and the same exceptions that `axon-opt` turns into diagnostics
reach the caller instead:

- `xdsl.utils.exceptions.ParseError`: malformed MLIR text (`str()` is located, with context);
- `xdsl.utils.exceptions.VerifyException`: IR that fails verification (from a parse or a pass);
- `axon.frontend.diagnostics.SourceError`: a NumPy-subset program the frontend rejects
  (`str()` is `file:line:col: error: ...`);
- `ValueError`: an unknown pass (or one of xDSL's that does not take Axon IR), bad pass options
  (`axon.tools.pass_options.PassOptionError`, raised before any pass runs) or bad syntax in a
  pipeline string;
- `axon.tools.user_errors.UsageError`: `parse_source` in an installation without the frontend.

Example::

    from axon.tools import embed

    module = embed.parse_mlir(text)                  # or embed.parse_source(code, "prog.py")
    module = embed.run_pipeline(module, "canonicalize,cse")
    print(embed.print_ir(module))

`parse_pipeline` makes and checks a pipeline without running it (a bad pass name or option is a
`ValueError` before any work); `run_pipeline` rewrites the module in place (as MLIR's PassManager
does) and returns it for chaining; clone first (`module.clone()`) to keep the original.
"""

from __future__ import annotations

from io import StringIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import ArgSpecParseError

from axon.tools.locations import LocatingParser
from axon.tools.registry import available_passes, check_pass_names, register_dialects
from axon.tools.user_errors import UsageError


def make_context() -> Context:
    """A context that knows xDSL's dialects and Axon's (loaded lazily on first use)."""
    return register_dialects(Context())


def parse_mlir(text: str, name: str = "<string>", ctx: Context | None = None) -> ModuleOp:
    """Parse and verify MLIR text (custom or generic syntax); ops carry `name:line:col` locations.

    Top-level ops without an enclosing `builtin.module` are wrapped in one, as `axon-opt` does."""
    module = LocatingParser(ctx or make_context(), text, name).parse_module()
    module.verify()
    return module


def parse_source(text: str | bytes, filename: str) -> ModuleOp:
    """Parse a NumPy-subset program (see docs/language.md) into verified `ax` IR, one
    `func.func` per `def`. `text` is the program's text or its file's bytes (UTF-8, a leading
    byte-order mark allowed). Raises the frontend's located `SourceError` for a bad program,
    bytes that are not UTF-8 included."""
    try:
        from axon.frontend.numpy_subset import parse_source as frontend_parse_source
    except ModuleNotFoundError as err:
        if err.name not in ("axon.frontend.numpy_subset", "axon.frontend"):
            raise
        raise UsageError("the NumPy-subset frontend (axon.frontend.numpy_subset) is not available "
                         "in this installation") from None
    return frontend_parse_source(text, filename)  # verified by the frontend


def parse_pipeline(pipeline: str) -> PassPipeline:
    """The passes of an `axon-opt -p` pipeline string, made and checked (pass names, option types
    and ranges) without running anything; applying it verifies the module before the first pass
    and after each one. A ValueError says what is wrong."""

    def verify_between(_before: ModulePass | None, op: ModuleOp,
                       _after: ModulePass | None) -> None:
        op.verify()

    try:
        check_pass_names(pipeline)
        return PassPipeline.parse_spec(available_passes(), pipeline, verify_between)
    except ArgSpecParseError as err:  # a BaseException in xDSL; callers expect a ValueError
        raise ValueError(str(err)) from None


def run_pipeline(module: ModuleOp, pipeline: str, ctx: Context | None = None) -> ModuleOp:
    """Run an `axon-opt -p` pipeline (`"canonicalize,cse"`, `"pass{opt=1}"`) on `module` in place,
    verifying before the first pass and after each one; return `module`."""
    parse_pipeline(pipeline).apply(ctx or make_context(), module)
    return module


def print_ir(module: ModuleOp, generic: bool = False) -> str:
    """The module as MLIR text (custom syntax, or generic with `generic=True`), re-parseable by
    `parse_mlir` and `axon-opt`."""
    out = StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue() + "\n"
