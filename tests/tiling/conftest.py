"""Tiled kernels written as MLIR text, for the cost and concretization tests: the fixture
`tile_kernels` gives the builders (`tile_kernels.matmul(dtype="bf16")`)."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest

from axon.dialects.tile import KernelOp
from axon.tools.embed import parse_mlir


@pytest.fixture
def tile_kernels() -> ModuleType:
    """This module: its builders of kernels."""
    return sys.modules[__name__]


def kernel_of(text: str) -> KernelOp:
    """The one `tile.kernel` of a module's text."""
    module = parse_mlir(text, "kernel.mlir")
    (kernel,) = (op for op in module.walk() if isinstance(op, KernelOp))
    return kernel


def elementwise_add(dtype: str = "f32", space: str = "registers") -> KernelOp:
    """`x + y` over [BM, BN] blocks of [M, N]."""
    t = f"!ax.tensor<[M, N], {dtype}>"
    tile = f"!ax.tensor<[BM, BN], {dtype}>"
    return kernel_of(f"""
func.func @g(%x: {t}, %y: {t}) -> {t} {{
  %c = tile.kernel %x, %y {{program_ids = ["i", "j"], grid = ["ceildiv(M, BM)", "ceildiv(N, BN)"],
                           params = ["BM", "BN"], assume = ["BM >= 1", "BN >= 1"]}}
      : ({t}, {t}) -> {t} {{
  ^bb0(%xg: {t}, %yg: {t}):
    %a = tile.load %xg {{offsets = ["i*BM", "j*BN"], shape = ["BM", "BN"], pad = 0.0 : f64,
                        space = "{space}"}} : ({t}) -> {tile}
    %b = tile.load %yg {{offsets = ["i*BM", "j*BN"], shape = ["BM", "BN"], pad = 0.0 : f64,
                        space = "{space}"}} : ({t}) -> {tile}
    %u = ax.add %a, %b : ({tile}, {tile}) -> {tile}
    tile.store %u {{result = 0, offsets = ["i*BM", "j*BN"]}} : {tile}
    tile.yield
  }}
  func.return %c : {t}
}}
""")


def matmul(dtype: str = "bf16", space: str = "registers", acc_space: str = "registers",
           assume: str = '"BM >= 1", "BN >= 1", "BK >= 1"') -> KernelOp:
    """`x @ w`, one program per [BM, BN] output tile, a sequential loop over K in steps of BK
    loading x's [BM, BK] and w's [BK, BN] tiles and accumulating on chip (in `dtype`, as
    `ax.matmul` gives it)."""
    acc = dtype
    a, b = f"!ax.tensor<[M, K], {dtype}>", f"!ax.tensor<[K, N], {dtype}>"
    c, tile = f"!ax.tensor<[M, N], {acc}>", f"!ax.tensor<[BM, BN], {acc}>"
    xt, wt = f"!ax.tensor<[BM, BK], {dtype}>", f"!ax.tensor<[BK, BN], {dtype}>"
    return kernel_of(f"""
func.func @g(%a: {a}, %b: {b}) -> {c} {{
  %c = tile.kernel %a, %b {{program_ids = ["i", "j"], grid = ["ceildiv(M, BM)", "ceildiv(N, BN)"],
                           params = ["BM", "BN", "BK"], assume = [{assume}]}}
      : ({a}, {b}) -> {c} {{
  ^bb0(%x: {a}, %w: {b}):
    %zero = tile.full {{value = 0.0 : f64, shape = ["BM", "BN"], dtype = {acc},
                        space = "{acc_space}"}} : {tile}
    %acc = tile.for %zero {{iv = "k", extent = "ceildiv(K, BK)"}} : ({tile}) -> {tile} {{
    ^bb1(%in: {tile}):
      %p = tile.load %x {{offsets = ["i*BM", "k*BK"], shape = ["BM", "BK"], pad = 0.0 : f64,
                         space = "{space}"}} : ({a}) -> {xt}
      %q = tile.load %w {{offsets = ["k*BK", "j*BN"], shape = ["BK", "BN"], pad = 0.0 : f64,
                         space = "{space}"}} : ({b}) -> {wt}
      %r = ax.matmul %p, %q : ({xt}, {wt}) -> {tile}
      %s = ax.add %in, %r : ({tile}, {tile}) -> {tile}
      tile.yield %s : {tile}
    }}
    tile.store %acc {{result = 0, offsets = ["i*BM", "j*BN"]}} : {tile}
    tile.yield
  }}
  func.return %c : {c}
}}
""")


def row_softmax(space: str = "sbuf") -> KernelOp:
    """A row softmax over blocks of BM whole rows."""
    t, tile, col = ("!ax.tensor<[M, N], f32>", "!ax.tensor<[BM, N], f32>",
                    "!ax.tensor<[BM, 1], f32>")
    return kernel_of(f"""
func.func @g(%x: {t}) -> {t} {{
  %c = tile.kernel %x {{program_ids = ["i"], grid = ["ceildiv(M, BM)"], params = ["BM"],
                       assume = ["BM >= 1", "BM <= 128"]}} : ({t}) -> {t} {{
  ^bb0(%xg: {t}):
    %a = tile.load %xg {{offsets = ["i*BM", "0"], shape = ["BM", "N"], pad = 0.0 : f64,
                        space = "{space}"}} : ({t}) -> {tile}
    %m = ax.reduce_max %a {{axes = array<i64: 1>, keepdims = true}} : ({tile}) -> {col}
    %s = ax.sub %a, %m : ({tile}, {col}) -> {tile}
    %e = ax.exp %s : ({tile}) -> {tile}
    %z = ax.sum %e {{axes = array<i64: 1>, keepdims = true}} : ({tile}) -> {col}
    %y = ax.div %e, %z : ({tile}, {col}) -> {tile}
    tile.store %y {{result = 0, offsets = ["i*BM", "0"]}} : {tile}
    tile.yield
  }}
  func.return %c : {t}
}}
""")
