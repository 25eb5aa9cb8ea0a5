"""A proof budget's command-line options, shared by the benchmarks that prove.

    --proof-steps N     normalization steps for one proof
    --proof-rlimit N    z3 resource units (rlimit) for one proof
    --proof-seconds S   the safety-net clock of one proof (a verdict it decides is not stored)

The defaults are the budget the benchmark's proofs get without them (`verifier.budget`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from axon.verifier import ProofBudget


def add_arguments(parser: argparse.ArgumentParser, default: ProofBudget) -> None:
    """Add the three options, defaulting to `default`'s counts and clock."""
    group = parser.add_argument_group("proof budget (counts of work; the clock is a safety net)")
    group.add_argument("--proof-steps", type=_positive(int), default=default.steps,
                       help=f"normalization steps for one proof (default {default.steps})")
    group.add_argument("--proof-rlimit", type=_positive(int), default=default.rlimit,
                       help=f"z3 resource units (rlimit) for one proof (default {default.rlimit})")
    group.add_argument("--proof-seconds", type=_positive(float), default=default.seconds,
                       help="seconds after which one proof stops whatever its counts; its "
                            f"verdict is then not stored (default {default.seconds:g})")


def from_arguments(args: argparse.Namespace) -> ProofBudget:
    """The budget the parsed options give."""
    return ProofBudget(args.proof_steps, args.proof_rlimit, args.proof_seconds)


def _positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    """An argparse type: a number of `kind` above 0 (argparse reports anything else)."""
    words = "an integer" if kind is int else "a number"

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {words}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} is not above 0")
        return value

    return parse
