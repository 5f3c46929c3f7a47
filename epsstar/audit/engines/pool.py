"""Independent tasks in worker processes of this machine: the single engine's pool.

:func:`run_in_processes` runs ``function(*task)`` for every task, in ``jobs`` spawned worker
processes (in this process when ``jobs`` is 1), and returns the results in task order.
``on_done(index, result)`` is called in this process as each task finishes, and ``on_tick``
about every ``tick`` seconds while tasks run (a display reading a queue that the workers
write to, say). An error or Ctrl-C cancels the tasks not yet started and stops the pool
without waiting for the ones running. ``epsstar audit-many`` and the training of
``epsstar demo`` share it; on a Dask cluster the same roles are played by
:func:`epsstar.audit.engines.dask_engine.run_tasks`.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import TypeVar

from epsstar.statistics._validation import check_positive_int

__all__ = ["run_in_processes"]

R = TypeVar("R")

#: Seconds between calls of ``on_tick`` while tasks run.
TICK = 0.1


def run_in_processes(
    function: Callable[..., R],
    tasks: Sequence[tuple[object, ...]],
    *,
    jobs: int,
    on_done: Callable[[int, R], None] | None = None,
    on_tick: Callable[[], None] | None = None,
    initializer: Callable[[], None] | None = None,
) -> list[R]:
    """``function(*task)`` of every task, in task order (see the module docstring).

    ``initializer()`` (a picklable callable, e.g. a :func:`functools.partial`) runs once in
    each worker process, and once here when ``jobs`` is 1, so that a task behaves the same
    wherever it runs.
    """
    jobs = check_positive_int("jobs", jobs)
    results: dict[int, R] = {}
    if jobs == 1 or len(tasks) <= 1:
        if initializer is not None:
            initializer()
        for index, task in enumerate(tasks):
            results[index] = function(*task)
            if on_done is not None:
                on_done(index, results[index])
            if on_tick is not None:
                on_tick()
        return [results[index] for index in range(len(tasks))]
    context = multiprocessing.get_context("spawn")
    workers = min(jobs, len(tasks))
    pool = (
        ProcessPoolExecutor(max_workers=workers, mp_context=context)
        if initializer is None
        else ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=initializer)
    )
    try:
        futures: dict[Future[R], int] = {
            pool.submit(function, *task): index for index, task in enumerate(tasks)
        }
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=TICK, return_when=FIRST_COMPLETED)
            if on_tick is not None:
                on_tick()
            for future in sorted(finished, key=futures.__getitem__):
                index = futures[future]
                results[index] = future.result()
                if on_done is not None:
                    on_done(index, results[index])
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [results[index] for index in range(len(tasks))]
