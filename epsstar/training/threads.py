"""How many threads torch uses inside one operation (its intra-op threads) for training.

Torch starts one thread per core of the machine. The trainer's operations are small (a
batch of 64 through a 3×100 MLP), so extra threads buy little, while threads that compete
for busy cores — with another training, the worker processes of a sweep, or other
programs — make an epoch several times slower (``benchmarks/trainer_threads.py``). The
trainer therefore shares the idle cores among its worker processes by the rule the audit
uses too (:mod:`epsstar.audit.model.threads`); ``EPSSTAR_THREADS`` or a ``--threads``
option overrides the choice; it is never more than the cores available.
"""

from __future__ import annotations

from epsstar.audit.model.threads import THREADS_ENV, available_cores, choose_threads, use_threads

__all__ = ["THREADS_ENV", "apply_threads", "available_cores", "choose_threads"]


def apply_threads(threads: int) -> None:
    """Make ``threads`` torch's intra-op threads in this process, now: the choice the audit
    keeps (:func:`~epsstar.audit.model.threads.use_threads`), so that models this process
    loads afterwards, and the audit's record of the threads, follow it too."""
    import torch  # noqa: F401 - imported first, so that use_threads sets its threads now

    use_threads(threads)
