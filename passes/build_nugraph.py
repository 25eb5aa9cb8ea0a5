"""`build-nugraph`: hold each function's program in a nu-graph, one e-class per value.

Every e-node is justified `input`; `propagate` then grows the graph (it also accepts plain
functions and builds the graph itself).

Before:

    func.func @f(%x: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
      %e = ax.exp %x : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
      func.return %e : !ax.tensor<[M], f32>
    }

After `-p build-nugraph`:

    func.func @f(%x: !ax.tensor<[M], f32>) -> !ax.tensor<[M], f32> {
      %0 = nu.graph -> !ax.tensor<[M], f32> {
        %c0 = nu.class %x : !ax.tensor<[M], f32>
        %1 = ax.exp %c0 {nu.proof = "input"} : (!ax.tensor<[M], f32>) -> !ax.tensor<[M], f32>
        %c1 = nu.class %1 : !ax.tensor<[M], f32>
        nu.yield %c1 : !ax.tensor<[M], f32>
      } {proofs = {}}
      func.return %0 : !ax.tensor<[M], f32>
    }
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException

from axon.dialects import nu
from axon.nugraph.convert import ConvertError, import_function
from axon.nugraph.egraph import EGraph
from axon.nugraph.nu_ir import graph_function


@dataclass(frozen=True)
class BuildNugraphPass(ModulePass):
    """Replace each function of `ax` ops by a function holding its nu-graph."""

    name = "build-nugraph"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func_op in [f for f in op.walk() if isinstance(f, FuncOp)]:
            if any(isinstance(o, nu.GraphOp) for o in func_op.walk()):
                continue  # already a nu-graph
            g = EGraph()
            try:
                imported = import_function(g, func_op)
            except ConvertError as err:
                raise DiagnosticException(f"build-nugraph: {err}") from None
            Rewriter.replace_op(func_op, graph_function(g, imported))
