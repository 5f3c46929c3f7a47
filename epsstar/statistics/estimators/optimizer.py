"""Supremum of eq. 7 over all thresholds of two continuous distributions.

Parametric Epsilon* (§3.1 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine
Learning Models") is

    sup over c of max(1, four ratios of FPR(c) = F_pop(c) and FNR(c) = 1 - F_train(c)),

over thresholds ``c`` whose rate in each ratio's denominator lies in ``(δ, 1-δ)``
(:mod:`epsstar.statistics.estimators.ratio_terms`). Both
distributions are given on a loss-ordered scale (the test rejects H0 below
``c``), as objects with ``logcdf``, ``logsf``, ``ppf`` and ``isf``.

Every ratio's admissible thresholds lie in one interval ``(lo, hi)`` with
``lo = min(ppf_pop(δ), ppf_train(δ))`` and ``hi = max(isf_pop(δ), isf_train(δ))``
(:func:`admissible_span`).
:func:`parametric_supremum` brackets every local maximum of each ratio on a
grid of a few hundred points spaced by *both* distributions' quantiles
(geometrically spaced probabilities from δ to 1/2 in each tail, so the grid is
dense exactly where the maximum tends to sit), then refines each promising
bracket by repeated zooming (:func:`zoom_maximum`). :func:`grid_supremum` is the paper's
procedure: the same ratios at one million quantiles of each distribution.
"""

from __future__ import annotations

import numpy as np

from epsstar.statistics._validation import FloatArray, check_delta, check_positive_int
from epsstar.statistics.estimators.ratio_terms import RateWindow, Supremum, log_ratio_terms
from epsstar.statistics.fitting.base import ContinuousDistribution

__all__ = [
    "admissible_span",
    "evaluate_terms",
    "grid_supremum",
    "parametric_supremum",
    "zoom_maximum",
]

#: Grid points per tail and distribution, and how many brackets are refined.
GRID_PER_TAIL = 96
MAX_REFINEMENTS = 8
ZOOM_POINTS = 41
ZOOM_ROUNDS = 7
#: Only brackets whose grid value is within this many nats of the best are refined.
REFINE_MARGIN = 1.0


def evaluate_terms(
    train: ContinuousDistribution,
    population: ContinuousDistribution,
    thresholds: FloatArray,
    delta: float,
    window: RateWindow | None = None,
) -> FloatArray:
    """Log of the four ratios of eq. 7 at each threshold, shape ``(4, n)``."""
    return log_ratio_terms(
        population.logcdf(thresholds),
        population.logsf(thresholds),
        train.logsf(thresholds),
        train.logcdf(thresholds),
        delta,
        window or RateWindow.for_delta(delta),
    )


def admissible_span(
    train: ContinuousDistribution, population: ContinuousDistribution, delta: float
) -> tuple[float, float, FloatArray]:
    """The thresholds ``(lo, hi)`` outside which no ratio's denominator rate is in
    ``(δ, 1-δ)`` (below ``lo`` both CDFs are under δ, above ``hi`` both survival functions
    are), and points a hair on either side of each ratio's own edge (where a denominator
    rate is δ or 1 - δ), since a supremum on an open edge is approached from inside."""
    q = np.array([delta])
    lows = np.concatenate([population.ppf(q), train.ppf(q)])
    highs = np.concatenate([population.isf(q), train.isf(q)])
    lo, hi = float(lows.min()), float(highs.max())
    edges = np.concatenate([lows, highs])
    inset = 1e-9 * (hi - lo)
    return lo, hi, np.concatenate([edges - inset, edges + inset])


def _at(
    train: ContinuousDistribution,
    population: ContinuousDistribution,
    threshold: float,
    epsilon: float,
    term: int,
) -> Supremum:
    if term == 0:
        return Supremum(
            epsilon=0.0, threshold=float("nan"), fpr=float("nan"), fnr=float("nan"), term=0
        )
    point = np.array([threshold])
    fpr = float(np.exp(population.logcdf(point))[0])
    fnr = float(np.exp(train.logsf(point))[0])
    return Supremum(epsilon=epsilon, threshold=threshold, fpr=fpr, fnr=fnr, term=term)


def zoom_maximum(
    train: ContinuousDistribution,
    population: ContinuousDistribution,
    delta: float,
    row: int,
    left: float,
    right: float,
    *,
    n_points: int = ZOOM_POINTS,
    rounds: int = ZOOM_ROUNDS,
) -> tuple[float, float]:
    """Maximise ratio ``row`` on ``[left, right]`` by repeated bracketing.

    Each round evaluates the ratio at ``n_points`` evenly spaced points and
    keeps the two cells around the best one, shrinking the bracket
    ``(n_points - 1) / 2`` times per round; the ratios are smooth, so after
    ``ZOOM_ROUNDS`` rounds of ``ZOOM_POINTS`` the bracket is ~1e-9 of a grid
    cell wide. Unlike a scalar minimiser it also follows a supremum that sits on
    the boundary of the admissible interval (where the ratio is a limit, not a
    maximum). Returns (largest value seen, its threshold).
    """
    best_value, best_threshold = -np.inf, left
    for _ in range(rounds):
        points = np.linspace(left, right, n_points)
        values = evaluate_terms(train, population, points, delta)[row]
        index = int(np.argmax(values))
        if values[index] > best_value:
            best_value, best_threshold = float(values[index]), float(points[index])
        left = float(points[max(index - 1, 0)])
        right = float(points[min(index + 1, n_points - 1)])
        if not left < right:
            break
    return best_value, best_threshold


def _best(terms: FloatArray) -> tuple[float, int, int]:
    """(value, term index 1..4, column) of the largest entry; value ≥ 0 or term 0."""
    flat = int(np.argmax(terms))
    row, column = divmod(flat, terms.shape[1])
    value = float(terms[row, column])
    if not value > 0:
        return 0.0, 0, column
    return value, row + 1, column


def parametric_supremum(
    train: ContinuousDistribution,
    population: ContinuousDistribution,
    delta: float,
) -> Supremum:
    """Epsilon* of two continuous distributions, located by bracketing and refinement."""
    delta = check_delta(delta)
    lo, hi, near_edges = admissible_span(train, population, delta)
    if not lo < hi:
        # No threshold has a denominator rate inside (δ, 1 - δ): only the constant 1 remains.
        return _at(train, population, float("nan"), 0.0, 0)

    tail = np.geomspace(delta, 0.5, GRID_PER_TAIL)
    grid = np.concatenate(
        [
            population.ppf(tail),
            population.isf(tail),
            train.ppf(tail),
            train.isf(tail),
            np.linspace(lo, hi, 2 * GRID_PER_TAIL),
            near_edges,
        ]
    )
    grid = np.unique(np.clip(grid[np.isfinite(grid)], lo, hi))
    terms = evaluate_terms(train, population, grid, delta)
    best_value, best_term, best_column = _best(terms)
    best_threshold = float(grid[best_column])

    # Local maxima of each ratio on the grid (plateaus included), best first.
    padded = np.pad(terms, ((0, 0), (1, 1)), constant_values=-np.inf)
    is_peak = (terms >= padded[:, :-2]) & (terms >= padded[:, 2:]) & np.isfinite(terms)
    rows, columns = np.nonzero(is_peak)
    order = np.argsort(-terms[rows, columns], kind="stable")
    peaks = list(zip(rows[order], columns[order], strict=True))[:MAX_REFINEMENTS]
    for row, column in peaks:
        if terms[row, column] < best_value - REFINE_MARGIN:
            break
        left = float(grid[max(column - 1, 0)])
        right = float(grid[min(column + 1, grid.size - 1)])
        value, threshold = zoom_maximum(train, population, delta, int(row), left, right)
        if value > best_value:
            best_value, best_term, best_threshold = value, int(row) + 1, threshold
    if best_term == 0:
        return _at(train, population, float("nan"), 0.0, 0)
    return _at(train, population, best_threshold, best_value, best_term)


def grid_supremum(
    train: ContinuousDistribution,
    population: ContinuousDistribution,
    delta: float,
    *,
    points_per_distribution: int = 1_000_000,
    window: RateWindow | None = None,
) -> Supremum:
    """The paper's procedure: eq. 7 at equally spaced quantiles of each distribution.

    Appendix B evaluates the CDFs at one million equally spaced quantiles of the
    training and one million of the population distribution (2 million points)
    and drops rates outside ``(δ, 1-δ)``.
    """
    delta = check_delta(delta)
    n = check_positive_int("points_per_distribution", points_per_distribution)
    quantiles = np.arange(1, n + 1, dtype=np.float64) / (n + 1)
    thresholds = np.concatenate([train.ppf(quantiles), population.ppf(quantiles)])
    thresholds = thresholds[np.isfinite(thresholds)]
    terms = evaluate_terms(train, population, thresholds, delta, window)
    value, term, column = _best(terms)
    return _at(train, population, float(thresholds[column]), value, term)
