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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.records import LABEL, Records, flat_frame
from epsstar.audit.model.features import Features
from epsstar.exceptions import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["RecordSample", "sampled_records"]


class RecordSample:
    """At most ``limit`` records of one table, a simple random sample drawn with ``seed``
    (see the module docstring), with each kept row's number in the file (0: first row)."""

    def __init__(self, limit: int, seed: int | tuple[int, ...]) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"the records' limit must be at least 1. Found {limit!r}.")
        self.limit = limit
        self.rows = 0
        self._rng = np.random.default_rng(seed)
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
        keys = np.concatenate([self._keys, keys])
        if keys.size > self.limit:
            # The ``limit`` smallest keys, put back in file order.
            chosen = np.sort(np.argpartition(keys, self.limit - 1)[: self.limit])
        else:
            chosen = np.arange(keys.size)
        self._keys = keys[chosen]
        self._numbers = np.concatenate([self._numbers, numbers])[chosen]
        self._columns = [
            np.concatenate([kept, column])[chosen]
            for kept, column in zip(self._columns, columns, strict=True)
        ]

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
