"""The frozen result of one audit; its JSON, read from its fields, is the contract."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from epsstar import __version__
from epsstar.audit.model.declared_privacy import DeclaredPrivacy
from epsstar.audit.model.output_reading import OutputReading
from epsstar.audit.model.plugins import LoaderInfo
from epsstar.audit.output.attack_result import AttackResult
from epsstar.audit.output.premise_result import BlindBaseline
from epsstar.audit.output.provenance import Provenance
from epsstar.audit.output.slice_result import SliceResult
from epsstar.audit.output.text_result import TextAudit
from epsstar.audit.output.threat_result import AttributeInference, ExposedRecords, UserLevel
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.plumbing.records.json_types import JsonObject, JsonValue
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.bounds.gate import GateStatistic
from epsstar.statistics.estimators.curves import TradeoffCurve, empirical_curve, parametric_curve
from epsstar.statistics.estimators.delta_profile import DeltaPoint
from epsstar.statistics.fitting import LossDistribution
from epsstar.statistics.readings.readings import Readings
from epsstar.statistics.results import EpsilonStarResult
from epsstar.statistics.summaries.protocols import Losses
from epsstar.statistics.utility import Utility

__all__ = [
    "SCHEMA_VERSION",
    "AuditResult",
    "DeclaredAgainst",
    "EpsilonDocument",
    "StampedEstimate",
]

#: Version of the JSON documents the CLI writes (``audit``, ``epsilon``, ``audit-many``,
#: the demo's ``results.json``), stated by the schemas in ``epsstar/schemas/``. It changes
#: when a key those schemas fix is added, removed or renamed, or changes meaning.
SCHEMA_VERSION = 6


@dataclass(frozen=True, slots=True)
class StampedEstimate(JsonRecord):
    """An Epsilon* estimate as a document holds it: its JSON, then the ``epsstar_version``
    that wrote it (the statistics do not know it)."""

    estimate: EpsilonStarResult = field(metadata=json_rule(flatten=True))
    epsstar_version: str = __version__


@dataclass(frozen=True, slots=True)
class EpsilonDocument(StampedEstimate):
    """The ``--json`` document of ``epsstar epsilon``: the stamped estimate under the
    version of the schemas."""

    json_constants: ClassVar[Mapping[str, JsonValue]] = {"schema_version": SCHEMA_VERSION}


@dataclass(frozen=True, slots=True)
class DeclaredAgainst(JsonRecord):
    """The DP guarantee a model file declares, and whether Epsilon* lies above its ε at a δ
    it covers (:attr:`AuditResult.above_declared_epsilon`)."""

    declared: DeclaredPrivacy = field(metadata=json_rule(flatten=True))
    epsilon_star_above_it: bool


def _headline(key: str, *, after: str) -> Any:
    """The value under ``key`` of the headline estimate's JSON, which the audit's JSON
    repeats at its top level after the field ``after``."""

    def read(result: AuditResult) -> JsonValue:
        return result.epsilon.to_dict()[key]

    read.__doc__ = f"The headline estimate's ``{key}``."
    return json_property(name=key, after=after)(read)


_SKIP = json_rule(skip=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditResult(JsonRecord):
    """Everything one audit established; ``to_dict()`` is the JSON contract.

    ``warnings`` holds one line per reason the inputs undermine the audit (see
    :mod:`epsstar.audit.data.checks`); ``output_reading`` says how the model's outputs
    were read (``None`` for an audit from losses alone).

    The fields are declared in the order of the JSON, each value the JSON repeats from a
    field's record written after that field; the fields the JSON does not hold come last.
    """

    json_constants: ClassVar[Mapping[str, JsonValue]] = {"schema_version": SCHEMA_VERSION}

    epsilon: EpsilonStarResult = field(metadata=_SKIP)
    max_epsilon: float | None = None
    #: What the gate compares with ``max_epsilon`` (``None``: Epsilon* itself).
    gate: GateStatistic | None = None
    #: Epsilon* from δ = 10/n down to the chosen δ (the last point is the headline).
    delta_profile: tuple[DeltaPoint, ...] = field(
        default=(), metadata=json_rule(name="epsilon_star_by_delta")
    )
    #: The DP guarantee the model file declares (``None``: it declares nothing).
    declared_privacy: DeclaredPrivacy | None = field(default=None, metadata=_SKIP)
    empirical: EpsilonStarResult = field(metadata=_SKIP)
    lower_bound: EpsilonLowerBound
    readings: Readings
    utility: dict[str, Utility]
    #: Where the result came from (``None``: an audit of losses computed elsewhere).
    provenance: Provenance | None = field(metadata=_SKIP)
    warnings: tuple[str, ...] = ()
    output_reading: OutputReading | None = None
    #: One record per membership test audited (the loss attack, LiRA, RMIA), in order.
    attacks: tuple[AttackResult, ...] = ()
    #: Epsilon* per value of the ``--slice-by`` column (``None``: not sliced).
    slices: SliceResult | None = None
    #: The blind baseline (``None``: an audit of losses computed elsewhere, with no records).
    blind_baseline: BlindBaseline | None = None
    #: The training records with the strongest membership evidence (``None``: not asked for).
    exposed_records: ExposedRecords | None = None
    #: User-level Epsilon* (``--group-by``; ``None``: not asked for).
    user_level: UserLevel | None = None
    #: Attribute inference (``--attribute``; ``None``: not asked for).
    attribute_inference: AttributeInference | None = None
    #: What is particular to the audit of a language model on text records (``None``: a
    #: tabular audit).
    text: TextAudit | None = None

    train_losses: FloatArray = field(
        default_factory=lambda: np.empty(0), repr=False, metadata=_SKIP
    )
    population_losses: FloatArray = field(
        default_factory=lambda: np.empty(0), repr=False, metadata=_SKIP
    )
    #: One of ``warnings`` can hide a leak (shared rows, a single class, an ambiguous
    #: output reading), so a release gate fails whatever Epsilon* is.
    gate_blocked: bool = field(default=False, metadata=_SKIP)
    #: With several attacks, each one's statistic at the gate's per-test level (the gate's
    #: is the largest), in the order of ``attacks``; empty with one attack.
    attack_gates: tuple[GateStatistic, ...] = field(default=(), metadata=_SKIP)
    #: The summaries of the sides too large to hold every loss, by side (``"train"``,
    #: ``"population"``); ``train_losses``/``population_losses`` then hold a random
    #: sample of that side's losses, for figures.
    summaries: dict[str, Losses] = field(default_factory=dict, repr=False, metadata=_SKIP)

    # -- what the JSON repeats of the headline estimate, in the JSON's order --------------

    @json_property(after="epsilon")
    def columns_from(self) -> str | None:
        """How the data reached the model, before any number that rests on it."""
        return None if self.provenance is None else self.provenance.columns.source

    @json_property(after="epsilon")
    def epsilon_star(self) -> float:
        return self.epsilon.epsilon

    @json_property(after="epsilon")
    def delta(self) -> float:
        return self.epsilon.delta

    @json_property(after="epsilon")
    def epsilon_lower_bound(self) -> float:
        return self.lower_bound.epsilon

    @json_property(after="epsilon")
    def passed(self) -> bool | None:
        """The gate's statistic within the limit and no warning that can hide a leak;
        None without a gate.

        The statistic depends on the gate's rule (:mod:`epsstar.statistics.bounds.gate`). A gate
        fails closed: an audit whose data or output reading drew such a warning
        (``gate_blocked``) cannot show that the model is within the limit.
        """
        if self.max_epsilon is None:
            return None
        return not self.gate_blocked and self.gate_value <= self.max_epsilon

    _n_train = _headline("n_train", after="gate")
    _n_population = _headline("n_population", after="gate")
    _fpr = _headline("fpr", after="gate")
    _fnr = _headline("fnr", after="gate")
    _threshold = _headline("threshold", after="gate")
    _attained_by = _headline("attained_by", after="gate")
    _method = _headline("method", after="gate")
    _family = _headline("family", after="gate")
    _poor_fit = _headline("poor_fit", after="gate")
    _tail_extrapolated = _headline("tail_extrapolated", after="gate")
    _unsupported_rates = _headline("unsupported_rates", after="gate")

    @json_property(name="declared_privacy", after="declared_privacy")
    def declared_against(self) -> DeclaredAgainst | None:
        """The declared guarantee beside whether Epsilon* lies above it."""
        if self.declared_privacy is None:
            return None
        return DeclaredAgainst(self.declared_privacy, self.above_declared_epsilon)

    _epsilon_star_interval = _headline("epsilon_star_interval", after="declared_privacy")
    _tail_fit = _headline("tail_fit", after="declared_privacy")
    _plug_in_epsilon_star = _headline("plug_in_epsilon_star", after="declared_privacy")
    _crossfit_scores = _headline("crossfit_scores", after="declared_privacy")
    _note = _headline("note", after="declared_privacy")
    _leak_p_value = _headline("leak_p_value", after="declared_privacy")
    _untested_epsilon_star = _headline("untested_epsilon_star", after="declared_privacy")
    _fit = _headline("fit", after="declared_privacy")
    _transform = _headline("transform", after="declared_privacy")

    @json_property(after="declared_privacy")
    def empirical_epsilon_star(self) -> float:
        return self.empirical.epsilon

    @json_property(name="empirical", after="empirical")
    def empirical_stamped(self) -> StampedEstimate:
        return StampedEstimate(self.empirical)

    # -- what the JSON repeats of the provenance, then the rest ------------------------

    @json_property(after="provenance")
    def loader(self) -> LoaderInfo | None:
        return None if self.provenance is None else self.provenance.loader

    @json_property(after="provenance")
    def model_sha256(self) -> str | None:
        return None if self.provenance is None else self.provenance.model_sha256

    @json_property(name="provenance", after="provenance")
    def provenance_written(self) -> Provenance | JsonObject:
        """The provenance (an empty object for an audit of losses computed elsewhere)."""
        return {} if self.provenance is None else self.provenance

    @json_property(name="strongest_attack", after="attacks")
    def strongest_attack_name(self) -> str | None:
        strongest = self.strongest_attack
        return None if strongest is None else strongest.name

    @json_property(after="blind_baseline")
    def premise_holds(self) -> bool | None:
        """Whether train and population cannot be told apart without the model (the blind
        baseline's lower bound is 0); None when the blind baseline did not run."""
        return None if self.blind_baseline is None else self.blind_baseline.premise_holds

    @json_property(after="attribute_inference")
    def epsstar_version(self) -> str:
        return __version__

    @property
    def files_read(self) -> tuple[tuple[str, str], ...]:
        """Every model file the audit read, as ``(what, path)`` (none for an audit of
        losses computed elsewhere); see :attr:`Provenance.files_read`."""
        return () if self.provenance is None else self.provenance.files_read

    @property
    def headline_attack(self) -> AttackResult | None:
        """The attack whose figures are the headline: the loss attack when it ran, else the
        first informative one asked for; None without any."""
        attacks = [a for a in self.attacks if a.informative]
        return next((a for a in attacks if a.name == "loss"), attacks[0] if attacks else None)

    @property
    def strongest_attack(self) -> AttackResult | None:
        """The informative attack with the largest held-out lower bound, then the largest
        Epsilon* (the first of equals); None without any.

        The lower bound ranks first: it is counted on records that played no part in
        choosing the test, so it holds whatever the shape of the scores' tails, while an
        attack's Epsilon* may rest on an extrapolated tail.
        """
        return max(
            (attack for attack in self.attacks if attack.informative),
            key=lambda attack: (attack.lower_bound.epsilon, attack.epsilon.epsilon),
            default=None,
        )

    @property
    def above_declared_epsilon(self) -> bool:
        """Epsilon* exceeds the ε of a declared (ε, δ)-DP guarantee at a δ it covers.

        An (ε, δ)-DP model has a true Epsilon* ≤ ε at every δ' ≥ δ, so such an estimate
        is estimation error (sampling noise or tail extrapolation), not a finding.
        """
        declared = self.declared_privacy
        if declared is None or not declared.private or declared.epsilon is None:
            return False
        covered = declared.delta is None or self.delta >= declared.delta
        return covered and self.epsilon.epsilon > declared.epsilon

    @property
    def gate_value(self) -> float:
        """The value the gate compares with its limit."""
        return self.epsilon.epsilon if self.gate is None else self.gate.value

    def curves(self) -> dict[str, TradeoffCurve]:
        """FNR/FPR trade-off of the loss-threshold test: ``"empirical"`` and ``"fitted"``.

        Thresholds are in loss units (records with loss ≤ threshold are called members).
        """
        result = {"empirical": empirical_curve(self.train_losses, self.population_losses)}
        if self.epsilon.transform is not None and self.epsilon.fits:
            result["fitted"] = parametric_curve(
                LossDistribution(self.epsilon.fits["train"].fit, self.epsilon.transform),
                LossDistribution(self.epsilon.fits["population"].fit, self.epsilon.transform),
            )
        return result
