"""How many threads a model's library uses inside one operation (its intra-op threads).

torch and onnxruntime each start one thread per core. Beside other busy processes — a
training, the worker processes of ``audit-many`` or a sweep, other programs — those threads
fight for the cores, and an epoch or a batch takes several times longer
(``benchmarks/trainer_threads.py``, docs/performance.md). So the trainer and the audit
choose their threads by one rule: the cores this process may run on
(``os.sched_getaffinity``), less those other programs keep busy (the one-minute load
average, rounded down, but never more than the other tasks runnable at that instant: work
that has just ended stays in the average for about a minute), shared among the worker
processes; ``EPSSTAR_THREADS`` or a
``--threads`` option overrides the choice, never beyond the cores available.

The trainer applies its choice to torch at once (:func:`apply_threads`). The audit applies
its choice to both libraries: torch's intra-op threads
(``torch.set_num_threads``, when a torch-based loader loads a model) and each onnxruntime
session's ``intra_op_num_threads``, with one inter-op thread (the audit runs one batch at a
time: parallelism is inside the operators, and across ``audit-many``'s processes).
"""

from __future__ import annotations

import os
from types import ModuleType

from epsstar.exceptions import InvalidInputError

__all__ = [
    "THREADS_ENV",
    "apply_threads",
    "available_cores",
    "choose_threads",
    "chosen_threads",
    "idle_cores",
    "torch_threads",
    "use_threads",
]

THREADS_ENV = "EPSSTAR_THREADS"

_chosen: list[int] = []  # this process's choice, once made (one entry)


def available_cores() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _busy_cores(cores: int) -> int:
    """Cores that other programs keep busy: the one-minute load average, rounded down, and
    no more than the other tasks runnable right now (Linux), so that work which ended less
    than a minute ago, still in the average, does not count."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0
    busy = int(load)
    runnable = _runnable_now()
    if runnable is not None:
        busy = min(busy, runnable - 1)  # this process's own thread is one of them
    return min(cores - 1, max(0, busy))


def _runnable_now() -> int | None:
    """Tasks runnable this instant, the caller's thread among them (the fourth field of
    ``/proc/loadavg``, ``running/total``); ``None`` where the kernel does not say."""
    try:
        with open("/proc/loadavg", encoding="ascii") as status:
            return int(status.read().split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        return None


def idle_cores() -> int:
    """The cores this process may run on that other programs leave idle, at least one."""
    cores = available_cores()
    return max(1, cores - _busy_cores(cores))


def _requested(requested: int | None) -> int | None:
    if requested is not None:
        source, value = "--threads", str(requested)
    else:
        value = os.environ.get(THREADS_ENV, "").strip()
        if not value:
            return None
        source = THREADS_ENV
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise InvalidInputError(f"{source} must be a positive integer. Found {value!r}.")
    return number


def choose_threads(workers: int = 1, requested: int | None = None) -> int:
    """Intra-op threads for each of ``workers`` processes.

    ``requested`` (a ``--threads`` option), else ``EPSSTAR_THREADS``, is used when given,
    capped at the available cores; otherwise the idle cores are shared among the workers,
    at least one thread each.
    """
    wanted = _requested(requested)
    if wanted is not None:
        return min(wanted, available_cores())
    return max(1, idle_cores() // max(1, workers))


def use_threads(threads: int) -> None:
    """Make ``threads`` this process's intra-op threads for the models it loads from now on
    (torch's now, too, if torch is already imported)."""
    import sys

    _chosen[:] = [threads]
    torch = sys.modules.get("torch")
    if torch is not None:
        torch_threads(torch)


def chosen_threads() -> int | None:
    """The threads :func:`use_threads` chose in this process (``None``: the libraries'
    own defaults, one per core)."""
    return _chosen[0] if _chosen else None


def torch_threads(torch: ModuleType) -> None:
    """Set torch's intra-op threads to this process's choice, if one was made."""
    if _chosen:
        torch.set_num_threads(_chosen[0])


def apply_threads(threads: int) -> None:
    """Make ``threads`` torch's intra-op threads in this process, now (a training): torch is
    imported first, so that :func:`use_threads` sets its threads at once, and the models this
    process loads afterwards, and the audit's record of the threads, follow the choice too."""
    import torch  # noqa: F401 - imported first, so that use_threads sets its threads now

    use_threads(threads)
