"""Where the work of ``--engine`` runs (:class:`Engine`), and a client of its Dask cluster.

The cluster itself — connecting to a scheduler or starting a local cluster, one task per
item with its outcome — is :mod:`epsstar.plumbing.runtime.dask_cluster`, which any layer may
use; its :func:`~epsstar.plumbing.runtime.dask_cluster.run_tasks` and
:class:`~epsstar.plumbing.runtime.dask_cluster.TaskOutcome` are named here too, for the
audit's engines. This module is imported only for ``--engine dask`` or to record the engine
an audit ran on.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.plumbing.runtime.dask_cluster import TaskOutcome, require_distributed, run_tasks
from epsstar.plumbing.runtime.dask_cluster import dask_client as cluster_client
from epsstar.statistics._validation import check_positive_int
from epsstar.statistics.names import ENGINES, EngineName

if TYPE_CHECKING:  # pragma: no cover
    from distributed import Client

__all__ = [
    "Engine",
    "TaskOutcome",
    "dask_client",
    "require_distributed",
    "run_tasks",
]


@dataclass(frozen=True, slots=True)
class Engine(JsonRecord):
    """Where the work runs: this machine's processes (``single``) or a Dask cluster.

    With ``dask``, ``scheduler`` is the scheduler's address; ``None`` starts a local
    cluster of ``workers`` processes for the run.
    """

    name: EngineName = ENGINES.names[0]
    scheduler: str | None = field(default=None, metadata=json_rule(skip=True))
    workers: int = field(default=2, metadata=json_rule(skip=True))

    def __post_init__(self) -> None:
        ENGINES.check(self.name)
        if self.scheduler is not None and not self.on_dask:
            raise InvalidInputError(
                f"a scheduler address needs the dask engine. Found engine {self.name!r} with "
                f"scheduler {self.scheduler!r}."
            )
        check_positive_int("workers", self.workers)

    @property
    def on_dask(self) -> bool:
        """Whether the work runs on a Dask cluster."""
        return self.name == "dask"

    @json_property(name="scheduler", after="scheduler", omit_if_none=True)
    def scheduler_shown(self) -> str | None:
        """The scheduler as the JSON outputs record it: ``local`` for a cluster started
        for the run; ``None`` (not written) on the single-process engine."""
        return self.scheduler or "local" if self.on_dask else None


def dask_client(engine: Engine) -> AbstractContextManager[Client]:
    """A client of ``engine``'s scheduler, or of a local cluster of its ``workers``
    (:func:`epsstar.plumbing.runtime.dask_cluster.dask_client`), closed on exit."""
    return cluster_client(engine.scheduler, engine.workers)
