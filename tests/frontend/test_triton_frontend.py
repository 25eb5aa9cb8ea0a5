"""The Triton frontend reads kernels and launches without running them: parameters, launch
sites, pointers as base + affine offset, masks as bounds, loop-carried values, and located
diagnostics for what it does not support."""

from __future__ import annotations

import importlib.util
import random
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from axon.dialects import xt
from axon.dialects.form.intexpr import IntExpr
from axon.frontend.diagnostics import SourceError
from axon.frontend.triton import (
    analyse_kernel,
    check_affine,
    parse_triton_file,
    parse_triton_source,
    report_module,
)
from axon.frontend.triton.raise_xt import raise_kernel
from axon.frontend.triton.report import main
from axon.targets.xe_triton.check import load_module
from axon.targets.xe_triton.emit import emit_module

VECTOR_ADD = """\
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    n = out.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024, num_warps=4)
    return out
"""

ROW_SOFTMAX = """\
import triton
from triton import language as tl
from triton import jit


@jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols,
                   BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


def softmax(x, y):
    rows, cols = x.shape
    softmax_kernel[(rows,)](y, x, x.stride(0), y.stride(0), cols,
                            BLOCK=triton.next_power_of_2(cols), num_warps=8)
"""

MATMUL = """\
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a_mask = (offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K)
        b_mask = (offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N)
        a = tl.load(a_ptrs, mask=a_mask, other=0.0)
        b = tl.load(b_ptrs, mask=b_mask, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(tl.float16)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def matmul(a, b, c):
    M, K = a.shape
    _, N = b.shape
    matmul_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](
        a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
        c.stride(0), c.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_stages=3)
"""

ROW_NORM = """\
import torch
import triton
import triton.language as tl


@triton.jit
def rownorm_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    ss = tl.sum(x * x, axis=1)
    y = x / tl.sqrt(ss[:, None] + 1e-6) * w[None, :]
    y = tl.where(y > 0.1, y, 0.0)
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], y, mask=mask)


def rownorm(x, w):
    M, N = x.shape
    y = torch.empty_like(x)
    rownorm_kernel[(triton.cdiv(M, 4),)](x, w, y, M, N, x.stride(0), y.stride(0), BLOCK_M=4,
                                         BLOCK_N=triton.next_power_of_2(N))
    return y
"""

CENTER = """\
import torch
import triton
import triton.language as tl


@triton.jit
def center_kernel(x_ptr, y_ptr, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=0.0)
    mean = tl.sum(x, axis=1) / N
    xc = tl.where(cols[None, :] < N, x - mean[:, None], 0.0)
    var = tl.sum(xc * xc, axis=1)
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], xc * var[:, None], mask=mask)


def center(x):
    M, N = x.shape
    y = torch.empty_like(x)
    center_kernel[(triton.cdiv(M, 4),)](x, y, M, N, x.stride(0), y.stride(0), BLOCK_M=4,
                                        BLOCK_N=triton.next_power_of_2(N))
    return y
"""

HEADER = "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"


def sym(name: str) -> IntExpr:
    return IntExpr.sym(name)


def diagnostic(text: str, kernel: str | None = None) -> SourceError:
    """The SourceError that parsing (and analysing `kernel`) raises."""
    with pytest.raises(SourceError) as err:
        module = parse_triton_source(text, "k.py")
        if kernel is not None:
            analyse_kernel(module, kernel)
    return err.value


# ---- parsing: kernels, parameters, launches -----------------------------------------------------
def test_parse_finds_kernels_params_and_launch_with_lambda_grid() -> None:
    module = parse_triton_source(VECTOR_ADD, "vec_add.py")
    assert list(module.kernels) == ["add_kernel"]
    kernel = module.kernels["add_kernel"]
    assert [(p.name, p.constexpr) for p in kernel.params] == [
        ("x_ptr", False), ("y_ptr", False), ("out_ptr", False), ("n_elements", False),
        ("BLOCK_SIZE", True)]
    assert kernel.loc == (7, 1)
    (site,) = module.launches
    assert (site.kernel, site.host, site.loc) == ("add_kernel", "add", (20, 5))
    assert site.grid_kind == "name"
    assert site.grid == 'lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)'
    assert site.grid_dims == ('triton.cdiv(n, meta["BLOCK_SIZE"])',)
    assert site.args == (("x_ptr", "x"), ("y_ptr", "y"), ("out_ptr", "out"),
                         ("n_elements", "n"), ("BLOCK_SIZE", "1024"))
    assert site.options == (("num_warps", "4"),)
    assert site.missing == () and site.literal("BLOCK_SIZE") == 1024


def test_parse_resolves_from_imports_and_tuple_grids() -> None:
    module = parse_triton_source(ROW_SOFTMAX, "softmax.py")
    assert module.aliases["tl"] == "triton.language" and module.aliases["jit"] == "triton.jit"
    kernel = module.kernels["softmax_kernel"]
    assert [p.name for p in kernel.params if p.constexpr] == ["BLOCK"]
    (site,) = module.launches
    assert site.grid_kind == "tuple" and site.grid_dims == ("rows",)
    assert site.arg("BLOCK") == "triton.next_power_of_2(cols)"
    assert site.options == (("num_warps", "8"),)


def test_parse_params_defaults_annotations_and_unbound() -> None:
    text = HEADER + """\
def k(x_ptr, n: tl.int32, scale=2.0, BLOCK: "tl.constexpr" = 128, EVEN: tl.constexpr = True):
    pass


def host(x):
    k[(1,)](x, num_warps=2, grf_mode="large")
"""
    module = parse_triton_source(text, "k.py")
    params = module.kernels["k"].params
    assert [(p.name, p.constexpr, p.annotation, p.default, p.default_value) for p in params] == [
        ("x_ptr", False, None, None, None), ("n", False, "tl.int32", None, None),
        ("scale", False, None, "2.0", 2.0), ("BLOCK", True, '"tl.constexpr"', "128", 128),
        ("EVEN", True, "tl.constexpr", "True", True)]
    (site,) = module.launches
    assert site.missing == ("n",)
    assert site.options == (("num_warps", "2"), ("grf_mode", '"large"'))


def test_a_jit_that_is_not_tritons_is_no_kernel() -> None:
    module = parse_triton_source("from numba import jit\n\n\n@jit\ndef f(x):\n    return x\n",
                                 "k.py")
    assert module.kernels == {}


def test_parse_errors_are_located() -> None:
    err = diagnostic("import triton\n\ndef f(:\n    pass\n")
    assert (err.filename, err.line) == ("k.py", 3) and "invalid Python" in err.message
    err = diagnostic(HEADER + "def k(x_ptr, *rest):\n    pass\n")
    assert (err.line, err.column) == (6, 15) and "*args" in err.message
    err = diagnostic(HEADER + "def k(x_ptr, n):\n    pass\n\n\ndef h(x):\n"
                     "    k[(1,)](x, 3, n=4)\n")
    assert (err.line, err.column) == (11, 21) and "bound twice" in err.message


# ---- the analysis: vector add, row softmax, matmul ----------------------------------------------
def test_vector_add_accesses() -> None:
    module = parse_triton_source(VECTOR_ADD, "vec_add.py")
    analysis = analyse_kernel(module, "add_kernel")
    assert analysis.param_kinds == {"x_ptr": "pointer", "y_ptr": "pointer",
                                    "out_ptr": "pointer", "n_elements": "scalar",
                                    "BLOCK_SIZE": "constexpr"}
    assert analysis.program_ids == {0: "pid0"}
    offset = sym("BLOCK_SIZE") * sym("pid0") + sym("lane0")
    assert [(a.kind, a.base, a.loc) for a in analysis.accesses] == [
        ("load", "x_ptr", (11, 9)), ("load", "y_ptr", (12, 9)), ("store", "out_ptr", (13, 5))]
    for access in analysis.accesses:
        assert access.shape == (sym("BLOCK_SIZE"),)
        assert access.offset == offset
        assert access.origin == sym("BLOCK_SIZE") * sym("pid0")
        assert access.strides == (IntExpr.const(1),)
        assert [str(b) for b in access.bounds] == ["BLOCK_SIZE*pid0 + lane0 < n_elements"]
        assert access.affine and access.reason == ""
    store = analysis.accesses[2]
    assert store.value is not None and getattr(store.value, "op", None) == "add"
    check_affine(analysis)


def test_row_softmax_accesses_and_reductions() -> None:
    module = parse_triton_source(ROW_SOFTMAX, "softmax.py")
    analysis = analyse_kernel(module, "softmax_kernel")
    load, store = analysis.accesses
    assert (load.base, store.base) == ("in_ptr", "out_ptr")
    assert load.offset == sym("in_row_stride") * sym("pid0") + sym("lane0")
    assert store.origin == sym("out_row_stride") * sym("pid0")
    assert load.strides == store.strides == (IntExpr.const(1),)
    assert [str(b) for b in load.bounds] == ["lane0 < n_cols"]
    assert load.shape == (sym("BLOCK"),)
    assert getattr(load.other, "value", None) == float("-inf")
    ops = [(v.op, v.attrs.get("kind"), len(v.shape)) for v in analysis.values]
    assert ops == [("load", None, 1), ("reduce", "max", 0), ("sub", None, 1), ("exp", None, 1),
                   ("reduce", "add", 0), ("truediv", None, 1)]
    assert analysis.param_kinds["in_row_stride"] == "scalar"


def test_matmul_strides_masks_and_loop_carried_values() -> None:
    module = parse_triton_source(MATMUL, "matmul.py")
    analysis = analyse_kernel(module, "matmul_kernel")
    (loop,) = analysis.loops
    assert (loop.iv, loop.iteration, loop.start, loop.step) == ("k", "k", IntExpr.const(0),
                                                                IntExpr.const(1))
    assert loop.trip == sym("K").ceildiv(sym("BLOCK_K"))
    carried = {c.name: c for c in loop.carried}
    assert sorted(carried) == ["a_ptrs", "acc", "b_ptrs"]
    assert carried["a_ptrs"].kind == "step"
    assert carried["a_ptrs"].step == sym("BLOCK_K") * sym("stride_ak")
    assert carried["b_ptrs"].step == sym("BLOCK_K") * sym("stride_bk")
    acc = carried["acc"]
    assert acc.kind == "data" and getattr(acc.init, "op", None) == "full"
    assert getattr(acc.next, "op", None) == "dot"
    assert acc.entry in getattr(acc.next, "operands", ())

    a, b, c = analysis.accesses
    assert [x.base for x in (a, b, c)] == ["a_ptr", "b_ptr", "c_ptr"]
    assert a.loops == b.loops == (0,) and c.loops == ()
    assert a.shape == (sym("BLOCK_M"), sym("BLOCK_K"))
    assert b.shape == (sym("BLOCK_K"), sym("BLOCK_N"))
    assert c.shape == (sym("BLOCK_M"), sym("BLOCK_N"))
    assert a.strides == (sym("stride_am"), sym("stride_ak"))
    assert b.strides == (sym("stride_bk"), sym("stride_bn"))
    assert c.strides == (sym("stride_cm"), sym("stride_cn"))
    bk, k = sym("BLOCK_K"), sym("k")
    assert a.origin == sym("BLOCK_M") * sym("pid0") * sym("stride_am") + bk * k * sym("stride_ak")
    assert b.origin == sym("BLOCK_N") * sym("pid1") * sym("stride_bn") + bk * k * sym("stride_bk")
    assert [str(x) for x in a.bounds] == ["BLOCK_M*pid0 + lane0 < M", "lane1 < K - BLOCK_K*k"]
    assert [str(x) for x in b.bounds] == ["lane0 < K - BLOCK_K*k", "BLOCK_N*pid1 + lane1 < N"]
    assert [analysis.lane_axes(x.lhs - x.rhs) for x in c.bounds] == [[0], [1]]
    assert all(x.affine for x in (a, b, c))
    assert getattr(c.value, "op", None) == "to"
    assert analysis.param_kinds["stride_am"] == "scalar"


def test_a_loop_with_a_step_counts_iterations() -> None:
    text = HEADER + """\
def row_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(0, n, BLOCK, num_stages=2):
        cols = start + tl.arange(0, BLOCK)
        total += tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(total, axis=0))
"""
    analysis = analyse_kernel(parse_triton_source(text, "k.py"), "row_sum")
    (loop,) = analysis.loops
    assert loop.iteration == "start_iter" and loop.options == {"num_stages": "2"}
    assert loop.trip == sym("n").ceildiv(sym("BLOCK"))
    load, store = analysis.accesses
    assert load.offset == sym("BLOCK") * sym("start_iter") + sym("lane0") + sym("n") * sym("pid0")
    assert [str(b) for b in load.bounds] == ["BLOCK*start_iter + lane0 < n"]
    assert store.shape == () and store.strides == () and store.origin == sym("pid0")
    assert load.affine and store.affine


def test_if_on_a_constexpr_takes_the_branch_its_value_selects() -> None:
    text = HEADER + """\
def scale(x_ptr, b_ptr, out_ptr, n, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if HAS_BIAS:
        x = x + tl.load(b_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x, mask=offs < n)
"""
    module = parse_triton_source(text, "k.py")
    with_bias = analyse_kernel(module, "scale", {"HAS_BIAS": True})
    assert [a.base for a in with_bias.accesses] == ["x_ptr", "b_ptr", "out_ptr"]
    without = analyse_kernel(module, "scale", {"HAS_BIAS": False})
    assert [a.base for a in without.accesses] == ["x_ptr", "out_ptr"]
    assert without.param_kinds["b_ptr"] == "scalar"
    err = diagnostic(text, "scale")
    assert (err.line, err.column) == (9, 8)
    assert err.message == "the condition depends on constexpr HAS_BIAS, which has no known " \
                          "value; expected a default or a literal at the launch (or -D " \
                          "NAME=VALUE)"


MATMUL_BLOCK_PTR = HEADER + """\
def matmul_bp(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
              stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (stride_am, stride_ak), (pid_m * BLOCK_M, 0),
                             (BLOCK_M, BLOCK_K), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, stride_bn), (0, pid_n * BLOCK_N),
                             (BLOCK_K, BLOCK_N), (1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_bp = tl.advance(a_bp, (0, BLOCK_K))
        b_bp = tl.advance(b_bp, (BLOCK_K, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, stride_cn),
                             (pid_m * BLOCK_M, pid_n * BLOCK_N), (BLOCK_M, BLOCK_N), (1, 0))
    tl.store(c_bp, acc.to(tl.float16), boundary_check=(0, 1))
"""


def test_block_pointers_analyse_like_the_pointers_they_stand_for() -> None:
    analysis = analyse_kernel(parse_triton_source(MATMUL_BLOCK_PTR, "k.py"), "matmul_bp")
    (loop,) = analysis.loops
    carried = {c.name: c for c in loop.carried}
    assert carried["a_bp"].kind == "block_ptr"
    assert carried["a_bp"].steps == [IntExpr.const(0), sym("BLOCK_K")]
    assert carried["b_bp"].steps == [sym("BLOCK_K"), IntExpr.const(0)]
    a, b, c = analysis.accesses
    assert [x.via for x in (a, b, c)] == ["block_ptr"] * 3
    assert [x.base for x in (a, b, c)] == ["a_ptr", "b_ptr", "c_ptr"]
    assert a.strides == (sym("stride_am"), sym("stride_ak"))
    bk, k = sym("BLOCK_K"), sym("k")
    assert a.origin == sym("BLOCK_M") * sym("pid0") * sym("stride_am") + bk * k * sym("stride_ak")
    assert [str(x) for x in a.bounds] == ["BLOCK_M*pid0 + lane0 < M", "BLOCK_K*k + lane1 < K"]
    assert [str(x) for x in b.bounds] == ["BLOCK_K*k + lane0 < K", "BLOCK_N*pid1 + lane1 < N"]
    assert getattr(a.other, "value", None) == 0.0 and c.other is None
    assert all(x.affine for x in (a, b, c))


def test_tensor_descriptors_check_every_dim() -> None:
    text = HEADER + """\
def copy2d(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1],
                                       block_shape=[BLOCK_M, BLOCK_N])
    y_desc = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    off_m = tl.program_id(0) * BLOCK_M
    tile = x_desc.load([off_m, 0])
    y_desc.store([off_m, 0], tile * 2.0)
"""
    load, store = analyse_kernel(parse_triton_source(text, "k.py"), "copy2d").accesses
    assert (load.via, store.via) == ("descriptor", "descriptor")
    assert load.strides == store.strides == (sym("N"), IntExpr.const(1))
    assert load.origin == sym("BLOCK_M") * sym("N") * sym("pid0")
    assert [str(b) for b in store.bounds] == ["BLOCK_M*pid0 + lane0 < M", "lane1 < N"]
    assert load.affine and store.affine
    assert load.shape == (sym("BLOCK_M"), sym("BLOCK_N"))


def test_greater_than_bounds_read_as_less_than() -> None:
    text = HEADER + """\
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=n > offs)
"""
    (store,) = analyse_kernel(parse_triton_source(text, "k.py"), "k").accesses
    assert [str(b) for b in store.bounds] == ["lane0 < n"]


# ---- what is not affine, and what is not supported ----------------------------------------------
GATHER = HEADER + """\
def gather(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rows = tl.load(idx_ptr + i, mask=i < n, other=0)
    x = tl.load(x_ptr + tl.load(idx_ptr + i), mask=i < n)
    tl.store(out_ptr + i, x + rows, mask=i < n)
"""


def test_a_data_dependent_pointer_is_not_affine_and_says_where() -> None:
    analysis = analyse_kernel(parse_triton_source(GATHER, "gather.py"), "gather")
    first, inner, gathered, store = analysis.accesses
    assert first.affine and inner.affine and store.affine
    assert inner.loc == (9, 25)
    assert gathered.loc == (9, 9) and gathered.base == "x_ptr" and not gathered.affine
    assert gathered.reason == "the offset depends on the value loaded at gather.py:9:25 " \
                              "(a gather)"
    with pytest.raises(SourceError) as err:
        check_affine(analysis)
    assert (err.value.line, err.value.column) == (9, 9)
    assert str(err.value).startswith("gather.py:9:9: error: tl.load cannot be raised: the "
                                     "offset depends on the value loaded")


def test_a_carried_offset_without_a_constant_step_is_not_affine() -> None:
    text = HEADER + """\
def doubling(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    step = 1
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(4):
        acc += tl.load(x_ptr + step * BLOCK + offs)
        step = step * 2
    tl.store(out_ptr + offs, acc)
"""
    analysis = analyse_kernel(parse_triton_source(text, "k.py"), "doubling")
    (loop,) = analysis.loops
    assert {c.name: c.kind for c in loop.carried} == {"acc": "data", "step": "index"}
    load, store = analysis.accesses
    assert not load.affine and store.affine
    assert load.reason == "the offset depends on 'step', which the loop at line 10 updates " \
                          "by no loop-invariant step"


def test_a_name_reassigned_in_a_loop_is_fine_inside_and_opaque_after() -> None:
    text = HEADER + """\
def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for i in range(4):
        offs = i * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs))
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32))
"""
    analysis = analyse_kernel(parse_triton_source(text, "k.py"), "k")
    assert [c.kind for c in analysis.loops[0].carried] == ["last"]
    load, store, after = analysis.accesses
    assert (load.kind, store.kind, after.kind) == ("load", "store", "store")
    assert load.affine and store.affine and load.offset == sym("BLOCK") * sym("i") + sym("lane0")
    assert not after.affine
    assert after.reason == "the offset depends on 'offs', which the loop at line 8 reassigns " \
                           "(after the loop it holds the last iteration's value)"


def test_a_modulo_lane_offset_is_not_affine() -> None:
    text = HEADER + """\
def wrap(x_ptr, n, BLOCK: tl.constexpr):
    offs = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)) % n
    tl.store(x_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32))
"""
    (store,) = analyse_kernel(parse_triton_source(text, "k.py"), "wrap").accesses
    assert store.base == "x_ptr" and not store.affine
    assert "is not affine in the lanes" in store.reason


@pytest.mark.parametrize(("body", "line", "column", "message"), [
    ("    tl.atomic_add(x_ptr + tl.arange(0, 16), 1.0)\n", 7, 5,
     "tl.atomic_add is not supported; expected one of tl.program_id"),
    ("    i = 0\n    while i < n:\n        i += 1\n", 8, 5,
     "while loops are not supported; expected `for ... in range(...)`"),
    ("    if tl.program_id(0) < n:\n        pass\n", 7, 8,
     "`if` on a value known only at run time is not supported"),
    ("    y = tl.load(x_ptr + offs)\n", 7, 25, "unknown name 'offs'"),
    ("    for i in range(n):\n        t = i\n    tl.store(x_ptr, t)\n", 9, 21,
     "'t' is defined only inside the loop at line 7"),
    ("    a = tl.zeros((16, 8), dtype=tl.float32)\n    b = tl.dot(a, a)\n", 8, 9,
     "tl.dot of [16, 8] and [16, 8]: expected [M, K] and [K, N] blocks"),
    ("    x = tl.arange(0, 16)[:, None] + tl.arange(0, 8)[None, :] + tl.arange(0, 4)\n", 7, 9,
     "cannot broadcast [16, 8] with [4]"),
    ("    x = tl.arange(0, n)\n", 7, 9, "tl.arange's bounds must be constexpr; n is not"),
    ("    x = [i for i in range(4)]\n", 7, 9, "a ListComp expression is not supported"),
    ("    return 1\n", 7, 12, "a kernel returns nothing"),
    ("    x = tl.load(x_ptr, mask=tl.arange(0, 8) < n, pad=0)\n", 7, 50,
     "tl.load has no parameter 'pad'"),
    ("    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (16,), (0,))\n"
     "    x = tl.load(p, mask=tl.arange(0, 16) < n)\n", 8, 9,
     "a block pointer's load takes boundary_check and padding_option"),
    ("    p = tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0,), (16, 16), (1, 0))\n", 7, 9,
     "2 dims, 2 strides, 1 offsets and a block of rank 2"),
])
def test_unsupported_constructs_are_located(body: str, line: int, column: int,
                                            message: str) -> None:
    err = diagnostic(HEADER + "def k(x_ptr, n):\n" + body, "k")
    assert (err.filename, err.line, err.column) == ("k.py", line, column), str(err)
    assert message in err.message
    rendered = str(err).splitlines()
    assert rendered[0].startswith(f"k.py:{line}:{column}: error: ")
    assert rendered[2] == " " * (column - 1) + "^"


def test_columns_count_characters_not_bytes() -> None:
    err = diagnostic(HEADER + "def k(x_ptr):\n    y = 'é' + tl.atomic_add(x_ptr, 1)\n", "k")
    assert (err.line, err.column) == (7, 15)


def test_jit_helpers_are_read_where_they_are_called() -> None:
    text = HEADER + """\
def offsets(pid, BLOCK: tl.constexpr, SHIFT: tl.constexpr = 0):
    base = pid * BLOCK
    if SHIFT:
        base = base + SHIFT
    return base + tl.arange(0, BLOCK)


@triton.jit
def scaled(x, factor=2.0):
    return x * factor


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = offsets(tl.program_id(0), BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, scaled(x), mask=offs < n)
"""
    module = parse_triton_source(text, "k.py")
    assert module.helpers() == {"offsets", "scaled"}
    analysis = analyse_kernel(module, "k")
    load, store = analysis.accesses
    assert load.offset == store.offset == sym("BLOCK") * sym("pid0") + sym("lane0")
    assert [str(b) for b in store.bounds] == ["BLOCK*pid0 + lane0 < n"]
    assert getattr(store.value, "op", None) == "mul"
    report = report_module(module)
    assert "kernel k at k.py:19:1" in report and "kernel offsets" not in report
    assert "helper offsets at k.py:6:1 (read where it is called)" in report


def test_recursive_helpers_and_helper_mistakes_are_located() -> None:
    text = HEADER + "def f(x):\n    return f(x)\n\n\n@triton.jit\ndef k(x_ptr):\n" \
                    "    y = f(x_ptr)\n"
    err = diagnostic(text, "k")
    assert (err.line, err.column) == (7, 12) and "'f' calls itself" in err.message
    text = HEADER + "def f(x):\n    return tl.atomic_add(x, 1)\n\n\n@triton.jit\n" \
                    "def k(x_ptr):\n    y = f(x_ptr)\n"
    err = diagnostic(text, "k")
    assert (err.line, err.column) == (7, 12) and "tl.atomic_add is not supported" in err.message


def test_mangled_kernels_give_located_errors_never_tracebacks() -> None:
    pieces = ["tl.arange(0, 16)", "None", "0", "1.5", "offs", "[:, None]", "tl.load", "(", ")",
              ",", "+", "<", "tl.sum", "axis=1", "tl.dot", "k", "//", "%", "tl.where", "not",
              "[None, :]", "tl.advance", ".to(tl.int64)", "tl.program_id(5)", "lambda: 1"]
    rng = random.Random(14)
    texts = [VECTOR_ADD, ROW_SOFTMAX, MATMUL, MATMUL_BLOCK_PTR, GATHER]
    for _ in range(300):
        tokens = re.split(r"(\W)", rng.choice(texts))
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(tokens))
            if rng.random() < 0.5:
                tokens[k] = rng.choice(pieces)
            else:
                del tokens[k]
        try:
            module = parse_triton_source("".join(tokens), "m.py")
            report_module(module)
        except SourceError as err:
            assert str(err).startswith(f"m.py:{err.line}:{err.column}: error: ")


# ---- size: no recursion on the kernel's length ---------------------------------------------------
def test_long_bodies_and_long_expressions() -> None:
    lines = ["def long(x_ptr, out_ptr, BLOCK: tl.constexpr):",
             "    offs = tl.arange(0, BLOCK)",
             "    x = tl.load(x_ptr + offs)"]
    lines += ["    x = x + 1.0"] * 3000
    lines += ["    y = " + " + ".join(["offs"] * 400),
              "    tl.store(out_ptr + y, x)"]
    analysis = analyse_kernel(parse_triton_source(HEADER + "\n".join(lines) + "\n", "k.py"),
                              "long")
    load, store = analysis.accesses
    assert store.strides == (IntExpr.const(400),) and store.affine
    assert len(analysis.values) == 3001


# ---- the report and the command ------------------------------------------------------------------
def test_report_lists_kernels_accesses_and_launches() -> None:
    text = report_module(parse_triton_source(MATMUL, "matmul.py"))
    assert "kernel matmul_kernel at matmul.py:6:1" in text
    assert "  params: a_ptr (pointer), b_ptr (pointer), c_ptr (pointer), M (scalar)" in text
    assert "    carries a_ptrs: integer, += BLOCK_K*stride_ak per iteration" in text
    assert "  load #0 at 20:13 in loop 0: base a_ptr, block [BLOCK_M, BLOCK_K]" in text
    assert "    origin: BLOCK_K*k*stride_ak + BLOCK_M*pid0*stride_am; strides: axis 0: " \
           "stride_am, axis 1: stride_ak" in text
    assert "    mask: BLOCK_M*pid0 + lane0 < M (axes 0); lane1 < K - BLOCK_K*k (axes 1)" in text
    assert "    affine: yes" in text
    assert "  raises to xt: yes" in text
    assert "launch of matmul_kernel at 34:5 in matmul()" in text
    gather = report_module(parse_triton_source(GATHER, "gather.py"))
    assert "  raises to xt: no, at 9:9: tl.load cannot be raised: the offset depends on the " \
           "value loaded at gather.py:9:25 (a gather)" in gather
    assert "  grid dims: triton.cdiv(M, 64); triton.cdiv(N, 64)" in text
    assert "  options: num_stages=3" in text


def test_command_prints_the_report_or_a_located_error(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "vec_add.py"
    good.write_text(VECTOR_ADD)
    assert main([str(good)]) == 0
    out = capsys.readouterr().out
    assert "store #2 at 13:5: base out_ptr, block [BLOCK_SIZE]" in out
    assert parse_triton_file(good).kernels.keys() == {"add_kernel"}
    bad = tmp_path / "bad.py"
    bad.write_text(HEADER + "def k(x_ptr):\n    while True:\n        pass\n")
    assert main([str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:7:5: error: while loops are not supported")
    assert "Traceback" not in err


def test_command_takes_constexpr_values(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "k.py"
    path.write_text(HEADER + """\
def k(x_ptr, b_ptr, HAS_BIAS: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if HAS_BIAS:
        x += tl.load(b_ptr + offs)
    tl.store(x_ptr + offs, x)
""")
    assert main([str(path)]) == 1
    assert "the condition depends on constexpr HAS_BIAS" in capsys.readouterr().err
    assert main([str(path), "-D", "HAS_BIAS=True"]) == 0
    assert "load #1 at 10:14: base b_ptr, block [16]" in capsys.readouterr().out
    assert main([str(path), "-D", "HAS_BIAS=0"]) == 0
    assert "b_ptr (scalar)" in capsys.readouterr().out


def test_command_prints_the_raised_xt(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "vec_add.py"
    path.write_text(VECTOR_ADD)
    assert main([str(path), "--xt", "--dtype", "out_ptr=bf16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("builtin.module {")
    assert "-> !ax.tensor<[n_elements], bf16>" in out and "xt.kernel" in out
    with pytest.raises(SystemExit):
        main([str(path), "--xt", "--dtype", "out_ptr=f99"])
    assert "expected PARAM=DTYPE" in capsys.readouterr().err


def test_module_entry_point_runs_without_triton(tmp_path: Path) -> None:
    path = tmp_path / "softmax.py"
    path.write_text(ROW_SOFTMAX)
    done = subprocess.run([sys.executable, "-m", "axon.frontend.triton", str(path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "load #0 at 12:9: base in_ptr, block [BLOCK]" in done.stdout
    probe = ("import sys; from axon.frontend.triton import parse_triton_file, report_module; "
             f"report_module(parse_triton_file({str(path)!r})); print('triton' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=False)
    assert done.stdout.strip() == "False", done.stderr


# ---- raising into xt (first slice) and running the emitted kernel --------------------------------
def test_vector_add_and_row_softmax_raise_into_xt_kernels() -> None:
    add = raise_kernel(analyse_kernel(parse_triton_source(VECTOR_ADD, "vec_add.py"),
                                      "add_kernel"))
    add.verify()
    (kernel,) = [op for op in add.body.block.ops if isinstance(op, xt.KernelOp)]
    assert kernel.program_names() == ["pid0"] and kernel.param_names() == ["BLOCK_SIZE"]
    assert kernel.grid_exprs() == [sym("n_elements").ceildiv(sym("BLOCK_SIZE"))]
    assert [str(t) for t in kernel.input_types()] == ["f32[n_elements]"] * 2
    ops = [op.name for op in kernel.body.block.ops]
    assert ops == ["xt.load", "xt.load", "xt.map", "xt.store", "xt.yield"]

    softmax = raise_kernel(analyse_kernel(parse_triton_source(ROW_SOFTMAX, "softmax.py"),
                                          "softmax_kernel"), {"in_ptr": "f32"})
    softmax.verify()
    (kernel,) = [op for op in softmax.body.block.ops if isinstance(op, xt.KernelOp)]
    assert [str(t) for t in kernel.input_types()] == ["f32[G0, n_cols]"]
    assert kernel.grid_exprs() == [sym("G0")]
    load, *_ = kernel.body.block.ops
    assert isinstance(load, xt.LoadOp)
    assert [str(o) for o in load.attrs()["offsets"]] == ["pid0", "0"]
    assert load.other.value.data == float("-inf")
    reduces = [op.attrs()["kind"] for op in kernel.body.block.ops if isinstance(op, xt.ReduceOp)]
    assert reduces == ["max", "add"]


def test_the_matmul_raises_with_its_k_loop_and_block_pointers_alike() -> None:
    raised = []
    for text, name in ((MATMUL, "matmul_kernel"), (MATMUL_BLOCK_PTR, "matmul_bp")):
        func = raise_kernel(analyse_kernel(parse_triton_source(text, "k.py"), name),
                            {"c_ptr": "f16"})
        func.verify()
        (kernel,) = [op for op in func.body.block.ops if isinstance(op, xt.KernelOp)]
        assert [str(t) for t in kernel.input_types()] == ["f32[M, K]", "f32[K, N]"]
        assert [str(t) for t in kernel.output_types()] == ["f16[M, N]"]
        assert kernel.grid_exprs() == [sym("M").ceildiv(sym("BLOCK_M")),
                                       sym("N").ceildiv(sym("BLOCK_N"))]
        ops = [op.name for op in kernel.body.block.ops]
        assert ops == ["xt.full", "xt.for", "xt.store", "xt.yield"]
        loop = kernel.body.block.ops.first.next_op  # type: ignore[union-attr]
        assert isinstance(loop, xt.ForOp)
        assert (loop.iv.data, loop.extent_expr()) == ("k", sym("K").ceildiv(sym("BLOCK_K")))
        assert [op.name for op in loop.body.block.ops] == ["xt.load", "xt.load", "xt.dot",
                                                            "xt.yield"]
        a_load = loop.body.block.ops.first
        assert isinstance(a_load, xt.LoadOp)
        assert [str(o) for o in a_load.attrs()["offsets"]] == ["BLOCK_M*pid0", "BLOCK_K*k"]
        raised.append(str(func).replace("matmul_bp", "matmul_kernel"))
    assert raised[0] == raised[1]


def test_the_grid_size_takes_a_name_no_parameter_has() -> None:
    text = HEADER + """\
def rows(x_ptr, y_ptr, G0, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * G0 + cols, mask=cols < G0)
    tl.store(y_ptr + tl.program_id(0) * G0 + cols, x, mask=cols < G0)
"""
    func = raise_kernel(analyse_kernel(parse_triton_source(text, "k.py"), "rows"))
    (kernel,) = [op for op in func.body.block.ops if isinstance(op, xt.KernelOp)]
    assert [str(t) for t in kernel.input_types()] == ["f32[G0_, G0]"]
    assert kernel.grid_exprs() == [sym("G0_")]


def test_what_the_raise_does_not_take_is_located() -> None:
    unmasked = parse_triton_source(HEADER + """\
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))
""", "k.py")
    with pytest.raises(SourceError) as err:
        raise_kernel(analyse_kernel(unmasked, "k"))
    assert (err.value.line, err.value.column) == (6, 1)
    assert "the size of dim 0 of x_ptr is unknown; expected a mask" in err.value.message
    transposed = parse_triton_source(HEADER + """\
def t(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = (i[:, None] < n) & (i[None, :] < n)
    tl.store(y_ptr + i[:, None] * n + i[None, :], tl.load(x_ptr + i[None, :] * n + i[:, None],
                                                          mask=m), mask=m)
""", "t.py")
    with pytest.raises(SourceError) as err:
        raise_kernel(analyse_kernel(transposed, "t"))
    assert (err.value.line, err.value.column) == (9, 51)
    assert "a transposed access" in err.value.message
def _import(path: Path, name: str) -> ModuleType:
    """The user's module, imported by the test (the frontend never runs it) under the
    interpreter, which `load_module` below has switched on."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_raised_kernels_compute_what_the_originals_do(tmp_path: Path) -> None:
    import torch  # the test extra's; imported here, as the emitted modules are loaded here
    add_func = raise_kernel(analyse_kernel(parse_triton_source(VECTOR_ADD, "vec_add.py"),
                                           "add_kernel"))
    softmax_func = raise_kernel(analyse_kernel(parse_triton_source(ROW_SOFTMAX, "softmax.py"),
                                               "softmax_kernel"))
    emitted_add = load_module(emit_module(add_func, tile_sizes={"BLOCK_SIZE": 32}), tmp_path)
    emitted_softmax = load_module(emit_module(softmax_func, tile_sizes={"BLOCK": 16}), tmp_path)
    (tmp_path / "user_vec_add.py").write_text(VECTOR_ADD)
    (tmp_path / "user_softmax.py").write_text(ROW_SOFTMAX)
    user_add = _import(tmp_path / "user_vec_add.py", "axon_test_user_vec_add")
    user_softmax = _import(tmp_path / "user_softmax.py", "axon_test_user_softmax")

    gen = torch.Generator().manual_seed(0)
    x, y = torch.rand(100, generator=gen), torch.rand(100, generator=gen)
    want = user_add.add(x, y)
    got = emitted_add.add_kernel(x, y)
    assert torch.equal(got, want) and torch.equal(got, x + y)

    rows = torch.rand(5, 13, generator=gen)
    want = torch.empty_like(rows)
    user_softmax.softmax(rows, want)
    got = emitted_softmax.softmax_kernel(rows, BLOCK=16)
    assert torch.allclose(got, want, rtol=1e-6, atol=1e-7)
    assert torch.allclose(got, torch.softmax(rows, dim=1), rtol=1e-5, atol=1e-6)

    matmul_func = raise_kernel(analyse_kernel(parse_triton_source(MATMUL, "matmul.py"),
                                              "matmul_kernel"), {"c_ptr": "f16"})
    emitted_matmul = load_module(emit_module(matmul_func, tile_sizes={
        "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}), tmp_path)
    (tmp_path / "user_matmul.py").write_text(MATMUL)
    user_matmul = _import(tmp_path / "user_matmul.py", "axon_test_user_matmul")
    a, b = torch.rand(33, 40, generator=gen), torch.rand(40, 20, generator=gen)
    want = torch.empty((33, 20), dtype=torch.float16)
    user_matmul.matmul(a, b, want)
    for block_io in ("pointer", "block_ptr"):
        got = emitted_matmul.matmul_kernel(a, b, block_io=block_io)
        assert got.dtype == torch.float16
        assert torch.allclose(got.float(), want.float(), rtol=2e-3, atol=1e-2), block_io
    assert torch.allclose(want.float(), a @ b, rtol=2e-3, atol=1e-2)

    rownorm_func = raise_kernel(analyse_kernel(parse_triton_source(ROW_NORM, "rownorm.py"),
                                               "rownorm_kernel"))
    emitted_rownorm = load_module(emit_module(rownorm_func, tile_sizes={
        "BLOCK_M": 4, "BLOCK_N": 16}), tmp_path)
    (tmp_path / "user_rownorm.py").write_text(ROW_NORM)
    user_rownorm = _import(tmp_path / "user_rownorm.py", "axon_test_user_rownorm")
    x, w = torch.rand(7, 13, generator=gen), torch.rand(13, generator=gen)
    want = user_rownorm.rownorm(x, w)
    assert torch.equal(emitted_rownorm.rownorm_kernel(x, w), want)
    assert (want > 0).any() and (want == 0).any()

    center_func = raise_kernel(analyse_kernel(parse_triton_source(CENTER, "center.py"),
                                              "center_kernel"))
    forms = [op.attrs()["form"] for op in center_func.walk() if isinstance(op, xt.MapOp)]
    assert "out[d0 < BLOCK_M] = in0[d0] / idx(N)" in forms  # a size in the math
    assert "out[d0 < BLOCK_M, d1 < BLOCK_N] = select((idx(d1) < idx(N)), in0[d0, d1], 0.0)" \
        in forms  # a mask as tl.where's condition
    emitted_center = load_module(emit_module(center_func, tile_sizes={
        "BLOCK_M": 4, "BLOCK_N": 16}), tmp_path)
    (tmp_path / "user_center.py").write_text(CENTER)
    user_center = _import(tmp_path / "user_center.py", "axon_test_user_center")
    want = user_center.center(x)
    assert torch.equal(emitted_center.center_kernel(x), want)


def test_the_emitted_kernel_reads_back_to_the_same_accesses() -> None:
    analysis = analyse_kernel(parse_triton_source(ROW_SOFTMAX, "softmax.py"), "softmax_kernel")
    emitted = emit_module(raise_kernel(analysis), tile_sizes={"BLOCK": 16})
    module = parse_triton_source(emitted.text, "emitted.py")
    assert module.helpers() == {"_wide"}
    (kernel,) = [k for k in module.kernels if k not in module.helpers()]
    again = analyse_kernel(module, kernel, {"INT64": False})
    load, store = again.accesses
    original = analysis.accesses[0]
    assert (load.base, store.base) == ("in0_ptr", "out0_ptr")
    assert load.offset == sym("n_cols") * sym("pid0") + sym("lane0")
    assert original.offset == sym("in_row_stride") * sym("pid0") + sym("lane0")
    assert load.strides == original.strides and load.shape == original.shape
    assert [str(b) for b in load.bounds] == ["pid0 < G0", "lane0 < n_cols"]
    assert getattr(load.other, "value", None) == float("-inf")
    assert [v.op for v in again.values if v.op in ("reduce", "exp")] == ["reduce", "exp",
                                                                         "reduce"]
