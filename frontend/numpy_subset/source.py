"""The source frontend: parse a `.py` file in the Axon subset and build IR without running it.

    module = parse_source(text, "prog.py")   # ModuleOp, or SourceError with file:line:col

A file's bytes are decoded here (`decode_source`: UTF-8, a leading byte-order mark allowed),
tokenized in `tokens.py`, parsed into a tree in `syntax.py` and walked in `walker.py`, which calls
the builder functions of `frontend/builders.py`, the same ones the tracing API uses. Every stage
loops over explicit stacks: no Python recursion follows the program's size or shape.
"""

from __future__ import annotations

import codecs
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from axon.frontend.diagnostics import SourceError
from axon.frontend.numpy_subset.syntax import parse_tree
from axon.frontend.numpy_subset.tokens import tokenize
from axon.frontend.numpy_subset.walker import Walker

__all__ = ["SourceError", "decode_source", "parse_file", "parse_source"]


def decode_source(data: bytes, filename: str = "<source>") -> str:
    """The text of a source file's bytes: UTF-8, with a leading byte-order mark dropped.

    Bytes that are not UTF-8 raise a SourceError at the line and column of the first bad byte."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_start = data.rfind(b"\n", 0, err.start) + 1
        line_end = data.find(b"\n", err.start)
        source_line = data[line_start:line_end if line_end >= 0 else len(data)]
        column = len(data[line_start:err.start].decode("utf-8")) + 1
        raise SourceError(f"source is not valid UTF-8: byte 0x{data[err.start]:02x} "
                          f"({err.reason}); save the file as UTF-8", filename,
                          data.count(b"\n", 0, err.start) + 1, column,
                          source_line.decode("utf-8", errors="replace")) from None


def parse_source(source: str | bytes, filename: str = "<source>") -> ModuleOp:
    """Build a module with one `func.func` per `def` of `source`; SourceError on any mistake.

    `source` is the file's text, or its bytes (decoded by `decode_source`)."""
    text = decode_source(source, filename) if isinstance(source, bytes) \
        else source.removeprefix("\ufeff")
    with _cyclic_gc_paused():
        tree = parse_tree(tokenize(text), text, filename)
        module = Walker(text, filename).module(tree)
        module.verify()
    return module


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Python's cycle collector off for the duration: parsing allocates one growing graph of
    live objects (tree, ops, types), which each collection would rescan (a fifth of the time of
    a 10,000-statement program); it makes no garbage cycles worth collecting meanwhile."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_file(path: str | Path) -> ModuleOp:
    """parse_source on the file at `path` (its name is used in diagnostics)."""
    path = Path(path)
    return parse_source(path.read_bytes(), str(path))
