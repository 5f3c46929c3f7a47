"""What an audit reads beyond membership of records: the blind baseline (on unless a reason
to skip it is given), user-level Epsilon* (``group_by``), attribute inference
(``attribute``) and the most exposed records (``top_records``)."""

from __future__ import annotations

from dataclasses import dataclass

from epsstar.audit.premise.classifier import DEFAULT_FOLDS
from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import check_positive_int

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
    folds: int = DEFAULT_FOLDS
    group_by: str | None = None
    attribute: str | None = None
    top_records: int = DEFAULT_TOP_RECORDS

    def __post_init__(self) -> None:
        if self.skip_blind_baseline is not None and not str(self.skip_blind_baseline).strip():
            raise InvalidInputError(
                f"skipping the blind baseline needs a reason. Found {self.skip_blind_baseline!r}."
            )
        check_positive_int("folds", self.folds, minimum=2)
        for option, column in (("group_by", self.group_by), ("attribute", self.attribute)):
            if column is not None and (not isinstance(column, str) or not column):
                raise InvalidInputError(f"{option} must name a column. Found {column!r}.")
        if isinstance(self.top_records, bool) or not isinstance(self.top_records, int):
            raise InvalidInputError(
                f"top_records must be a whole number ≥ 0. Found {self.top_records!r}."
            )
        if self.top_records < 0:
            raise InvalidInputError(f"top_records must be ≥ 0. Found {self.top_records}.")

    @property
    def blind(self) -> bool:
        """Whether the blind baseline runs."""
        return self.skip_blind_baseline is None


#: The default: the blind baseline and the 20 most exposed records.
DEFAULT_PREMISE = PremiseSettings()
