"""The tracing API builds the expected ax ops, for symbolic and concrete sizes."""

from __future__ import annotations

import pytest
from xdsl.dialects import func

from axon.dialects import ax as axd
from axon.dialects.ax.shapes import ShapeError
from axon.dialects.ax.tensor_type import TensorType
from axon.frontend import api as ax


def _ops(module) -> list[str]:
    (fn,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    return [op.name for op in fn.body.block.ops]


def _fn(module) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def test_rmsnorm_matmul_symbolic_and_concrete():
    @ax.function
    def rmsnorm_matmul(x: ax.bf16["M", "K"], g: ax.bf16["K"], w: ax.bf16["K", "N"]):
        ms = ax.mean(x * x, axis=-1, keepdims=True)
        return x * ax.rsqrt(ms + 1e-6) * g @ w

    assert rmsnorm_matmul.name == "rmsnorm_matmul"
    module = rmsnorm_matmul.to_module()
    assert _ops(module) == ["ax.mul", "ax.mean", "ax.constant", "ax.add", "ax.rsqrt", "ax.mul",
                            "ax.mul", "ax.matmul", "func.return"]
    assert _fn(module).function_type.outputs.data[0] == TensorType(["M", "N"], "bf16")
    concrete = rmsnorm_matmul.to_module(M=4, K=8, N=2)
    assert _fn(concrete).function_type.outputs.data[0] == TensorType([4, 2], "bf16")
    assert _fn(concrete).function_type.inputs.data[1] == TensorType([8], "bf16")


def test_scalar_takes_tensor_dtype_and_size_symbol_becomes_generic():
    def scale(x):
        return x * 2, x / ax.sqrt(x.shape[-1])

    module = ax.trace(scale, ax.bf16["M", "D"]).to_module()
    ops = list(_fn(module).body.block.ops)
    const = next(op for op in ops if isinstance(op, axd.ConstantOp))
    assert const.results[0].type == TensorType([], "bf16")
    generic = next(op for op in ops if isinstance(op, axd.GenericOp))
    assert generic.form.data == "out[] = cast(idx(D), bf16)"
    assert any(isinstance(op, axd.SqrtOp) for op in ops)


def test_no_implicit_promotion():
    def mixed(x, y):
        return x + y

    with pytest.raises(ShapeError, match="element type bf16, expected f32"):
        ax.trace(mixed, ax.f32["M"], ax.bf16["M"]).to_module()


def test_broadcast_mismatch_names_dims():
    def bad(x, y):
        return x * y

    with pytest.raises(ShapeError, match=r"cannot broadcast .* \(K\) against .* \(M\)"):
        ax.trace(bad, ax.f32["M"], ax.f32["K"]).to_module()


def test_reductions_axes_and_keepdims():
    def reductions(x):
        return (ax.sum(x), x.max(axis=(0, -1), keepdims=True), ax.mean(x, axis=-2),
                ax.cumsum(x), x.prod(1))

    module = ax.trace(reductions, ax.f32["A", "B", "C"]).to_module()
    fn = _fn(module)
    outs = fn.function_type.outputs.data
    assert outs[0] == TensorType([], "f32")
    assert outs[1] == TensorType([1, "B", 1], "f32")
    assert outs[2] == TensorType(["A", "C"], "f32")
    assert outs[3] == TensorType(["A", "B", "C"], "f32")
    assert outs[4] == TensorType(["A", "C"], "f32")
    sums = [op for op in fn.body.block.ops if isinstance(op, axd.SumOp)]
    assert sums[0].attrs() == {"axes": (0, 1, 2), "keepdims": False}


def test_softmax_expands_with_max_subtraction():
    module = ax.trace(ax.softmax, ax.f32["M", "N"]).to_module()
    assert _ops(module) == ["ax.reduce_max", "ax.sub", "ax.exp", "ax.sum", "ax.div",
                            "func.return"]


@pytest.mark.parametrize("composite, specs", [
    (ax.log_softmax, [ax.f32["M", "N"]]),
    (ax.rmsnorm, [ax.bf16["M", "K"], ax.bf16["K"]]),
    (ax.layernorm, [ax.f16["M", "K"], ax.f16["K"], ax.f16["K"]]),
    (ax.gelu_tanh, [ax.f32["M"]]),
    (lambda q, k, v: ax.attention(q, k, v, causal=True),
     [ax.bf16["B", "S", "D"], ax.bf16["B", "T", "D"], ax.bf16["B", "T", "E"]]),
])
def test_composites_give_verified_primitive_ir(composite, specs):
    module = ax.trace(composite, *specs, name="composite").to_module()
    module.verify()
    names = set(_ops(module))
    assert names <= {op.name for op in axd.ALL_OPS} | {"func.return"}


def test_attention_default_scale_and_causal_mask():
    def attn(q, k, v):
        return ax.attention(q, k, v, causal=True)

    module = ax.trace(attn, ax.f32["S", 64], ax.f32["S", 64], ax.f32["S", 64]).to_module(S=16)
    ops = list(_fn(module).body.block.ops)
    consts = [op.attrs()["value"] for op in ops if isinstance(op, axd.ConstantOp)]
    assert 0.125 in consts
    assert [op.attrs()["axis"] for op in ops if isinstance(op, axd.IotaOp)] == [0, 1]
    assert any(isinstance(op, axd.SelectOp) for op in ops)
    assert _fn(module).function_type.outputs.data[0] == TensorType([16, 64], "f32")


def test_shape_ops_slicing_reshape_concat_transpose():
    def shapes(x, y):
        return (x[1:, ::2], x[-1], ax.reshape(x, (-1,)), x.reshape("N", -1), x.T,
                ax.concatenate([x, y], axis=-1), ax.broadcast_to(x[0], ("K", "M", "N")),
                ax.transpose(ax.reshape(x, ["M", "N", 1]), (2, 0, 1)))

    module = ax.trace(shapes, ax.f32["M", "N"], ax.f32["M", 3]).to_module()
    outs = _fn(module).function_type.outputs.data
    expected = [(["M - 1", "(N + 1) floordiv 2"]), (["N"]), (["M*N"]),
                (["N", "M"]), (["N", "M"]), (["M", "N + 3"]), (["K", "M", "N"]),
                ([1, "M", "N"])]
    assert [str(t) for t in outs] == [str(TensorType(s, "f32")) for s in expected]


def test_reshape_minus_one_symbolic_and_errors():
    def flat(x):
        return ax.reshape(x, ("B", -1))

    module = ax.trace(flat, ax.f32["B", "H", 4]).to_module()
    assert _fn(module).function_type.outputs.data[0] == TensorType(["B", "4*H"], "f32")
    with pytest.raises(ShapeError, match="only one dim may be -1"):
        ax.trace(lambda x: ax.reshape(x, (-1, -1)), ax.f32[4]).to_module()


def test_operators_and_comparisons():
    def ops(x, y):
        return (-x, 1 - x, 2 / x, x ** 2, x @ y, x < y, x == 0.5, ax.where(x > 0, x, 0.0),
                ax.maximum(x, y), ax.astype(x, ax.i32), ax.zeros(("M", "M")),
                ax.iota(("M",), 0, ax.f32))

    module = ax.trace(ops, ax.f32["M", "M"], ax.f32["M", "M"]).to_module()
    names = _ops(module)
    for name in ("ax.neg", "ax.sub", "ax.div", "ax.pow", "ax.matmul", "ax.lt", "ax.eq",
                 "ax.select", "ax.max", "ax.cast", "ax.iota"):
        assert name in names
    outs = _fn(module).function_type.outputs.data
    assert outs[5] == TensorType(["M", "M"], "i1")
    assert outs[9] == TensorType(["M", "M"], "i32")


def test_multiple_returns_and_inlined_call():
    @ax.function
    def inner(x: ax.f32["N"]):
        return ax.exp(x)

    @ax.function
    def outer(x: ax.f32["N"]):
        return inner(x), x

    module = outer.to_module(N=3)
    assert _ops(module) == ["ax.exp", "func.return"]
    assert len(_fn(module).function_type.outputs.data) == 2


def test_zero_d_spec_and_unknown_size():
    f = ax.trace(lambda s: s + 1, ax.f32[()])
    assert _fn(f.to_module()).function_type.inputs.data[0] == TensorType([], "f32")
    with pytest.raises(ValueError, match="no size symbol"):
        ax.trace(lambda x: x, ax.f32["M"]).to_module(Q=3)


def test_tensor_has_no_truth_value():
    def branchy(x):
        return x if x else -x

    with pytest.raises(TypeError, match="no truth value"):
        ax.trace(branchy, ax.f32["M"]).to_module()


def test_api_reexports_every_builder():
    from axon.frontend.builders import BUILDERS

    for name, builder in BUILDERS.items():
        assert getattr(ax, name) is builder
