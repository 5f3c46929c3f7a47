"""What the report of an audit of a training procedure draws, computed once here.

* The claim's trade-off curve (Dong, Roth & Su 2022, "Gaussian Differential Privacy", Prop. 2.5):
  an (ε, δ)-DP test's false negative rate at false positive rate α is at least
  f(α) = max(0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)); and the μ-GDP curve
  G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) for the μ of the claim (:func:`~epsstar.statistics.auditing.
  claims.claimed_mu`).
* Per threat model, the measured (FPR, FNR) of the audit's test. With many runs, the
  threshold's errors over the evaluation runs with their Clopper–Pearson confidence box at the
  threat model's confidence: the box's upper corner below the claim's curve is what refutes
  the claim. With one run, the canaries guessed "in" and "out" — FPR the share of left-out
  canaries among those guessed, called "in", FNR the share of included ones called "out" —
  drawn for reading only, with no box: what decides is the one-run bound ε_lo of Steinke et
  al. 2023 (or its μ-GDP reading), drawn as the (ε_lo, δ)-DP curve, which lies below the
  claim's curve exactly when ε_lo exceeds the claimed ε.
* Per threat model, the histograms of the scores of included and left-out canaries (shared
  bins, the finite scores).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from epsstar.audit.training_audit.result import ThreatModelAudit, TrainingAuditResult
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.auditing.claims import claimed_mu
from epsstar.statistics.bounds.from_counts import clopper_pearson_upper

__all__ = [
    "MeasuredPoint",
    "ScoreHistogram",
    "TrainingAuditFigures",
    "dp_curve",
    "training_audit_figures",
]

#: Points of the trade-off curves, and bins of the score histograms.
_CURVE_POINTS, _BINS = 401, 30


@dataclass(frozen=True, slots=True)
class MeasuredPoint:
    """A test's (FPR, FNR) from ``negatives`` and ``positives`` trials, with its confidence box
    (two-sided Clopper–Pearson intervals at the threat model's confidence) when the box is what
    decides (many runs), ``None`` when it is not (one run: the one-run bound decides)."""

    fpr: float
    fnr: float
    fpr_interval: tuple[float, float] | None
    fnr_interval: tuple[float, float] | None
    negatives: int
    positives: int


@dataclass(frozen=True, slots=True)
class ScoreHistogram:
    """Shared bin ``edges`` and the counts of included and left-out canaries' scores."""

    edges: FloatArray = field(repr=False)
    included: FloatArray = field(repr=False)
    excluded: FloatArray = field(repr=False)


@dataclass(frozen=True, slots=True)
class TrainingAuditFigures:
    """The curves (on ``fpr``), and per threat model (in the result's order) its measured point
    (``None`` when its test made no guess of a kind), the (ε_lo, δ)-DP curve of its one-run
    bound (``None`` with many runs or a bound of 0) and its histogram."""

    fpr: FloatArray = field(repr=False)
    claimed_fnr: FloatArray = field(repr=False)
    gdp_fnr: FloatArray = field(repr=False)
    mu: float
    points: tuple[MeasuredPoint | None, ...]
    bound_fnr: tuple[FloatArray | None, ...]
    histograms: tuple[ScoreHistogram | None, ...]


def _interval(count: int, n: int, confidence: float) -> tuple[float, float]:
    low = 1.0 - clopper_pearson_upper(n - count, n, confidence)
    return max(0.0, low), clopper_pearson_upper(count, n, confidence)


def _counts(audit: ThreatModelAudit) -> tuple[int, int, int, int] | None:
    """(false positives, negatives, false negatives, positives) of the audit's test."""
    if audit.many_runs is not None:
        many = audit.many_runs
        return many.false_positives, many.negatives, many.false_negatives, many.positives
    if audit.guesses is None:
        return None
    said_in, said_out = audit.guesses == 1, audit.guesses == -1
    guessed = said_in | said_out
    negatives = int(np.sum(guessed & ~audit.included))
    positives = int(np.sum(guessed & audit.included))
    false_positives = int(np.sum(said_in & ~audit.included))
    false_negatives = int(np.sum(said_out & audit.included))
    return false_positives, negatives, false_negatives, positives


def _point(audit: ThreatModelAudit, confidence: float) -> MeasuredPoint | None:
    counts = _counts(audit)
    if counts is None or counts[1] == 0 or counts[3] == 0:
        return None
    fp, negatives, fn, positives = counts
    boxed = audit.many_runs is not None
    return MeasuredPoint(
        fp / negatives,
        fn / positives,
        _interval(fp, negatives, confidence) if boxed else None,
        _interval(fn, positives, confidence) if boxed else None,
        negatives,
        positives,
    )


def dp_curve(alpha: FloatArray, epsilon: float, delta: float) -> FloatArray:
    """The least FNR of an (ε, δ)-DP test at each FPR α: max(0, 1 − δ − e^ε α,
    e^{−ε}(1 − δ − α))."""
    curve = np.maximum.reduce(
        [
            np.zeros_like(alpha),
            1.0 - delta - np.exp(epsilon) * alpha,
            np.exp(-epsilon) * (1.0 - delta - alpha),
        ]
    )
    return np.asarray(curve, dtype=np.float64)


def _bound_curve(audit: ThreatModelAudit, alpha: FloatArray, delta: float) -> FloatArray | None:
    if audit.many_runs is not None or audit.epsilon_lower_bound <= 0.0:
        return None
    return dp_curve(alpha, audit.epsilon_lower_bound, delta)


def _histogram(audit: ThreatModelAudit) -> ScoreHistogram | None:
    finite = np.isfinite(audit.scores)
    scores, included = audit.scores[finite], audit.included[finite]
    if scores.size == 0:
        return None
    edges = np.histogram_bin_edges(scores, bins=_BINS)
    return ScoreHistogram(
        edges,
        np.histogram(scores[included], bins=edges)[0].astype(np.float64),
        np.histogram(scores[~included], bins=edges)[0].astype(np.float64),
    )


def training_audit_figures(result: TrainingAuditResult) -> TrainingAuditFigures:
    """The figures of ``result``'s report (see the module)."""
    epsilon, delta = result.claimed_epsilon, result.delta
    alpha = np.linspace(0.0, 1.0, _CURVE_POINTS)
    claimed = dp_curve(alpha, epsilon, delta)
    mu = claimed_mu(epsilon, delta)
    gdp = stats.norm.cdf(stats.norm.ppf(1.0 - alpha) - mu)
    return TrainingAuditFigures(
        fpr=alpha,
        claimed_fnr=claimed,
        gdp_fnr=np.asarray(gdp, dtype=np.float64),
        mu=mu,
        points=tuple(_point(a, result.confidence_each) for a in result.threat_models),
        bound_fnr=tuple(_bound_curve(a, alpha, delta) for a in result.threat_models),
        histograms=tuple(_histogram(a) for a in result.threat_models),
    )
