"""NumPy references of the benchmark programs (`benchmarks/programs/<name>.py`).

Each function has the name and the parameter order of its program and computes in float32 (inputs
are widened first), so it is the exact-arithmetic yardstick the tolerances of
`dialects/form/dtypes.py` are measured against. The functions are plain NumPy and never touch
Axon's IR.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32


def _f32(*arrays: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(a, dtype=F32) for a in arrays]


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (F32(1) + np.exp(-x))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def _rmsnorm(x: np.ndarray, g: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    ms = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(ms + F32(eps)) * g


def _gqa(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """softmax(q k^T / sqrt(D)) v; q [B, HKV*G, S, D], k and v [B, HKV, L, D]; query head h uses
    kv head h // G (torch's repeat_interleave convention)."""
    group = q.shape[1] // k.shape[1]
    k_rep = np.repeat(k, group, axis=1)
    v_rep = np.repeat(v, group, axis=1)
    scores = q @ np.swapaxes(k_rep, -1, -2) / F32(np.sqrt(q.shape[-1]))
    return _softmax(scores) @ v_rep


def mul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x * y."""
    x, y = _f32(x, y)
    return x * y


def relu(x: np.ndarray) -> np.ndarray:
    """max(x, 0)."""
    (x,) = _f32(x)
    return np.maximum(x, F32(0))


def silu(x: np.ndarray) -> np.ndarray:
    """x * sigmoid(x)."""
    (x,) = _f32(x)
    return _silu(x)


def softmax(x: np.ndarray) -> np.ndarray:
    """Row softmax with max subtraction."""
    (x,) = _f32(x)
    return _softmax(x)


def cumsum(x: np.ndarray) -> np.ndarray:
    """Inclusive row cumsum."""
    (x,) = _f32(x)
    return np.cumsum(x, axis=-1, dtype=F32)


def cumsum_f32(x: np.ndarray) -> np.ndarray:
    """Inclusive row cumsum (the float32 program; same math)."""
    return cumsum(x)


def rmsnorm(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """x * rsqrt(mean(x^2, -1) + 1e-6) * g."""
    x, g = _f32(x, g)
    return _rmsnorm(x, g)


def layernorm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(x - mean) * rsqrt(var + 1e-5) * g + b over the last dim."""
    x, g, b = _f32(x, g, b)
    xc = x - np.mean(x, axis=-1, keepdims=True)
    var = np.mean(xc * xc, axis=-1, keepdims=True)
    return xc / np.sqrt(var + F32(1e-5)) * g + b


def rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotary embedding of interleaved pairs; x [T, H, 2*D2], cos and sin [T, D2]."""
    x, cos, sin = _f32(x, cos, sin)
    even, odd = x[..., 0::2], x[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    out = np.empty_like(x)
    out[..., 0::2] = even * c - odd * s
    out[..., 1::2] = even * s + odd * c
    return out


def matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x @ w."""
    x, w = _f32(x, w)
    return x @ w


def transpose_matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x.T @ w."""
    x, w = _f32(x, w)
    return x.T @ w


def matmul_transpose(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(x @ w).T."""
    x, w = _f32(x, w)
    return (x @ w).T


def silu_matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """silu(x) @ w."""
    x, w = _f32(x, w)
    return _silu(x) @ w


def relu_matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """relu(x) @ w."""
    x, w = _f32(x, w)
    return np.maximum(x, F32(0)) @ w


def rmsnorm_matmul(x: np.ndarray, g: np.ndarray, w: np.ndarray) -> np.ndarray:
    """rmsnorm(x, g) @ w."""
    x, g, w = _f32(x, g, w)
    return _rmsnorm(x, g) @ w


def softmax_matmul(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """softmax(x) @ w."""
    x, w = _f32(x, w)
    return _softmax(x) @ w


def matmul_red_div(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(x / sum_row(y)) @ w."""
    x, y, w = _f32(x, y, w)
    return (x / np.sum(y, axis=-1, keepdims=True)) @ w


def reduce_broadcast_mul(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(x * sum_row(y)) @ w."""
    x, y, w = _f32(x, y, w)
    return (x * np.sum(y, axis=-1, keepdims=True)) @ w


def gated_mlp(x: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """silu(x @ w1) * (x @ w2)."""
    x, w1, w2 = _f32(x, w1, w2)
    return _silu(x @ w1) * (x @ w2)


def mlp(x: np.ndarray, w1: np.ndarray, w2: np.ndarray, w3: np.ndarray) -> np.ndarray:
    """(silu(x @ w1) * (x @ w2)) @ w3."""
    x, w1, w2, w3 = _f32(x, w1, w2, w3)
    return (_silu(x @ w1) * (x @ w2)) @ w3


def lora(x: np.ndarray, w: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x @ w + (x @ a) @ b."""
    x, w, a, b = _f32(x, w, a, b)
    return x @ w + (x @ a) @ b


def ntrans(x: np.ndarray, h: np.ndarray, alpha: np.ndarray, g_h: np.ndarray,
           g_out: np.ndarray) -> np.ndarray:
    """rmsnorm(x + alpha * (rmsnorm(h, g_h) + x), g_out)."""
    x, h, alpha, g_h, g_out = _f32(x, h, alpha, g_h, g_out)
    return _rmsnorm(x + alpha * (_rmsnorm(h, g_h) + x), g_out)


def gemm_sum_scale(x: np.ndarray, w: np.ndarray, s: np.ndarray) -> np.ndarray:
    """sum_j((x @ w)[i, j] / 2) * s."""
    x, w, s = _f32(x, w, s)
    return np.sum((x @ w) / F32(2), axis=-1) * s


def gqa(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Grouped-query attention softmax(q k^T / sqrt(D)) v."""
    q, k, v = _f32(q, k, v)
    return _gqa(q, k, v)


def qknorm_gqa(q: np.ndarray, k: np.ndarray, v: np.ndarray, g_q: np.ndarray,
               g_k: np.ndarray) -> np.ndarray:
    """rmsnorm of q and k over D (eps 1e-6), then grouped-query attention."""
    q, k, v, g_q, g_k = _f32(q, k, v, g_q, g_k)
    return _gqa(_rmsnorm(q, g_q), _rmsnorm(k, g_k), v)


def linear_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """q @ (k.T @ v)."""
    q, k, v = _f32(q, k, v)
    return q @ (k.T @ v)
