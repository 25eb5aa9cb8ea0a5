"""The `nki` dialect: Axon's NeuronCore ISA level, one op per `nki.isa` instruction the
lowering uses (reference/nki.md section 3; docs/nki.md).

Data movement and fills (`movement.py`): `dma_copy`, `dma_transpose`, `tensor_copy`, `memset`,
`iota`; the Tensor engine (`tensor_engine.py`): `nc_matmul` (with PSUM accumulation),
`nc_transpose`; the Vector, Scalar and GpSimd engines (`compute.py`): `tensor_tensor`,
`tensor_scalar`, `activation`, `activation_reduce`, `tensor_reduce`, `tensor_tensor_scan`,
`select`, `affine_select`, `exponential` (NeuronCore-v4), `bn_stats`, `bn_aggr`. Each is a
form op: its generic form is its meaning for the verifier and the interpreter, its engine is
fixed or a property, and its verifier checks buffers, shapes and dtypes against the NKI
profiles' limits (`base.py`, `limits.py`).
"""

from xdsl.ir import Dialect

from axon.dialects.form.interface import register_dialect
from axon.dialects.nki.base import ALU_OPS, BUFFERS, ENGINES, NkiOp, buffer_of
from axon.dialects.nki.compute import (
    ACTIVATIONS,
    ActivationOp,
    ActivationReduceOp,
    AffineSelectOp,
    BnAggrOp,
    BnStatsOp,
    ExponentialOp,
    SelectOp,
    TensorReduceOp,
    TensorScalarOp,
    TensorTensorOp,
    TensorTensorScanOp,
)
from axon.dialects.nki.movement import (
    AccessOp,
    DmaCopyOp,
    DmaTransposeOp,
    IotaOp,
    MemsetOp,
    TensorCopyOp,
)
from axon.dialects.nki.tensor_engine import NcMatmulOp, NcTransposeOp

ALL_OPS: tuple[type[NkiOp], ...] = (
    DmaCopyOp, DmaTransposeOp, TensorCopyOp, MemsetOp, IotaOp, NcMatmulOp, NcTransposeOp,
    TensorTensorOp, TensorScalarOp, ActivationOp, ActivationReduceOp, TensorReduceOp,
    TensorTensorScanOp, SelectOp, AffineSelectOp, ExponentialOp, BnStatsOp, BnAggrOp)
#: access patterns: views the instructions read, no instruction of their own (so no
#: conformance case: they run nothing)
ACCESS_OPS: tuple[type[NkiOp], ...] = (AccessOp,)
Nki = Dialect("nki", [*ALL_OPS, *ACCESS_OPS], [])
register_dialect(Nki)

__all__ = ["ACCESS_OPS", "ACTIVATIONS", "ALL_OPS", "ALU_OPS", "BUFFERS", "ENGINES", "AccessOp",
           "ActivationOp",
           "ActivationReduceOp", "AffineSelectOp", "BnAggrOp", "BnStatsOp", "DmaCopyOp",
           "DmaTransposeOp",
           "ExponentialOp", "IotaOp",
           "MemsetOp", "NcMatmulOp", "NcTransposeOp", "Nki", "NkiOp", "SelectOp",
           "TensorCopyOp", "TensorReduceOp", "TensorScalarOp", "TensorTensorOp",
           "TensorTensorScanOp", "buffer_of"]
