"""The nu-graph engine: Axon's e-graph of equivalent tensor programs, with a proof per e-node.

One concept per file (as in egg): `union_find`, `eclass` (e-nodes and e-classes), `analysis`
(the data of e-classes, by default their type), `egraph` (hash-consing, union, congruence rebuild,
justifications), `explain` (proof chains), `cost` (roofline cost), `extract` (DAG-aware best and
top-k), `convert` (ax functions <-> graph), `nu_ir` (graph <-> the `nu` dialect), `index_expr`
(composed index expressions), `candidates` (the generic candidate machinery), `moves/` (the
moves that propose candidates, one per file), `prover` (the SMT verifier as a decision
procedure), `admission` (admission only by proof), `runner` (the loop, budgets, per-iteration
records, scheduling), `propagate` (the runner with the default moves), `session` (build,
propagate, extract).

    s = Session.from_function(func_op)
    report = s.run(Budget(max_proofs=500))
"""

from axon.nugraph.runner import Budget, Report
from axon.nugraph.session import Session

__all__ = ["Budget", "Report", "Session"]
