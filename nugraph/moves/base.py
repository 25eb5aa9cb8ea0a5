"""The `Move` protocol: a named way to propose candidates at a site of the graph (egg's `Rewrite`,
a searcher and an applier, except that nothing a move proposes is trusted).

A move looks at one kind of site (`sites.py`: a producer/consumer pair, or a group of e-nodes)
and proposes candidate terms for e-nodes there; the runner (`runner.py`) finds the sites, asks
each move that looks at them, and takes every candidate through `admission.admit`, which admits
it only on a proof. A move never changes the graph itself.

    class Transpose:
        name = "transpose"
        site = PairSite

        def propose(self, graph: EGraph, site: PairSite) -> Iterable[Candidate]: ...
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

from axon.nugraph.candidates import Candidate
from axon.nugraph.egraph import EGraph
from axon.nugraph.moves.sites import GroupSite, PairSite

S = TypeVar("S", PairSite, GroupSite)


class Move(Protocol[S]):
    """A named proposer of candidates at sites of kind `site`."""

    name: str
    """Names the move in proofs, reports and the scheduler."""
    site: type[S]
    """The kind of site the move looks at."""

    def propose(self, graph: EGraph, site: S) -> Iterable[Candidate]:
        """Candidates at `site`; none of them is assumed equal to anything."""
        ...
