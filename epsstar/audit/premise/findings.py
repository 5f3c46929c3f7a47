"""The premise's readings of one audit, added to its result: the blind baseline, the most
exposed records, user-level Epsilon* and attribute inference.

:func:`premise_keys` reads what must be checked before any model runs (the ``group_by``
column's users, the ``attribute`` column's values); :func:`with_premise` adds the records of
:mod:`.baseline`, :mod:`.users`, :mod:`.attribute` and the most exposed records
(:mod:`epsstar.statistics.readings.exposure`) to a result whose attacks are audited.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from epsstar.audit.data.reading import TableRead, Tables
from epsstar.audit.data.records import LABEL, Records
from epsstar.audit.data.tables.labels import LabelMap
from epsstar.audit.model.plugins import LoadedModel
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.premise_result import BlindBaseline
from epsstar.audit.output.result import AuditResult
from epsstar.audit.output.threat_result import ExposedRecords, ExposedRow
from epsstar.audit.premise.attribute import (
    AttributeValues,
    attribute_inference,
    read_attribute_values,
)
from epsstar.audit.premise.baseline import Labels, blind_baseline
from epsstar.audit.premise.classifier import BlindLogOdds
from epsstar.audit.premise.settings import PremiseSettings
from epsstar.audit.premise.users import UserKeys, read_user_keys, user_level
from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.names import Method
from epsstar.statistics.readings.attribute import AttributeSecurity, attribute_security_from_dp
from epsstar.statistics.readings.exposure import most_exposed

__all__ = ["PremiseInputs", "PremiseKeys", "premise_keys", "with_premise"]


@dataclass(frozen=True, slots=True)
class PremiseKeys:
    """What was read before any model ran: the users and the attribute's values (``None``:
    not asked for)."""

    users: UserKeys | None = None
    attribute: AttributeValues | None = None


@dataclass(frozen=True, slots=True)
class PremiseInputs:
    """What the premise's readings take from an audit: the settings, why the blind baseline
    was skipped (``None``: it ran), the records, the blind classifier's log-odds, every
    record's loss (``None`` for summarised tables), the keys read first, and the target
    model with the read of its training table and its label map."""

    settings: PremiseSettings
    skipped: str | None
    records: Records | None = field(repr=False)
    blind: BlindLogOdds | None = field(repr=False)
    losses: tuple[FloatArray, FloatArray] | None = field(repr=False)
    keys: PremiseKeys
    model: tuple[LoadedModel, TableRead, LabelMap] = field(repr=False)
    #: The bound ``epsstar train --attribute`` declared for the model (``None``: none).
    attribute_bound: AttributeSecurity | None = None


def premise_keys(
    settings: PremiseSettings, tables: Tables, *, on_dask: bool, method: Method
) -> PremiseKeys:
    """The users of ``group_by`` and the values of ``attribute``, read and checked now."""
    asked = [
        option
        for option, value in (("group_by", settings.group_by), ("attribute", settings.attribute))
        if value is not None
    ]
    if asked and on_dask:
        raise InvalidInputError(
            f"{asked[0]} works with the single-process engine only. Found {asked[0]} with the "
            f"dask engine."
        )
    train, population = tables.path("train"), tables.path("population")
    users = None
    if settings.group_by is not None:
        users = read_user_keys(
            train, population, settings.group_by, method, separator=tables.csv_separator
        )
    attribute = None
    if settings.attribute is not None:
        attribute = read_attribute_values(
            train, population, settings.attribute, separator=tables.csv_separator
        )
    return PremiseKeys(users, attribute)


def _exposed(result: AuditResult, k: int) -> ExposedRecords:
    """The ``k`` training records with the strongest evidence under the headline attack."""
    headline = result.headline_attack
    attack = "loss" if headline is None else headline.name
    if "train" in result.summaries:
        return ExposedRecords(
            attack, (), None, "the training losses were summarised (too many rows to keep)"
        )
    found, source = most_exposed(result.train_losses, result.population_losses, k)
    rows = tuple(ExposedRow(r.index, r.score, r.log_likelihood_ratio) for r in found)
    return ExposedRecords(attack, rows, source)


def _labels(records: Records | None) -> Labels:
    """The labels of the records the blind classifier scored (``None``: none read)."""
    if records is None:
        return None
    return records.train[LABEL].to_numpy(), records.population[LABEL].to_numpy()


def _declared_bound(result: AuditResult) -> AttributeSecurity | None:
    """The attribute bound of the DP guarantee the model declares (``None``: none)."""
    declared = result.declared_privacy
    if declared is None or not declared.private or declared.epsilon is None:
        return None
    return attribute_security_from_dp(declared.epsilon, declared.delta or 0.0)


def with_premise(result: AuditResult, inputs: PremiseInputs, options: AuditOptions) -> AuditResult:
    """``result`` with the premise's readings (see the module docstring)."""
    settings = inputs.settings
    if inputs.blind is not None:
        baseline = blind_baseline(
            inputs.blind, options, delta=result.delta, labels=_labels(inputs.records)
        )
    else:
        baseline = BlindBaseline.skipped_because(inputs.skipped or "the records were not read")
    found = dataclasses.replace(result, blind_baseline=baseline)
    if settings.top_records > 0:
        found = dataclasses.replace(found, exposed_records=_exposed(found, settings.top_records))
    keys = inputs.keys
    if keys.users is not None:
        found = dataclasses.replace(found, user_level=user_level(found, keys.users, options))
    if keys.attribute is not None and inputs.records is not None:
        inferred = attribute_inference(
            inputs.records,
            keys.attribute,
            inputs.model,
            delta=found.delta,
            confidence=options.confidence,
            bound=inputs.attribute_bound or _declared_bound(found),
        )
        found = dataclasses.replace(found, attribute_inference=inferred)
    return found
