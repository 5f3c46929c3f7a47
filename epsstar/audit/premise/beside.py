"""The blind classifier fitted beside the rest of the audit, in a thread of its own.

The classifier (:mod:`.classifier`) reads only the bounded sample of records kept while the
tables stream (:mod:`epsstar.audit.engines.record_sample`), complete once the last batch is
read; and the audit's data checks, utility and statistics read nothing of it. So from that
moment both run at once: :class:`BlindFit` starts the cross-fitted classifier in a thread
and :meth:`BlindFit.log_odds` waits for its log-odds when the premise is read. The trees
spend their time in compiled code that releases the interpreter's lock, so on a machine with
a second free core the fit can overlap the statistics in wall time (the CPU time is the
same: docs/performance.md). The numbers are the same too: the seeded fits see the same rows in the
same order, wherever they run, and the thread limits only its own OpenMP threads.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from epsstar.audit.data.records import Records
from epsstar.audit.premise.classifier import BlindLogOdds, blind_log_odds

__all__ = ["BlindFit"]


class BlindFit:
    """:func:`~.classifier.blind_log_odds` of ``records``, started now in a thread."""

    def __init__(self, records: Records, *, folds: int, seed: int) -> None:
        self.records = records
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="epsstar-blind-baseline")
        self._future: Future[BlindLogOdds] = executor.submit(
            blind_log_odds, records, folds=folds, seed=seed
        )
        executor.shutdown(wait=False)

    def log_odds(self) -> BlindLogOdds:
        """The classifier's log-odds, once fitted; its error, if it raised one."""
        return self._future.result()
