"""What an audit reads beyond membership of records: the blind baseline (on unless a reason
to skip it is given), user-level Epsilon* (``group_by``), attribute inference
(``attribute``) and the most exposed records (``top_records``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from epsstar.audit.premise.classifier import DEFAULT_FOLDS
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.constraints import (
    ColumnName,
    Maybe,
    WholeNumber,
    check_fields,
    constraint,
)

__all__ = ["DEFAULT_PREMISE", "DEFAULT_TOP_RECORDS", "PremiseSettings"]

#: Records listed by default as the most exposed.
DEFAULT_TOP_RECORDS = 20


@dataclass(frozen=True, slots=True)
class PremiseSettings:
    """Checked when built. ``skip_blind_baseline`` is the reason the blind baseline is not
    run (``None``: it runs, cross-fitted over ``folds`` folds); ``group_by`` names the
    column that identifies a user; ``attribute`` the column an attacker tries to infer;
    ``top_records`` how many training records to list as the most exposed (0: none)."""

    skip_blind_baseline: str | None = None
    folds: int = field(default=DEFAULT_FOLDS, metadata=constraint(WholeNumber(minimum=2)))
    group_by: str | None = field(default=None, metadata=constraint(Maybe(ColumnName())))
    attribute: str | None = field(default=None, metadata=constraint(Maybe(ColumnName())))
    top_records: int = field(
        default=DEFAULT_TOP_RECORDS, metadata=constraint(WholeNumber(minimum=0))
    )

    def __post_init__(self) -> None:
        if self.skip_blind_baseline is not None and not str(self.skip_blind_baseline).strip():
            raise InvalidInputError(
                f"skipping the blind baseline needs a reason. Found {self.skip_blind_baseline!r}."
            )
        check_fields(self)

    @property
    def blind(self) -> bool:
        """Whether the blind baseline runs."""
        return self.skip_blind_baseline is None


#: The default: the blind baseline and the 20 most exposed records.
DEFAULT_PREMISE = PremiseSettings()
