"""The frozen result of one audit; ``to_dict()`` is the JSON contract."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from epsstar import __version__
from epsstar.audit.model.declared_privacy import DeclaredPrivacy
from epsstar.audit.model.output_reading import OutputReading
from epsstar.audit.output.attack_result import AttackResult
from epsstar.audit.output.premise_result import BlindBaseline
from epsstar.audit.output.provenance import Provenance
from epsstar.audit.output.slice_result import SliceResult
from epsstar.audit.output.text_result import TextAudit
from epsstar.audit.output.threat_result import AttributeInference, ExposedRecords, UserLevel
from epsstar.plumbing.json_types import JsonObject
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

__all__ = ["SCHEMA_VERSION", "AuditResult"]

#: Version of the JSON documents the CLI writes (``audit``, ``epsilon``, ``audit-many``,
#: the demo's ``results.json``), stated by the schemas in ``epsstar/schemas/``. It changes
#: when a key those schemas fix is added, removed or renamed, or changes meaning.
SCHEMA_VERSION = 6


@dataclass(frozen=True, slots=True)
class AuditResult:
    """Everything one audit established; ``to_dict()`` is the JSON contract.

    ``warnings`` holds one line per reason the inputs undermine the audit (see
    :mod:`epsstar.audit.data.checks`); ``output_reading`` says how the model's outputs
    were read (``None`` for an audit from losses alone).
    """

    epsilon: EpsilonStarResult
    empirical: EpsilonStarResult
    lower_bound: EpsilonLowerBound
    readings: Readings
    utility: dict[str, Utility]
    #: Where the result came from (``None``: an audit of losses computed elsewhere).
    provenance: Provenance | None
    max_epsilon: float | None = None
    train_losses: FloatArray = field(default_factory=lambda: np.empty(0), repr=False)
    population_losses: FloatArray = field(default_factory=lambda: np.empty(0), repr=False)
    warnings: tuple[str, ...] = ()
    #: One of ``warnings`` can hide a leak (shared rows, a single class, an ambiguous
    #: output reading), so a release gate fails whatever Epsilon* is.
    gate_blocked: bool = False
    output_reading: OutputReading | None = None
    #: What the gate compares with ``max_epsilon`` (``None``: Epsilon* itself).
    gate: GateStatistic | None = None
    #: With several attacks, each one's statistic at the gate's per-test level (the gate's
    #: is the largest), in the order of ``attacks``; empty with one attack.
    attack_gates: tuple[GateStatistic, ...] = ()
    #: Epsilon* from δ = 10/n down to the chosen δ (the last point is the headline).
    delta_profile: tuple[DeltaPoint, ...] = ()
    #: The DP guarantee the model file declares (``None``: it declares nothing).
    declared_privacy: DeclaredPrivacy | None = None
    #: One record per membership test audited (the loss attack, LiRA, RMIA), in order.
    attacks: tuple[AttackResult, ...] = ()
    #: Epsilon* per value of the ``--slice-by`` column (``None``: not sliced).
    slices: SliceResult | None = None
    #: The summaries of the sides too large to hold every loss, by side (``"train"``,
    #: ``"population"``); ``train_losses``/``population_losses`` then hold a random
    #: sample of that side's losses, for figures.
    summaries: dict[str, Losses] = field(default_factory=dict, repr=False)
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

    @property
    def premise_holds(self) -> bool | None:
        """Whether train and population cannot be told apart without the model (the blind
        baseline's lower bound is 0); None when the blind baseline did not run."""
        return None if self.blind_baseline is None else self.blind_baseline.premise_holds

    @property
    def files_read(self) -> tuple[tuple[str, str], ...]:
        """Every model file the audit read, as ``(what, path)`` (none for an audit of
        losses computed elsewhere); see :attr:`Provenance.files_read`."""
        return () if self.provenance is None else self.provenance.files_read

    @property
    def headline_attack(self) -> AttackResult | None:
        """The attack whose figures are the headline: the loss attack when it ran, else the
        first one asked for; None without any record."""
        attacks = self.attacks
        return next((a for a in attacks if a.name == "loss"), attacks[0] if attacks else None)

    @property
    def strongest_attack(self) -> AttackResult | None:
        """The attack with the largest held-out lower bound, then the largest Epsilon* (the
        first of equals); None without any.

        The lower bound ranks first: it is counted on records that played no part in
        choosing the test, so it holds whatever the shape of the scores' tails, while an
        attack's Epsilon* may rest on an extrapolated tail.
        """
        return max(
            self.attacks,
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
    def epsilon_star(self) -> float:
        return self.epsilon.epsilon

    @property
    def delta(self) -> float:
        return self.epsilon.delta

    @property
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

    def to_dict(self) -> JsonObject:
        headline = self.epsilon.to_dict()
        provenance = self.provenance
        return {
            "schema_version": SCHEMA_VERSION,
            # how the data reached the model, before any number that rests on it
            "columns_from": None if provenance is None else provenance.columns.source,
            "epsilon_star": self.epsilon.epsilon,
            "delta": self.epsilon.delta,
            "epsilon_lower_bound": self.lower_bound.epsilon,
            "passed": self.passed,
            "max_epsilon": self.max_epsilon,
            "gate": None if self.gate is None else self.gate.to_dict(),
            "n_train": self.epsilon.n_train,
            "n_population": self.epsilon.n_population,
            "fpr": headline["fpr"],
            "fnr": headline["fnr"],
            "threshold": headline["threshold"],
            "attained_by": headline["attained_by"],
            "method": headline["method"],
            "family": headline["family"],
            "poor_fit": headline["poor_fit"],
            "tail_extrapolated": headline["tail_extrapolated"],
            "unsupported_rates": headline["unsupported_rates"],
            "epsilon_star_by_delta": [point.to_dict() for point in self.delta_profile],
            "declared_privacy": None
            if self.declared_privacy is None
            else {
                **self.declared_privacy.to_dict(),
                "epsilon_star_above_it": self.above_declared_epsilon,
            },
            "epsilon_star_interval": headline["epsilon_star_interval"],
            "tail_fit": headline["tail_fit"],
            "plug_in_epsilon_star": headline["plug_in_epsilon_star"],
            "crossfit_scores": headline["crossfit_scores"],
            "note": headline["note"],
            "leak_p_value": headline["leak_p_value"],
            "untested_epsilon_star": headline["untested_epsilon_star"],
            "fit": headline["fit"],
            "transform": headline["transform"],
            "empirical_epsilon_star": self.empirical.epsilon,
            "empirical": {**self.empirical.to_dict(), "epsstar_version": __version__},
            "lower_bound": self.lower_bound.to_dict(),
            "readings": self.readings.to_dict(),
            "utility": {side: utility.to_dict() for side, utility in self.utility.items()},
            "loader": None if provenance is None else provenance.loader.to_dict(),
            "model_sha256": None if provenance is None else provenance.model_sha256,
            "provenance": {} if provenance is None else provenance.to_dict(),
            "warnings": list(self.warnings),
            "output_reading": None
            if self.output_reading is None
            else self.output_reading.to_dict(),
            "attacks": [attack.to_dict() for attack in self.attacks],
            "strongest_attack": None
            if self.strongest_attack is None
            else self.strongest_attack.name,
            "slices": None if self.slices is None else self.slices.to_dict(),
            "blind_baseline": None
            if self.blind_baseline is None
            else self.blind_baseline.to_dict(),
            "premise_holds": self.premise_holds,
            "exposed_records": None
            if self.exposed_records is None
            else self.exposed_records.to_dict(),
            "user_level": None if self.user_level is None else self.user_level.to_dict(),
            "attribute_inference": None
            if self.attribute_inference is None
            else self.attribute_inference.to_dict(),
            "epsstar_version": __version__,
            # null but in the audit of a language model on text records
            "text": None if self.text is None else self.text.to_dict(),
        }
