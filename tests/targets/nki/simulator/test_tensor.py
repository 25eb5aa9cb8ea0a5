"""NKI tensors as strided views: indexing rules, bounds, reshape, view(dtype), .ap(), and the
`nki.language` conveniences that run instructions on new tiles."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axon.targets.nki.simulator import HardwareLimits, KernelError, simulate
from axon.targets.nki.simulator import api as nki
from axon.targets.nki.simulator import isa as nisa
from axon.targets.nki.simulator import language as nl


def shapes_seen(trn2: HardwareLimits) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((128, 4, 8), dtype=nl.float32, buffer=nl.sbuf)
        seen["partition_int"] = tile[0].shape
        seen["free_int"] = tile[:, 2].shape
        seen["both_free_ints"] = tile[:, 2, 3].shape
        seen["hbm_int"] = x[5].shape
        seen["ds"] = tile[nl.ds(32, 32), :, nl.ds(2, 4)].shape
        seen["ellipsis"] = tile[..., 1].shape
        seen["reshape"] = tile.reshape((128, 32)).shape
        seen["view"] = tile.view(nl.bfloat16).shape
        return x

    simulate(nki.jit(body), np.zeros((16, 8), dtype=np.float32), limits=trn2)
    return seen


def test_integer_indices_follow_the_nki_rules(trn2: HardwareLimits) -> None:
    assert shapes_seen(trn2) == {
        "partition_int": (1, 4, 8), "free_int": (128, 8), "both_free_ints": (128, 1),
        "hbm_int": (8,), "ds": (32, 4, 4), "ellipsis": (128, 4), "reshape": (128, 32),
        "view": (128, 4, 16)}


def test_views_alias_their_storage(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=tile, value=0.0)
        nisa.memset(dst=tile.reshape((4, 2, 4))[:, 1, :], value=2.0)
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=tile)
        return out

    out = simulate(nki.jit(body), np.zeros(1, dtype=np.float32), limits=trn2)
    np.testing.assert_array_equal(out, np.tile([0.0] * 4 + [2.0] * 4, (4, 1)))


def test_access_patterns_address_the_storage(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((4, 6), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x)
        # every other element of each partition, starting at element 1
        odd = tile.ap(pattern=[[6, 4], [2, 3]], offset=1)
        out = nl.ndarray((4, 3), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=odd)
        return out

    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(simulate(nki.jit(body), x, limits=trn2), x[:, 1::2])


def test_an_access_pattern_past_the_allocation(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        return x.ap(pattern=[[4, 4], [1, 5]], offset=0)

    with pytest.raises(KernelError, match=r"touches elements 0..16, past the 16 of the "
                                          r"allocation"):
        simulate(nki.jit(body), np.zeros((4, 4), dtype=np.float32), limits=trn2)


def test_item_assignment_points_to_instructions(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        x[0, 0] = 1.0
        return x

    with pytest.raises(KernelError, match="write through an instruction"):
        simulate(nki.jit(body), np.zeros((4, 4), dtype=np.float32), limits=trn2)


def test_language_conveniences(trn2: HardwareLimits) -> None:
    def body(a, b):  # type: ignore[no-untyped-def]
        ta, tb = nl.load(a), nl.load(b)
        total = nl.add(ta, tb)
        scaled = nl.multiply(total, 0.5)
        exps = nl.exp(scaled)
        row_sum = nl.sum(exps, axis=1, keepdims=True)
        row_max = nl.max(ta, axis=1)
        product = nl.copy(nl.matmul(ta, tb, transpose_x=True), dtype=nl.float32)
        flipped = nl.copy(nl.transpose(ta), dtype=nl.float32)
        outs = []
        for tile in (exps, row_sum, row_max, product, flipped):
            out = nl.ndarray(tile.shape, dtype=tile.dtype, buffer=nl.shared_hbm)
            nl.store(out, tile)
            outs.append(out)
        return tuple(outs)

    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = rng.standard_normal((64, 64)).astype(np.float32)
    exps, row_sum, row_max, product, flipped = simulate(nki.jit(body), a, b, limits=trn2)
    expected = np.exp((a + b) * 0.5)
    np.testing.assert_allclose(exps, expected, rtol=1e-6)
    np.testing.assert_allclose(row_sum[:, 0], expected.sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(row_max[:, 0], a.max(axis=1))
    np.testing.assert_allclose(product, a.T @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(flipped, a.T)


def test_tile_size_and_grid_come_from_the_run(trn2: HardwareLimits) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        out = nl.ndarray((2, 3, 6), dtype=nl.int32, buffer=nl.shared_hbm)
        row = nl.ndarray((1, 6), dtype=nl.int32, buffer=nl.sbuf)
        values = [nl.program_id(1), nl.num_programs(0), nl.num_programs(1),
                  nl.num_programs((0, 1)), nl.program_ndim(), nl.tile_size.pmax]
        for n, v in enumerate(values):
            nisa.iota(dst=row[:, n:n + 1], pattern=[[0, 1]], offset=v)
        nisa.dma_copy(dst=out[nl.program_id(0), nl.program_id(1)], src=row[0])
        return out

    out = simulate(nki.jit(body)[2, 3], np.zeros(1, dtype=np.float32), limits=trn2)
    for i in range(2):
        for j in range(3):
            assert list(out[i, j]) == [j, 2, 3, 6, 2, 128]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 128), st.integers(-140, 140), st.integers(-140, 140))
def test_a_slice_past_either_end_is_never_silently_clamped(trn2: HardwareLimits, size: int,
                                                           start: int, stop: int) -> None:
    def body(x):  # type: ignore[no-untyped-def]
        tile = nl.ndarray((size, 4), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=tile[start:stop], value=1.0)
        return x

    valid = 0 <= start < stop <= size
    aligned = start % (128 if stop - start > 64 else 64 if stop - start > 32 else 32) == 0
    if valid and aligned:
        simulate(nki.jit(body), np.zeros(1, dtype=np.float32), limits=trn2)
    else:
        with pytest.raises(KernelError, match="out of bounds|is empty|must start at"):
            simulate(nki.jit(body), np.zeros(1, dtype=np.float32), limits=trn2)
