"""Goodness of fit of the distributions fitted to transformed losses.

Two tests, both reported, either one flagging a poor fit at level ``significance``:

* the hold-out two-sample Kolmogorov-Smirnov test of Appendix 8.2 of
  Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models": split the values
  into a fitting set and an evaluation set of ``n_samples``; fit on the fitting set; draw
  ``n_samples`` from the fit; compare the draws with the evaluation set (``scipy.stats.ks_2samp``).
  :func:`ks_table` runs it over 1-20 mixture components and 100-1,000 samples, as the paper's
  Figure 6;
* the Lilliefors test of normality (``statsmodels``), a KS test that accounts
  for the mean and sd being estimated, on all values. It speaks to the Normal
  family; for mixtures it is reported for information only. statsmodels takes
  its p-value from a table that caps it to ``[0.001, 0.2]``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from epsstar.exceptions import InsufficientDataError
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics._validation import (
    FloatArray,
    check_in_range,
    check_positive_int,
    finite_vector,
)
from epsstar.statistics.fitting.base import FittedDistribution
from epsstar.statistics.fitting.mixture import GaussianMixtureFit

__all__ = [
    "DEFAULT_SAMPLE_SIZES",
    "MIN_EVALUATION_SIZE",
    "GoodnessOfFit",
    "KSTest",
    "assess_fit",
    "holdout_ks_test",
    "ks_table",
    "lilliefors_test",
]

DEFAULT_SAMPLE_SIZES: tuple[int, ...] = tuple(range(100, 1001, 100))
#: The hold-out KS test needs at least this many values in its evaluation set.
MIN_EVALUATION_SIZE = 25

Fitter = Callable[[FloatArray], FittedDistribution]


@dataclass(frozen=True, slots=True)
class KSTest(JsonRecord):
    """One hold-out two-sample KS test: ``n_samples`` evaluation values vs as many draws."""

    n_samples: int
    n_components: int | None = field(default=None, kw_only=True)
    statistic: float
    pvalue: float


@dataclass(frozen=True, slots=True)
class GoodnessOfFit(JsonRecord):
    """Both tests for one fitted side, and whether the fit is poor (its JSON writes the KS
    test's numbers flat, as ``ks_*``, after the verdict ``poor_fit``)."""

    family: str = field(metadata=json_rule(skip=True))
    significance: float
    ks: KSTest = field(metadata=json_rule(skip=True))
    lilliefors_pvalue: float
    lilliefors_statistic: float

    @property
    def ks_rejects(self) -> bool:
        return self.ks.pvalue < self.significance

    @property
    def lilliefors_rejects(self) -> bool:
        return self.lilliefors_pvalue < self.significance

    @json_property(after="ks")
    def poor_fit(self) -> bool:
        """A test that applies to the family rejects it."""
        return self.ks_rejects or (self.family == "normal" and self.lilliefors_rejects)

    @json_property(after="ks")
    def ks_pvalue(self) -> float:
        return self.ks.pvalue

    @json_property(after="ks")
    def ks_statistic(self) -> float:
        return self.ks.statistic

    @json_property(after="ks")
    def ks_n_samples(self) -> int:
        return self.ks.n_samples

    def describe_rejections(self) -> list[str]:
        reasons = []
        if self.ks_rejects:
            reasons.append(
                f"hold-out KS p = {self.ks.pvalue:.3g} (n_samples = {self.ks.n_samples})"
            )
        if self.family == "normal" and self.lilliefors_rejects:
            reasons.append(f"Lilliefors p = {self.lilliefors_pvalue:.3g}")
        return reasons


def _evaluation_size(n_values: int, n_samples: int) -> int:
    size = min(n_samples, n_values // 2)
    if size < MIN_EVALUATION_SIZE:
        raise InsufficientDataError(
            f"a goodness-of-fit test needs at least {2 * MIN_EVALUATION_SIZE} values. "
            f"Found {n_values}."
        )
    return size


def holdout_ks_test(
    values: ArrayLike,
    fitter: Fitter,
    *,
    n_samples: int = 1000,
    rng: np.random.Generator,
    n_components: int | None = None,
) -> KSTest:
    """Appendix 8.2: fit on all but ``n_samples`` values, KS-compare draws with the rest.

    ``n_samples`` shrinks to half the data when there are fewer than ``2 * n_samples`` values.
    """
    data = finite_vector("values", values)
    size = _evaluation_size(data.size, check_positive_int("n_samples", n_samples))
    shuffled = rng.permutation(data)
    evaluation, fitting = shuffled[:size], shuffled[size:]
    draws = fitter(fitting).sample(size, rng)
    result = stats.ks_2samp(evaluation, draws)
    return KSTest(
        n_samples=size,
        statistic=float(result.statistic),
        pvalue=float(result.pvalue),
        n_components=n_components,
    )


def lilliefors_test(values: ArrayLike) -> tuple[float, float]:
    """(statistic, p-value) of the Lilliefors test of normality."""
    from statsmodels.stats.diagnostic import lilliefors

    data = finite_vector("values", values, min_size=4)
    statistic, pvalue = lilliefors(data, dist="norm", pvalmethod="table")
    return float(statistic), float(pvalue)


def assess_fit(
    values: ArrayLike,
    family: str,
    fitter: Fitter,
    *,
    n_samples: int = 1000,
    significance: float = 0.05,
    seed: int = 0,
) -> GoodnessOfFit:
    """Run both tests for ``values`` fitted by ``fitter`` (the family used for Epsilon*)."""
    significance = check_in_range("significance", significance, 0.0, 1.0)
    ks = holdout_ks_test(values, fitter, n_samples=n_samples, rng=np.random.default_rng(seed))
    statistic, pvalue = lilliefors_test(values)
    return GoodnessOfFit(
        family=family,
        ks=ks,
        lilliefors_statistic=statistic,
        lilliefors_pvalue=pvalue,
        significance=significance,
    )


def ks_table(
    values: ArrayLike,
    *,
    components: Iterable[int] = range(1, 21),
    sample_sizes: Iterable[int] = DEFAULT_SAMPLE_SIZES,
    seed: int = 0,
) -> tuple[KSTest, ...]:
    """Appendix 8.2's grid: hold-out KS p-values of k-component mixtures for each sample size."""
    data = finite_vector("values", values)
    rng = np.random.default_rng(seed)
    results = []
    for n_samples in sample_sizes:
        for k in components:
            fitter = partial(GaussianMixtureFit.fit_components, n_components=k, seed=seed)
            results.append(
                holdout_ks_test(data, fitter, n_samples=n_samples, rng=rng, n_components=k)
            )
    return tuple(results)
