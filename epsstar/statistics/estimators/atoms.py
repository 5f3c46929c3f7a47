"""Epsilon* of losses on a few values (atoms): randomised tests, chosen and scored apart.

Losses with atoms (decision trees, k-NN, rounded, quantised or saturated outputs) reach
only the (FPR, FNR) points of the thresholds at their distinct values ``a_1 < … < a_K``:
vertex ``k`` calls a record a member when its loss is ≤ ``a_k``, with FPR
``t_k = #{population ≤ a_k} / m`` and FNR ``η_k = #{train > a_k} / n`` (``k = 0``: nobody,
``(0, 1)``). A test may also call members at random between two thresholds, which reaches
every point of their segment, so the tests of a discrete score make the lower convex hull
of its vertices (the trade-off curve of a discrete score is the convex hull of its points);
the reversed tests (members above a threshold) make the hull of ``(1 − t_k, 1 − η_k)``, on
which the third and fourth ratios of eq. 7 (Negoescu et al. 2024, "Epsilon*: Privacy Metric for
Machine Learning Models") are the first and second. Each ratio is linear-fractional in ``(t, η)``,
hence monotone along a segment: its supremum over a hull whose denominator rate must exceed δ is at
a vertex or where a segment crosses that limit. The plug-in value is exact for the observed counts,
with ties counted exactly (no interpolation between atoms).

A denominator counted 0 of ``n`` records is read at its median-unbiased rate
``1 − 2^(−1/n)`` (:func:`~epsstar.statistics.estimators.empirical.median_unbiased_zero_rate`):
the data's resolution, below which no rate is observed. A numerator rate of 0 is evidence
and enters as it is.

The maximum over noisy vertices is biased upward, most where nothing leaks, so the
estimate is cross-fitted as :mod:`epsstar.statistics.estimators.crossfit` does for
continuous losses: both sides are split at random into halves; on one half each ratio's
best test (a vertex, or a mix of two thresholds with its weight) is located, and the same
test, a fixed rule now, is scored ``max(0, log ratio)`` on the other half's counts; the
halves swap roles, scores are averaged over both and over ``n_splits`` halvings, and the
estimate is the largest of the four averages. Written here because no library computes
hull suprema of eq. 7's ratios; the hull itself is a monotone-chain scan of at most
``K + 1`` points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from epsstar.statistics._validation import FloatArray
from epsstar.statistics.estimators.crossfit import (
    FPR_DENOMINATOR_TERMS,
    CrossFit,
    crossfit_fits,
)
from epsstar.statistics.estimators.empirical import median_unbiased_zero_rate
from epsstar.statistics.estimators.ratio_terms import Supremum
from epsstar.statistics.summaries.protocols import Losses, Sample

__all__ = [
    "AtomTest",
    "HalfCounts",
    "Vertices",
    "atoms_crossfit",
    "atoms_halves",
    "atoms_supremum",
    "denominator_rate",
    "law_vertices",
    "vertices",
]


@dataclass(frozen=True, slots=True)
class Vertices:
    """The threshold tests' rates at the atoms ``thresholds``: FPR ``fpr[k]`` and FNR
    ``fnr[k]`` of "member when loss ≤ thresholds[k - 1]" (``k = 0``: nobody), with the
    sides' sizes for reading a count of 0 at the data's resolution (0 for rates of known
    laws, which are exact: a rate of 0 is then 0)."""

    thresholds: FloatArray
    fpr: FloatArray
    fnr: FloatArray
    n_train: int
    n_population: int

    @classmethod
    def from_counts(
        cls,
        thresholds: FloatArray,
        train_below: FloatArray,
        population_below: FloatArray,
        n_train: int,
        n_population: int,
    ) -> Vertices:
        """The vertices of ``#{train ≤ τ}`` and ``#{population ≤ τ}`` at each threshold τ."""
        return cls(
            thresholds=thresholds,
            fpr=np.concatenate([[0.0], population_below]) / n_population,
            fnr=1.0 - np.concatenate([[0.0], train_below]) / n_train,
            n_train=n_train,
            n_population=n_population,
        )


def _resolution(n: int) -> float:
    """The smallest rate ``n`` records resolve (0 for a known law)."""
    return median_unbiased_zero_rate(n) if n > 0 else 0.0


def law_vertices(
    thresholds: FloatArray, train_mass: FloatArray, population_mass: FloatArray
) -> Vertices:
    """The vertices of two known discrete laws with probability masses at ``thresholds``
    (ascending; each mass array sums to 1): their exact Epsilon* is
    :func:`atoms_supremum` of these."""
    return Vertices(
        thresholds=np.asarray(thresholds, dtype=np.float64),
        fpr=np.concatenate([[0.0], np.cumsum(population_mass)]).clip(0.0, 1.0),
        fnr=(1.0 - np.concatenate([[0.0], np.cumsum(train_mass)])).clip(0.0, 1.0),
        n_train=0,
        n_population=0,
    )


def vertices(thresholds: FloatArray, train: Sample, population: Sample) -> Vertices | None:
    """The rates of the tests at ``thresholds`` (ascending atoms) counted on two samples;
    ``None`` when a sample (a sketch) cannot count exactly at every atom."""
    counted = [sample.count_below(thresholds) for sample in (population, train)]
    if not all(bool(np.all(exact)) for _, exact in counted):
        return None
    return Vertices.from_counts(thresholds, counted[1][0], counted[0][0], train.n, population.n)


@dataclass(frozen=True, slots=True)
class AtomTest:
    """A possibly randomised threshold test: vertex ``low`` with probability ``weight``,
    else vertex ``high`` (equal for a plain threshold), read in ``reversed`` orientation
    (members above the threshold) for the third and fourth ratios."""

    term: int
    low: int
    high: int
    weight: float
    reversed: bool

    def rates(self, at: Vertices) -> tuple[float, float]:
        """(FPR, FNR) of this test on the counts ``at`` (the original orientation)."""
        w = self.weight
        fpr = w * at.fpr[self.low] + (1.0 - w) * at.fpr[self.high]
        fnr = w * at.fnr[self.low] + (1.0 - w) * at.fnr[self.high]
        return float(fpr), float(fnr)


def _lower_hull(x: FloatArray, y: FloatArray) -> NDArray[np.int64]:
    """Indices of the lower convex hull of points sorted by ``x`` (monotone chain)."""
    hull: list[int] = []
    for i in range(x.size):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            cross = (x[b] - x[a]) * (y[i] - y[a]) - (y[b] - y[a]) * (x[i] - x[a])
            if cross > 0:
                break
            hull.pop()
        hull.append(i)
    return np.asarray(hull, dtype=np.int64)


def _denominator(rate: float, n: int) -> float:
    """A denominator rate, a count of 0 read at the median-unbiased rate of ``n`` records."""
    return rate if rate > 0 else _resolution(n)


def denominator_rate(term: int, fpr: float, fnr: float) -> float:
    """The rate in ratio ``term``'s denominator: FPR, FNR, 1 − FPR or 1 − FNR."""
    return {1: fpr, 2: fnr, 3: 1.0 - fpr, 4: 1.0 - fnr}[term]


def _parts(term: int, fpr: float, fnr: float, at: Vertices, delta: float) -> tuple[float, float]:
    """Ratio ``term``'s numerator and denominator at ``(fpr, fnr)``, a denominator rate
    counted 0 read at the data's resolution."""
    numerator = {1: 1.0 - fnr, 2: 1.0 - fpr, 3: fnr, 4: fpr}[term] - delta
    n = at.n_population if term in FPR_DENOMINATOR_TERMS else at.n_train
    return numerator, _denominator(denominator_rate(term, fpr, fnr), n)


def _log_ratio(term: int, fpr: float, fnr: float, at: Vertices, delta: float) -> float:
    """Log of ratio ``term`` of eq. 7 at ``(fpr, fnr)``; ``-inf`` where its denominator
    rate (at the data's resolution) is not above δ or its numerator is not positive."""
    numerator, denominator = _parts(term, fpr, fnr, at, delta)
    # The admissible rates are open at δ; their supremum is the value at δ itself (a mix
    # placed at δ may land a rounding error below it).
    if not (numerator > 0 and delta * (1.0 - 1e-12) <= denominator < 1.0 - delta):
        return -np.inf
    return float(np.log(numerator) - np.log(denominator))


def _candidates(at: Vertices, term: int, delta: float) -> list[AtomTest]:
    """Every test at which ratio ``term`` can attain its supremum over the hull: the hull's
    vertices, and each point where a hull segment's denominator rate crosses δ, where δ
    is at least the data's resolution (a rate of δ below it is not held by the data)."""
    reversed_ = term in (3, 4)
    x = 1.0 - at.fpr[::-1] if reversed_ else at.fpr
    y = 1.0 - at.fnr[::-1] if reversed_ else at.fnr
    order = _lower_hull(x, y)
    index = (at.fpr.size - 1 - order) if reversed_ else order
    # The denominator of ratios 1 and 3 is the x rate, of 2 and 4 the y rate.
    fpr_denominator = term in FPR_DENOMINATOR_TERMS
    d = x[order] if fpr_denominator else y[order]
    found = [AtomTest(term, int(k), int(k), 1.0, reversed_) for k in index]
    side = at.n_population if fpr_denominator else at.n_train
    if delta < _resolution(side):
        return found
    for j in range(order.size - 1):
        a, b = d[j], d[j + 1]
        if (a - delta) * (b - delta) < 0:
            w = float((b - delta) / (b - a))  # weight on vertex j: w a + (1 - w) b = δ
            found.append(AtomTest(term, int(index[j]), int(index[j + 1]), w, reversed_))
    return found


def _best(at: Vertices, term: int, delta: float) -> tuple[float, AtomTest | None]:
    """Ratio ``term``'s largest log value over the hull of ``at``, and the test there."""
    best, chosen = -np.inf, None
    for test in _candidates(at, term, delta):
        value = _log_ratio(term, *test.rates(at), at, delta)
        if value > best:
            best, chosen = value, test
    return best, chosen


def atoms_supremum(at: Vertices, delta: float) -> tuple[Supremum, AtomTest | None]:
    """Epsilon* over the convex hull of ``at`` (module doc), and the test attaining it."""
    nan = float("nan")
    best, chosen = 0.0, None
    for term in range(1, 5):
        value, test = _best(at, term, delta)
        if value > best:
            best, chosen = value, test
    if chosen is None:
        return Supremum(0.0, nan, nan, nan, 0), None
    fpr, fnr = chosen.rates(at)
    last = max(chosen.high, chosen.low)
    threshold = float(at.thresholds[last - 1]) if last else nan
    return Supremum(best, threshold, fpr, fnr, chosen.term), chosen


def _score(test: AtomTest | None, at: Vertices, delta: float) -> float:
    """``max(0, log ratio)`` of ``test``'s ratio on other counts; a denominator at or below
    δ there (counted 0, or at most δ) is read at δ, the limit of the admissible rates."""
    if test is None:
        return 0.0
    numerator, denominator = _parts(test.term, *test.rates(at), at, delta)
    if not numerator > 0:
        return 0.0
    return max(0.0, float(np.log(numerator) - np.log(max(denominator, delta))))


#: The counts of one random halving: (half A, half B), each as :class:`Vertices`.
HalfCounts = tuple[Vertices, Vertices]


def atoms_halves(
    train: Losses,
    population: Losses,
    thresholds: FloatArray,
    *,
    n_splits: int = 1,
    seed: int = 0,
) -> list[HalfCounts] | None:
    """Both halves' counts at ``thresholds`` for ``n_splits`` seeded random halvings (the
    halvings :func:`~epsstar.statistics.estimators.crossfit.crossfit_fits` draws); they do
    not depend on δ, so one set serves Epsilon* at every δ. ``None`` when the halves of a
    summary cannot count exactly at every atom."""

    def count(train_half: Sample, population_half: Sample) -> Vertices | None:
        return vertices(thresholds, train_half, population_half)

    found = crossfit_fits(train, population, count, n_splits=n_splits, seed=seed)
    if any(a is None or b is None for a, b in found):
        return None
    return [(a, b) for a, b in found if a is not None and b is not None]


def atoms_crossfit(halvings: list[HalfCounts], delta: float) -> CrossFit:
    """Cross-fitted Epsilon* at ``delta`` from the counts of :func:`atoms_halves`."""
    scores: list[list[float]] = []
    for halves in halvings:
        for chooser, scorer in ((0, 1), (1, 0)):
            # A ratio that is nowhere above 1 on the choosing half chooses no test.
            best = [_best(halves[chooser], term, delta) for term in range(1, 5)]
            chosen = [test if value > 0 else None for value, test in best]
            scores.append([_score(test, halves[scorer], delta) for test in chosen])
    return CrossFit.of_scores(scores)
