"""The `sizes` option that passes share: size symbols' values, `NAME=INTEGER` joined by commas.

Propagation prices programs at these sizes and tiling ranks kernels and enumerates concrete
tile sizes at them; a name that no tensor type of the program mentions is a mistake (a typo
would otherwise leave the real size at its default silently).
"""

from __future__ import annotations

import re

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException

from axon.dialects.ax.tensor_type import TensorType

#: one `sizes` entry: a size symbol and a positive integer
SIZE_ENTRY = re.compile(r"\s*([A-Za-z_][A-Za-z_0-9]*)\s*=\s*([0-9]+)\s*")
#: what the option's help says a valid value is
SIZES_VALID = 'NAME=INTEGER entries joined by commas, e.g. "M=1024,K=4096"'


def sizes_problem(text: str) -> str | None:
    """Why `text` is not a list of `NAME=INTEGER` entries, or None."""
    for item in filter(str.strip, text.split(",")):
        match = SIZE_ENTRY.fullmatch(item)
        if match is None:
            return (f"sizes entry {item.strip()!r} is not NAME=INTEGER "
                    '(e.g. sizes="M=1024,K=4096")')
        if int(match[2]) < 1:
            return (f"sizes entry {item.strip()!r} gives {match[1]} the size {match[2]}; sizes "
                    "are at least 1")
    return None


def parse_sizes(text: str) -> dict[str, int]:
    """`text` (checked by `sizes_problem`) as a mapping."""
    return {m[1]: int(m[2]) for item in text.split(",") if item.strip()
            for m in [SIZE_ENTRY.fullmatch(item)] if m is not None}


def check_size_names(sizes: dict[str, int], module: ModuleOp, pass_name: str) -> None:
    """A DiagnosticException when `sizes` names a symbol no tensor type of `module` has."""
    symbols = {s for o in module.walk() for v in (*o.operands, *o.results)
               if isinstance(v.type, TensorType) for d in v.type.shape for s in d.symbols()}
    symbols |= {s for o in module.walk() for r in o.regions for b in r.blocks for a in b.args
                if isinstance(a.type, TensorType) for d in a.type.shape for s in d.symbols()}
    unknown = sorted(set(sizes) - symbols)
    if unknown:
        have = ", ".join(sorted(symbols)) if symbols else "none (every dim is a number)"
        raise DiagnosticException(
            f"{pass_name}: sizes names {', '.join(unknown)}, which "
            f"{'is not a size symbol' if len(unknown) == 1 else 'are not size symbols'} of the "
            f"program; its size symbols: {have}")
