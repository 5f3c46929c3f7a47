"""A seeded random subset of a table's records, kept while the audit streams the table.

The blind baseline (:mod:`epsstar.audit.premise`) reads at most a fixed number of records
per side. Reading the files a second time for them cost the audit as much as the model's
inference on the fixtures (docs/premise.md, *Cost*), so the streaming pass keeps them: each
batch's feature columns and labels, as the reader typed them, go through
:meth:`RecordSample.add`.

Which rows: every row is given an independent uniform key from a seeded generator, and the
``limit`` rows with the smallest keys are kept (a bottom-k sample). Every subset of
``limit`` rows is then equally likely, whatever the batches, so the subset is a simple
random sample of the table: records exchangeable between the tables stay exchangeable,
and the blind baseline's test stays exact. Written by hand because it must run batch by
batch with a memory bound; numpy's ``Generator.choice`` needs the table's size first.

On a Dask cluster each partition is sampled where it is streamed and the samples are
joined (:func:`joined_sample`). A partition whose first row in its data set is known
(``skip``) draws its keys from the data set's stream advanced past the rows before it
(PCG64 draws one 64-bit word per key and can jump ahead), so its rows get the keys the
single process gives them, and the joined sample is the single process's, row for row.
Otherwise each partition draws from a stream of its own: the keys are still independent and
uniform, so the joined sample is still a simple random sample of the data set, another draw.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.reading import Role
from epsstar.audit.data.records import LABEL, Records, flat_frame
from epsstar.audit.model.features import Features
from epsstar.exceptions import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["RecordSample", "joined_sample", "sample_seed", "sampled_records"]


def sample_seed(seed: int, role: Role) -> tuple[int, int, int]:
    """The key stream of ``role``'s sample in an audit seeded ``seed``."""
    return (seed, 0xB11D, 0 if role == "train" else 1)


class RecordSample:
    """At most ``limit`` records of one table, a simple random sample drawn with ``seed``
    (see the module docstring), with each kept row's number in the file (0: first row).
    ``skip`` keys of ``seed``'s stream are passed over first: those of the rows before this
    table's first in its data set."""

    def __init__(self, limit: int, seed: int | tuple[int, ...], *, skip: int = 0) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"the records' limit must be at least 1. Found {limit!r}.")
        self.limit = limit
        self.rows = 0
        self._rng = np.random.Generator(np.random.PCG64(seed).advance(skip))
        self._keys: NDArray[np.float64] = np.empty(0)
        self._numbers: NDArray[np.int64] = np.empty(0, np.int64)
        self._names: tuple[str, ...] = ()
        self._columns: list[NDArray[Any]] = []

    def add(self, features: Features, labels: NDArray[Any]) -> None:
        """Offer one batch of records (its columns and labels, in file order)."""
        n = int(labels.shape[0])
        keys = self._rng.random(n)
        numbers = np.arange(self.rows, self.rows + n, dtype=np.int64)
        self.rows += n
        columns = [*features.columns, np.asarray(labels)]
        if not self._columns:
            self._names = (*features.names, LABEL)
            self._columns = [column[:0] for column in columns]
        self._keep(
            np.concatenate([self._keys, keys]),
            np.concatenate([self._numbers, numbers]),
            [
                np.concatenate([kept, column])
                for kept, column in zip(self._columns, columns, strict=True)
            ],
        )

    def _keep(
        self, keys: NDArray[np.float64], numbers: NDArray[np.int64], columns: list[NDArray[Any]]
    ) -> None:
        """Keep the rows of the ``limit`` smallest ``keys``, in the given (file) order."""
        if keys.size > self.limit:
            chosen = np.sort(np.argpartition(keys, self.limit - 1)[: self.limit])
        else:
            chosen = np.arange(keys.size)
        self._keys = keys[chosen]
        self._numbers = numbers[chosen]
        self._columns = [column[chosen] for column in columns]

    @property
    def keys(self) -> NDArray[np.float64]:
        """The kept rows' keys, in file order."""
        return self._keys

    def pruned(self, largest: float) -> RecordSample:
        """This sample without the rows whose key exceeds ``largest`` (rows that can no
        longer be among the smallest keys of the data set once ``largest`` is its
        ``limit``-th smallest so far); ``rows`` is kept."""
        kept = self._keys <= largest
        pruned = copy.copy(self)
        pruned._keys, pruned._numbers = self._keys[kept], self._numbers[kept]
        pruned._columns = [column[kept] for column in self._columns]
        return pruned

    def frame(self) -> pd.DataFrame:
        """The kept records: tensor columns flattened, the label under :data:`LABEL`."""
        named = list(zip(self._names[:-1], self._columns[:-1], strict=True))
        frame = flat_frame(named)
        frame[LABEL] = self._columns[-1]
        return frame

    @property
    def numbers(self) -> NDArray[np.int64]:
        """Each kept row's number in the file, ascending."""
        return self._numbers


def joined_sample(parts: Sequence[RecordSample]) -> RecordSample:
    """One sample of the data set whose partitions, in order, ``parts`` sampled: their
    rows renumbered in the data set and the ``limit`` smallest keys kept."""
    joined = RecordSample(parts[0].limit, 0)
    offsets = np.cumsum([0, *(part.rows for part in parts[:-1])])
    joined.rows = sum(part.rows for part in parts)
    joined._names = next((part._names for part in parts if part._names), ())
    with_rows = [part for part in parts if part._columns]
    if with_rows:
        joined._keep(
            np.concatenate([part._keys for part in with_rows]),
            np.concatenate(
                [
                    part._numbers + offset
                    for part, offset in zip(parts, offsets, strict=True)
                    if part._columns
                ]
            ),
            [
                np.concatenate(columns)
                for columns in zip(*(part._columns for part in with_rows), strict=True)
            ],
        )
    return joined


def sampled_records(train: RecordSample, population: RecordSample) -> Records:
    """Both tables' kept records, as :func:`epsstar.audit.data.records.read_records` gives
    them."""
    return Records(
        train=train.frame(),
        population=population.frame(),
        train_rows=train.numbers,
        population_rows=population.numbers,
        n_train=train.rows,
        n_population=population.rows,
    )
