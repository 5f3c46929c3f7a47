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

import math
from dataclasses import dataclass, field
from typing import Final, Literal

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.files import FileDigest
from epsstar.audit.output.result import SCHEMA_VERSION
from epsstar.audit.training_audit.procedure import Claim
from epsstar.audit.training_audit.runs import Arm
from epsstar.audit.training_audit.threat_models import ThreatModel
from epsstar.plumbing.json_types import JsonObject, JsonValue
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.auditing.choose_k import ChosenK
from epsstar.statistics.auditing.feasibility import (
    PROJECTED_LARGEST,
    CanaryProjection,
    ManyRunMethod,
)
from epsstar.statistics.auditing.guess_rules import RuleBounds
from epsstar.statistics.auditing.identifiability import IdentifiabilityReading
from epsstar.statistics.auditing.many_runs import ManyRunBounds
from epsstar.statistics.auditing.one_run import OneRunBounds, OneRunMethod
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


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


@dataclass(frozen=True, slots=True)
class ThreatModelAudit:
    """One threat model's audit: the canaries' ``scores`` (one per canary, or per run with many
    runs) and whether each was ``included``; the one-run guesses (+1 "in", −1 "out", 0 no
    guess) with the k chosen and the bounds, or the many-run bounds; the DI readings (``di``
    only); the deciding ``method``, its ``epsilon_lower_bound`` and whether it ``refutes``."""

    threat_model: ThreatModel
    canaries: int
    scores: FloatArray = field(repr=False)
    included: NDArray[np.bool_] = field(repr=False)
    method: str
    epsilon_lower_bound: float
    epsilon_lower_gdp: float | None
    refutes: bool
    guesses: NDArray[np.int8] | None = field(default=None, repr=False)
    chosen_k: ChosenK | None = None
    one_run: OneRunBounds | None = None
    many_runs: ManyRunBounds | None = None
    identifiability: IdentifiabilityReading | None = None
    guess_rule: RuleBounds | None = None
    canaries_to_refute: CanaryProjection | None = None

    def to_dict(self) -> JsonObject:
        """The record of the JSON's ``threat_models``."""
        guesses: list[JsonValue] | None = None
        if self.guesses is not None:
            names: dict[int, JsonValue] = {1: "in", -1: "out", 0: None}
            guesses = [names[int(g)] for g in self.guesses]
        return {
            "threat_model": self.threat_model.to_dict(),
            "canaries": self.canaries,
            "method": self.method,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "epsilon_lower_gdp": _finite(self.epsilon_lower_gdp),
            "refutes": self.refutes,
            "chosen_k": None if self.chosen_k is None else self.chosen_k.to_dict(),
            "one_run": None if self.one_run is None else self.one_run.to_dict(),
            "many_runs": None if self.many_runs is None else self.many_runs.to_dict(),
            "identifiability": None
            if self.identifiability is None
            else self.identifiability.to_dict(),
            "scores": [float(v) for v in self.scores],
            "included": [bool(v) for v in self.included],
            "guesses": guesses,
            "guess_rule": None if self.guess_rule is None else self.guess_rule.to_dict(),
            "canaries_to_refute": None
            if self.canaries_to_refute is None
            else self.canaries_to_refute.to_dict(),
        }


def _what_would_refute(audit: ThreatModelAudit) -> str:
    """What a larger one-run audit would need, from the precision of this one's guesses."""
    projection = audit.canaries_to_refute
    if projection is None:
        return ""
    seen = (
        f" Its guesses were right at a rate of {projection.precision:.3f} "
        f"({projection.share_guessed:.0%} of {audit.canaries:,} canaries guessed)"
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
class TightnessRow:
    """A threat model's measured lower bounds beside the claimed (accountant's) ε."""

    threat_model: str
    claimed_epsilon: float
    epsilon_lower_bound: float
    epsilon_lower_gdp: float | None
    ratio: float | None

    def to_dict(self) -> JsonObject:
        return {
            "threat_model": self.threat_model,
            "claimed_epsilon": self.claimed_epsilon,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "epsilon_lower_gdp": _finite(self.epsilon_lower_gdp),
            "ratio": self.ratio,
        }


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One training run: its seed, arm, seconds, model and claim."""

    index: int
    seed: int
    arm: Arm
    seconds: float
    model: JsonObject
    claim: Claim | None

    def to_dict(self) -> JsonObject:
        return {
            "index": self.index,
            "seed": self.seed,
            "arm": self.arm,
            "seconds": self.seconds,
            "model": self.model,
            "claim": None if self.claim is None else self.claim.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class TrainingAuditResult:
    """The whole audit (see the module). ``claimed_from`` and ``delta_from`` say where the claim
    came from; ``confidence_each`` is each threat model's share of the confidence; ``seeds``
    are every seed the audit drew from ``seed``, so that it can be repeated."""

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
    run_records: tuple[RunRecord, ...]
    seed: int
    seeds: JsonObject
    data: tuple[FileDigest, ...]
    canaries_left_out: int
    smallest_canaries: JsonObject
    warnings: tuple[str, ...]
    seconds: float
    epsstar_version: str

    @property
    def refuted(self) -> bool:
        """Whether some threat model's deciding bound exceeds the claimed ε."""
        return any(audit.refutes for audit in self.threat_models)

    @property
    def epsilon_lower_bound(self) -> float:
        """The largest deciding bound over the threat models."""
        return max(audit.epsilon_lower_bound for audit in self.threat_models)

    @property
    def method(self) -> str:
        """The deciding bound's method name."""
        bound = BOUNDS[self.bound]
        return bound.one_run if self.design == "one-run" else bound.many_runs

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

    def verdict(self) -> str:
        """The verdict in one sentence."""
        strongest = max(self.threat_models, key=lambda audit: audit.epsilon_lower_bound)
        if self.refuted:
            return (
                f"Refuted: this training procedure cannot be ({self.claimed_epsilon:g}, "
                f"{self.delta:.3g})-DP at {self.confidence:.0%} confidence; the "
                f"{strongest.threat_model.name} threat model's lower bound "
                f"{strongest.epsilon_lower_bound:.4g} ({self.method}, which "
                f"{TRAINING_BOUNDS[self.bound].description}) exceeds the claimed epsilon."
            )
        return (
            f"Not refuted: no lower bound exceeds the claimed epsilon {self.claimed_epsilon:g} "
            f"(the largest, {strongest.epsilon_lower_bound:.4g}, from the "
            f"{strongest.threat_model.name} threat model); this does not show the claim holds."
            f"{_what_would_refute(strongest)}"
        )

    def to_dict(self) -> JsonObject:
        """The ``--json`` document of ``epsstar audit-training``."""
        return {
            "schema_version": SCHEMA_VERSION,
            "command": "audit-training",
            "epsstar_version": self.epsstar_version,
            "procedure": self.procedure,
            "design": self.design,
            "claimed_epsilon": self.claimed_epsilon,
            "claimed_from": self.claimed_from,
            "delta": self.delta,
            "delta_from": self.delta_from,
            "confidence": self.confidence,
            "confidence_each": self.confidence_each,
            "bound": self.bound,
            "method": self.method,
            "canaries": self.canaries,
            "runs": self.runs,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "refuted": self.refuted,
            "verdict": self.verdict(),
            "threat_models": [audit.to_dict() for audit in self.threat_models],
            "tightness": [row.to_dict() for row in self.tightness()],
            "smallest_canaries": self.smallest_canaries,
            "canaries_left_out": self.canaries_left_out,
            "seed": self.seed,
            "seeds": self.seeds,
            "data": [digest.to_dict() for digest in self.data],
            "training_runs": [record.to_dict() for record in self.run_records],
            "warnings": list(self.warnings),
            "seconds": self.seconds,
        }
