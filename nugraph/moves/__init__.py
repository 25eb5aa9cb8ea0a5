"""The moves propagation proposes candidates with, one file per move (see `base.Move`).

At a producer/consumer pair (`sites.PairSite`), in this order: `fuse`, `hoist`, `split`, `sink`,
`factor`, `distribute` reshape the composed generic forms (`candidates.Composition`); `push`
moves the consumer op into the producer's operands. At a group of e-nodes (`sites.GroupSite`):
`merge` factors a common operand. Every candidate is admitted only on a proof
(`admission.admit`).
"""

from __future__ import annotations

from axon.nugraph.moves.base import Move
from axon.nugraph.moves.distribute import DistributeMove
from axon.nugraph.moves.factor import FactorMove
from axon.nugraph.moves.fuse import FuseMove
from axon.nugraph.moves.hoist import HoistMove
from axon.nugraph.moves.merge import MergeMove
from axon.nugraph.moves.push import PushMove
from axon.nugraph.moves.sink import SinkMove
from axon.nugraph.moves.sites import GroupSite, PairSite
from axon.nugraph.moves.split import SplitMove


def default_moves() -> list[Move]:  # type: ignore[type-arg]
    """Every move, in the order candidates at one site are proposed (a term two moves propose is
    credited to the first)."""
    return [FuseMove(), HoistMove(), SplitMove(), SinkMove(), FactorMove(), DistributeMove(),
            PushMove(), MergeMove()]


__all__ = ["DistributeMove", "FactorMove", "FuseMove", "GroupSite", "HoistMove", "MergeMove",
           "Move", "PairSite", "PushMove", "SinkMove", "SplitMove", "default_moves"]
