"""Shape rules shared by the tensor-level ops: broadcasting, axis normalization, errors.

Messages name the operand and the dims, so the verifier, the tracer and the source frontend report
the same words for the same mistake.
"""

from __future__ import annotations

from collections.abc import Sequence

from axon.dialects.form.intexpr import IntExpr

Shape = tuple[IntExpr, ...]
ONE = IntExpr.const(1)


class ShapeError(ValueError):
    """An op was applied to operands whose shapes, dtypes or attributes do not fit it."""


def fmt_shape(shape: Sequence[IntExpr]) -> str:
    return f"[{', '.join(str(d) for d in shape)}]"


def broadcast_shapes(shapes: Sequence[Shape], names: Sequence[str]) -> Shape:
    """NumPy broadcasting over symbolic dims: equal dims, or a dim that is exactly 1."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[IntExpr] = []
    for pos in range(rank):
        chosen: tuple[IntExpr, str] | None = None
        for shape, name in zip(shapes, names, strict=True):
            offset = pos - (rank - len(shape))
            if offset < 0:
                continue
            dim = shape[offset]
            if dim == ONE:
                continue
            if chosen is None:
                chosen = (dim, f"{name} dim {offset}")
            elif chosen[0] != dim:
                raise ShapeError(
                    f"cannot broadcast {name} dim {offset} ({dim}) against {chosen[1]} "
                    f"({chosen[0]}): dims must be equal or 1; shapes are "
                    + ", ".join(f"{n} {fmt_shape(s)}" for s, n in zip(shapes, names, strict=True)))
        out.append(ONE if chosen is None else chosen[0])
    return tuple(out)


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """Map a possibly negative axis into [0, rank)."""
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def normalize_axes(axes: Sequence[int], rank: int) -> tuple[int, ...]:
    """Normalize and sort axes; duplicates are an error."""
    norm = [normalize_axis(a, rank) for a in axes]
    if len(set(norm)) != len(norm):
        raise ShapeError(f"axes {list(axes)} repeat an axis")
    return tuple(sorted(norm))


def product(dims: Sequence[IntExpr]) -> IntExpr:
    result = ONE
    for d in dims:
        result = result * d
    return result


def exact_quotient(numerator: IntExpr, denominator: IntExpr) -> IntExpr | None:
    """numerator / denominator when the denominator is one monomial dividing every term."""
    if len(denominator.terms) != 1:
        return None
    (den_mono, den_coeff), = denominator.terms
    terms: list[tuple[tuple, int]] = []
    for mono, coeff in numerator.terms:
        rest = list(mono)
        for atom in den_mono:
            if atom not in rest:
                return None
            rest.remove(atom)
        if coeff % den_coeff:
            return None
        terms.append((tuple(rest), coeff // den_coeff))
    result = IntExpr.const(0)
    for mono, coeff in terms:
        result = result + IntExpr(((mono, coeff),)) if mono else result + coeff
    return result
