"""Executors: where candidate evaluations run.

    with make_executor("local", workers=2) as executor:
        verdicts = executor.map(check_candidate, jobs, progress=lambda done, total: ...)

`map` applies a module-level function to picklable jobs and returns the results in the jobs'
order, calling `progress(done, total)` as each finishes. `LocalExecutor` runs them on a process
pool of this machine (spawned processes: a candidate that crashes or leaks state cannot take the
caller with it); `RayExecutor` sends them to Ray (`pip install 'axon[ray]'`), started here as a
local instance with `num_cpus` CPUs unless `address` names a running cluster.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from types import TracebackType
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: the executors `make_executor` knows, by the name `--executor` takes
EXECUTORS = ("local", "ray")

Progress = Callable[[int, int], None]


class ExecutorError(RuntimeError):
    """An executor that cannot start (Ray not installed, no cluster at the address given)."""


class Executor(Protocol):
    """Runs evaluations; `map` keeps the jobs' order."""

    name: str

    def map(self, fn: Callable[[T], R], jobs: Sequence[T],
            progress: Progress | None = None) -> list[R]:
        """`[fn(job) for job in jobs]`, computed by the executor's workers."""
        ...

    def close(self) -> None:
        """Stop the workers (the executor is not used again)."""
        ...


class _Closing:
    """Context-manager methods for an executor with a `close`."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: Any) -> Any:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def default_workers() -> int:
    """One worker per CPU this process may use, at most 8."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cpus or 1, 8))


class LocalExecutor(_Closing):
    """A pool of `workers` spawned processes on this machine (the default executor)."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or default_workers()
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable[[T], R], jobs: Sequence[T],
            progress: Progress | None = None) -> list[R]:
        """`[fn(job) for job in jobs]` on the pool (started on first use)."""
        if not jobs:
            return []
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=min(self.workers, len(jobs)),
                mp_context=multiprocessing.get_context("spawn"))
        futures: dict[Future[R], int] = {self._pool.submit(fn, job): n
                                         for n, job in enumerate(jobs)}
        results: dict[int, R] = {}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                results[futures[future]] = future.result()
            if progress is not None:
                progress(len(results), len(jobs))
        return [results[n] for n in range(len(jobs))]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


class RayExecutor(_Closing):
    """Ray tasks: a local Ray instance of `num_cpus` CPUs started here (stopped by `close`), or
    the running cluster at `address`."""

    name = "ray"

    def __init__(self, num_cpus: int | None = None, address: str | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ExecutorError("--executor ray needs Ray: pip install 'axon[ray]' "
                                "(or pip install ray)") from None
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                       "configure_logging": False}
            try:
                if address is None:
                    ray.init(num_cpus=num_cpus or default_workers(), **options)
                else:
                    ray.init(address=address, **options)
            except (ConnectionError, RuntimeError, ValueError) as err:
                raise ExecutorError(f"Ray did not start: {err}") from None

    def map(self, fn: Callable[[T], R], jobs: Sequence[T],
            progress: Progress | None = None) -> list[R]:
        """`[fn(job) for job in jobs]` as Ray tasks."""
        if not jobs:
            return []
        remote = self._ray.remote(fn)
        refs = [remote.remote(job) for job in jobs]
        index = {ref: n for n, ref in enumerate(refs)}
        results: dict[int, R] = {}
        pending = list(refs)
        while pending:
            done, pending = self._ray.wait(pending, num_returns=1)
            for ref in done:
                results[index[ref]] = self._ray.get(ref)
            if progress is not None:
                progress(len(results), len(jobs))
        return [results[n] for n in range(len(jobs))]

    def cluster_cpus(self) -> int:
        """The CPUs Ray's resources list (the instance started here or the cluster)."""
        return int(self._ray.cluster_resources().get("CPU", 0))

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False


def make_executor(name: str, workers: int | None = None) -> LocalExecutor | RayExecutor:
    """The executor `--executor NAME` asks for, with `workers` processes (or Ray CPUs)."""
    if name == "local":
        return LocalExecutor(workers)
    if name == "ray":
        return RayExecutor(num_cpus=workers)
    raise ExecutorError(f"unknown executor '{name}'; known: {', '.join(EXECUTORS)}")
