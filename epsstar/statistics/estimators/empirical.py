"""Empirical Epsilon*: eq. 7 with rates from the empirical CDFs.

Every distinct observed loss ``τ`` (of either set) is a threshold; the test
rejects H0 when the loss is ≤ τ, so ``FPR(τ) = #{population ≤ τ} / n_pop`` and
``FNR(τ) = #{train > τ} / n_train`` (eqs. 5-6 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for
Machine Learning Models"). These thresholds reach every (FPR, FNR) pair a loss threshold can
produce. Pairs with a rate outside the admissible window are dropped: ``(δ, 1-δ)`` by default, or
``(0.001, 0.999)`` as in the paper's Appendix B. Sorting makes it O(n log n); the logs of the rates
come from exact integer counts.

A rate counted as 0 of n records is either left out (rate 0 is below any window) or,
with ``zero_counts="median"``, taken at its median-unbiased value
``1 - 2^(-1/n) ≈ ln 2 / n`` (the rate at which 0 events in n trials is the median
outcome) where it is the threshold's only count of 0 (at the largest loss both sides
count 0 above it, and calling every record a member is no test). The second serves
losses on a few values (atoms), where a test can call every training record a member
while many population records are not, and no tail beyond the atom can be fitted: the
ratio of eq. 7 there is ``(1-δ-FPR)/FNR`` with FNR observed 0, which dropping the pair
would turn into no evidence at all.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from epsstar.statistics._validation import FloatArray
from epsstar.statistics.estimators.ratio_terms import RateWindow, Supremum, log_ratio_terms
from epsstar.statistics.summaries.loss_sketch import exact_counts
from epsstar.statistics.summaries.loss_values import empirical_counts
from epsstar.statistics.summaries.protocols import Sample

__all__ = [
    "PAPER_EMPIRICAL_WINDOW",
    "ZeroCounts",
    "empirical_rates",
    "empirical_supremum",
    "median_unbiased_zero_rate",
    "sketch_supremum",
    "supremum_from_counts",
]

#: The rate window of the paper's empirical estimator (Appendix B).
PAPER_EMPIRICAL_WINDOW = RateWindow(0.001, 0.999)

#: How a rate counted as 0 of n enters eq. 7: left out, or at its median-unbiased value.
ZeroCounts = Literal["excluded", "median"]


def median_unbiased_zero_rate(n: int) -> float:
    """``1 - 2^(-1/n)``: the rate p with P(0 events in n trials) = (1-p)^n = 1/2."""
    return float(-np.expm1(np.log(0.5) / n))


def empirical_rates(
    train_losses: FloatArray, population_losses: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Thresholds (distinct losses, ascending) with their empirical FPR and FNR."""
    thresholds, pop_below, train_below = empirical_counts(train_losses, population_losses)
    fpr = pop_below / population_losses.size
    fnr = 1.0 - train_below / train_losses.size
    return thresholds, fpr, fnr


def empirical_supremum(
    train_losses: FloatArray,
    population_losses: FloatArray,
    delta: float,
    window: RateWindow | None = None,
    zero_counts: ZeroCounts = "excluded",
) -> Supremum:
    """Epsilon* from the empirical CDFs (inputs already validated, finite, 1-D)."""
    thresholds, pop_below, train_below = empirical_counts(train_losses, population_losses)
    return supremum_from_counts(
        thresholds,
        pop_below,
        train_below,
        n_train=train_losses.size,
        n_population=population_losses.size,
        delta=delta,
        window=window,
        zero_counts=zero_counts,
    )


def _log_rates(count: FloatArray, n: float, lone_zero: FloatArray | None) -> FloatArray:
    """log(count / n): a 0 count at ``-inf``, or at the median-unbiased rate where
    ``lone_zero`` is true."""
    with np.errstate(divide="ignore"):
        logs = np.log(count) - np.log(n)
    if lone_zero is not None:
        at = lone_zero & (count == 0)
        logs = np.where(at, np.log(median_unbiased_zero_rate(int(n))), logs)
    return np.asarray(logs, dtype=np.float64)


def supremum_from_counts(
    thresholds: FloatArray,
    pop_below: FloatArray,
    train_below: FloatArray,
    *,
    n_train: int,
    n_population: int,
    delta: float,
    window: RateWindow | None = None,
    zero_counts: ZeroCounts = "excluded",
) -> Supremum:
    """Eq. 7 at each threshold from the counts of population and training losses at or
    below it (``n_population`` and ``n_train`` records), rates in ``window`` (default
    ``(δ, 1-δ)``), counts of 0 as ``zero_counts`` says."""
    n_pop, n_tr = float(n_population), float(n_train)
    counts = (pop_below, n_pop - pop_below, n_tr - train_below, train_below)
    lone_zero = None
    if zero_counts == "median":
        # A 0 count enters only beside three observed ones: where both sides have one (the
        # threshold above every loss calls everyone a member), the test learns nothing.
        lone_zero = sum((count == 0).astype(np.int64) for count in counts) == 1
    logs = (
        _log_rates(counts[0], n_pop, lone_zero),
        _log_rates(counts[1], n_pop, lone_zero),
        _log_rates(counts[2], n_tr, lone_zero),
        _log_rates(counts[3], n_tr, lone_zero),
    )
    terms = log_ratio_terms(
        logs[0], logs[1], logs[2], logs[3], delta, window or RateWindow.for_delta(delta)
    )
    flat = int(np.argmax(terms))
    row, column = divmod(flat, terms.shape[1])
    value = float(terms[row, column])
    if not value > 0:
        nan = float("nan")
        return Supremum(epsilon=0.0, threshold=nan, fpr=nan, fnr=nan, term=0)
    fpr_count, fnr_count = pop_below[column], n_tr - train_below[column]
    return Supremum(
        epsilon=value,
        threshold=float(thresholds[column]),
        # Exact ratios of counts; a count of 0 that entered at its median-unbiased rate
        # is reported at that rate.
        fpr=float(fpr_count / n_pop if fpr_count else np.exp(logs[0][column])),
        fnr=float(fnr_count / n_tr if fnr_count else np.exp(logs[2][column])),
        term=row + 1,
    )


def sketch_supremum(
    train: Sample,
    population: Sample,
    delta: float,
    window: RateWindow | None = None,
    zero_counts: ZeroCounts = "excluded",
) -> Supremum:
    """Empirical Epsilon* (eq. 7, rates in ``window``, default ``(δ, 1-δ)``, counts of 0
    as ``zero_counts`` says) at every threshold where both sketches give exact counts
    (:func:`~epsstar.statistics.summaries.loss_sketch.exact_counts`).

    Each such pair of rates is one that :func:`empirical_supremum` also evaluates (that of
    the largest observed loss ≤ τ), so the result is never above the empirical Epsilon* of
    the full samples; it can miss only thresholds inside one bin of the body, where each
    rate moves by at most that bin's count over ``n``. In the tails, where Epsilon* at a
    small δ is decided, every threshold is exact.
    """
    thresholds, pop_below, train_below = exact_counts(train, population)
    return supremum_from_counts(
        thresholds,
        pop_below,
        train_below,
        n_train=train.n,
        n_population=population.n,
        delta=delta,
        window=window,
        zero_counts=zero_counts,
    )
