"""How many threads torch uses inside one operation (its intra-op threads).

Torch starts one thread per core of the machine. The trainer's operations are small (a
batch of 64 through a 3×100 MLP), so extra threads buy little, while threads that compete
for busy cores — with another training, the worker processes of a sweep, or other
programs — make an epoch several times slower (``benchmarks/trainer_threads.py``). The
trainer therefore shares the cores the process may run on (``os.sched_getaffinity``)
among its worker processes and leaves out the cores that other programs keep busy (the
one-minute load average). ``EPSSTAR_THREADS`` or a ``--threads`` option overrides the
choice; it is never more than the cores available.
"""

from __future__ import annotations

import os

from epsstar.exceptions import InvalidInputError

__all__ = ["THREADS_ENV", "apply_threads", "available_cores", "choose_threads"]

THREADS_ENV = "EPSSTAR_THREADS"


def available_cores() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _busy_cores(cores: int) -> int:
    """Cores that other programs keep busy: the one-minute load average, rounded down."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0
    return min(cores - 1, max(0, int(load)))


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
    """Intra-op threads for each of ``workers`` training processes.

    ``requested`` (a ``--threads`` option), else ``EPSSTAR_THREADS``, is used when given,
    capped at the available cores; otherwise the idle cores are shared among the workers,
    at least one thread each.
    """
    cores = available_cores()
    wanted = _requested(requested)
    if wanted is not None:
        return min(wanted, cores)
    return max(1, (cores - _busy_cores(cores)) // max(1, workers))


def apply_threads(threads: int) -> None:
    """Set torch's intra-op thread count for this process."""
    import torch

    torch.set_num_threads(threads)
