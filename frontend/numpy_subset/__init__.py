"""The NumPy-subset source language: `.py` files parsed, never executed.

    from axon.frontend.numpy_subset import parse_source
    module = parse_source(text, "prog.py")   # ModuleOp, or SourceError with file:line:col

`parse_source` takes the text or the file's bytes (`decode_source`: UTF-8, a byte-order mark
allowed). One folder per input language (`frontend/numpy_subset/` today; room for
`frontend/triton/` and `frontend/torch/`); all of them build IR through the shared builders in
`frontend/builders.py`.
"""

from axon.frontend.numpy_subset.source import SourceError, decode_source, parse_file, parse_source

__all__ = ["SourceError", "decode_source", "parse_file", "parse_source"]
