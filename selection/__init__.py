"""Candidate selection shared by the targets: executors, the winner cache, bounded ranking.

A target enumerates its candidates (programs x tilings x launch configurations), orders them by
a cost model and keeps a bounded number (`space.ranked_bounded`), checks each through its own
verification cascade on an `executor.Executor` (a local process pool, or Ray), and picks the
fastest that passes (`space.pick`). The winner of a GPU measurement is kept in a
`cache.WinnerCache` on disk, keyed by the program text, sizes, dtypes, profile and Axon version.
This package knows nothing of a target: what a candidate is and how it is checked is the
target's (`targets/xe_triton/select.py`, `targets/xe_triton/cascade.py`).
"""
