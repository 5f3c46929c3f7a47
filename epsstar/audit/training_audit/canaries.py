"""Canary records: drawn from the population, or crafted into the tails of its distribution with
flipped labels; and which of them a run includes.

* Population canaries (the ``input`` and ``di`` threat models) are population records: they
  come from the training data's distribution, so a trainer that leaks them leaks ordinary
  records. A record that is also in ``--train``, or that repeats an earlier population record,
  cannot serve (it would be a member, or two canaries, whatever the inclusion bits say); they
  are left out and counted.
* Crafted canaries (the ``crafted`` threat model) are population records pushed into the
  tails of the data's distribution, with a wrong label: every numeric feature column is set to
  median ± (d + s·u)·sd of the training column (u uniform in [0, 1), the sign at random; whole
  numbers for integer columns; :class:`Crafting`: d = 1 and s = 2 unless the Python API says
  otherwise: the tails of the distribution rather than far beyond them, which measured twice
  the bound of d = 4 on a small problem, where canaries pushed far out crowd the few corners
  and their random labels cancel), and the label is another class, drawn uniformly (or kept, with
  ``flip_label=False``). A model fits
  such a record only by memorising it (the adversary's crafted inputs of
  §IV of Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for Differentially Private
  Machine Learning", made from the data alone, without a model).
* Inclusion: each canary is included in a run's training table independently with probability
  ½ (Steinke et al. 2023), from its own seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from epsstar.audit.training_audit.frames import row_hashes
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.constraints import InRange, check_fields, constraint

__all__ = ["CanaryRecords", "Crafting", "crafted_canaries", "inclusion", "population_canaries"]


@dataclass(frozen=True, slots=True)
class Crafting:
    """How crafted canaries are made: their values lie ``distance`` to ``distance + spread``
    standard deviations from the training column's median, and their label is another class
    (``flip_label``) or their source record's own. The default, 4 to 6 standard deviations, is
    the crafting the opacus case study and the black-box benchmark were measured with (and
    that work folders without a ``crafting`` setting hold); ``benchmarks/training_audit_designs.py``
    compares others (docs/training-audit.md)."""

    distance: float = field(default=4.0, metadata=constraint(InRange(0.0, math.inf, "left")))
    spread: float = field(default=2.0, metadata=constraint(InRange(0.0, math.inf, "left")))
    flip_label: bool = True

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True, slots=True)
class CanaryRecords:
    """``frame`` holds the canaries (the training table's columns), ``sources`` the population
    row each comes from; ``left_out`` population records could not serve (in ``--train``, or
    repeated)."""

    kind: Literal["population", "crafted", "text"]
    frame: pd.DataFrame = field(repr=False)
    sources: NDArray[np.int64] = field(repr=False)
    left_out: int

    @property
    def count(self) -> int:
        return len(self.frame)


def _seen_columns(
    train: pd.DataFrame, label_column: str, features: Sequence[str] | None
) -> list[str]:
    """The columns a model may read: the features named (or all columns) and the label."""
    if features is None:
        return [str(name) for name in train.columns]
    return [*features, label_column]


def _eligible(
    population: pd.DataFrame, train: pd.DataFrame, columns: list[str]
) -> NDArray[np.int64]:
    """Population rows not in ``train`` and not repeating an earlier population row."""
    in_train = np.isin(row_hashes(population, columns), row_hashes(train, columns))
    _, first = np.unique(row_hashes(population, columns), return_index=True)
    unique = np.zeros(len(population), dtype=bool)
    unique[first] = True
    return np.flatnonzero(unique & ~in_train).astype(np.int64)


def population_canaries(
    population: pd.DataFrame,
    train: pd.DataFrame,
    count: int,
    *,
    label_column: str,
    features: Sequence[str] | None,
    seed: int,
) -> CanaryRecords:
    """``count`` population records drawn at random (``seed``) among those that can serve."""
    columns = _seen_columns(train, label_column, features)
    eligible = _eligible(population, train, columns)
    left_out = len(population) - eligible.size
    if eligible.size < count:
        raise InvalidInputError(
            f"--population holds {eligible.size} records that can serve as canaries "
            f"({left_out} are also in --train or repeat another); --canaries asks for "
            f"{count}. Found {eligible.size}."
        )
    chosen = np.sort(np.random.default_rng(seed).choice(eligible, size=count, replace=False))
    frame = population.iloc[chosen][list(train.columns)].reset_index(drop=True)
    return CanaryRecords("population", frame, chosen, left_out)


def _numeric_features(
    train: pd.DataFrame, label_column: str, features: Sequence[str] | None
) -> list[str]:
    names = list(features) if features is not None else list(train.columns)
    return [str(name) for name in names if name != label_column and train[name].dtype.kind in "iuf"]


def _pushed_out(
    column: pd.Series, reference: pd.Series, rng: np.random.Generator, crafting: Crafting
) -> NDArray[np.float64]:
    """Values in the tails of ``reference``'s distribution, or beyond them (see the module)."""
    values = reference.to_numpy(dtype=np.float64)
    centre = float(np.nanmedian(values))
    spread = float(np.nanstd(values))
    if not np.isfinite(spread) or spread <= 0.0:
        spread = 1.0
    sign = rng.choice(np.array([-1.0, 1.0]), size=len(column))
    distance = crafting.distance + crafting.spread * rng.random(len(column))
    pushed = centre + sign * distance * spread
    return np.round(pushed) if reference.dtype.kind in "iu" else pushed


def _flipped(
    labels: pd.Series, classes: NDArray[np.object_], rng: np.random.Generator
) -> list[object]:
    """Each label replaced by another of ``classes``, drawn uniformly."""
    flipped: list[object] = []
    for label in labels.to_numpy(dtype=object):
        others = [value for value in classes if value != label]
        flipped.append(others[int(rng.integers(len(others)))])
    return flipped


def crafted_canaries(
    population: pd.DataFrame,
    train: pd.DataFrame,
    count: int,
    *,
    label_column: str,
    features: Sequence[str] | None,
    seed: int,
    crafting: Crafting = Crafting(),
) -> CanaryRecords:
    """``count`` crafted canaries made from population records drawn with ``seed``, as
    ``crafting`` says (module)."""
    numeric = _numeric_features(train, label_column, features)
    if not numeric:
        raise InvalidInputError(
            "crafted canaries need a numeric feature column to push out of the data's "
            "distribution. Found none."
        )
    classes = np.asarray(pd.unique(train[label_column].dropna()), dtype=object)
    if len(classes) < 2:
        raise InvalidInputError(
            f"crafted canaries need two classes in --train's label column to flip a label. "
            f"Found {len(classes)}."
        )
    rng = np.random.default_rng(seed)
    sources = np.sort(rng.choice(len(population), size=count, replace=count > len(population)))
    frame = population.iloc[sources][list(train.columns)].reset_index(drop=True).copy()
    for name in numeric:
        pushed = _pushed_out(frame[name], train[name], rng, crafting)
        frame[name] = pd.Series(pushed, index=frame.index).astype(train[name].dtype)
    flipped = _flipped(frame[label_column], classes, rng)  # drawn either way: same values
    if crafting.flip_label:
        frame[label_column] = pd.Series(flipped, dtype=train[label_column].dtype)
    return CanaryRecords("crafted", frame, sources.astype(np.int64), 0)


def inclusion(count: int, seed: int) -> NDArray[np.bool_]:
    """Whether each of ``count`` canaries is in a run: independent fair coins from ``seed``."""
    return np.random.default_rng(seed).random(count) < 0.5
