"""axon-bench's harness: checks and times a bundle of emitted Triton candidates (docs/xe_triton.md).

A leaf package: it imports the standard library, torch, Triton and numpy, and nothing else of
Axon, so it runs on a GPU machine that has only those. `bundle.py` reads the bundle selection
writes; `device.py` reads the device's peaks and L2 size from the knowledge base's files;
`programs.py` writes the suite's programs in torch (baselines, and the reference on float32
copies); `inputs.py` draws the inputs from the seed; `timing.py` times a callable (L2 flushed,
CUDA events, CUDA graphs); `run.py` runs the cases, each case's candidates in a child process
(`child.py`, `guard.py`, `wire.py`); `report.py` prints the table and writes JSON and the plot.
"""
