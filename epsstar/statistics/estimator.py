"""Epsilon* of one model instance from its training and population losses.

``method="tails-crossfit"`` (:mod:`epsstar.statistics.crossfit`): the tails fits, but the
maximising test is chosen on one random half of the data and its ratio of
eq. 7 scored with the fits to the other half (both ways, averaged), which
removes the upward selection bias of the supremum when little or nothing leaks.

``method="tails"`` (:mod:`epsstar.statistics.fitting.tails`): each side's interpolated
empirical CDF in the body, and beyond its ``k``-th most extreme loss on each
side a power of a generalised-Pareto-tailed fit to the pooled losses; the
supremum of eq. 7 over thresholds with FPR and FNR in ``(δ, 1-δ)`` is taken as
for the parametric method. It extrapolates the tails that decide Epsilon* at
δ ≪ 1/n (``docs/accuracy.md`` measures it against the other two).

``method="parametric"`` (``epsilon-star-negoescu-2024.md`` §3.1, Appendix B):
transform the losses (:mod:`epsstar.statistics.transform`), fit a distribution to each
side in the transformed space (``family="normal"``, the paper's estimator, or
``"gmm"``), check both fits (:mod:`epsstar.statistics.goodness_of_fit`), and take the
supremum of eq. 7 over all thresholds with FPR and FNR in ``(δ, 1-δ)``
(:mod:`epsstar.statistics.optimizer`). ``method="empirical"``: eq. 7 at every observed
loss with rates from the empirical CDFs (:mod:`epsstar.statistics.empirical`).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

import numpy as np
from numpy.typing import ArrayLike

from epsstar.exceptions import DegenerateDataError, InvalidInputError, PoorFitWarning
from epsstar.statistics._validation import (
    FloatArray,
    check_delta,
    check_in_range,
    check_positive_int,
    finite_vector,
)
from epsstar.statistics.crossfit import crossfit_epsilon
from epsstar.statistics.empirical import empirical_supremum
from epsstar.statistics.fitting import FittedDistribution, GaussianMixtureFit, NormalFit, Reflected
from epsstar.statistics.fitting.tails import MIN_TAILED_RECORDS, RelativeTailed, fit_relative_tails
from epsstar.statistics.goodness_of_fit import MIN_EVALUATION_SIZE, assess_fit
from epsstar.statistics.names import (
    DEFAULT_METHOD,
    FAMILIES,
    METHODS,
    SEARCHES,
    Family,
    Method,
    Search,
)
from epsstar.statistics.optimizer import grid_supremum, parametric_supremum
from epsstar.statistics.ratio_terms import RateWindow, Supremum
from epsstar.statistics.results import EpsilonStarResult, FitReport
from epsstar.statistics.transform import LossTransform

__all__ = [
    "DEFAULT_METHOD",
    "FAMILIES",
    "METHODS",
    "MIN_PARAMETRIC_RECORDS",
    "MIN_RECORDS",
    "SEARCHES",
    "default_delta",
    "epsilon_star",
]

#: Each side needs a fitting set and a goodness-of-fit evaluation set.
MIN_PARAMETRIC_RECORDS = 2 * MIN_EVALUATION_SIZE

#: Fewest losses per side each method accepts.
MIN_RECORDS: Final[Mapping[str, int]] = MappingProxyType(
    {
        "parametric": MIN_PARAMETRIC_RECORDS,
        "empirical": 1,
        "tails": MIN_TAILED_RECORDS,
        # Each half is fitted on its own.
        "tails-crossfit": 2 * MIN_TAILED_RECORDS,
    }
)


def default_delta(n_train: int) -> float:
    """δ = 1/(n ln n), the paper's choice for a training set of n records (§4.1)."""
    if n_train < 3:
        raise InvalidInputError(
            f"the default delta needs at least 3 training records. Found {n_train}."
        )
    return float(1.0 / (n_train * np.log(n_train)))


def _fitter(
    family: str, max_components: int, seed: int
) -> Callable[[FloatArray], FittedDistribution]:
    if family == "normal":
        return NormalFit.fit

    def fit_mixture(values: FloatArray) -> FittedDistribution:
        return GaussianMixtureFit.fit(values, max_components=max_components, seed=seed)

    return fit_mixture


def epsilon_star(
    train_losses: ArrayLike,
    population_losses: ArrayLike,
    *,
    delta: float,
    method: Method = DEFAULT_METHOD,
    family: Family = "normal",
    seed: int = 0,
    alpha: float = 1.0,
    max_components: int = 20,
    gof_samples: int = 1000,
    significance: float = 0.05,
    rate_window: tuple[float, float] | None = None,
    search: Search = "refine",
    tail_size: int | None = None,
    n_splits: int = 1,
    interval: float | None = None,
    n_bootstrap: int = 200,
) -> EpsilonStarResult:
    """Epsilon*, the empirical lower bound on the (ε, δ) of one model instance.

    Parameters
    ----------
    train_losses, population_losses
        Per-record losses of the model on its training data and on non-training
        data from the same distribution (members are expected to have lower loss).
    delta
        The δ of the (ε, δ) statement, in (0, 0.5) (``[0, 0.5)`` for the empirical
        method). The paper recommends δ ≪ 1/n; :func:`default_delta` gives 1/(n ln n).
    method
        ``"parametric"`` (fitted CDFs), ``"empirical"`` (empirical CDFs),
        ``"tails"`` (empirical body, extrapolated tails) or ``"tails-crossfit"``
        (the same fits, test chosen and scored on different halves);
        :data:`DEFAULT_METHOD` if not given.
    family
        Parametric family fitted to the transformed losses: ``"normal"`` (the
        paper's) or ``"gmm"`` (Gaussian mixture, components chosen by BIC).
    seed
        Seeds the mixture fits and the goodness-of-fit split and draws.
    alpha
        Shift of the loss transform (Appendix B, step 2).
    max_components, gof_samples, significance
        Mixture size limit; evaluation-set size and level of the goodness-of-fit tests.
    rate_window
        Empirical method only: admissible (FPR, FNR) interval instead of
        ``(δ, 1-δ)``; ``(0.001, 0.999)`` reproduces the paper's clipping.
    search
        Parametric method only: ``"refine"`` locates the supremum by bracketing
        and refinement; ``"grid"`` is the paper's procedure (2 million quantile
        points), slower and never higher.
    tail_size
        ``"tails"`` and ``"tails-crossfit"`` only: records per tail and side
        (default ``min(0.2 m, 3 sqrt(m))`` for m records per fit).
    n_splits
        ``"tails-crossfit"`` only: independent random halvings averaged.
    interval, n_bootstrap
        A confidence level in (0, 1), e.g. 0.95, adds a bootstrap interval for
        Epsilon* (``result.interval``) from ``n_bootstrap`` resamples of both
        loss sets (:mod:`epsstar.statistics.bootstrap`); off by default (it costs
        ``n_bootstrap`` more estimates).

    A rejected goodness-of-fit test is recorded in the result (``poor_fit``) and
    raises a :class:`~epsstar.exceptions.PoorFitWarning`.
    """
    if method not in METHODS:
        raise InvalidInputError(f"method must be one of {', '.join(METHODS)}. Found {method!r}.")
    parametric = method == "parametric"
    if parametric and family not in FAMILIES:
        raise InvalidInputError(f"family must be one of {', '.join(FAMILIES)}. Found {family!r}.")
    if search not in SEARCHES:
        raise InvalidInputError(f"search must be one of {', '.join(SEARCHES)}. Found {search!r}.")
    if rate_window is not None and method != "empirical":
        raise InvalidInputError(
            f"rate_window applies to the empirical method only. Found method={method!r}."
        )
    tailed = method in ("tails", "tails-crossfit")
    if tail_size is not None and not tailed:
        raise InvalidInputError(
            f"tail_size applies to the tails methods only. Found method={method!r}."
        )
    n_splits = check_positive_int("n_splits", n_splits)
    if n_splits != 1 and method != "tails-crossfit":
        raise InvalidInputError(
            f"n_splits applies to the tails-crossfit method only. Found method={method!r}."
        )
    if interval is not None:
        interval = check_in_range("interval", interval, 0.0, 1.0)
    minimum = MIN_RECORDS[method]
    train = finite_vector("train_losses", train_losses, min_size=minimum)
    population = finite_vector("population_losses", population_losses, min_size=minimum)
    delta = check_delta(delta, allow_zero=method == "empirical")
    window = RateWindow.for_delta(delta)
    if rate_window is not None:
        low, high = rate_window
        low = check_in_range("rate_window low", low, 0.0, 1.0, low_inclusive=True)
        high = check_in_range("rate_window high", high, low, 1.0, high_inclusive=True)
        window = RateWindow(low, high)
    seed = int(seed)
    options = {
        "method": method,
        "family": family,
        "seed": seed,
        "alpha": alpha,
        "max_components": max_components,
        "gof_samples": gof_samples,
        "significance": significance,
        "window": window,
        "search": search,
        "tail_size": tail_size,
        "n_splits": n_splits,
    }
    result = _estimate(train, population, delta, **options)  # type: ignore[arg-type]
    if interval is None:
        return result
    from epsstar.statistics.bootstrap import bootstrap_interval

    def point(a: FloatArray, b: FloatArray) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PoorFitWarning)
            return _estimate(a, b, delta, **options).epsilon  # type: ignore[arg-type]

    found = bootstrap_interval(
        train, population, point, result.epsilon, level=interval, n_bootstrap=n_bootstrap, seed=seed
    )
    return dataclasses.replace(result, interval=found)


def _estimate(
    train: FloatArray,
    population: FloatArray,
    delta: float,
    *,
    method: Method,
    family: Family,
    seed: int,
    alpha: float,
    max_components: int,
    gof_samples: int,
    significance: float,
    window: RateWindow,
    search: Search,
    tail_size: int | None,
    n_splits: int,
) -> EpsilonStarResult:
    """One point estimate from validated inputs; ``window`` bounds the admissible rates."""
    if method in ("tails", "tails-crossfit"):
        LossTransform.from_losses(train, population)  # refuses pooled losses that are all equal
        for side, losses in (("train", train), ("population", population)):
            if losses.min() == losses.max():
                raise DegenerateDataError(
                    f"{side} losses: all {losses.size} values are equal, so no distribution "
                    f"can be fitted to them. Found every loss = {losses[0]:g}."
                )
        discrete = _discrete_losses(train, population)
        if discrete is not None:
            return _estimate_empirical(
                train,
                population,
                delta,
                window=window,
                seed=seed,
                note=f"{discrete}; the {method} method needs continuous losses, so Epsilon* is "
                "the empirical estimate, exact for losses with few distinct values",
            )
        train_fit, population_fit = fit_relative_tails(train, population, tail_size=tail_size)
        found = parametric_supremum(train_fit, population_fit, delta)
        extra: dict[str, Any] = {}
        if method == "tails-crossfit":

            def fit_half(a: FloatArray, b: FloatArray) -> tuple[RelativeTailed, RelativeTailed]:
                return fit_relative_tails(a, b, tail_size=tail_size)

            cross = crossfit_epsilon(
                train, population, delta, fit_half, n_splits=n_splits, seed=seed
            )
            extra = {"plug_in_epsilon": found.epsilon, "crossfit_scores": cross.ratio_scores}
            # The full-sample fit still locates the test; Epsilon* is the cross-fitted score.
            found = dataclasses.replace(found, epsilon=cross.epsilon)
            if not cross.epsilon > 0:
                found = Supremum(0.0, float("nan"), float("nan"), float("nan"), 0)
        return _located(
            found,
            train,
            population,
            delta=delta,
            method=method,
            window=window,
            seed=seed,
            tail_fits={"train": train_fit.to_dict(), "population": population_fit.to_dict()},
            **extra,
        )

    if method == "empirical":
        return _estimate_empirical(train, population, delta, window=window, seed=seed)

    transform = LossTransform.from_losses(train, population, alpha=alpha)
    fitter = _fitter(family, max_components, seed)
    reports: dict[str, FitReport] = {}
    for index, (side, losses) in enumerate((("train", train), ("population", population))):
        phi = transform.forward(losses)
        try:
            fit = fitter(phi)
        except DegenerateDataError as error:
            raise DegenerateDataError(f"{side} losses: {error}") from None
        gof = assess_fit(
            phi, family, fitter, n_samples=gof_samples, significance=significance, seed=seed + index
        )
        reports[side] = FitReport(fit=fit, goodness_of_fit=gof)
        if gof.poor_fit:
            warnings.warn(
                PoorFitWarning(
                    f"the {family} fit to the {side} losses is poor at level {significance:g} ("
                    + "; ".join(gof.describe_rejections())
                    + "); Epsilon* rests on its tails"
                ),
                stacklevel=3,
            )
    # phi decreases with the loss; its reflection is loss-ordered (members below the threshold).
    supremum = parametric_supremum if search == "refine" else grid_supremum
    found = supremum(Reflected(reports["train"].fit), Reflected(reports["population"].fit), delta)
    phi_threshold = -found.threshold
    return _located(
        found,
        train,
        population,
        delta=delta,
        method=method,
        window=window,
        seed=seed,
        family=family,
        threshold=float(transform.inverse(phi_threshold)) if found.term else float("nan"),
        threshold_transformed=phi_threshold if found.term else None,
        transform=transform,
        fits=reports,
    )


def _estimate_empirical(
    train: FloatArray,
    population: FloatArray,
    delta: float,
    *,
    window: RateWindow,
    seed: int,
    note: str | None = None,
) -> EpsilonStarResult:
    """The empirical estimate (every observed loss a threshold), with an optional note."""
    found = empirical_supremum(train, population, delta, window)
    return _located(
        found,
        train,
        population,
        delta=delta,
        method="empirical",
        window=window,
        seed=seed,
        note=note,
    )


def _discrete_losses(train: FloatArray, population: FloatArray) -> str | None:
    """Why the losses are too discrete for a tail model, or ``None`` if they are not.

    A tail holds up to 3·sqrt(n) records. A side with fewer distinct values than
    that, or whose smallest and largest values each repeat at least that often (both
    tails are single values), has atoms the interpolated body of the tail model
    would smear into a continuous CDF, inventing ratios between them. Saturated
    probabilities, clipped to the same loss at both ends, are the usual cause; an
    atom at one end only (confident correct predictions) leaves the other tail to
    model and is kept.
    """
    for side, losses in (("train", train), ("population", population)):
        limit = 3.0 * np.sqrt(losses.size)
        distinct = np.unique(losses).size
        if distinct < limit:
            return (
                f"the {side} losses take {distinct} distinct values among {losses.size:,} "
                f"(fewer than 3·sqrt(n) = {limit:.0f})"
            )
        low = int(np.count_nonzero(losses == losses.min()))
        high = int(np.count_nonzero(losses == losses.max()))
        if min(low, high) >= limit:
            return (
                f"the {side} losses repeat their smallest value {low:,} times and their largest "
                f"{high:,} times among {losses.size:,} (both tails are single values)"
            )
    return None


def _located(
    found: Supremum,
    train: FloatArray,
    population: FloatArray,
    *,
    delta: float,
    method: str,
    window: RateWindow,
    seed: int,
    **details: Any,
) -> EpsilonStarResult:
    """The result for a located supremum; ``details`` override or add fields."""
    fields: dict[str, Any] = {
        "epsilon": found.epsilon,
        "delta": delta,
        "method": method,
        "family": None,
        "fpr": found.fpr,
        "fnr": found.fnr,
        "threshold": found.threshold,
        "threshold_transformed": None,
        "attained_by": found.term_name,
        "n_train": train.size,
        "n_population": population.size,
        "rate_window": (window.low, window.high),
        "seed": seed,
    }
    return EpsilonStarResult(**(fields | details))
