"""How an audit reads its tables: what to read (:class:`Tables`) and one table being read by
one model (:class:`TableRead`).

:class:`Tables` is the audit's "what to read": the two data sets (files, or partitioned data
sets and fsspec URLs on a Dask cluster), the label column, the columns named by
``--features``, the shape of each record for tensor models, the rows per model call and the
loss. It is the same for the target and every reference model.

:class:`TableRead` is one table (a file, or one partition of a data set) read through one
model: its role, the file's columns in the model's order and the names the model receives
them under (:mod:`epsstar.audit.data.column_match`), with the settings of :class:`Tables`.
The single-process engine, the Dask workers and the reference models all stream a
:class:`TableRead`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from epsstar.audit.data.column_match import ColumnMatch, match_model_columns
from epsstar.audit.data.in_memory import StagedTables, TableObject, is_path
from epsstar.audit.data.partitions import StorageOptions
from epsstar.audit.data.tables.csv_files import check_separator
from epsstar.audit.data.tables.formats import read_schema
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.constraints import (
    ColumnName,
    ColumnNames,
    Maybe,
    OneOf,
    WholeNumber,
    check_fields,
    constraint,
)
from epsstar.statistics.names import LOSSES, LossName

__all__ = ["DEFAULT_BATCH_SIZE", "Role", "TableRead", "Tables"]

Role = Literal["train", "population"]
#: Rows per model call while streaming a table.
DEFAULT_BATCH_SIZE: Final = 16_384


def _shape(shape: Sequence[int] | None) -> tuple[int, ...] | None:
    """``input_shape`` checked: positive whole numbers."""
    if shape is None:
        return None
    values = tuple(shape) if not isinstance(shape, (str, bytes)) else ()
    if not values or not all(
        isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in values
    ):
        raise InvalidInputError(
            f"input_shape must be one or more positive whole numbers (e.g. 1,8,8). Found {shape!r}."
        )
    return values


@dataclass(frozen=True, slots=True)
class Tables:
    """What an audit reads, checked when built.

    ``train`` and ``population`` are data files (CSV, Parquet, NPZ, NPY), or on a Dask
    cluster partitioned data sets (a folder of Parquet files, a glob, an fsspec URL, read
    with ``storage_options``). ``features`` names the file's columns in the model's input
    order (``None``: by the names the model records, else by position); ``input_shape``
    reshapes each record for tensor models (e.g. 64 pixel columns into ``(1, 8, 8)``);
    ``batch_size`` rows go through the model per call; ``loss`` is the per-record loss.
    ``columns_by_position`` states that the file's column order is the model's when the
    model records no names and ``features`` is not given (without it a release gate refuses
    such a match: :meth:`~epsstar.audit.data.column_match.ColumnMatch.refuse_guess`).
    ``csv_separator`` separates the fields of CSV files (``";"`` for what spreadsheets
    write where the decimal mark is a comma).

    ``train`` and ``population`` may also be tables in memory (pandas or polars DataFrames,
    pyarrow Tables, ``(X, y)`` numpy arrays): each is staged as a file when the record is
    built (:mod:`epsstar.audit.data.in_memory`), ``train`` and ``population`` then hold the
    staged files' paths, and messages and the provenance name the objects instead.
    """

    train: str | os.PathLike[str] | TableObject
    population: str | os.PathLike[str] | TableObject
    label_column: str = field(metadata=constraint(ColumnName()))
    features: Sequence[str] | None = field(default=None, metadata=constraint(Maybe(ColumnNames())))
    input_shape: Sequence[int] | None = None
    batch_size: int = field(default=DEFAULT_BATCH_SIZE, metadata=constraint(WholeNumber()))
    loss: LossName = field(default="logit", metadata=constraint(OneOf(LOSSES)))
    storage_options: StorageOptions | None = field(default=None, repr=False)
    columns_by_position: bool = False
    csv_separator: str = ","
    #: The tables given in memory, staged as files (``None``: both are files).
    staged: StagedTables | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_fields(self)
        if not (is_path(self.train) and is_path(self.population)):
            staged = StagedTables()
            for role in ("train", "population"):
                value = getattr(self, role)
                if not is_path(value):
                    object.__setattr__(self, role, staged.stage(value, role, self.label_column))
            object.__setattr__(self, "staged", staged)
        object.__setattr__(self, "input_shape", _shape(self.input_shape))
        check_separator(self.csv_separator)
        if self.storage_options is not None:
            object.__setattr__(self, "storage_options", dict(self.storage_options))

    def source(self, role: Role) -> str:
        """The data set of ``role`` as given (a path or a URL)."""
        return os.fspath(self.train if role == "train" else self.population)

    def path(self, role: Role) -> Path:
        """The data file of ``role``."""
        return Path(self.source(role))

    def described(self, role: Role) -> str:
        """The data set of ``role`` as the result names it: the path or URL given, or for a
        table in memory its name (``the training DataFrame``)."""
        name = None if self.staged is None else self.staged.name(role)
        return self.source(role) if name is None else name

    def named(self, text: str) -> str:
        """``text`` (a message) naming the tables in memory instead of their staged files."""
        return text if self.staged is None else self.staged.named(text)

    def match(
        self,
        model: object,
        role: Role,
        model_path: Path,
        *,
        columns: Sequence[str] | None = None,
    ) -> ColumnMatch:
        """How the columns of the table of ``role`` reach ``model`` (loaded from
        ``model_path``): by the names it records, by ``features``, or by position
        (:mod:`epsstar.audit.data.column_match`). ``columns`` are the table's column names
        when known already (a partitioned data set's first partition)."""
        path = self.path(role)
        unnamed: tuple[str, ...] = ()
        if columns is None:
            schema = read_schema(path, separator=self.csv_separator)
            found, unnamed = schema.columns, schema.unnamed
        else:
            found = tuple(columns)
        return match_model_columns(
            model,
            found,
            self.label_column,
            features=self.features,
            model_path=model_path,
            data=path,
            unnamed=unnamed,
        )

    def read(
        self,
        role: Role,
        match: ColumnMatch,
        *,
        path: str | os.PathLike[str] | None = None,
        outputs_requested: bool = False,
    ) -> TableRead:
        """The table of ``role`` (or ``path``, one of its partitions) read through a model
        whose columns ``match`` found."""
        return TableRead(
            path=Path(self.source(role) if path is None else path),
            role=role,
            label_column=self.label_column,
            columns=tuple(match.file_columns),
            model_names=tuple(match.model_names) if match.renamed else None,
            batch_size=self.batch_size,
            loss=self.loss,
            input_shape=None if self.input_shape is None else tuple(self.input_shape),
            outputs_requested=outputs_requested,
            separator=self.csv_separator,
        )


@dataclass(frozen=True, slots=True)
class TableRead:
    """One table read through one model.

    ``columns`` are the file's columns in the model's order (``None``: every column but the
    label) and ``model_names`` the names the model receives them under (``None``: the
    file's); ``input_shape``, if given, reshapes each record into one tensor column;
    ``outputs_requested`` says whether the user chose how the model's outputs are read
    (for the message refusing its predictions). ``role`` names the table in messages;
    ``separator`` separates a CSV file's fields.
    """

    path: Path
    role: Role
    label_column: str
    columns: tuple[str, ...] | None = None
    model_names: tuple[str, ...] | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    loss: LossName = "logit"
    input_shape: tuple[int, ...] | None = None
    outputs_requested: bool = False
    separator: str = ","

    @property
    def source(self) -> str:
        """How messages name the table's labels."""
        return f"{self.path}: label column {self.label_column!r}"
