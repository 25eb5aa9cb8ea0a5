"""Sketch-driven ISA synthesis, target-neutral (docs/synth.md).

A *sketch* is a short instruction sequence with holes (instruction choice, engine, operand
roles, layout transforms, flags); each hole has a finite domain. `synthesize` enumerates the
fillings of each sketch (iteratively, under a hard cap), prunes them by the constraints and
shape rules the target supplies before any proof, has the target build each remaining filling
as a function of instructions, and admits it only when the verifier proves it equal to the
tile op it implements for every size within the profile's limits (`Proved`; a refutation
carries its counterexample, and Unknown is never admitted). What a sketch admits is cached by
(the tile op's generic form, the profile, the sketch id) in the project's proof cache, so a
second program reuses it without a proof.

    from axon.synth import synthesize
    report = synthesize(spec, sketches, profile="trn2", cache=ProofCache())
    print(report.summary())   # synth row_sum @ trn2: 21 tried, 9 pruned, 3 admitted, ...
"""

from axon.synth.enumerate import SketchTooLarge, fillings
from axon.synth.sketch import Candidate, Constraint, Filling, Hole, Pruned, Sketch, Slot, Spec
from axon.synth.synthesize import (
    Admitted,
    Counts,
    Rejected,
    SketchOutcome,
    SynthesisReport,
    admit,
    describe,
    synthesize,
)

__all__ = ["Admitted", "Candidate", "Constraint", "Counts", "Filling", "Hole", "Pruned",
           "Rejected", "Sketch", "SketchOutcome", "SketchTooLarge", "Slot", "Spec",
           "SynthesisReport", "admit", "describe", "fillings", "synthesize"]
