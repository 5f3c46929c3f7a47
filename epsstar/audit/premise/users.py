"""User-level Epsilon* (``--group-by COLUMN``): is this *person*, with all their records, in
the training data?

:func:`read_user_keys` reads the column from both tables before any model runs: every
user's records must all be training records or all population records (a user on both
sides is refused, naming them), and each side needs as many users as the estimator needs
records. :func:`user_level` aggregates the per-record scores of the audit's headline attack
per user (:mod:`epsstar.statistics.readings.user_level`: the mean score, and the sum of the
records' cross-fitted log-likelihood ratios) and audits each aggregate like losses, users
being the records: Epsilon*, its held-out lower bound and the AUC.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.attacks.from_losses import audit_losses, minimum_records
from epsstar.audit.attacks.prefixed_warnings import prefixed_warnings
from epsstar.audit.data.tables.columns import iter_column
from epsstar.audit.data.tables.values import refuse_nested
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.result import AuditResult
from epsstar.audit.output.threat_result import UserAggregate, UserLevel
from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.statistics.attacks.power import attack_auc
from epsstar.statistics.names import Method
from epsstar.statistics.readings.user_level import user_scores

__all__ = ["UserKeys", "read_user_keys", "user_level"]


@dataclass(frozen=True, slots=True)
class UserKeys:
    """Each record's user, as codes ``0 … u - 1`` per side."""

    column: str
    train: NDArray[np.int64] = field(repr=False)
    population: NDArray[np.int64] = field(repr=False)

    @property
    def users(self) -> tuple[int, int]:
        return int(self.train.max()) + 1, int(self.population.max()) + 1


def _texts(path: Path, column: str, separator: str) -> NDArray[np.object_]:
    """Every value of ``column`` as text; a missing value is refused."""
    import pandas as pd

    parts = []
    row0 = 0
    for chunk in iter_column(path, column, separator=separator):
        values = np.asarray(chunk)
        refuse_nested(path, f"group_by column {column!r}", values, row0)
        missing = pd.isna(values)
        if np.any(missing):
            row = row0 + int(np.argmax(missing))
            raise InvalidInputError(
                f"{path}: group_by column {column!r} must name a user on every row. Found a "
                f"missing value on row {row}."
            )
        parts.append(np.array([str(v) for v in values], dtype=object))
        row0 += len(values)
    return np.concatenate(parts) if parts else np.empty(0, dtype=object)


def read_user_keys(
    train: Path, population: Path, column: str, method: Method, *, separator: str = ","
) -> UserKeys:
    """The users of both tables (see the module docstring); ``separator`` separates the
    fields of CSV files."""
    import pandas as pd

    texts = _texts(train, column, separator), _texts(population, column, separator)
    shared = np.intersect1d(texts[0], texts[1])
    if shared.size:
        raise InvalidInputError(
            f"group_by column {column!r}: a user's records must all be training records or "
            f"all population records; {shared.size} user(s) have both, such as "
            f"{shared[0]!r}. Found {shared[0]!r} in both."
        )
    codes = tuple(pd.factorize(side)[0].astype(np.int64) for side in texts)
    keys = UserKeys(column, codes[0], codes[1])
    fewest = minimum_records(method)
    for role, count in zip(("training", "population"), keys.users, strict=True):
        if count < fewest:
            raise InsufficientDataError(
                f"group_by column {column!r}: the {role} data need at least {fewest} users "
                f"for the {method} estimate over users. Found {count}."
            )
    return keys


def user_level(result: AuditResult, keys: UserKeys, options: AuditOptions) -> UserLevel:
    """Epsilon* over users of the headline attack's scores (see the module docstring)."""
    headline = result.headline_attack
    attack = "loss" if headline is None else headline.name
    members, others = result.train_losses, result.population_losses
    if members.size != keys.train.size or others.size != keys.population.size:
        raise InvalidInputError(
            f"group_by needs a score for every record; the {attack} attack scored "
            f"{members.size} of {keys.train.size} training and {others.size} of "
            f"{keys.population.size} population records. Found a partial scoring."
        )
    plain = dataclasses.replace(options, max_epsilon=None)
    aggregates = []
    for scores in user_scores(members, keys.train, others, keys.population, seed=options.seed):
        with prefixed_warnings(f"the user-level {scores.aggregate} scores: "):
            audited = audit_losses(scores.members, scores.nonmembers, utility={}, options=plain)
        aggregates.append(
            UserAggregate(
                scores.aggregate,
                audited.epsilon,
                audited.lower_bound,
                attack_auc(scores.members, scores.nonmembers),
            )
        )
    counts = np.concatenate([np.bincount(keys.train), np.bincount(keys.population)])
    return UserLevel(
        column=keys.column,
        attack=attack,
        users=keys.users,
        records_per_user=(int(counts.min()), float(np.median(counts)), int(counts.max())),
        aggregates=tuple(aggregates),
    )
