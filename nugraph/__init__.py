"""The nu-graph engine: Axon's e-graph of equivalent tensor programs, with a proof per e-node.

One concept per file (as in egg): `union_find`, `eclass` (e-nodes and e-classes), `egraph`
(hash-consing, union, congruence rebuild, justifications), `explain` (proof chains), `cost`
(roofline cost), `extract` (DAG-aware best and top-k), `convert` (ax functions <-> graph),
`nu_ir` (graph <-> the `nu` dialect), `index_expr` (composed index expressions), `candidates`
(generic candidate generation), `prover` (admission through the SMT verifier), `runner` (budgets),
`propagate` (the propagation loop).
"""
