"""The records of an audit's two tables as data frames: what a classifier that never sees the
model reads.

The blind baseline (:mod:`epsstar.audit.premise`), QMIA's quantile regression and the
attribute inference read the columns the model receives, and the label, of both tables.
:func:`read_records` reads them whole (the audit streams the same files through the model,
so they fit the same machine), tensor columns flattened into one column per value, and
keeps a seeded random subset of at most ``limit`` rows per side with their row numbers in
the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.reading import Role, Tables
from epsstar.audit.data.tables.batches import iter_batches
from epsstar.exceptions import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["LABEL", "Records", "flat_frame", "read_records", "sklearn_frame"]

#: Text columns with more distinct values than this are given as their codes.
_MAX_CATEGORIES: Final = 250

#: The name the label column takes in :attr:`Records.train` and :attr:`Records.population`.
LABEL = "__label__"


@dataclass(frozen=True, slots=True)
class Records:
    """Both tables' records (the model's columns and the label, under :data:`LABEL`), and
    each kept row's number in its file (every row when nothing was left out)."""

    train: pd.DataFrame = field(repr=False)
    population: pd.DataFrame = field(repr=False)
    train_rows: NDArray[np.int64] = field(repr=False)
    population_rows: NDArray[np.int64] = field(repr=False)
    #: Rows in each file, before any subset was drawn.
    n_train: int
    n_population: int

    @property
    def subsampled(self) -> bool:
        """Whether some rows were left out."""
        return len(self.train) < self.n_train or len(self.population) < self.n_population

    def side(self, role: Role) -> pd.DataFrame:
        return self.train if role == "train" else self.population

    def features(self, role: Role) -> pd.DataFrame:
        """The model's columns of ``role``'s records, without the label."""
        return self.side(role).drop(columns=[LABEL])


def flat_frame(columns: Sequence[tuple[str, NDArray[Any]]]) -> pd.DataFrame:
    """One column per scalar feature; a tensor column as one column per value."""
    import pandas as pd

    flat: dict[str, NDArray[Any]] = {}
    for name, values in columns:
        if values.ndim == 1:
            flat[name] = values
            continue
        width = values.reshape(values.shape[0], -1)
        for j in range(width.shape[1]):
            flat[f"{name}[{j}]"] = width[:, j]
    return pd.DataFrame(flat)


def _read(
    tables: Tables, role: Role, columns: Sequence[str] | None, keep: NDArray[np.int64] | None
) -> pd.DataFrame:
    """``role``'s records; only the rows ``keep`` (sorted row numbers) when given, chosen
    batch by batch so that the rows left out are never held."""
    import pandas as pd

    parts = []
    row0 = 0
    for batch in iter_batches(
        tables.path(role),
        label_column=tables.label_column,
        features=columns,
        batch_size=1 << 16,
        missing=True,
        separator=tables.csv_separator,
    ):
        named = list(zip(batch.features.names, batch.features.columns, strict=True))
        frame = flat_frame(named)
        frame[LABEL] = batch.labels
        if keep is not None:
            rows = keep[(keep >= row0) & (keep < row0 + len(frame))] - row0
            row0 += len(frame)
            frame = frame.iloc[rows]
        parts.append(frame)
    return pd.concat(parts, ignore_index=True)


def sklearn_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as scikit-learn's gradient-boosted trees read it: numbers as they are;
    text as categories, or its codes past :data:`_MAX_CATEGORIES`."""
    import pandas as pd

    out: dict[str, object] = {}
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
            out[name] = column.astype(float)
            continue
        text = column.astype(str).where(column.notna())
        codes, uniques = pd.factorize(text, use_na_sentinel=True)
        if len(uniques) > _MAX_CATEGORIES:
            out[name] = pd.Series(np.where(codes < 0, np.nan, codes), dtype=float)
        else:
            out[name] = pd.Categorical(text)
    return pd.DataFrame(out)


def _subset(rows: int, limit: int | None, rng: np.random.Generator) -> NDArray[np.int64]:
    if limit is None or rows <= limit:
        return np.arange(rows, dtype=np.int64)
    return np.sort(rng.choice(rows, size=limit, replace=False)).astype(np.int64)


def read_records(
    tables: Tables,
    columns: Sequence[str] | None,
    *,
    limit: int | None = None,
    seed: int = 0,
    rows: tuple[int, int] | None = None,
) -> Records:
    """The records of both tables: ``columns`` (the model's, in its order; ``None``: every
    column but the label) and the label, at most ``limit`` seeded random rows per side.
    ``rows``, the tables' row counts when known (the audit streamed them), lets the rows
    left out be dropped as each batch is read."""
    if limit is not None and limit < 1:
        raise InvalidInputError(f"the records' limit must be at least 1. Found {limit}.")
    rng = np.random.default_rng([seed, 0x9E3779B9])
    if rows is not None:
        kept = _subset(rows[0], limit, rng), _subset(rows[1], limit, rng)
        train = _read(tables, "train", columns, kept[0] if len(kept[0]) < rows[0] else None)
        population = _read(
            tables, "population", columns, kept[1] if len(kept[1]) < rows[1] else None
        )
        sizes = rows
    else:
        train = _read(tables, "train", columns, None)
        population = _read(tables, "population", columns, None)
        sizes = len(train), len(population)
        kept = _subset(sizes[0], limit, rng), _subset(sizes[1], limit, rng)
        train, population = train.iloc[kept[0]], population.iloc[kept[1]]
    return Records(
        train=train.reset_index(drop=True),
        population=population.reset_index(drop=True),
        train_rows=kept[0],
        population_rows=kept[1],
        n_train=sizes[0],
        n_population=sizes[1],
    )
