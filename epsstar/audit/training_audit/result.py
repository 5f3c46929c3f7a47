"""What an audit of a training procedure found: per threat model, the canaries' scores, the
guesses, the bounds; the claim; the verdict.

A claim (ε, δ)-DP is *refuted* when a threat model's deciding lower bound exceeds ε: the
(ε, δ) bound of Steinke et al. 2023 (one run) or the Clopper–Pearson bound of Nasr et al.
(many runs) by default — these hold for every trainer; with ``bound="gdp"`` the μ-GDP bound of
Mahloujifar et al. 2024 (one run) or of Nasr et al. 2023, "Tight Auditing of Differentially
Private Machine Learning" (many runs), which holds only for trainers whose trade-off curve is
Gaussian (``docs/training-audit.md``). With K threat models each bound is taken at confidence
1 − (1 − c)/K, so that a trainer that keeps its claim is refuted by any of them with probability
at most 1 − c (Bonferroni).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Final, Literal

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.files import FileDigest
from epsstar.audit.output.result import SCHEMA_VERSION
from epsstar.audit.training_audit.procedure import Claim
from epsstar.audit.training_audit.runs import Arm
from epsstar.audit.training_audit.text.designs import TextCanaryRecord
from epsstar.audit.training_audit.threat_models import ThreatModel
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.plumbing.records.json_types import JsonObject, JsonValue
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.auditing.feasibility import (
    PROJECTED_LARGEST,
    CanaryProjection,
    ManyRunMethod,
)
from epsstar.statistics.auditing.group_privacy import GroupClaim
from epsstar.statistics.auditing.identifiability import IdentifiabilityReading
from epsstar.statistics.auditing.many_runs.bounds import ManyRunBounds
from epsstar.statistics.auditing.one_run.bounds import OneRunBounds, OneRunMethod
from epsstar.statistics.auditing.one_run.choose_k import ChosenK
from epsstar.statistics.auditing.one_run.guess_rules import RuleBounds
from epsstar.statistics.names import TRAINING_BOUNDS, BoundName

__all__ = [
    "BOUNDS",
    "Bound",
    "BoundName",
    "RunRecord",
    "ThreatModelAudit",
    "TightnessRow",
    "TrainingAuditResult",
]


@dataclass(frozen=True, slots=True)
class Bound:
    """One bound that may decide a refutation: the methods it names for one run and for many,
    and whether it reads the μ-GDP figures (which hold only for a Gaussian trade-off curve)."""

    one_run: OneRunMethod
    many_runs: ManyRunMethod
    gaussian: bool


#: The bounds of :data:`~epsstar.statistics.names.TRAINING_BOUNDS`, by name.
BOUNDS: Final[dict[BoundName, Bound]] = {
    "epsilon-delta": Bound("steinke2023_epsilon_delta", "clopper_pearson", gaussian=False),
    "gdp": Bound("mahloujifar2024_gdp", "gdp_clopper_pearson", gaussian=True),
}


#: How the JSON writes a canary's one-run guess (+1, −1, 0: no guess).
_GUESS_WORDS: Final[dict[int, JsonValue]] = {1: "in", -1: "out", 0: None}
_SKIP = json_rule(skip=True)


@dataclass(frozen=True, slots=True)
class ThreatModelAudit(JsonRecord):
    """One threat model's audit: the canaries' ``scores`` (one per canary, or per run with many
    runs) and whether each was ``included``; the one-run guesses (+1 "in", −1 "out", 0 no
    guess) with the k chosen and the bounds, or the many-run bounds; the DI readings (``di``
    only); the deciding ``method``, its ``epsilon_lower_bound`` and whether it ``refutes``.
    Its JSON is the record of ``threat_models``."""

    threat_model: ThreatModel
    canaries: int
    method: str
    epsilon_lower_bound: float
    epsilon_lower_gdp: float | None
    refutes: bool
    chosen_k: ChosenK | None = None
    one_run: OneRunBounds | None = None
    many_runs: ManyRunBounds | None = None
    identifiability: IdentifiabilityReading | None = None
    scores: FloatArray = field(kw_only=True, repr=False)
    included: NDArray[np.bool_] = field(kw_only=True, repr=False)
    guesses: NDArray[np.int8] | None = field(default=None, repr=False, metadata=_SKIP)
    guess_rule: RuleBounds | None = None
    canaries_to_refute: CanaryProjection | None = None
    #: With repeated canaries, the per-record ε the deciding bound of the group implies.
    per_record_epsilon: float | None = None

    @json_property(name="guesses", after="guesses")
    def guess_words(self) -> tuple[JsonValue, ...] | None:
        """Each canary's guess as the JSON writes it: ``in``, ``out`` or ``null``."""
        if self.guesses is None:
            return None
        return tuple(_GUESS_WORDS[int(guess)] for guess in self.guesses)


def _what_would_refute(audit: ThreatModelAudit) -> str:
    """What a larger one-run audit would need, from the precision of this one's guesses."""
    projection = audit.canaries_to_refute
    if projection is None:
        return ""
    seen = (
        f" Its guesses were right at a rate of {projection.precision:.3f} "
        f"({projection.share_guessed:.0%} of {audit.canaries:,} canaries guessed)"
    )
    if projection.canaries is None and projection.canaries_at_zero_delta is not None:
        delta = "" if audit.one_run is None else f" ({audit.one_run.delta:.3g})"
        return (
            f"{seen}: no audit of up to {PROJECTED_LARGEST:,} canaries guessed as well would "
            f"refute the claim, because of its delta{delta}: the delta "
            "term of the one-run bound grows with the canaries (with delta = 0, about "
            f"{projection.canaries_at_zero_delta:,} would)."
        )
    if projection.canaries is None:
        return (
            f"{seen}: no audit of up to {PROJECTED_LARGEST:,} canaries guessed as well would "
            "refute the claim; a guessing rule that follows how it leaks (--guesses), a threat "
            "model that sees more, or canaries the trainer remembers better would be needed."
        )
    return (
        f"{seen}: about {projection.canaries:,} canaries guessed as well would refute the "
        "claim (a projection from this run's guesses, not a bound)."
    )


@dataclass(frozen=True, slots=True)
class TightnessRow(JsonRecord):
    """A threat model's measured lower bounds beside the claimed (accountant's) ε."""

    threat_model: str
    claimed_epsilon: float
    epsilon_lower_bound: float
    epsilon_lower_gdp: float | None
    ratio: float | None


@dataclass(frozen=True, slots=True)
class RunRecord(JsonRecord):
    """One training run: its seed, arm, seconds, model and claim."""

    index: int
    seed: int
    arm: Arm
    seconds: float
    model: JsonObject
    claim: Claim | None


@dataclass(frozen=True, slots=True)
class TrainingAuditResult(JsonRecord):
    """The whole audit (see the module). ``claimed_from`` and ``delta_from`` say where the claim
    came from; ``confidence_each`` is each threat model's share of the confidence; ``seeds``
    are every seed the audit drew from ``seed``, so that it can be repeated. Its JSON is the
    ``--json`` document of ``epsstar audit-training`` (the fields in its order)."""

    json_constants: ClassVar[Mapping[str, JsonValue]] = {
        "schema_version": SCHEMA_VERSION,
        "command": "audit-training",
    }

    epsstar_version: str
    procedure: JsonObject
    design: Literal["one-run", "many-runs"]
    claimed_epsilon: float
    claimed_from: str
    delta: float
    delta_from: str
    confidence: float
    confidence_each: float
    bound: BoundName
    canaries: int
    runs: int
    threat_models: tuple[ThreatModelAudit, ...]
    smallest_canaries: JsonObject
    canaries_left_out: int
    seed: int
    seeds: JsonObject
    data: tuple[FileDigest, ...]
    run_records: tuple[RunRecord, ...] = field(metadata=json_rule(name="training_runs"))
    warnings: tuple[str, ...]
    seconds: float
    #: Copies of each included canary in a run's table (``--canary-repeats``).
    canary_repeats: int = 1
    #: Rows of ``--train`` each run trained on (``--train-records``); ``None``: all.
    train_records: int | None = None
    #: The claim as the group of a canary's copies sees it, which the bounds were compared
    #: with (``None``: one copy each, the claim itself).
    group_claim: GroupClaim | None = None
    #: The text canaries of a language model's audit (``None``: a table's canaries).
    text_canaries: TextCanaryRecord | None = None

    def group_words(self, audit: ThreatModelAudit) -> str:
        """With repeated canaries, what ``audit``'s bound is compared with and what it says of
        one record, and why the two differ; else nothing."""
        group = self.group_claim
        if group is None or audit.per_record_epsilon is None:
            return ""
        tested = group.tested_epsilon(BOUNDS[self.bound].gaussian)
        return (
            f" (a bound for a group of {group.repeats} copies of each canary, compared with "
            f"the group's epsilon {tested:.4g} at delta {group.group_delta:.3g} that the "
            f"per-record claim implies by group privacy; per record it says epsilon >= "
            f"{audit.per_record_epsilon:.4g})"
        )

    @json_property(after="bound")
    def method(self) -> str:
        """The deciding bound's method name."""
        bound = BOUNDS[self.bound]
        return bound.one_run if self.design == "one-run" else bound.many_runs

    @json_property(after="runs")
    def epsilon_lower_bound(self) -> float:
        """The largest deciding bound over the threat models."""
        return max(audit.epsilon_lower_bound for audit in self.threat_models)

    @json_property(after="runs")
    def refuted(self) -> bool:
        """Whether some threat model's deciding bound exceeds the claimed ε."""
        return any(audit.refutes for audit in self.threat_models)

    @json_property(after="runs")
    def verdict(self) -> str:
        """The verdict in one sentence."""
        strongest = max(self.threat_models, key=lambda audit: audit.epsilon_lower_bound)
        if self.refuted:
            return (
                f"Refuted: this training procedure cannot be ({self.claimed_epsilon:g}, "
                f"{self.delta:.3g})-DP at {self.confidence:.0%} confidence; the "
                f"{strongest.threat_model.name} threat model's lower bound "
                f"{strongest.epsilon_lower_bound:.4g} ({self.method}, which "
                f"{TRAINING_BOUNDS[self.bound].description}) exceeds the claimed epsilon"
                f"{self.group_words(strongest)}."
            )
        return (
            f"Not refuted: no lower bound exceeds the claimed epsilon {self.claimed_epsilon:g} "
            f"(the largest, {strongest.epsilon_lower_bound:.4g}, from the "
            f"{strongest.threat_model.name} threat model{self.group_words(strongest)}); this "
            "does not show the claim holds."
            f"{_what_would_refute(strongest)}"
        )

    @json_property(after="threat_models")
    def tightness(self) -> tuple[TightnessRow, ...]:
        """Per threat model, its lower bounds against the claimed ε (their ratio)."""
        return tuple(
            TightnessRow(
                audit.threat_model.name,
                self.claimed_epsilon,
                audit.epsilon_lower_bound,
                audit.epsilon_lower_gdp,
                audit.epsilon_lower_bound / self.claimed_epsilon
                if self.claimed_epsilon > 0
                else None,
            )
            for audit in self.threat_models
        )
