"""A Dask cluster's client and one task per item (``--engine dask``), for any layer.

epsstar brings no scheduler of its own: :func:`dask_client` connects to the one at a
scheduler's address (``tcp://host:port``, as ``dask scheduler`` prints it), or starts a
``distributed.LocalCluster`` of single-threaded worker processes when none is given.
:func:`run_tasks` submits one task per item and hands back each outcome as it finishes,
with the address of the worker that ran it; a task that fails, or whose worker dies (after
the scheduler's ``distributed.scheduler.allowed-failures`` retries on other workers),
becomes an error message and does not lose the others.

This module is imported only for ``--engine dask``; it needs the ``[dask]`` extra
(``dask[distributed]``). Functions travel to the workers by reference, so the workers must
have epsstar installed, and the files a task reads must be reachable from them (a shared
file system, or fsspec URLs). The audit's record of where its work ran is
:class:`epsstar.audit.engines.dask_engine.Engine`.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from epsstar.exceptions import EpsstarError, InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    from distributed import Client

__all__ = [
    "CONNECT_TIMEOUT",
    "TaskOutcome",
    "dask_client",
    "require_distributed",
    "run_tasks",
]

#: Seconds to wait for a scheduler to answer before giving up on it.
CONNECT_TIMEOUT = 10.0

T = TypeVar("T")


def require_distributed() -> Any:
    """The ``distributed`` module, or a one-line error saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise InvalidInputError(
            "--engine dask needs Dask's distributed scheduler: python -m pip install "
            "'epsstar[dask]'. Found no module 'distributed'."
        ) from None
    return distributed


def _handshake(address: str, timeout: float) -> None:
    """Connect to ``address`` and exchange Dask's opening handshake within ``timeout``
    seconds, or raise :class:`TimeoutError` (or the connection's :class:`OSError`).

    ``distributed.Client(address, timeout=...)`` bounds the TCP connection but not the
    handshake read that follows it (``distributed.comm.core.connect`` in distributed
    2026.8 awaits the peer's first message without a deadline), so a port that accepts
    connections and never answers held the client forever. The exchange runs in a daemon
    thread with its own event loop, so the wait ends at the deadline whatever the loop of
    the caller is doing.
    """
    import asyncio

    from distributed.comm import core

    connect: Callable[..., Awaitable[Any]] = core.connect  # distributed has no annotations

    async def exchange() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout)
        await comm.close()

    failures: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(exchange())
        except BaseException as error:  # handed to the caller's thread
            failures.append(error)

    thread = threading.Thread(target=run, name="epsstar-scheduler-handshake", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {timeout:g} s")
    if failures:
        error = failures[0]
        if isinstance(error, asyncio.TimeoutError | TimeoutError):
            raise TimeoutError(f"no answer within {timeout:g} s") from None
        raise error


@contextmanager
def _interrupts_ignored() -> Iterator[None]:
    """Ctrl-C ignored while the block runs (main thread only), then as before.

    A terminal sends Ctrl-C to every process of the command, the local cluster's workers
    too, each of which would print its ``KeyboardInterrupt`` traceback. A process started
    while Ctrl-C is ignored keeps ignoring it (and Python's ``asyncio`` then leaves it so),
    so the workers started in the block leave Ctrl-C to this process, which stops them.
    A Ctrl-C while they start is lost.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(
            signal.SIGINT, previous if previous is not None else signal.default_int_handler
        )


@contextmanager
def dask_client(scheduler: str | None, workers: int) -> Iterator[Client]:
    """A client of the scheduler at ``scheduler``, or of a local cluster of ``workers``
    single-threaded processes started for the block; closed on exit."""
    distributed = require_distributed()
    if scheduler is None:
        # The local scheduler runs in this process and its workers beside it: their log lines
        # are not the command's output (a task's error reaches the command as one line).
        logger = logging.getLogger("distributed")
        level = logger.level
        logger.setLevel(logging.CRITICAL)
        try:
            with _interrupts_ignored():
                cluster = distributed.LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",
                    silence_logs=logging.CRITICAL,
                )
            try:
                with distributed.Client(cluster) as client:
                    yield client
            finally:
                cluster.close()
        finally:
            logger.setLevel(level)
        return
    try:
        _handshake(scheduler, CONNECT_TIMEOUT)
        client = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError, TypeError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InvalidInputError(
            f"--scheduler: cannot reach a Dask scheduler there ({reason}). Found {scheduler!r}."
        ) from None
    with client:
        yield client


@dataclass(frozen=True, slots=True)
class TaskOutcome(Generic[T]):
    """What became of the task of item ``index``: its ``value`` or its ``error``.

    ``worker`` is the address of the worker that ran it (for a lost task, the last
    worker it was on, when the scheduler says).
    """

    index: int
    value: T | None
    error: str | None
    worker: str | None


def _on_worker(function: Callable[..., T], *arguments: Any) -> tuple[T, str]:
    """Run ``function`` on a worker; its value and the worker's address."""
    from distributed import get_worker

    return function(*arguments), str(get_worker().address)


def _failure(future: Any) -> tuple[str, str | None]:
    """The message and worker of a task that did not finish."""
    from distributed import KilledWorker

    if future.status == "cancelled":
        return "lost: the scheduler cancelled the task (was the client disconnected?)", None
    error = future.exception()
    if isinstance(error, KilledWorker):
        last = getattr(error, "last_worker", None)
        worker = getattr(last, "address", None)
        where = f" {worker}" if worker else ""
        return f"lost: the worker{where} running it died", worker
    if isinstance(error, EpsstarError):
        return str(error), None
    return f"unexpected {type(error).__name__} on a worker: {error}", None


def run_tasks(
    client: Client,
    function: Callable[..., T],
    arguments: Sequence[tuple[Any, ...]],
    on_done: Callable[[TaskOutcome[T]], None] | None = None,
    *,
    name: str = "epsstar",
    keep: bool = True,
) -> list[TaskOutcome[T]]:
    """Run ``function(*arguments[i])`` as one task per item; outcomes in item order.

    ``function`` must be importable by the workers (a module-level function). Each outcome
    is given to ``on_done`` as it arrives, in this process; without ``keep`` the outcomes
    returned hold no value (``on_done`` took it), so values need not all be held at once.
    A task is never retried by epsstar; the scheduler reruns a task whose worker died
    elsewhere, up to its ``allowed-failures`` setting, and then reports it lost.
    """
    from distributed import as_completed

    run = uuid.uuid4().hex[:8]
    futures = {
        client.submit(_on_worker, function, *task, key=f"{name}-{run}-{index}", pure=False): index
        for index, task in enumerate(arguments)
    }
    outcomes: list[TaskOutcome[T] | None] = [None] * len(arguments)
    completed: Callable[[Iterable[Any]], Iterator[Any]] = as_completed
    for future in completed(futures):
        index = futures[future]
        if future.status == "finished":
            value, worker = future.result()
            outcome = TaskOutcome(index, value, None, worker)
        else:
            message, lost_on = _failure(future)
            outcome = TaskOutcome(index, None, message, lost_on)
        future.release()
        if on_done is not None:
            on_done(outcome)
        outcomes[index] = outcome if keep else dataclasses.replace(outcome, value=None)
    return [outcome for outcome in outcomes if outcome is not None]
