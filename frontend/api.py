"""The Python tracing API: `from axon.frontend import api as ax`.

    @ax.function
    def rmsnorm_matmul(x: ax.bf16["M", "K"], g: ax.bf16["K"], w: ax.bf16["K", "N"]):
        ms = ax.mean(x * x, axis=-1, keepdims=True)
        return x * ax.rsqrt(ms + 1e-6) * g @ w

    module = rmsnorm_matmul.to_module()          # symbolic sizes M, K, N
    module = rmsnorm_matmul.to_module(M=4, K=8)  # concrete M and K

The function runs once per `to_module` call on traced `Tensor`s; every operation goes through the
builder functions of `frontend/builders.py`, re-exported here (`ax.exp`, `ax.softmax`, ...).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from axon.frontend.builders import *  # noqa: F403 - the API is the builder library
from axon.frontend.builders import BUILDERS, Tensor, as_results
from axon.frontend.graph import GraphBuilder, build_function
from axon.frontend.specs import DTypeSpec, TensorSpec, bf16, f16, f32, i1, i32

__all__ = ["Function", "Tensor", "TensorSpec", "DTypeSpec", "bf16", "f16", "f32", "i1", "i32",
           "function", "trace", *BUILDERS]


class Function:
    """A Python function with tensor specs for its parameters, ready to trace into IR."""

    def __init__(self, fn: Callable[..., Any], specs: Sequence[TensorSpec],
                 name: str | None = None):
        self.fn = fn
        self.specs = tuple(specs)
        self.name = name or fn.__name__
        params = list(inspect.signature(fn).parameters.values())
        # parameters past the specs keep their defaults (`trace(ax.softmax, spec)`)
        required = [p for p in params if p.default is inspect.Parameter.empty]
        if not len(required) <= len(self.specs) <= len(params):
            raise TypeError(f"{self.name} takes {len(required)} to {len(params)} tensors but "
                            f"{len(self.specs)} specs were given")
        self.param_names = tuple(p.name for p in params[:len(self.specs)])
        for spec in self.specs:
            if not isinstance(spec, TensorSpec):
                raise TypeError(f"{self.name}: {spec!r} is not a tensor spec like ax.f32['M']")

    def symbols(self) -> frozenset[str]:
        """The size symbols the parameter specs mention."""
        return frozenset().union(*(s.symbols() for s in self.specs))

    def to_func(self, **sizes: int) -> func.FuncOp:
        """The traced `func.func`, with the given size symbols bound to integers."""
        unknown = set(sizes) - self.symbols()
        if unknown:
            raise ValueError(f"{self.name} has no size symbol(s) {', '.join(sorted(unknown))}; "
                             f"its symbols are {', '.join(sorted(self.symbols())) or 'none'}")
        arg_types = [spec.bind(sizes) for spec in self.specs]

        def body(builder: GraphBuilder, args: list[SSAValue]) -> list[SSAValue]:
            out = self.fn(*(Tensor(a, builder) for a in args))
            return as_results(out, builder, self.name)

        return build_function(self.name, arg_types, body, self.param_names)

    def to_module(self, **sizes: int) -> ModuleOp:
        """A module holding the traced function; `sizes` bind size symbols to integers."""
        module = ModuleOp([self.to_func(**sizes)])
        module.verify()
        return module

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Called from inside another traced function: inline it."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<ax.function {self.name}({', '.join(map(str, self.specs))})>"


def function(fn: Callable[..., Any] | None = None, *, name: str | None = None) -> Any:
    """Decorator: the parameters' annotations are tensor specs (`ax.bf16["M", "K"]`)."""

    def wrap(f: Callable[..., Any]) -> Function:
        annotations = inspect.get_annotations(f, eval_str=True)
        params = list(inspect.signature(f).parameters)
        missing = [p for p in params if p not in annotations]
        if missing:
            raise TypeError(f"{f.__name__}: parameter(s) {', '.join(missing)} need a tensor spec "
                            f"annotation like ax.f32['M', 'K']")
        return Function(f, [annotations[p] for p in params], name)

    return wrap(fn) if fn is not None else wrap


def trace(fn: Callable[..., Any], *specs: TensorSpec, name: str | None = None) -> Function:
    """A Function for `fn` with explicit parameter specs (no annotations needed)."""
    return Function(fn, specs, name)
