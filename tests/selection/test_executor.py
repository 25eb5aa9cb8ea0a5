"""The executors run candidate checks in other processes and keep the jobs' order: a local
process pool, and a local Ray instance really started (and stopped) here."""

from __future__ import annotations

import math
import os
from dataclasses import replace

from xdsl.dialects.func import FuncOp

from axon.benchmarks.suite import PROGRAMS
from axon.selection.executor import LocalExecutor, RayExecutor, make_executor
from axon.targets.xe_triton.cascade import Job, check_job
from axon.targets.xe_triton.kb import load_device
from axon.targets.xe_triton.select import Candidate, make_job
from axon.tiling.kernels import tile_function, tilings
from axon.tools.embed import parse_source


def jobs() -> list[Job]:
    """Two softmax candidates: one right, one whose float32 twin computes exp2."""
    (func,) = [op for op in parse_source(PROGRAMS["softmax"].source, "softmax.py").ops
               if isinstance(op, FuncOp)]
    (tiling,) = [t for t in tilings(func) if t.kind == "rows"]
    kernel = tile_function(func, tiling, "registers", "registers")
    made = []
    for n in (0, 1):
        candidate = Candidate(f"c{n}", "softmax", "rows", "", {"BM": 2, "num_warps": 4}, 0.0,
                              "test", kernel)
        job, _ = make_job(candidate, func, load_device("h200"), {"M": 32, "N": 32}, True)
        if n:
            job = replace(job, check_text=job.check_text.replace("tl.exp(", "tl.exp2("))
        made.append(job)
    return made


def test_the_local_pool_keeps_the_order_and_reports_progress() -> None:
    seen: list[tuple[int, int]] = []
    with_pool = LocalExecutor(workers=2)
    try:
        assert with_pool.map(math.factorial, [5, 3, 4], progress=lambda d, t: seen.append(
            (d, t))) == [120, 6, 24]
        verdicts = with_pool.map(check_job, jobs())
    finally:
        with_pool.close()
    assert seen[-1] == (3, 3) and len(seen) >= 1
    assert [(v.id, v.passed, v.step) for v in verdicts] == [("c0", True, ""),
                                                            ("c1", False, "correctness")]


def test_ray_evaluates_candidates_on_a_local_instance() -> None:
    import ray

    executor = make_executor("ray", workers=1)
    assert isinstance(executor, RayExecutor)
    try:
        assert ray.is_initialized() and executor.cluster_cpus() == 1
        verdicts = executor.map(check_job, jobs())
        pids = executor.map(_pid_of, [0, 1])
    finally:
        executor.close()
    assert not ray.is_initialized()
    assert [(v.id, v.passed, v.step) for v in verdicts] == [("c0", True, ""),
                                                            ("c1", False, "correctness")]
    assert os.getpid() not in pids  # the checks ran in Ray's workers


def _pid_of(_: int) -> int:
    return os.getpid()
