"""Parameter specs shared by both frontends: `bf16["M", "K"]` names a dtype and a shape.

The API evaluates these objects in annotations; the source frontend builds the same objects from
the annotation text, so a parameter means the same thing either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from axon.dialects.ax.shapes import ShapeError, fmt_shape
from axon.dialects.ax.tensor_type import TensorType
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.intexpr import IntExpr, IntExprSyntaxError

#: memo of `TensorSpec.bind`, cleared whole when full
_BOUND: dict[tuple[TensorSpec, tuple[tuple[str, int], ...]], TensorType] = {}
_BOUND_LIMIT = 1 << 12


@dataclass(frozen=True)
class TensorSpec:
    """A parameter's type before sizes are bound: a dtype name and dims over size symbols."""

    dtype: str
    dims: tuple[IntExpr, ...]

    def bind(self, sizes: Mapping[str, int]) -> TensorType:
        """The tensor type with the given size symbols replaced by integers (one instance per
        spec and sizes: a model's layers repeat their parameters' specs)."""
        key = (self, tuple(sorted(sizes.items())))
        bound = _BOUND.get(key)
        if bound is None:
            if len(_BOUND) >= _BOUND_LIMIT:
                _BOUND.clear()
            bound = _BOUND[key] = self._bind(sizes)
        return bound

    def _bind(self, sizes: Mapping[str, int]) -> TensorType:
        dims = [d.substitute(sizes) for d in self.dims]
        for d in dims:
            if d.is_const and d.value < 0:
                raise ShapeError(f"dim {d} of {self} is negative under sizes {dict(sizes)}")
        return TensorType(dims, self.dtype)

    def symbols(self) -> frozenset[str]:
        """The size symbols this spec mentions."""
        return frozenset(s for d in self.dims for s in d.symbols())

    def __str__(self) -> str:
        return f"{self.dtype}{fmt_shape(self.dims)}"


@dataclass(frozen=True)
class DTypeSpec:
    """A dtype usable as `astype(x, f32)` and subscriptable to a TensorSpec: `f32["M", 4]`."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in DTYPES:
            raise ShapeError(f"unknown dtype {self.name!r}; expected one of {', '.join(DTYPES)}")

    def __getitem__(self, dims: Any) -> TensorSpec:
        if not isinstance(dims, tuple):
            dims = (dims,)
        return TensorSpec(self.name, tuple(as_dim(d) for d in dims))

    def __str__(self) -> str:
        return self.name


def as_dim(value: Any) -> IntExpr:
    """A dim from an int, a size-symbol name or expression text, or an IntExpr."""
    if isinstance(value, bool) or not isinstance(value, int | str | IntExpr):
        raise ShapeError(f"a dim must be an integer, a size symbol or an integer expression, "
                         f"not {value!r}")
    try:
        dim = IntExpr.lift(value)
    except IntExprSyntaxError as err:
        raise ShapeError(str(err)) from None
    if dim.is_const and dim.value < 0:
        raise ShapeError(f"dim {dim} is negative")
    return dim


def dtype_name(spec: Any) -> str:
    """The dtype name of a DTypeSpec or a dtype string; ShapeError for anything else."""
    if isinstance(spec, DTypeSpec):
        return spec.name
    if isinstance(spec, str) and spec in DTYPES:
        return spec
    raise ShapeError(f"{spec!r} is not a dtype; expected one of {', '.join(DTYPES)}")


f32 = DTypeSpec("f32")
f16 = DTypeSpec("f16")
bf16 = DTypeSpec("bf16")
i32 = DTypeSpec("i32")
i1 = DTypeSpec("i1")
DTYPE_SPECS: dict[str, DTypeSpec] = {d.name: d for d in (f32, f16, bf16, i32, i1)}
