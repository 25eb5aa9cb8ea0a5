"""The `nki.isa` surface: one function per instruction, executed eagerly on numpy.

Every instruction takes its destination first (`dst=`), as the current API does. The instructions
live by engine family (`isa_data.py`, `isa_pe.py`, `isa_act.py`, `isa_dve.py`), their shared checks
and numerics in `operands.py`.
"""

from axon.targets.nki.simulator.isa_act import activation, activation_reduce
from axon.targets.nki.simulator.isa_data import dma_copy, dma_transpose, memset, tensor_copy
from axon.targets.nki.simulator.isa_dve import (
    affine_select,
    bn_aggr,
    bn_stats,
    exponential,
    iota,
    select,
    tensor_reduce,
    tensor_scalar,
    tensor_tensor,
    tensor_tensor_scan,
)
from axon.targets.nki.simulator.isa_pe import nc_matmul, nc_transpose
from axon.targets.nki.simulator.operands import (
    dge_mode,
    engine,
    matmul_perf_mode,
    oob_mode,
    reduce_cmd,
)

__all__ = ["activation", "activation_reduce", "affine_select", "bn_aggr", "bn_stats", "dge_mode",
           "dma_copy", "dma_transpose", "engine", "exponential", "iota", "matmul_perf_mode",
           "memset", "nc_matmul", "nc_transpose", "oob_mode", "reduce_cmd", "select",
           "tensor_copy", "tensor_reduce", "tensor_scalar", "tensor_tensor", "tensor_tensor_scan"]
