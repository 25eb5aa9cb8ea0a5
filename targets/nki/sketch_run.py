"""Running an admitted NKI lowering on the NKI simulator: the second check, never the proof.

A lowering is proved for one symbolic tile (`synth.admit`). Here the tile op's whole tensors
(its dims as sizes) are split by a grid along the tile op's `grid` dim into tiles of `TILE`
(a kernel parameter), each tile loaded (`tile.load`, the last one cut by the tensor's end and
padded), the candidate's instructions run on it and its result stored: a `tile.kernel` that
the NKI emitter (`emit.py`) prints as a current-API module and the simulator runs unchanged,
against the tile op's numpy reference.

    got, want = run_lowering(TILE_OPS["row_sum"], admitted, sketch, "trn2",
                             sizes={"P": 300, "F": 77}, tile=128, tmp=tmp_path)
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path

import ml_dtypes
import numpy as np
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from axon.dialects.ax import TensorType
from axon.dialects.form.intexpr import IntExpr
from axon.dialects.tile import KernelOp, LoadOp, StoreOp, YieldOp
from axon.synth import Filling, Sketch
from axon.targets.nki.emit import EmittedKernel, emit_nki
from axon.targets.nki.simulator import SimulationWarning, load_kernel, simulate
from axon.targets.nki.simulator_limits import load_limits
from axon.targets.nki.sketches import TileOp, tile_limits

#: the kernel parameter that is the grid dim's tile size
TILE = "BT"
#: the grid's program id
PROGRAM = "pid"
#: numpy storage of the dtypes the sketches' tile ops take
_STORAGE = {"f32": np.float32, "bf16": ml_dtypes.bfloat16}


def kernel_function(tile_op: TileOp, sketch: Sketch, filling: Filling, profile: str) -> FuncOp:
    """The tile op over whole tensors as a `tile.kernel`: a grid along `tile_op.grid` of
    tiles of `TILE`, each running the filling's instructions (built for that tile)."""
    if tile_op.grid is None:
        raise ValueError(f"tile op '{tile_op.name}' has no grid dim (a square tile)")
    limits = tile_limits(profile)
    spec = tile_op.spec(limits)
    tiled = tile_op.spec(limits, rename={tile_op.grid: TILE})
    candidate = sketch.build(tiled, filling)
    params = [a.type for a in spec.func.body.block.args]
    (result,) = spec.func.function_type.outputs.data
    assert isinstance(result, TensorType)
    body = Block(arg_types=params)
    source = candidate.func.body.block
    for whole, arg in zip(body.args, list(source.args), strict=True):
        tile = arg.type
        assert isinstance(tile, TensorType) and isinstance(whole.type, TensorType)
        load = LoadOp.make([whole], offsets=_offsets(tile), shape=list(tile.shape), pad=0.0,
                           space="sbuf")
        body.add_op(load)
        arg.replace_all_uses_with(load.results[0])
    ret = source.last_op
    assert isinstance(ret, ReturnOp)
    for op in list(source.ops):
        if op is not ret:
            op.detach()
            body.add_op(op)
    (value,) = ret.arguments
    assert isinstance(value.type, TensorType)
    body.add_ops([StoreOp(value, 0, _offsets(value.type)), YieldOp()])
    func = FuncOp(f"{tile_op.name}_{sketch.id.replace('.', '_')}", (params, [result]))
    kernel = KernelOp(list(func.body.block.args), [result], [PROGRAM],
                      [f"ceildiv({tile_op.grid}, {TILE})"], [TILE], Region(body),
                      assume=[f"{TILE} >= 1", *tiled.assumptions, *candidate.conditions])
    func.body.block.add_ops([kernel, ReturnOp(*kernel.results)])
    func.verify()
    return func


def _offsets(t: TensorType) -> list[IntExpr]:
    """A tile's offsets in its whole tensor: the program's tiles along the grid dim."""
    return [IntExpr.sym(PROGRAM) * IntExpr.sym(TILE) if d == IntExpr.sym(TILE)
            else IntExpr.const(0) for d in t.shape]


def emit_lowering(tile_op: TileOp, sketch: Sketch, filling: Filling, profile: str,
                  tile: int) -> EmittedKernel:
    """The module of `kernel_function` with the grid dim's tiles of `tile`."""
    return emit_nki(kernel_function(tile_op, sketch, filling, profile), {TILE: tile})


def inputs_for(tile_op: TileOp, sizes: Mapping[str, int], seed: int) -> list[np.ndarray]:
    """Standard-normal inputs of the tile op's parameters at `sizes`, in their dtypes."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=[int(d) if d.isdigit() else sizes[d] for d in shape])
            .astype(np.float32).astype(_STORAGE[dtype]) for shape, dtype in tile_op.params]


def run_lowering(tile_op: TileOp, sketch: Sketch, filling: Filling, profile: str,
                 sizes: Mapping[str, int], tile: int, tmp: Path, seed: int = 0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The simulator's output of the emitted lowering on random inputs at `sizes`, and the
    numpy reference's (in float64); a simulator warning is raised as an error."""
    module = emit_lowering(tile_op, sketch, filling, profile, tile)
    path = tmp / f"{module.name}.py"
    path.write_text(module.text)
    inputs = inputs_for(tile_op, sizes, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SimulationWarning)
        got = simulate(load_kernel(path), *inputs, limits=load_limits(profile))
    want = tile_op.reference(*(x.astype(np.float64) for x in inputs))
    return np.asarray(got), np.asarray(want)
