"""Generated data sets for benchmarks and reproductions.

``purchase_like`` imitates the Purchase-100 task of §4.1 of Negoescu et al. 2024, "Epsilon*:
Privacy Metric for Machine Learning Models" (about 600 binary purchase features and 100 classes):
each class is a shopper profile, a vector of per-item purchase probabilities drawn from a Beta
distribution so that most items are rarely bought and a few often. Every class shares one base
profile and adds its own: ``profile_k = (1 - separation) * base + separation * specific_k``; a
record draws its items independently from its class's profile. Classes overlap (a 3x100 MLP reaches
about 82 % held-out accuracy on 20,000 records at the default separation while fitting its training
records perfectly), so a model can fit the training records better than unseen ones, which is what a
membership audit needs.

``adult`` reads the UCI Adult files shipped in ``epsstar/training/data/_datasets/adult/``
(Becker and Kohavi, 1996; CC BY 4.0, attribution in that folder's README) and
turns them into numeric features for the reference trainer and the demo.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.statistics._validation import check_in_range, check_positive_int

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ADULT_ATTRIBUTES",
    "ADULT_CATEGORICAL",
    "ADULT_NUMERIC",
    "AdultData",
    "PurchaseLikeData",
    "adult",
    "adult_directory",
    "purchase_like",
    "read_adult_raw",
]


@dataclass(frozen=True, slots=True)
class PurchaseLikeData:
    """Generated Purchase-100-like records: binary features (n, d) and class labels (n,)."""

    features: np.ndarray
    labels: np.ndarray

    @property
    def columns(self) -> list[str]:
        return [f"f{i}" for i in range(self.features.shape[1])]


def purchase_like(
    n_records: int,
    *,
    n_features: int = 600,
    n_classes: int = 100,
    seed: int = 0,
    concentration: float = 0.2,
    separation: float = 0.25,
) -> PurchaseLikeData:
    """Purchase-100-like records: binary features (uint8) and class labels (int64)."""
    n = check_positive_int("n_records", n_records)
    d = check_positive_int("n_features", n_features)
    k = check_positive_int("n_classes", n_classes, minimum=2)
    mix = check_in_range("separation", separation, 0.0, 1.0, high_inclusive=True)
    rng = np.random.default_rng(seed)
    # The profiles come from their own stream, so every size of data set shares them.
    profile_rng = np.random.default_rng([seed, 1])
    base = profile_rng.beta(concentration, 1.0, size=d)
    profiles = (1.0 - mix) * base + mix * profile_rng.beta(concentration, 1.0, size=(k, d))
    labels = rng.integers(0, k, size=n)
    features = np.empty((n, d), dtype=np.uint8)
    for start in range(0, n, 50_000):
        block = labels[start : start + 50_000]
        features[start : start + block.size] = rng.random((block.size, d)) < profiles[block]
    return PurchaseLikeData(features=features, labels=labels.astype(np.int64))


# --- UCI Adult ---------------------------------------------------------------------------------

#: The 14 attributes of the Adult files, in file order (names as in ``adult.names``).
ADULT_ATTRIBUTES: tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
)
ADULT_NUMERIC: tuple[str, ...] = (
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
)
ADULT_CATEGORICAL: tuple[str, ...] = tuple(c for c in ADULT_ATTRIBUTES if c not in ADULT_NUMERIC)
#: The value the files use for a missing attribute; it is kept as a category of its own.
ADULT_MISSING = "?"
#: Row counts of the shipped splits (training file, test file used as population data).
ADULT_ROWS = {"train": 32_561, "population": 16_281}
#: SHA-256 of the shipped gzip files (identical to the copies the data README lists).
ADULT_SHA256 = {
    "adult.data.gz": "171e93e0be014947c678f8e0fd17485ec99e8c273d1a7a0b506bb9139e95800b",
    "adult.test.gz": "88304f2ff4ca392efdb76452aa377e96dde27622ff90070ed0913c464bb7aa32",
    "adult.names.gz": "1e8ee543cb81fc9590b1a20392e41f28eab971ac9dbe519269cdf7d4658b62f2",
}
ADULT_LABEL = "label"


def adult_directory() -> Path:
    """The folder of the shipped Adult files (with their attribution, ``README.md``)."""
    return Path(__file__).resolve().parent / "_datasets" / "adult"


def _read_adult_file(path: Path, *, test: bool) -> pd.DataFrame:
    import pandas as pd

    frame = pd.read_csv(
        path,
        header=None,
        names=[*ADULT_ATTRIBUTES, "income"],
        skiprows=1 if test else 0,  # the test file opens with a "|1x3 Cross validator" line
        skipinitialspace=True,
        dtype=dict.fromkeys((*ADULT_CATEGORICAL, "income"), str),
        na_filter=False,  # "?" stays a value: missing is a category of its own
        skip_blank_lines=True,
        compression="gzip",
    )
    frame["income"] = frame["income"].str.strip().str.rstrip(".")
    return frame


def read_adult_raw() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two Adult splits as read from the files: 14 attributes and ``income`` (text).

    The training split is ``adult.data`` (32,561 rows), the population split
    ``adult.test`` (16,281 rows) with its comment line dropped and the ``.`` after
    its labels removed, so both use ``<=50K`` and ``>50K``. Missing values stay ``?``.
    """
    folder = adult_directory()
    train = _read_adult_file(folder / "adult.data.gz", test=False)
    population = _read_adult_file(folder / "adult.test.gz", test=True)
    for name, frame in (("train", train), ("population", population)):
        if len(frame) != ADULT_ROWS[name] or not frame["income"].isin(("<=50K", ">50K")).all():
            raise InputFileError(
                f"the shipped Adult {name} file is damaged: expected {ADULT_ROWS[name]} rows "
                f"labelled <=50K or >50K. Found {len(frame)} rows."
            )
    return train, population


@dataclass(frozen=True, slots=True)
class AdultData:
    """UCI Adult as numeric features: the training split and the population split.

    Numeric attributes are kept as they are (float64, unscaled: the trainer
    standardises inside the model); each categorical attribute becomes one 0/1
    column per category seen in the training split, named ``attribute=category``
    (``?``, missing, is a category). A population category absent from the
    training split sets none of its attribute's columns. The label is 1 for an
    income above $50K.
    """

    train_features: NDArray[np.float64]
    train_labels: NDArray[np.int64]
    population_features: NDArray[np.float64]
    population_labels: NDArray[np.int64]
    feature_names: tuple[str, ...]

    @property
    def n_train(self) -> int:
        return int(self.train_labels.size)

    @property
    def n_population(self) -> int:
        return int(self.population_labels.size)

    def subsample(self, n_train: int, n_population: int, *, seed: int = 0) -> AdultData:
        """A random subset of each split (rows without replacement, in their original order)."""
        n_train = check_positive_int("n_train", n_train)
        n_population = check_positive_int("n_population", n_population)
        if n_train > self.n_train or n_population > self.n_population:
            raise InvalidInputError(
                f"a subsample must be at most the split sizes ({self.n_train}, "
                f"{self.n_population}). Found ({n_train}, {n_population})."
            )
        rng = np.random.default_rng(seed)
        keep_train = np.sort(rng.choice(self.n_train, n_train, replace=False))
        keep_pop = np.sort(rng.choice(self.n_population, n_population, replace=False))
        return AdultData(
            train_features=self.train_features[keep_train],
            train_labels=self.train_labels[keep_train],
            population_features=self.population_features[keep_pop],
            population_labels=self.population_labels[keep_pop],
            feature_names=self.feature_names,
        )

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Both splits as tables: one column per feature plus ``label`` (0/1)."""
        import pandas as pd

        tables = []
        for features, labels in (
            (self.train_features, self.train_labels),
            (self.population_features, self.population_labels),
        ):
            table = pd.DataFrame(features, columns=list(self.feature_names))
            table[ADULT_LABEL] = labels
            tables.append(table)
        return tables[0], tables[1]

    def write_parquet(self, folder: str | os.PathLike[str]) -> tuple[Path, Path]:
        """Write ``train.parquet`` and ``population.parquet`` into ``folder`` (created if needed).

        Each file is written to a temporary name and moved into place. Returns both paths.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        from epsstar.plumbing.files.staging import atomic_write_bytes

        directory = Path(folder)
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise InputFileError(f"cannot create {str(directory)!r}: {error}.") from None
        paths = (directory / "train.parquet", directory / "population.parquet")
        for path, frame in zip(paths, self.frames(), strict=True):
            buffer = pa.BufferOutputStream()
            pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), buffer)
            atomic_write_bytes(path, buffer.getvalue().to_pybytes())
        return paths


def _one_hot(
    frame: pd.DataFrame, categories: dict[str, list[str]]
) -> tuple[NDArray[np.float64], list[str]]:
    blocks: list[NDArray[np.float64]] = [frame[list(ADULT_NUMERIC)].to_numpy(dtype=np.float64)]
    names = list(ADULT_NUMERIC)
    for column in ADULT_CATEGORICAL:
        values = frame[column].to_numpy(dtype=object)
        levels = categories[column]
        blocks.append((values[:, None] == np.asarray(levels, dtype=object)[None, :]).astype(float))
        names.extend(f"{column}={level}" for level in levels)
    return np.ascontiguousarray(np.hstack(blocks)), names


def adult() -> AdultData:
    """UCI Adult (the shipped copy) as numeric features with income >50K as label 1.

    32,561 training rows (``adult.data``) and 16,281 population rows
    (``adult.test``), the split of §4.1 of Negoescu et al.
    Source: Becker and Kohavi (1996), UCI Machine Learning Repository,
    https://doi.org/10.24432/C5XW20, CC BY 4.0 (see ``_datasets/adult/README.md``).
    """
    train, population = read_adult_raw()
    categories = {column: sorted(train[column].unique()) for column in ADULT_CATEGORICAL}
    train_x, names = _one_hot(train, categories)
    pop_x, _ = _one_hot(population, categories)
    return AdultData(
        train_features=train_x,
        train_labels=np.asarray(train["income"] == ">50K", dtype=np.int64),
        population_features=pop_x,
        population_labels=np.asarray(population["income"] == ">50K", dtype=np.int64),
        feature_names=tuple(names),
    )
