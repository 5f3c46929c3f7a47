"""Empirical Epsilon*: eq. 7 with rates from the empirical CDFs.

Every distinct observed loss ``τ`` (of either set) is a threshold; the test
rejects H0 when the loss is ≤ τ, so ``FPR(τ) = #{population ≤ τ} / n_pop`` and
``FNR(τ) = #{train > τ} / n_train`` (eqs. 5-6 of ``epsilon-star-negoescu-2024.md``).
These thresholds reach every (FPR, FNR) pair a loss threshold can produce.
Pairs with a rate outside the admissible window are dropped: ``(δ, 1-δ)`` by
default, or ``(0.001, 0.999)`` as in the paper's Appendix B. Sorting makes it
O(n log n); the logs of the rates come from exact integer counts.
"""

from __future__ import annotations

import numpy as np

from epsstar.statistics._validation import FloatArray
from epsstar.statistics.ratio_terms import RateWindow, Supremum, log_ratio_terms

__all__ = [
    "PAPER_EMPIRICAL_WINDOW",
    "empirical_rates",
    "empirical_supremum",
    "supremum_from_counts",
]

#: The rate window of the paper's empirical estimator (Appendix B).
PAPER_EMPIRICAL_WINDOW = RateWindow(0.001, 0.999)


def _counts(
    train_losses: FloatArray, population_losses: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Distinct losses ascending, with #population ≤ τ and #train ≤ τ at each."""
    train = np.sort(train_losses)
    population = np.sort(population_losses)
    thresholds = np.unique(np.concatenate([train, population]))
    pop_below = np.searchsorted(population, thresholds, side="right").astype(np.float64)
    train_below = np.searchsorted(train, thresholds, side="right").astype(np.float64)
    return thresholds, pop_below, train_below


def empirical_rates(
    train_losses: FloatArray, population_losses: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Thresholds (distinct losses, ascending) with their empirical FPR and FNR."""
    thresholds, pop_below, train_below = _counts(train_losses, population_losses)
    fpr = pop_below / population_losses.size
    fnr = 1.0 - train_below / train_losses.size
    return thresholds, fpr, fnr


def empirical_supremum(
    train_losses: FloatArray,
    population_losses: FloatArray,
    delta: float,
    window: RateWindow | None = None,
) -> Supremum:
    """Epsilon* from the empirical CDFs (inputs already validated, finite, 1-D)."""
    thresholds, pop_below, train_below = _counts(train_losses, population_losses)
    return supremum_from_counts(
        thresholds,
        pop_below,
        train_below,
        n_train=train_losses.size,
        n_population=population_losses.size,
        delta=delta,
        window=window,
    )


def supremum_from_counts(
    thresholds: FloatArray,
    pop_below: FloatArray,
    train_below: FloatArray,
    *,
    n_train: int,
    n_population: int,
    delta: float,
    window: RateWindow | None = None,
) -> Supremum:
    """Eq. 7 at each threshold from the counts of population and training losses at or
    below it (``n_population`` and ``n_train`` records), rates in ``window`` (default
    ``(δ, 1-δ)``)."""
    n_pop, n_tr = float(n_population), float(n_train)
    with np.errstate(divide="ignore"):
        terms = log_ratio_terms(
            np.log(pop_below) - np.log(n_pop),
            np.log(n_pop - pop_below) - np.log(n_pop),
            np.log(n_tr - train_below) - np.log(n_tr),
            np.log(train_below) - np.log(n_tr),
            delta,
            window or RateWindow.for_delta(delta),
        )
    flat = int(np.argmax(terms))
    row, column = divmod(flat, terms.shape[1])
    value = float(terms[row, column])
    if not value > 0:
        nan = float("nan")
        return Supremum(epsilon=0.0, threshold=nan, fpr=nan, fnr=nan, term=0)
    return Supremum(
        epsilon=value,
        threshold=float(thresholds[column]),
        fpr=float(pop_below[column] / n_pop),
        fnr=float((n_tr - train_below[column]) / n_tr),
        term=row + 1,
    )
