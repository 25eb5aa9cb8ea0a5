"""Axon's NeuronCore cost model: a latency for a run of the NKI simulator.

    from axon.targets.nki.cost import estimate, load_constants
    out, trace = simulate(kernel, *inputs, limits=load_limits("trn1"), trace=True)
    result = estimate(trace, load_constants("trn1"))
    print(result.summary())                      # latency, per-engine utilisation, critical path
    plot_timeline(result, "timeline.png")        # needs matplotlib

The model (../shared/reference/nki.md sections 5, 6 and 10): per-engine in-order queues, 16 DMA
queues sharing the DMA bandwidth, dependencies through overlapping bytes of one allocation with a
synchronization cost, NC-v2 port conflicts, the per-instruction cycle formulas of the legacy ISA
docs; its constants live in the profiles' `cost` sections (`targets/nki/profiles/*.yaml`).
`python -m axon.benchmarks.nki_calibration` checks it against the published latencies.
"""

from axon.targets.nki.cost.constants import CostConstants, constants_from_profile, load_constants
from axon.targets.nki.cost.estimate import ENGINES, Estimate, estimate
from axon.targets.nki.cost.plot import PlotUnavailable, plot_timeline
from axon.targets.nki.cost.timeline import Event

__all__ = ["ENGINES", "CostConstants", "Estimate", "Event", "PlotUnavailable",
           "constants_from_profile", "estimate", "load_constants", "plot_timeline"]
