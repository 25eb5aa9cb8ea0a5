"""The aten -> `ax` handlers: one per aten operator of an exported program (see capture.py).

Each handled aten operator is one entry of `ATEN`, written with the builder functions of
`frontend/builders.py`, so a composite (softmax, layer_norm, attention) means what the NumPy
subset's composite of the same name means:

    aten.linear(x, w, b)        -> matmul(x, transpose(w)) + b   (w and b are function inputs)
    aten.scaled_dot_product_attention(q, k, v, is_causal=c) -> builders.attention(q, k, v, causal=c)
    aten.masked_fill(x, m, -inf) -> where(m, lowest finite of x's dtype, x)

The graph is the one `torch.export` gives before decomposition (aten ops as `forward` called
them). Shapes the export baked in as integers (a `view`'s target, `ones(n, n)`) are read back as
products of the operand's dims where they line up, else as the size symbol of that extent. When
torch's graph equates an input's named dim with an expression of other sizes (grouped-query
attention: query heads = kv heads * 2), the named dim is replaced by that expression and the
translation starts again.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import torch

from axon.dialects import ax
from axon.dialects.ax.shapes import normalize_axis
from axon.dialects.form.dtypes import DTYPES
from axon.dialects.form.generic_form import fresh_names
from axon.dialects.form.intexpr import IntExpr
from axon.frontend import builders as bx
from axon.frontend.builders import Tensor
from axon.frontend.torch.capture import TORCH_DTYPES
from axon.frontend.torch.context import SizeContext, Unsupported

aten = torch.ops.aten


Handler = Callable[..., Any]


def _tensor(v: Any) -> Tensor:
    if not isinstance(v, Tensor):
        raise Unsupported(f"expected a tensor, got {v!r}")
    return v


def _axes(dims: Any, rank: int) -> list[int]:
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(normalize_axis(int(d), rank) for d in dims) if dims else list(range(rank))


def _lowest(dtype: str, sign: float) -> float:
    """The finite stand-in for +-inf in `dtype`: its largest magnitude (the verifier reasons
    over reals, as builders.attention's mask does)."""
    storage = DTYPES[dtype].storage
    info = ml_dtypes.finfo(storage) if storage == np.dtype(ml_dtypes.bfloat16) \
        else np.finfo(storage)
    return float(info.max) if sign > 0 else float(info.min)


def _finite(value: Any, dtype: str) -> Any:
    if isinstance(value, float) and math.isinf(value):
        return _lowest(dtype, value)
    return value


# ---- handlers: (ctx, *args, **kwargs) -> value ---------------------------------------------------
def _binary(fn: Callable[[Any, Any], Any]) -> Handler:
    def handle(ctx: SizeContext, a: Any, b: Any, alpha: Any = 1, rounding_mode: Any = None) -> Any:
        if rounding_mode is not None:
            raise Unsupported(f"rounding_mode={rounding_mode!r}")
        ctx.broadcast(a, b)
        if alpha != 1:
            b = bx.multiply(b, alpha)
        return fn(a, b)

    return handle


def _unary(fn: Callable[[Any], Any]) -> Handler:
    def handle(ctx: SizeContext, x: Any) -> Any:
        return fn(_tensor(x))

    return handle


def _identity(ctx: SizeContext, x: Any, *args: Any, **kwargs: Any) -> Any:
    return x


def _rsub(ctx: SizeContext, a: Any, b: Any, alpha: Any = 1) -> Any:
    ctx.broadcast(a, b)
    return bx.subtract(b, bx.multiply(a, alpha) if alpha != 1 else a)


def _matmul(ctx: SizeContext, a: Any, b: Any) -> Tensor:
    a, b = _tensor(a), _tensor(b)
    if a.ndim >= 1 and b.ndim >= 2:
        ctx.unify(a.shape[-1], b.shape[-2])
    if a.ndim > 2 and b.ndim > 2:
        for da, db in zip(reversed(a.shape[:-2]), reversed(b.shape[:-2]), strict=False):
            if da != IntExpr.const(1) and db != IntExpr.const(1):
                ctx.unify(da, db)
    return bx.matmul(a, b)


def _transpose_last(x: Tensor) -> Tensor:
    perm = [*range(x.ndim - 2), x.ndim - 1, x.ndim - 2]
    return bx.transpose(x, perm)


def _linear(ctx: SizeContext, x: Any, w: Any, b: Any = None) -> Tensor:
    w = _tensor(w)
    y = _matmul(ctx, x, _transpose_last(w) if w.ndim == 2 else w)
    if b is not None:
        ctx.broadcast(y, b)
        y = bx.add(y, b)
    return y


def _addmm(ctx: SizeContext, bias: Any, a: Any, b: Any, beta: Any = 1, alpha: Any = 1) -> Tensor:
    product_ = _matmul(ctx, a, b)
    if alpha != 1:
        product_ = bx.multiply(product_, alpha)
    if beta != 1:
        bias = bx.multiply(bias, beta)
    ctx.broadcast(product_, bias)
    return bx.add(product_, bias)


def _t(ctx: SizeContext, x: Any) -> Tensor:
    x = _tensor(x)
    return x if x.ndim < 2 else bx.transpose(x, [1, 0])


def _transpose(ctx: SizeContext, x: Any, d0: int, d1: int) -> Tensor:
    x = _tensor(x)
    perm = list(range(x.ndim))
    i, j = normalize_axis(d0, x.ndim), normalize_axis(d1, x.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return bx.transpose(x, perm)


def _permute(ctx: SizeContext, x: Any, dims: Sequence[int]) -> Tensor:
    x = _tensor(x)
    return bx.transpose(x, [normalize_axis(d, x.ndim) for d in dims])


def _view(ctx: SizeContext, x: Any, shape: Sequence[int]) -> Tensor:
    x = _tensor(x)
    return bx.reshape(x, ctx.reshape_dims(x, list(shape)))


def _unsqueeze(ctx: SizeContext, x: Any, dim: int) -> Tensor:
    x = _tensor(x)
    at = normalize_axis(dim, x.ndim + 1)
    dims = list(x.shape)
    dims.insert(at, IntExpr.const(1))
    return bx.reshape(x, dims)


def _squeeze(ctx: SizeContext, x: Any, dims: Any = None) -> Tensor:
    x = _tensor(x)
    axes = _axes(dims, x.ndim)
    kept = [d for k, d in enumerate(x.shape) if not (k in axes and d == IntExpr.const(1))]
    return bx.reshape(x, kept)


def _expand(ctx: SizeContext, x: Any, shape: Sequence[int], implicit: bool = False) -> Tensor:
    x = _tensor(x)
    lead = len(shape) - x.ndim
    dims = []
    for k, extent in enumerate(shape):
        own = x.shape[k - lead] if k >= lead else None
        if extent == -1 and own is not None:
            dims.append(own)
        elif own is not None and ctx.extent(own) == extent:
            dims.append(own)
        else:
            dims.append(ctx.dim_of(extent))
    return bx.broadcast_to(x, dims)


def _expand_as(ctx: SizeContext, x: Any, other: Any) -> Tensor:
    return bx.broadcast_to(_tensor(x), list(_tensor(other).shape))


def _slice(ctx: SizeContext, x: Any, dim: int = 0, start: Any = None, end: Any = None,
           step: int = 1) -> Tensor:
    x = _tensor(x)
    at = normalize_axis(dim, x.ndim)
    extent = ctx.extent(x.shape[at])

    def bound(v: Any, default: IntExpr) -> IntExpr:
        if v is None:
            return default
        v = int(v)
        if v < 0:  # from the end: stays symbolic in the dim
            return x.shape[at] + v if v + extent >= 0 else IntExpr.const(0)
        return x.shape[at] if v >= extent else ctx.dim_of(v)

    key: list[Any] = [slice(None)] * x.ndim
    key[at] = slice(bound(start, IntExpr.const(0)), bound(end, x.shape[at]), step)
    return bx.getitem(x, tuple(key))


def _select(ctx: SizeContext, x: Any, dim: int, index: int) -> Tensor:
    x = _tensor(x)
    key: list[Any] = [slice(None)] * x.ndim
    key[normalize_axis(dim, x.ndim)] = index
    return bx.getitem(x, tuple(key))


def _reduction(fn: Callable[..., Tensor]) -> Handler:
    def handle(ctx: SizeContext, x: Any, dims: Any = None, keepdim: bool = False, *,
               dtype: Any = None) -> Tensor:
        if dtype is not None:
            raise Unsupported(f"a reduction to dtype {dtype}")
        x = _tensor(x)
        return fn(x, tuple(_axes(dims, x.ndim)), keepdim)

    return handle


def _max_dim(ctx: SizeContext, x: Any, dim: int, keepdim: bool = False) -> tuple[Tensor, None]:
    x = _tensor(x)
    return bx.max(x, normalize_axis(dim, x.ndim), keepdim), None


def _logsumexp(ctx: SizeContext, x: Any, dims: Any, keepdim: bool = False) -> Tensor:
    x = _tensor(x)
    axes = tuple(_axes(dims, x.ndim))
    peak = bx.max(x, axes, True)
    out = bx.add(bx.log(bx.sum(bx.exp(bx.subtract(x, peak)), axes, True)), peak)
    if keepdim:
        return out
    return bx.reshape(out, [d for k, d in enumerate(x.shape) if k not in axes])


def _softmax(fn: Callable[[Any, Any], Tensor]) -> Handler:
    def handle(ctx: SizeContext, x: Any, dim: int, half_to_float: Any = None, *,
               dtype: Any = None) -> Tensor:
        if dtype is not None or half_to_float:
            raise Unsupported("a softmax to another dtype")
        return fn(_tensor(x), dim)

    return handle


def _layer_norm(ctx: SizeContext, x: Any, normalized_shape: Sequence[int], weight: Any = None,
                bias: Any = None, eps: float = 1e-5, cudnn_enable: Any = True) -> Tensor:
    x = _tensor(x)
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    centered = bx.subtract(x, bx.mean(x, axes, True))
    var = bx.mean(bx.multiply(centered, centered), axes, True)
    y = bx.multiply(centered, bx.rsqrt(bx.add(var, eps)))
    if weight is not None:
        ctx.broadcast(y, weight)
        y = bx.multiply(y, weight)
    if bias is not None:
        ctx.broadcast(y, bias)
        y = bx.add(y, bias)
    return y


def _vector_norm(ctx: SizeContext, x: Any, ord: Any = 2, dims: Any = None, keepdim: bool = False,
                 *, dtype: Any = None) -> Tensor:
    if ord != 2 or dtype is not None:
        raise Unsupported(f"a vector norm of order {ord!r}")
    x = _tensor(x)
    return bx.sqrt(bx.sum(bx.multiply(x, x), tuple(_axes(dims, x.ndim)), keepdim))


def _pow(ctx: SizeContext, x: Any, exponent: Any) -> Tensor:
    if not isinstance(exponent, int | float):
        raise Unsupported("a tensor exponent")
    x = _tensor(x)
    return bx.square(x) if exponent == 2 else bx.power(x, exponent)


def _clamp(ctx: SizeContext, x: Any, lo: Any = None, hi: Any = None) -> Tensor:
    y = _tensor(x)
    if lo is not None:
        y = bx.maximum(y, lo)
    if hi is not None:
        y = bx.minimum(y, hi)
    return y


def _gelu(ctx: SizeContext, x: Any, approximate: str = "none") -> Tensor:
    x = _tensor(x)
    return bx.gelu_tanh(x) if approximate == "tanh" else bx.gelu(x)


def _cumsum(ctx: SizeContext, x: Any, dim: int, *, dtype: Any = None) -> Tensor:
    if dtype is not None:
        raise Unsupported(f"a cumsum to dtype {dtype}")
    return bx.cumsum(_tensor(x), dim)


def _dtype_of(dtype: Any, default: str = "f32") -> str:
    if dtype is None:
        return default
    if dtype not in TORCH_DTYPES:
        raise Unsupported(f"dtype {dtype}")
    return TORCH_DTYPES[dtype]


def _fill(value: float) -> Handler:
    def handle(ctx: SizeContext, shape: Sequence[int], *, dtype: Any = None,
               **kwargs: Any) -> Tensor:
        return bx.full([ctx.dim_of(int(s)) for s in shape], value, _dtype_of(dtype))

    return handle


def _full(ctx: SizeContext, shape: Sequence[int], value: Any, *, dtype: Any = None,
          **kwargs: Any) -> Tensor:
    name = _dtype_of(dtype)
    return bx.full([ctx.dim_of(int(s)) for s in shape], _finite(value, name), name)


def _triangle(upper: bool) -> Handler:
    def handle(ctx: SizeContext, x: Any, diagonal: int = 0) -> Tensor:
        x = _tensor(x)
        if x.ndim < 2:
            raise Unsupported("a triangle of a tensor of rank < 2")
        rows_cols = list(x.shape[-2:])
        row = bx.iota(rows_cols, 0, "i32")
        col = bx.iota(rows_cols, 1, "i32")
        shifted = bx.add(row, diagonal) if diagonal else row
        keep = bx.greater_equal(col, shifted) if upper else bx.less_equal(col, shifted)
        return bx.where(keep, x, bx.zeros([], x.dtype))

    return handle


def _masked_fill(ctx: SizeContext, x: Any, mask: Any, value: Any) -> Tensor:
    x = _tensor(x)
    ctx.broadcast(x, mask)
    if isinstance(value, Tensor):
        return bx.where(mask, value, x)
    return bx.where(mask, _finite(float(value), x.dtype), x)


def _where(ctx: SizeContext, cond: Any, a: Any, b: Any) -> Tensor:
    ctx.broadcast(cond, a, b)
    return bx.where(cond, a, b)


def _attention(ctx: SizeContext, q: Any, k: Any, v: Any, attn_mask: Any = None,
               dropout_p: float = 0.0, is_causal: bool = False, *, scale: Any = None,
               enable_gqa: bool = False) -> Tensor:
    if attn_mask is not None or dropout_p or enable_gqa:
        raise Unsupported("an attention mask, dropout or enable_gqa")
    q, k, v = _tensor(q), _tensor(k), _tensor(v)
    _matmul(ctx, q, _transpose_last(k))
    # the scores' key dim is v's rows; their leading dims v's
    ctx.unify(k.shape[-2], v.shape[-2])
    for dk, dv in zip(reversed(k.shape[:-2]), reversed(v.shape[:-2]), strict=False):
        if dk != IntExpr.const(1) and dv != IntExpr.const(1):
            ctx.unify(dk, dv)
    return bx.attention(q, k, v, scale=scale, causal=bool(is_causal))


def _repeat_interleave(ctx: SizeContext, x: Any, repeats: Any, dim: Any = None, *,
                       output_size: Any = None) -> Tensor:
    if not isinstance(repeats, int) or dim is None:
        raise Unsupported("repeats that are not one integer along one dim")
    x = _tensor(x)
    at = normalize_axis(dim, x.ndim)
    dims = list(x.shape)
    merged = [*dims[:at], dims[at] * repeats, *dims[at + 1:]]
    # one read through `floordiv repeats` (GQA's kv head of a query head), not a reshape, a
    # broadcast and a reshape: with the heads fixed at numbers, propagation composed those into
    # `(128*d1*L + 128*d3 + r0) floordiv (512*L)`, which no K-loop tiling of 21_gqa_attention
    # could be proved through
    names = fresh_names("d", x.ndim, {s for d in merged for s in d.symbols()})
    bounds = ", ".join(f"{n} < {e}" for n, e in zip(names, merged, strict=True))
    index = ", ".join(f"{n} floordiv {repeats}" if k == at else n for k, n in enumerate(names))
    made = x.builder.insert(ax.GenericOp.make([x.value], form=f"out[{bounds}] = in0[{index}]",
                                              dtype=x.dtype))
    return Tensor(made, x.builder)


def _to_dtype(ctx: SizeContext, x: Any, *args: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
    x = _tensor(x)
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
    return x if dtype is None else bx.astype(x, _dtype_of(dtype))


def _getitem(ctx: SizeContext, value: Any, index: int) -> Any:
    item = value[index]
    if item is None:
        raise Unsupported("the indices of a max/min (only its values are translated)")
    return item


#: every handled operator: its OpOverload (or getitem) -> handler
ATEN: dict[Any, Handler] = {
    aten.linear.default: _linear,
    aten.addmm.default: _addmm,
    aten.mm.default: _matmul,
    aten.bmm.default: _matmul,
    aten.matmul.default: _matmul,
    aten.t.default: _t,
    aten.numpy_T.default: lambda ctx, x: bx.transpose(_tensor(x)),
    aten.add.Tensor: _binary(bx.add),
    aten.add.Scalar: _binary(bx.add),
    aten.sub.Tensor: _binary(bx.subtract),
    aten.sub.Scalar: _binary(bx.subtract),
    aten.rsub.Scalar: _rsub,
    aten.rsub.Tensor: _rsub,
    aten.mul.Tensor: _binary(bx.multiply),
    aten.mul.Scalar: _binary(bx.multiply),
    aten.div.Tensor: _binary(bx.divide),
    aten.div.Scalar: _binary(bx.divide),
    aten.maximum.default: _binary(bx.maximum),
    aten.minimum.default: _binary(bx.minimum),
    aten.relu.default: _unary(bx.relu),
    aten.gelu.default: _gelu,
    aten.silu.default: _unary(bx.silu),
    aten.sigmoid.default: _unary(bx.sigmoid),
    aten.tanh.default: _unary(bx.tanh),
    aten.exp.default: _unary(bx.exp),
    aten.log.default: _unary(bx.log),
    aten.sqrt.default: _unary(bx.sqrt),
    aten.rsqrt.default: _unary(bx.rsqrt),
    aten.neg.default: _unary(bx.neg),
    aten.abs.default: _unary(bx.abs),
    aten.erf.default: _unary(bx.erf),
    aten.reciprocal.default: _unary(bx.reciprocal),
    aten.square.default: _unary(bx.square),
    aten.pow.Tensor_Scalar: _pow,
    aten.clamp.default: _clamp,
    aten.clamp_min.default: lambda ctx, x, lo: _clamp(ctx, x, lo, None),
    aten.clamp_max.default: lambda ctx, x, hi: _clamp(ctx, x, None, hi),
    aten.sum.dim_IntList: _reduction(bx.sum),
    aten.sum.default: _reduction(bx.sum),
    aten.mean.dim: _reduction(bx.mean),
    aten.mean.default: _reduction(bx.mean),
    aten.amax.default: _reduction(bx.max),
    aten.amin.default: _reduction(bx.min),
    aten.max.dim: _max_dim,
    aten.min.dim: lambda ctx, x, dim, keepdim=False: (
        bx.min(_tensor(x), normalize_axis(dim, _tensor(x).ndim), keepdim), None),
    aten.logsumexp.default: _logsumexp,
    aten.softmax.int: _softmax(bx.softmax),
    aten._softmax.default: _softmax(bx.softmax),
    aten.log_softmax.int: _softmax(bx.log_softmax),
    aten._log_softmax.default: _softmax(bx.log_softmax),
    aten.layer_norm.default: _layer_norm,
    aten.linalg_vector_norm.default: _vector_norm,
    aten.cumsum.default: _cumsum,
    aten.transpose.int: _transpose,
    aten.permute.default: _permute,
    aten.view.default: _view,
    aten.reshape.default: _view,
    aten._unsafe_view.default: _view,
    aten.unsqueeze.default: _unsqueeze,
    aten.squeeze.dim: _squeeze,
    aten.squeeze.dims: _squeeze,
    aten.squeeze.default: _squeeze,
    aten.expand.default: _expand,
    aten.slice.Tensor: _slice,
    aten.select.int: _select,
    aten.expand_as.default: _expand_as,
    aten.contiguous.default: _identity,
    aten.clone.default: _identity,
    aten.alias.default: _identity,
    aten.detach.default: _identity,
    aten.dropout.default: lambda ctx, x, p, train: x,
    aten.to.dtype: _to_dtype,
    aten._to_copy.default: _to_dtype,
    aten.ones.default: _fill(1.0),
    aten.zeros.default: _fill(0.0),
    aten.full.default: _full,
    aten.triu.default: _triangle(True),
    aten.tril.default: _triangle(False),
    aten.masked_fill.Scalar: _masked_fill,
    aten.masked_fill.Tensor: _masked_fill,
    aten.where.self: _where,
    aten.gt.Scalar: _binary(bx.greater),
    aten.gt.Tensor: _binary(bx.greater),
    aten.ge.Scalar: _binary(bx.greater_equal),
    aten.ge.Tensor: _binary(bx.greater_equal),
    aten.lt.Scalar: _binary(bx.less),
    aten.lt.Tensor: _binary(bx.less),
    aten.le.Scalar: _binary(bx.less_equal),
    aten.le.Tensor: _binary(bx.less_equal),
    aten.eq.Scalar: _binary(bx.equal),
    aten.eq.Tensor: _binary(bx.equal),
    aten.ne.Scalar: _binary(bx.not_equal),
    aten.ne.Tensor: _binary(bx.not_equal),
    aten.scaled_dot_product_attention.default: _attention,
    aten.repeat_interleave.self_int: _repeat_interleave,
    operator.getitem: _getitem,
}
