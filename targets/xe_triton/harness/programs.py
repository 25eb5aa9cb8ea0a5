"""The suite's programs written in torch: the baselines, and (on float32 copies) the reference.

`PROGRAMS[name](*inputs)` is the program of `benchmarks/programs/<name>.py` as written, in torch
ops, taking and returning tensors of the inputs' dtype: run on the bundle's bf16 inputs it is the
eager baseline (and, wrapped by `torch.compile`, the compiled one); run on float32 copies it is
the reference every result is checked against (`reference`). `EXTRA_BASELINES` holds the other
torch forms a case is timed against: `F.scaled_dot_product_attention` for the attention programs.
Each program keeps its source's parameter order; tests compare every one with the numpy
reference of `benchmarks/references.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

Tensor = torch.Tensor
Program = Callable[..., Tensor]


def _rmsnorm(x: Tensor, g: Tensor, eps: float = 1e-6) -> Tensor:
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * g


def _repeat_kv(q: Tensor, kv: Tensor) -> Tensor:
    """kv [B, HKV, L, D] repeated to q's heads: query head h reads kv head h // G."""
    return kv.repeat_interleave(q.shape[1] // kv.shape[1], dim=1)


def _attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    scores = (q @ _repeat_kv(q, k).transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ _repeat_kv(q, v)


def mul(x: Tensor, y: Tensor) -> Tensor:
    """x * y."""
    return x * y


def relu(x: Tensor) -> Tensor:
    """max(x, 0)."""
    return torch.relu(x)


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x)."""
    return F.silu(x)


def softmax(x: Tensor) -> Tensor:
    """Row softmax."""
    return torch.softmax(x, dim=-1)


def cumsum(x: Tensor) -> Tensor:
    """Inclusive row cumsum."""
    return torch.cumsum(x, dim=-1)


def rmsnorm(x: Tensor, g: Tensor) -> Tensor:
    """x * rsqrt(mean(x^2, -1) + 1e-6) * g."""
    return _rmsnorm(x, g)


def layernorm(x: Tensor, g: Tensor, b: Tensor) -> Tensor:
    """(x - mean) * rsqrt(var + 1e-5) * g + b, as the source writes it."""
    xc = x - x.mean(-1, keepdim=True)
    var = (xc * xc).mean(-1, keepdim=True)
    return xc * torch.rsqrt(var + 1e-5) * g + b


def rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotary embedding of interleaved pairs; x [T, H, 2*D2], cos and sin [T, D2]."""
    even, odd = x[..., 0::2], x[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.stack([even * c - odd * s, even * s + odd * c], dim=-1).reshape(x.shape)


def matmul(x: Tensor, w: Tensor) -> Tensor:
    """x @ w."""
    return x @ w


def transpose_matmul(x: Tensor, w: Tensor) -> Tensor:
    """x.T @ w."""
    return x.T @ w


def matmul_transpose(x: Tensor, w: Tensor) -> Tensor:
    """(x @ w).T, materialized (a kernel writes the transposed result; a view would not)."""
    return (x @ w).T.contiguous()


def silu_matmul(x: Tensor, w: Tensor) -> Tensor:
    """silu(x) @ w."""
    return F.silu(x) @ w


def relu_matmul(x: Tensor, w: Tensor) -> Tensor:
    """relu(x) @ w."""
    return torch.relu(x) @ w


def rmsnorm_matmul(x: Tensor, g: Tensor, w: Tensor) -> Tensor:
    """rmsnorm(x, g) @ w."""
    return _rmsnorm(x, g) @ w


def softmax_matmul(x: Tensor, w: Tensor) -> Tensor:
    """softmax(x) @ w."""
    return torch.softmax(x, dim=-1) @ w


def matmul_red_div(x: Tensor, y: Tensor, w: Tensor) -> Tensor:
    """(x / sum_row(y)) @ w."""
    return (x / y.sum(-1, keepdim=True)) @ w


def reduce_broadcast_mul(x: Tensor, y: Tensor, w: Tensor) -> Tensor:
    """(x * sum_row(y)) @ w."""
    return (x * y.sum(-1, keepdim=True)) @ w


def gated_mlp(x: Tensor, w1: Tensor, w2: Tensor) -> Tensor:
    """silu(x @ w1) * (x @ w2)."""
    return F.silu(x @ w1) * (x @ w2)


def mlp(x: Tensor, w1: Tensor, w2: Tensor, w3: Tensor) -> Tensor:
    """(silu(x @ w1) * (x @ w2)) @ w3."""
    return (F.silu(x @ w1) * (x @ w2)) @ w3


def lora(x: Tensor, w: Tensor, a: Tensor, b: Tensor) -> Tensor:
    """x @ w + (x @ a) @ b."""
    return x @ w + (x @ a) @ b


def ntrans(x: Tensor, h: Tensor, alpha: Tensor, g_h: Tensor, g_out: Tensor) -> Tensor:
    """rmsnorm(x + alpha * (rmsnorm(h, g_h) + x), g_out)."""
    return _rmsnorm(x + alpha * (_rmsnorm(h, g_h) + x), g_out)


def gemm_sum_scale(x: Tensor, w: Tensor, s: Tensor) -> Tensor:
    """sum_j((x @ w)[i, j] / 2) * s, as written (the GEMM, not x @ rowsum(w))."""
    return ((x @ w) / 2).sum(-1) * s


def gqa(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """softmax(q k^T / sqrt(D)) v with kv heads repeated to the query heads."""
    return _attention(q, k, v)


def qknorm_gqa(q: Tensor, k: Tensor, v: Tensor, g_q: Tensor, g_k: Tensor) -> Tensor:
    """rmsnorm of q and k over D, then gqa."""
    return _attention(_rmsnorm(q, g_q), _rmsnorm(k, g_k), v)


def linear_attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """q @ (k.T @ v)."""
    return q @ (k.T @ v)


def gqa_sdpa(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """gqa through `F.scaled_dot_product_attention` (its fused kernels, `enable_gqa`)."""
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def qknorm_gqa_sdpa(q: Tensor, k: Tensor, v: Tensor, g_q: Tensor, g_k: Tensor) -> Tensor:
    """qknorm_gqa with the attention through `F.scaled_dot_product_attention`."""
    return gqa_sdpa(_rmsnorm(q, g_q), _rmsnorm(k, g_k), v)


#: every suite program by name (cumsum_f32 is cumsum's math on a float32 signature)
PROGRAMS: dict[str, Program] = {
    "mul": mul, "relu": relu, "silu": silu, "softmax": softmax, "cumsum": cumsum,
    "cumsum_f32": cumsum, "rmsnorm": rmsnorm, "layernorm": layernorm, "rope": rope,
    "matmul": matmul, "transpose_matmul": transpose_matmul,
    "matmul_transpose": matmul_transpose, "silu_matmul": silu_matmul,
    "relu_matmul": relu_matmul, "rmsnorm_matmul": rmsnorm_matmul,
    "softmax_matmul": softmax_matmul, "matmul_red_div": matmul_red_div,
    "reduce_broadcast_mul": reduce_broadcast_mul, "gated_mlp": gated_mlp, "mlp": mlp,
    "lora": lora, "ntrans": ntrans, "gemm_sum_scale": gemm_sum_scale, "gqa": gqa,
    "qknorm_gqa": qknorm_gqa, "linear_attention": linear_attention,
}

#: baselines beyond eager and torch.compile, by program: name -> torch form
EXTRA_BASELINES: dict[str, dict[str, Program]] = {
    "gqa": {"sdpa": gqa_sdpa},
    "qknorm_gqa": {"sdpa": qknorm_gqa_sdpa},
}


def reference(program: str, inputs: list[Tensor]) -> Tensor:
    """The program on float32 copies of `inputs` (TF32 off): the yardstick of every check."""
    return PROGRAMS[program](*(t.float() for t in inputs))
