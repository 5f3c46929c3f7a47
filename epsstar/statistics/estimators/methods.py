"""The estimator methods of Epsilon*, each a small frozen configuration.

Epsilon* (Definition 2, eq. 7 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine
Learning Models") is the supremum, over loss thresholds ``c`` whose FPR ``t`` and FNR ``η`` both lie
in an admissible window (``(δ, 1-δ)`` by default), of::

    log max(1, (1-δ-η)/t, (1-δ-t)/η, (η-δ)/(1-t), (t-δ)/(1-η))

where ``t`` is the population losses' CDF at ``c`` and ``η`` the training losses'
survival function. The methods differ in how they estimate the two curves and
how they take the supremum; each class below states its own and holds the
options that apply to it, checked on construction (one-line errors ending with
the value). :func:`epsstar.statistics.estimators.estimator.estimate` runs any of them;
:func:`method_config` builds one from a method's name and flat options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeAlias

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import check_in_range, check_positive_int
from epsstar.statistics.estimators.ratio_terms import RateWindow
from epsstar.statistics.fitting.goodness_of_fit import MIN_EVALUATION_SIZE
from epsstar.statistics.fitting.tails import MIN_TAILED_RECORDS
from epsstar.statistics.names import (
    FAMILIES,
    METHODS,
    SEARCHES,
    TAIL_METHODS,
    Family,
    Method,
    Search,
)

__all__ = [
    "CONFIG_TYPES",
    "DEFAULT_LEVEL",
    "MIN_PARAMETRIC_RECORDS",
    "AtomsCrossfit",
    "AtomsTested",
    "Bootstrap",
    "Empirical",
    "EstimatorConfig",
    "Parametric",
    "TailedConfig",
    "Tails",
    "TailsCrossfit",
    "TailsShapeTested",
    "TailsTested",
    "TestedConfig",
    "method_config",
]

#: The leak test's level of the tested methods (the release gate's at confidence 0.95).
DEFAULT_LEVEL = 0.05
#: Each side needs a fitting set and a goodness-of-fit evaluation set.
MIN_PARAMETRIC_RECORDS = 2 * MIN_EVALUATION_SIZE
#: The smallest tail a generalised-Pareto fit accepts.
MIN_TAIL_SIZE = 5


def _check_tail_size(tail_size: int | None) -> None:
    if tail_size is not None:
        check_positive_int("tail_size", tail_size, minimum=MIN_TAIL_SIZE)


@dataclass(frozen=True, slots=True)
class Parametric:
    """Fitted CDFs in a transformed space: the paper's estimator (§3.1, Appendix B).

    The losses are normalised by their pooled range to ``x``, shifted by ``alpha``
    and mapped to ``φ = logit(exp(-(x + alpha)))``; a ``family`` distribution (the
    paper's Normal, or a Gaussian mixture of at most ``max_components`` chosen by
    BIC) is fitted to each side's ``φ``. Both fits are checked by the hold-out KS
    test (``gof_samples`` values drawn from the fit) and the Lilliefors test at
    level ``significance``; the supremum of eq. 7 over the fitted curves is
    located by ``search``: ``"refine"`` (bracketing and zooming) or ``"grid"``
    (the paper's 2 million quantile points, never higher).
    """

    method: ClassVar[Method] = "parametric"
    min_records: ClassVar[int] = MIN_PARAMETRIC_RECORDS

    family: Family = "normal"
    search: Search = "refine"
    alpha: float = 1.0
    max_components: int = 20
    gof_samples: int = 1000
    significance: float = 0.05

    def __post_init__(self) -> None:
        FAMILIES.check(self.family)
        SEARCHES.check(self.search)
        check_in_range("alpha", self.alpha, 0.0, float("inf"))
        check_positive_int("max_components", self.max_components)
        check_positive_int("gof_samples", self.gof_samples)
        check_in_range("significance", self.significance, 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class Empirical:
    """Empirical CDFs: eq. 7 at every observed loss (eqs. 5-6 of the paper).

    ``t(c) = #{population ≤ c} / m`` and ``η(c) = #{train > c} / n``, taken from
    exact counts. The admissible window is ``rate_window = (low, high)`` if given
    (``(0.001, 0.999)`` is the paper's Appendix-B clipping), else ``(δ, 1-δ)``;
    this method alone also accepts δ = 0. No rate below one record's worth is
    ever observed, so at δ ≪ 1/n it cannot see the tails that decide Epsilon*.
    """

    method: ClassVar[Method] = "empirical"
    min_records: ClassVar[int] = 1

    rate_window: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.rate_window is None:
            return
        try:
            low, high = self.rate_window
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"rate_window must be a pair (low, high). Found {self.rate_window!r}."
            ) from None
        low = check_in_range("rate_window low", low, 0.0, 1.0, low_inclusive=True)
        high = check_in_range("rate_window high", high, low, 1.0, high_inclusive=True)
        object.__setattr__(self, "rate_window", (low, high))

    def window(self, delta: float) -> RateWindow:
        """The admissible rates at ``delta``."""
        if self.rate_window is None:
            return RateWindow.for_delta(delta)
        return RateWindow(*self.rate_window)


@dataclass(frozen=True, slots=True)
class Tails:
    """Empirical body, generalised-Pareto tails (:mod:`epsstar.statistics.fitting.tails`).

    Each side's CDF is its interpolated empirical CDF between its ``tail_size``-th
    smallest and largest losses (default ``min(0.2 m, 3 sqrt(m))`` for ``m``
    records); beyond them it is a power of a generalised-Pareto-tailed fit to the
    pooled losses, which extrapolates the rates below 1/n that decide Epsilon* at
    δ ≪ 1/n. The supremum of eq. 7 over thresholds with ``t``, ``η`` in
    ``(δ, 1-δ)`` is then located as for :class:`Parametric`.
    """

    method: ClassVar[Method] = "tails"
    min_records: ClassVar[int] = MIN_TAILED_RECORDS

    tail_size: int | None = None

    def __post_init__(self) -> None:
        _check_tail_size(self.tail_size)


@dataclass(frozen=True, slots=True)
class TailsCrossfit:
    """The :class:`Tails` fits, the test chosen and scored on different halves.

    Both loss sets are split at random into halves ``A`` and ``B``; for each ratio
    of eq. 7 the maximising test is located with ``A``'s fits and scored,
    ``max(0, log ratio)``, with ``B``'s; the halves swap roles, the scores are
    averaged over both and over ``n_splits`` random halvings, and Epsilon* is the
    largest of the four means (:mod:`epsstar.statistics.estimators.crossfit`). This removes
    the upward bias of a supremum over noisy thresholds; each half needs its own
    fit, hence twice the records of :class:`Tails`.
    """

    method: ClassVar[Method] = "tails-crossfit"
    min_records: ClassVar[int] = 2 * MIN_TAILED_RECORDS

    tail_size: int | None = None
    n_splits: int = 1

    def __post_init__(self) -> None:
        _check_tail_size(self.tail_size)
        check_positive_int("n_splits", self.n_splits)


@dataclass(frozen=True, slots=True)
class _TestedTails:
    """The settings :class:`TailsTested` and :class:`TailsShapeTested` share: the tails' size,
    the cross-fitting's splits, the leak test's ``level`` and whether the untested estimate is
    kept. Neither method is the other's subclass, so each is told apart by its type."""

    min_records: ClassVar[int] = 2 * MIN_TAILED_RECORDS

    tail_size: int | None = None
    n_splits: int = 1
    level: float = DEFAULT_LEVEL
    untested: bool = True

    def __post_init__(self) -> None:
        _check_tail_size(self.tail_size)
        check_positive_int("n_splits", self.n_splits)
        check_in_range("level", self.level, 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class TailsTested(_TestedTails):
    """:class:`TailsCrossfit`, or 0 when the held-out exact leak test finds no leak.

    The held-out test (:mod:`epsstar.statistics.bounds.leak_test`) rejects "the model does not
    tell members from non-members" at ``level`` with probability at most ``level`` when
    both loss sets come from one distribution. When it does not reject, the data show no
    leak and Epsilon* is 0; otherwise it is the cross-fitted estimate. A pre-test
    estimator: where nothing leaks it is 0 in at least 1 − ``level`` of audits, instead of
    the positive value sampling noise gives :class:`TailsCrossfit`; a leak too small for
    the test to find at this data size is reported as 0 as well (docs/accuracy.md
    measures both). A bootstrap interval keeps the test's decision on the original records
    (resampling duplicates records, which the test would read as a leak): its replicates
    are the cross-fitted estimate's, and without a leak its low end is 0.

    ``untested=False`` skips the cross-fitted estimate when the test finds no leak (the
    result's ``untested_epsilon`` is then ``None``; Epsilon* is the same): the premise's
    blind baseline, which reports Epsilon* only, runs on every audit.
    """

    method: ClassVar[Method] = "tails-tested"


@dataclass(frozen=True, slots=True)
class TailsShapeTested(_TestedTails):
    """:class:`TailsTested` with the tails' shape chosen by the slope of the ROC curve.

    The held-out leak test and the cross-fitting are :class:`TailsTested`'s, and so are
    losses too discrete for a tail model (the atoms path). Before the cross-fitting, the
    binormal ROC curve of all records is checked for slope 1
    (:mod:`epsstar.statistics.fitting.roc_slope`): where its slope lies within the margin
    of 1, the leak has the Gaussian mechanism's shape and the tails follow the
    equal-variance binormal ROC curve, its shift fitted on each end's half of the records
    (:func:`~epsstar.statistics.fitting.binormal_tails.fit_shift_roc`); elsewhere they are
    :class:`TailsTested`'s power tails. Of summarised losses the checks read each summary's
    uniform random sample, and the shift is fitted on the extremes the summary keeps.
    """

    method: ClassVar[Method] = "tails-shape-tested"


@dataclass(frozen=True, slots=True)
class AtomsCrossfit:
    """Randomised threshold tests at the distinct losses, chosen and scored on different
    halves (:mod:`epsstar.statistics.estimators.atoms`).

    Every distinct loss is a threshold, and a test may call the records at one value
    members at random, so the tests reach the convex hull of the thresholds' (FPR, FNR)
    points, with ties counted exactly; each ratio's best test is chosen on one random half
    and scored on the other, both ways, averaged over ``n_splits`` halvings. Made for
    losses on a few values, where a tail model would smear atoms into a ramp;
    :class:`TailsCrossfit` uses it on such losses. A denominator rate counted 0 is read at
    the data's resolution, so it extrapolates nothing below one record's worth.
    """

    method: ClassVar[Method] = "atoms-crossfit"
    min_records: ClassVar[int] = 2

    n_splits: int = 1

    def __post_init__(self) -> None:
        check_positive_int("n_splits", self.n_splits)


@dataclass(frozen=True, slots=True)
class AtomsTested:
    """:class:`AtomsCrossfit`, or 0 when the held-out exact leak test finds no leak.

    The rule of :class:`TailsTested` (which is this method on losses on a few values): the
    test (:mod:`epsstar.statistics.bounds.leak_test`) is exact for tied losses too, so where
    nothing leaks Epsilon* is 0 in at least 1 − ``level`` of audits, on every loss shape.
    ``untested=False`` skips the cross-fitted estimate when the test finds no leak.
    """

    method: ClassVar[Method] = "atoms-tested"
    min_records: ClassVar[int] = 2

    n_splits: int = 1
    level: float = DEFAULT_LEVEL
    untested: bool = True

    def __post_init__(self) -> None:
        check_positive_int("n_splits", self.n_splits)
        check_in_range("level", self.level, 0.0, 1.0)


EstimatorConfig: TypeAlias = (
    Parametric
    | Empirical
    | Tails
    | TailsCrossfit
    | TailsTested
    | TailsShapeTested
    | AtomsCrossfit
    | AtomsTested
)
#: The methods that hold Epsilon* at 0 unless the held-out leak test finds a leak.
TestedConfig: TypeAlias = TailsTested | TailsShapeTested | AtomsTested
#: The methods that fit tails to continuous losses.
TailedConfig: TypeAlias = Tails | TailsCrossfit | TailsTested | TailsShapeTested
#: Every configuration class, in the order of :data:`~epsstar.statistics.names.METHODS`.
CONFIG_TYPES: tuple[type[EstimatorConfig], ...] = (
    Parametric,
    Empirical,
    Tails,
    TailsCrossfit,
    TailsTested,
    TailsShapeTested,
    AtomsCrossfit,
    AtomsTested,
)


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """A bootstrap interval for Epsilon* at confidence ``level``, e.g. 0.95.

    Both loss sets are resampled with replacement ``n_bootstrap`` times, the
    estimator is rerun on each resample, and the interval is read off the
    replicates' quantiles (:mod:`epsstar.statistics.estimators.bootstrap`); with the tails
    methods' default tail size each replicate also draws its tail size, so the interval
    carries the threshold choice. It shows that spread, not the error of a tail
    extrapolated beyond the data; its coverage is measured, not guaranteed
    (docs/accuracy.md).
    """

    level: float = 0.95
    n_bootstrap: int = 200

    def __post_init__(self) -> None:
        check_in_range("interval", self.level, 0.0, 1.0)
        check_positive_int("n_bootstrap", self.n_bootstrap, minimum=2)


#: Which methods take each option of :func:`method_config` other than ``family``
#: and ``search``, and how an error names them.
_OWNERS: dict[str, tuple[tuple[Method, ...], str]] = {
    "alpha": (("parametric",), "the parametric method"),
    "max_components": (("parametric",), "the parametric method"),
    "gof_samples": (("parametric",), "the parametric method"),
    "significance": (("parametric",), "the parametric method"),
    "rate_window": (("empirical",), "the empirical method"),
    "tail_size": (TAIL_METHODS, "the tails methods"),
    "n_splits": (
        ("tails-crossfit", "tails-tested", "tails-shape-tested", "atoms-crossfit", "atoms-tested"),
        "the cross-fitted methods",
    ),
}


def _refuse_foreign(method: Method, given: dict[str, bool]) -> None:
    """An option given for a method it does not apply to is an error."""
    for option, is_given in given.items():
        owners, described = _OWNERS[option]
        if is_given and method not in owners:
            raise InvalidInputError(
                f"{option} applies to {described} only. Found method={method!r}."
            )


def method_config(
    method: Method,
    *,
    family: Family = "normal",
    search: Search = "refine",
    alpha: float = 1.0,
    max_components: int = 20,
    gof_samples: int = 1000,
    significance: float = 0.05,
    rate_window: tuple[float, float] | None = None,
    tail_size: int | None = None,
    n_splits: int = 1,
) -> EstimatorConfig:
    """The configuration of ``method`` from flat options (``epsilon_star``'s and the CLI's).

    An option of another method is refused when it is given (differs from its
    default), e.g. ``rate_window`` with ``method="tails"``. ``family`` and
    ``search`` must be valid names but are used by the parametric method only:
    the command line passes them with every method.
    """
    name = METHODS.check(method)
    FAMILIES.check(family)
    SEARCHES.check(search)
    defaults = Parametric()
    _refuse_foreign(
        name,
        {
            "alpha": alpha != defaults.alpha,
            "max_components": max_components != defaults.max_components,
            "gof_samples": gof_samples != defaults.gof_samples,
            "significance": significance != defaults.significance,
            "rate_window": rate_window is not None,
            "tail_size": tail_size is not None,
            "n_splits": n_splits != 1,
        },
    )
    if name == "parametric":
        return Parametric(family, search, alpha, max_components, gof_samples, significance)
    if name == "empirical":
        return Empirical(rate_window)
    if name == "tails":
        return Tails(tail_size)
    if name == "tails-tested":
        return TailsTested(tail_size, n_splits)
    if name == "tails-shape-tested":
        return TailsShapeTested(tail_size, n_splits)
    if name == "atoms-crossfit":
        return AtomsCrossfit(n_splits)
    if name == "atoms-tested":
        return AtomsTested(n_splits)
    return TailsCrossfit(tail_size, n_splits)
