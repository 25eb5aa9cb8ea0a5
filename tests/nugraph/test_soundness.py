"""Soundness: random programs extracted from random classes of the benchmark nu-graphs compute
what the input program computes there, checked with the reference interpreter.

For each program: propagate (a small budget), then for random classes pick random acyclic
choices of e-nodes, export the class's value as a function of the program's parameters and run it
on the suite's inputs at small sizes. The reference for a class that the input program computes
is the input program's own choice; a class created by propagation is checked against another,
independently drawn extraction of the same class.
"""

from __future__ import annotations

import random

import numpy as np
from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS, make_inputs, small_sizes
from axon.frontend.numpy_subset import parse_source
from axon.interpreter import run_function
from axon.nugraph.egraph import INPUT_PROOF, EGraph, Proof
from axon.nugraph.extract import Extraction, reachable, tree_costs
from axon.nugraph.runner import Budget
from axon.nugraph.session import Session

DRAWS_PER_PROGRAM = 12


def random_choice(g: EGraph, root: int, rng: random.Random, base: dict[int, int]
                  ) -> dict[int, int]:
    """Start from `base`, switch classes to random e-nodes while the program stays acyclic."""
    choice = dict(base)
    for c in rng.sample(g.class_ids(), len(g.class_ids())):
        trial = {**choice, c: rng.choice(g.class_nodes(c))}
        if reachable(g, [root], trial) is not None:
            choice = trial
    return choice


def value(s: Session, root: int, choice: dict[int, int], inputs: list[np.ndarray],
          sizes: dict[str, int]) -> np.ndarray:
    g = s.graph
    order = reachable(g, [root], choice)
    assert order is not None
    extraction = Extraction((root,), tuple(sorted((c, choice[c]) for c in order)), 0.0)
    func_op = s.export(extraction, "draw")
    func_op.verify()
    (out,) = run_function(func_op, inputs, sizes)
    return np.asarray(out, np.float64)


def mismatches(name: str, s: Session, rng: random.Random) -> tuple[int, list[str]]:
    """Check random extractions of the roots and of random classes; (checked, failures)."""
    program = PROGRAMS[name]
    g = s.graph
    sizes = small_sizes(program, 0)
    inputs = make_inputs(program, sizes, seed=1)
    rtol, atol = program.tolerance
    _, tree_pick = tree_costs(g, s.cost)
    input_choice = {g.find(c): n for c, n in s.input_choice.items()}
    classes = [g.find(r) for r in s.imported.results]
    classes += rng.sample(g.class_ids(), min(DRAWS_PER_PROGRAM, g.num_classes))
    checked, failures = 0, []
    for c in classes:
        if g.nodes[g.class_nodes(c)[0]].is_input:
            continue
        from_input = reachable(g, [c], input_choice) is not None
        reference = input_choice if from_input else random_choice(g, c, rng, tree_pick)
        expected = value(s, c, reference, inputs, sizes)
        for _ in range(2):
            got = value(s, c, random_choice(g, c, rng, {**tree_pick, **input_choice}), inputs,
                        sizes)
            checked += 1
            # reorderings round bf16 intermediates differently: twice the suite's tolerance
            if got.shape != expected.shape or not np.allclose(
                    got, expected, rtol=2 * rtol, atol=2 * atol, equal_nan=True):
                failures.append(f"{name}: class {c}")
    return checked, failures


def session_for(name: str, budget: Budget) -> Session:
    program = PROGRAMS[name]
    module = parse_source(program.source, str(program.source_path))
    func_op = next(op for op in module.walk() if isinstance(op, FuncOp))
    s = Session.from_function(func_op)
    s.run(budget)
    return s


def test_random_extractions_match_the_input_program() -> None:
    rng = random.Random(4)
    total, failures = 0, []
    for name in PROGRAMS:
        checked, failed = mismatches(name, session_for(name, Budget(3, time_limit_s=10)), rng)
        total += checked
        failures += failed
    assert not failures
    assert total > 200


def test_the_check_catches_an_unsound_merge() -> None:
    # merge x @ w with x @ w2 in gated_mlp under a bogus proof: the roots' random extractions
    # must now disagree with the input program
    s = session_for("gated_mlp", Budget(max_iterations=1))
    g = s.graph
    # the program's own two matmuls (propagation adds the merged one over [w1 | w2])
    mm = [n for n, _ in g.enodes()
          if g.nodes[n].op == "ax.matmul" and g.justification[n] == INPUT_PROOF]
    assert len(mm) == 2
    g.record_proof(Proof("bogus", "test", "", "", "not a proof", 0.0))
    g.union(mm[0], mm[1], "bogus")
    g.rebuild()
    found = []
    for seed in range(6):
        _, failed = mismatches("gated_mlp", s, random.Random(seed))
        found += failed
    assert found
