"""Epsilon* of one model instance from its training and population losses.

:func:`estimate` runs one method, described by its frozen configuration
(:mod:`epsstar.statistics.estimators.methods`), and :func:`epsilon_star` is the convenient
entry point that also takes a method by its name (with its defaults) and an interval by its
level. Each side's losses are read through the operations of
:class:`~epsstar.statistics.summaries.protocols.Losses`, the same whether every loss is held
or summarised.

``TailsCrossfit`` (:mod:`epsstar.statistics.estimators.crossfit`): the tails fits, but the
maximising test is chosen on one random half of the data and its ratio of
eq. 7 scored with the fits to the other half (both ways, averaged), which
removes the upward selection bias of the supremum when little or nothing leaks.

``TailsShapeTested``: ``TailsTested`` with the tails' shape chosen by the slope of the binormal
ROC curve of all records (:func:`_tail_shape`): the equal-variance binormal ROC curve
(:func:`~epsstar.statistics.fitting.binormal_tails.fit_shift_roc`) where it is 1, the power
tails elsewhere.

``Tails`` (:mod:`epsstar.statistics.fitting.tails`): each side's interpolated
empirical CDF in the body, and beyond its ``k``-th most extreme loss on each
side a power of a generalised-Pareto-tailed fit to the pooled losses; the
supremum of eq. 7 over thresholds with FPR and FNR in ``(δ, 1-δ)`` is taken as
for the parametric method. It extrapolates the tails that decide Epsilon* at
δ ≪ 1/n (``docs/accuracy.md`` measures it against the other two).

``Parametric`` (§3.1 and Appendix B of Negoescu et al. 2024, "Epsilon*: Privacy Metric for
Machine Learning Models"): transform the losses (:mod:`epsstar.statistics.transform`), fit a
distribution to each side in the transformed space (``family="normal"``, the paper's estimator, or
``"gmm"``), check both fits (:mod:`epsstar.statistics.fitting.goodness_of_fit`), and take the
supremum of eq. 7 over all thresholds with FPR and FNR in ``(δ, 1-δ)``
(:mod:`epsstar.statistics.estimators.optimizer`). ``Empirical``: eq. 7 at every observed loss with
rates from the empirical CDFs (:mod:`epsstar.statistics.estimators.empirical`).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final

import numpy as np

from epsstar.exceptions import (
    DegenerateDataError,
    InsufficientDataError,
    InvalidInputError,
    PoorFitWarning,
)
from epsstar.statistics._validation import FloatArray, check_delta, check_positive_int
from epsstar.statistics.bounds.leak_test import LeakTest, held_out_leak_test
from epsstar.statistics.estimators.atoms import (
    AtomTest,
    Vertices,
    atoms_crossfit,
    atoms_halves,
    atoms_supremum,
    denominator_rate,
)
from epsstar.statistics.estimators.crossfit import (
    FPR_DENOMINATOR_TERMS,
    CrossFit,
    crossfit_fits,
    crossfit_score,
)
from epsstar.statistics.estimators.empirical import (
    ZeroCounts,
    median_unbiased_zero_rate,
    sketch_supremum,
    supremum_from_counts,
)
from epsstar.statistics.estimators.methods import (
    CONFIG_TYPES,
    MIN_PARAMETRIC_RECORDS,
    AtomsCrossfit,
    AtomsTested,
    Bootstrap,
    Empirical,
    EstimatorConfig,
    Parametric,
    TailedConfig,
    Tails,
    TailsCrossfit,
    TailsShapeTested,
    TailsTested,
    TestedConfig,
    method_config,
)
from epsstar.statistics.estimators.optimizer import grid_supremum, parametric_supremum
from epsstar.statistics.estimators.ratio_terms import RateWindow, Supremum
from epsstar.statistics.fitting import FittedDistribution, GaussianMixtureFit, NormalFit, Reflected
from epsstar.statistics.fitting.binormal_tails import BinormalTailed, fit_shift_roc
from epsstar.statistics.fitting.goodness_of_fit import assess_fit
from epsstar.statistics.fitting.roc_bend import BEND_ERRORS, tail_bend
from epsstar.statistics.fitting.roc_slope import (
    SLOPE_ERRORS,
    SLOPE_MARGIN,
    fewest_records_a_side,
    roc_slope,
)
from epsstar.statistics.fitting.tails import RelativeTailed, fit_relative_tails
from epsstar.statistics.names import (
    DEFAULT_METHOD,
    FAMILIES,
    METHODS,
    SEARCHES,
    Family,
    Method,
    Search,
)
from epsstar.statistics.results import EpsilonStarResult, FitReport
from epsstar.statistics.summaries.loss_summary import LossesLike, as_losses
from epsstar.statistics.summaries.loss_values import LossValues
from epsstar.statistics.summaries.protocols import Atoms, Losses, Sample
from epsstar.statistics.transform import LossTransform

__all__ = [
    "DEFAULT_METHOD",
    "FAMILIES",
    "METHODS",
    "MIN_PARAMETRIC_RECORDS",
    "MIN_RECORDS",
    "SEARCHES",
    "Bootstrap",
    "Empirical",
    "EstimatorConfig",
    "Family",
    "Method",
    "Parametric",
    "Search",
    "Tails",
    "TailsCrossfit",
    "TailsShapeTested",
    "TailsTested",
    "default_delta",
    "epsilon_star",
    "estimate",
    "estimate_at_deltas",
]

#: Smallest scale of the default tail size a bootstrap replicate draws (see ``_tail_scales``).
TAIL_SCALE_LOW: Final = 0.1

#: Fewest losses per side each method accepts.
MIN_RECORDS: Final[Mapping[str, int]] = MappingProxyType(
    {config.method: config.min_records for config in CONFIG_TYPES}
)


def default_delta(n_train: int) -> float:
    """δ = 1/(n ln n), the paper's choice for a training set of n records (§4.1)."""
    if n_train < 3:
        raise InvalidInputError(
            f"the default delta needs at least 3 training records. Found {n_train}."
        )
    return float(1.0 / (n_train * np.log(n_train)))


def estimate(
    train_losses: LossesLike,
    population_losses: LossesLike,
    config: EstimatorConfig,
    *,
    delta: float | None = None,
    seed: int = 0,
    interval: Bootstrap | None = None,
) -> EpsilonStarResult:
    """Epsilon* by the method ``config`` describes, e.g. ``estimate(a, b, Tails(), delta=1e-5)``.

    ``delta`` defaults to :func:`default_delta` of the number of training losses
    (``[0, 0.5)`` is accepted for :class:`Empirical`, ``(0, 0.5)`` otherwise).
    ``seed`` seeds the mixture fits, the goodness-of-fit split and draws, the
    cross-fitting halves and the bootstrap; it is recorded in the result.
    ``interval`` adds a bootstrap interval (``result.interval``) at the cost of
    ``interval.n_bootstrap`` more estimates. A rejected goodness-of-fit test is
    recorded in the result (``poor_fit``) and raises a
    :class:`~epsstar.exceptions.PoorFitWarning`. Either side may be a
    :class:`~epsstar.statistics.summaries.loss_summary.LossSummary` of losses too many to hold, for
    the tails methods and the empirical one, without an interval: its halves are its own
    and the body of its distribution is read on its grid.
    """
    return _estimate(train_losses, population_losses, config, delta, seed, interval)


def estimate_at_deltas(
    train_losses: LossesLike,
    population_losses: LossesLike,
    config: EstimatorConfig,
    deltas: tuple[float, ...],
    *,
    seed: int = 0,
) -> list[EpsilonStarResult]:
    """:func:`estimate` at each of ``deltas`` (no interval), equal to separate calls.

    The tails and atoms methods fit their distributions (count their halves) once for
    every δ (only the supremum and the cross-fitted scores depend on δ); the other methods
    are rerun per δ.
    """
    if isinstance(config, Parametric | Empirical):
        return [_estimate(train_losses, population_losses, config, d, seed, None) for d in deltas]
    seed = check_positive_int("seed", seed, minimum=0)
    train = _losses("train_losses", train_losses, config)
    population = _losses("population_losses", population_losses, config)
    checked = tuple(check_delta(d) for d in deltas)
    return _tailed_at(train, population, checked, config, seed)


def epsilon_star(
    train_losses: LossesLike,
    population_losses: LossesLike,
    *,
    delta: float,
    method: Method | EstimatorConfig = DEFAULT_METHOD,
    seed: int = 0,
    interval: float | Bootstrap | None = None,
) -> EpsilonStarResult:
    """Epsilon* of one model instance (:data:`epsstar.statistics.definition.DEFINITION`).

    Parameters
    ----------
    train_losses, population_losses
        Per-record losses of the model on its training data and on non-training
        data from the same distribution (members are expected to have lower loss).
    delta
        The δ of the (ε, δ) statement, in (0, 0.5) (``[0, 0.5)`` for the empirical
        method). The paper recommends δ ≪ 1/n; :func:`default_delta` gives 1/(n ln n).
    method
        The method's configuration (:mod:`epsstar.statistics.estimators.methods`), which
        holds the options that apply to it: :class:`Parametric` (fitted CDFs, the paper's
        estimator: ``family``, ``search``, ``alpha``, ``max_components``, ``gof_samples``,
        ``significance``), :class:`Empirical` (empirical CDFs: ``rate_window``),
        :class:`Tails` (empirical body, extrapolated tails: ``tail_size``),
        :class:`TailsCrossfit` (the same fits, test chosen and scored on different halves:
        ``tail_size``, ``n_splits``), :class:`TailsTested` (cross-fitted, 0 unless the
        held-out leak test finds a leak: also ``level``), :class:`TailsShapeTested` (the
        same, with Gaussian-shift tails where the ROC curve's slope is 1) or the atoms
        methods; or a method's name (:data:`METHODS`) for its defaults.
        :data:`DEFAULT_METHOD` if not given.
    seed
        Seeds the mixture fits, goodness-of-fit draws, cross-fitting halves and bootstrap.
    interval
        A confidence level in (0, 1), e.g. 0.95, adds a bootstrap interval for Epsilon*
        (``result.interval``) from 200 resamples of both loss sets; a :class:`Bootstrap`
        also sets their number (:mod:`epsstar.statistics.estimators.bootstrap`; tails
        replicates draw the tail size, ``_tail_scales``). Off by default (each resample is
        one more estimate).

    A rejected goodness-of-fit test is recorded in the result (``poor_fit``) and raises a
    :class:`~epsstar.exceptions.PoorFitWarning`.
    """
    bootstrap = interval if isinstance(interval, Bootstrap | None) else Bootstrap(interval)
    return _estimate(train_losses, population_losses, _config(method), delta, seed, bootstrap)


def _config(method: Method | EstimatorConfig) -> EstimatorConfig:
    """The configuration ``method`` is, or names (with the method's defaults)."""
    if isinstance(method, Parametric | Empirical | TailedConfig | AtomsCrossfit | AtomsTested):
        return method
    return method_config(method)


def _estimate(
    train_losses: LossesLike,
    population_losses: LossesLike,
    config: EstimatorConfig,
    delta: float | None,
    seed: int,
    interval: Bootstrap | None,
) -> EpsilonStarResult:
    """:func:`estimate`; both public functions call it directly, so that the stack level of
    a :class:`~epsstar.exceptions.PoorFitWarning` points at their caller."""
    if not isinstance(config, CONFIG_TYPES):
        kinds = ", ".join(kind.__name__ for kind in CONFIG_TYPES)
        raise InvalidInputError(f"config must be one of {kinds}. Found {config!r}.")
    if interval is not None and not isinstance(interval, Bootstrap):
        raise InvalidInputError(f"interval must be a Bootstrap or None. Found {interval!r}.")
    seed = check_positive_int("seed", seed, minimum=0)
    train = _losses("train_losses", train_losses, config)
    population = _losses("population_losses", population_losses, config)
    if delta is None:
        delta = default_delta(train.n)
    delta = check_delta(delta, allow_zero=isinstance(config, Empirical))
    result = _point(train, population, delta, config, seed)
    for side, report in result.fits.items():
        gof = report.goodness_of_fit
        if gof.poor_fit:
            warnings.warn(
                PoorFitWarning(
                    f"the {gof.family} fit to the {side} losses is poor at level "
                    f"{gof.significance:g} ({'; '.join(gof.describe_rejections())}); "
                    "Epsilon* rests on its tails"
                ),
                stacklevel=3,
            )
    if interval is None:
        return result
    train_values, population_values = train.values, population.values
    if train_values is None or population_values is None:
        raise InvalidInputError(
            "a bootstrap interval resamples every loss; it is not available for summarised "
            "losses. Found an interval asked for."
        )
    return _with_interval(result, train_values, population_values, config, seed, interval)


def _with_interval(
    result: EpsilonStarResult,
    train: FloatArray,
    population: FloatArray,
    config: EstimatorConfig,
    seed: int,
    interval: Bootstrap,
) -> EpsilonStarResult:
    """``result`` with the bootstrap interval of its estimate (:class:`Bootstrap`)."""
    from epsstar.statistics.estimators.bootstrap import bootstrap_interval

    # tails-tested: the leak test decides once, on the original records (resampling with
    # replacement duplicates records, and a duplicate on both sides of the test's split
    # would read as a leak); the replicates measure the cross-fitted estimate's spread.
    # tails-shape-tested: the shape is chosen once too, on the original records.
    tested = isinstance(config, TestedConfig)
    resampled: EstimatorConfig = config
    shape: _TailShape | None = None
    if isinstance(config, TailsTested | TailsShapeTested):
        resampled = TailsCrossfit(config.tail_size, config.n_splits)
    elif isinstance(config, AtomsTested):
        resampled = AtomsCrossfit(config.n_splits)
    if isinstance(config, TailsShapeTested) and result.method == config.method:
        shape = _chosen_shape(result, train, population)
    point = (
        result.untested_epsilon
        if tested and result.untested_epsilon is not None
        else result.epsilon
    )
    delta = result.delta
    scales = iter(_tail_scales(resampled, interval.n_bootstrap, seed))

    def replicate(a: FloatArray, b: FloatArray) -> float:
        resample = LossValues(a), LossValues(b)
        if shape is not None:
            assert isinstance(resampled, TailsCrossfit)
            scale = next(scales)
            return _tails_at(*resample, (delta,), resampled, seed, scale, shape)[0].epsilon
        return _point(*resample, delta, resampled, seed, tail_scale=next(scales)).epsilon

    found = bootstrap_interval(
        train,
        population,
        replicate,
        point,
        level=interval.level,
        n_bootstrap=interval.n_bootstrap,
        seed=seed,
    )
    if tested and result.epsilon == 0.0:
        # No leak found: 0 is consistent with the data, so the interval reaches down to it.
        found = dataclasses.replace(found, low=0.0)
    return dataclasses.replace(result, interval=found)


def _losses(name: str, values: LossesLike, config: EstimatorConfig) -> Losses:
    """Finite losses (or their summary, for the tails methods and the empirical one), at
    least ``config.min_records``; a refusal names the empirical method's minimum when it
    is lower."""
    losses = as_losses(values, name, min_size=0)
    if losses.values is None and isinstance(config, Parametric):
        raise InvalidInputError(
            f"the {config.method} method needs every loss; summarised losses serve the "
            f"tails methods and the empirical one. Found {name} summarised."
        )
    fewest = Empirical.min_records
    if losses.n < config.min_records:
        hint = "" if config.min_records <= fewest else f" (--method empirical needs {fewest})"
        raise InsufficientDataError(
            f"{name} needs at least {config.min_records} value{'s' * (config.min_records > 1)} "
            f"for the {config.method} method{hint}. Found {losses.n}."
        )
    return losses


def _point(
    train: Losses,
    population: Losses,
    delta: float,
    config: EstimatorConfig,
    seed: int,
    *,
    tail_scale: float = 1.0,
) -> EpsilonStarResult:
    """One point estimate from validated inputs (``tail_scale``: see :func:`_tail_scales`)."""
    if isinstance(config, Parametric):
        train_values, population_values = train.values, population.values
        # _losses refuses summarised losses for the parametric method.
        assert train_values is not None
        assert population_values is not None
        return _parametric(train_values, population_values, delta, config, seed)
    if isinstance(config, Empirical):
        return _empirical(train, population, delta, window=config.window(delta), seed=seed)
    return _tailed_at(train, population, (delta,), config, seed, tail_scale=tail_scale)[0]


def _tail_scales(config: EstimatorConfig, n_bootstrap: int, seed: int) -> FloatArray:
    """The scale of the default tail size ``k`` in each bootstrap replicate.

    A tails fit extrapolates beyond its ``k``-th most extreme loss, and where Epsilon*
    is read at rates below 1/n the choice of ``k`` moves the estimate by more than
    resampling does (a power tail fitted where the loss shapes are not yet powers is
    biased). Each replicate of a tails method with the default ``k`` therefore draws
    ``k`` log-uniformly between ``TAIL_SCALE_LOW`` times the default and the default
    (threshold uncertainty of peaks-over-threshold fits; Northrop, Attalides and
    Jonathan 2017, JRSS C 66:93-120), so the interval carries it; a fixed
    ``tail_size`` is kept. ``docs/accuracy.md`` measures the coverage this gives.
    """
    if not isinstance(config, TailedConfig) or config.tail_size is not None:
        return np.ones(n_bootstrap)
    rng = np.random.default_rng([seed, 0x7A11])
    return np.exp(rng.uniform(np.log(TAIL_SCALE_LOW), 0.0, n_bootstrap))


def _fitter(
    family: str, max_components: int, seed: int
) -> Callable[[FloatArray], FittedDistribution]:
    if family == "normal":
        return NormalFit.fit

    def fit_mixture(values: FloatArray) -> FittedDistribution:
        return GaussianMixtureFit.fit(values, max_components=max_components, seed=seed)

    return fit_mixture


def _fit_side(phi: FloatArray, config: Parametric, seed: int, gof_seed: int) -> FitReport:
    """A fit to one side's transformed losses, with its goodness of fit."""
    fitter = _fitter(config.family, config.max_components, seed)
    fit = fitter(phi)
    gof = assess_fit(
        phi,
        config.family,
        fitter,
        n_samples=config.gof_samples,
        significance=config.significance,
        seed=gof_seed,
    )
    return FitReport(fit=fit, goodness_of_fit=gof)


def _parametric(
    train: FloatArray, population: FloatArray, delta: float, config: Parametric, seed: int
) -> EpsilonStarResult:
    """:class:`Parametric`: fits in the transformed space, supremum of the fitted curves."""
    transform = LossTransform.from_losses(train, population, alpha=config.alpha)
    reports: dict[str, FitReport] = {}
    for index, (side, losses) in enumerate((("train", train), ("population", population))):
        try:
            reports[side] = _fit_side(transform.forward(losses), config, seed, seed + index)
        except DegenerateDataError as error:
            raise DegenerateDataError(f"{side} losses: {error}") from None
    # phi decreases with the loss; its reflection is loss-ordered (members below the threshold).
    supremum = parametric_supremum if config.search == "refine" else grid_supremum
    found = supremum(Reflected(reports["train"].fit), Reflected(reports["population"].fit), delta)
    phi_threshold = -found.threshold
    located = _located(
        found, train.size, population.size, delta=delta, method=config.method, seed=seed
    )
    return dataclasses.replace(
        located,
        family=config.family,
        threshold=float(transform.inverse(phi_threshold)) if found.term else float("nan"),
        threshold_transformed=phi_threshold if found.term else None,
        transform=transform,
        fits=reports,
    )


def _tailed_at(
    train: Losses,
    population: Losses,
    deltas: tuple[float, ...],
    config: TailedConfig | AtomsCrossfit | AtomsTested,
    seed: int,
    *,
    tail_scale: float = 1.0,
) -> list[EpsilonStarResult]:
    """:class:`Tails`, :class:`TailsCrossfit`, :class:`TailsTested` and the atoms methods at
    each of ``deltas``, fitting the tails (counting the halves) once for all of them; the
    default tail sizes are scaled by ``tail_scale``. Losses too discrete for a tail model
    (:func:`_discrete_losses`) take the atoms estimator (the plug-in :class:`Tails`, the
    empirical one)."""
    if isinstance(config, TestedConfig):
        return _tested(train, population, deltas, config, seed, tail_scale)
    _refuse_all_equal(train, population)
    # One side's losses all equal (a model that memorised every record, such as a fully
    # grown tree) is the most discrete case of all.
    discrete = _discrete_losses(train, population)
    if isinstance(config, AtomsCrossfit):
        return _atoms_at(train, population, deltas, config.n_splits, seed, None)
    if discrete is not None and isinstance(config, TailsCrossfit):
        why = f"{discrete}; the tails methods need continuous losses"
        return _atoms_at(train, population, deltas, config.n_splits, seed, why)
    if discrete is not None:
        note = (
            f"{discrete}; the {config.method} method needs continuous losses, so Epsilon* is "
            "the empirical estimate, exact where both rates are observed (a rate observed "
            "as 0 of n records is taken at its median-unbiased value 1 - 2^(-1/n))"
        )
        return [
            _empirical(
                train,
                population,
                d,
                window=RateWindow.for_delta(d),
                seed=seed,
                note=note,
                zero_counts="median",
            )
            for d in deltas
        ]
    return _tails_at(train, population, deltas, config, seed, tail_scale, _POWER_TAILS)


#: Fits both sides' tails: :func:`fit_relative_tails` or :func:`fit_shift_roc`.
_TailFitter = Callable[..., tuple[RelativeTailed | BinormalTailed, RelativeTailed | BinormalTailed]]


@dataclasses.dataclass(frozen=True, slots=True)
class _TailShape:
    """The shape the tails are extrapolated in, and why (a result's note, or ``None``)."""

    fit: _TailFitter
    why: str | None = None


#: The power tails of the tails methods.
_POWER_TAILS: Final = _TailShape(fit_relative_tails)


def _tails_at(
    train: Losses,
    population: Losses,
    deltas: tuple[float, ...],
    config: Tails | TailsCrossfit,
    seed: int,
    tail_scale: float,
    shape: _TailShape,
) -> list[EpsilonStarResult]:
    """:class:`Tails` or :class:`TailsCrossfit` at each of ``deltas`` with the tails of
    ``shape``, fitted once for all of them (the full-sample fit locates the test)."""

    def fit_pair(
        a: Sample, b: Sample
    ) -> tuple[RelativeTailed | BinormalTailed, RelativeTailed | BinormalTailed]:
        return shape.fit(a, b, tail_size=config.tail_size, tail_scale=tail_scale)

    train_fit, population_fit = fit_pair(train.whole, population.whole)
    halvings = None
    if isinstance(config, TailsCrossfit):
        halvings = crossfit_fits(train, population, fit_pair, n_splits=config.n_splits, seed=seed)
    tail_fits = {"train": train_fit.to_dict(), "population": population_fit.to_dict()}
    results = []
    for delta in deltas:
        found = parametric_supremum(train_fit, population_fit, delta)
        located = _located(
            found, train.n, population.n, delta=delta, method=config.method, seed=seed
        )
        located = dataclasses.replace(located, tail_fits=tail_fits, note=shape.why)
        if halvings is not None:
            located = _crossfitted(located, crossfit_score(halvings, delta))
        results.append(located)
    return results


def _tail_shape(train: Losses, population: Losses) -> _TailShape:
    """:class:`TailsShapeTested`'s choice of tails, with the reason: Gaussian-shift tails where
    the binormal ROC curve of every record has slope 1
    (:mod:`epsstar.statistics.fitting.roc_slope`) and keeps its shift into the tails
    (:mod:`epsstar.statistics.fitting.roc_bend`), power tails elsewhere. A summary's uniform
    random sample stands for its records (the standard errors count the sample)."""
    # Held losses are read through their sorted sample (sorted once); a summary's random
    # sample is wrapped once for both checks.
    sides = [
        side.whole if side.values is not None else LossValues(side.sample)
        for side in (train, population)
    ]
    slope = roc_slope(*sides)
    summarised = train.values is None or population.values is None
    sampled = [
        f"{side.sample.size:,} of {side.n:,} {name}"
        for side, name in ((train, "training"), (population, "population"))
        if side.sample.size < side.n
    ]
    slope_text = slope.describe()
    if sampled:
        slope_text += f" (on the random samples of the summaries: {', '.join(sampled)} losses)"
    rule = (
        f"within {SLOPE_MARGIN:g} of 1 on the log scale with {SLOPE_ERRORS:g} standard errors "
        "to spare"
    )
    if slope.near_one:
        bend = tail_bend(*sides)
        if not bend.straight:
            return _TailShape(
                fit_relative_tails,
                f"{slope_text}, {rule}, but the {bend.describe()}, more than "
                f"{BEND_ERRORS:g} below: the curve bends towards the diagonal in its tails, "
                "as a shift of a heavy-tailed law does: power tails",
            )
        return _TailShape(
            fit_shift_roc,
            f"{slope_text}, {rule}, and the {bend.describe()}: Gaussian-shift tails (the "
            "equal-variance binormal ROC curve of the Gaussian mechanism, its shift fitted "
            f"on each end's half{', or the extremes a summary keeps' if summarised else ''})",
        )
    if not slope.can_pass:
        return _TailShape(
            fit_relative_tails,
            f"{slope_text}; the check of the tails' shape needs at least "
            f"{fewest_records_a_side():,} records a side: power tails",
        )
    return _TailShape(fit_relative_tails, f"{slope_text}, not {rule}: power tails")


def _chosen_shape(
    result: EpsilonStarResult, train: FloatArray, population: FloatArray
) -> _TailShape:
    """The tails' shape :class:`TailsShapeTested`'s point estimate took, read from its fits'
    family, so that an interval does not rerun the slope check; chosen anew where the point
    estimate fitted no tails (no leak found and ``untested`` off)."""
    family = result.tail_fits.get("train", {}).get("family")
    if family is None:
        return _tail_shape(LossValues(train), LossValues(population))
    if family == BinormalTailed.json_constants["family"]:
        return _TailShape(fit_shift_roc)
    return _POWER_TAILS


#: What the atoms estimator does, for the notes of its results.
_ATOMS_PATH = (
    "randomised tests at the distinct losses, ties counted exactly, chosen and scored on "
    "different halves"
)


def _atoms_at(
    train: Losses,
    population: Losses,
    deltas: tuple[float, ...],
    n_splits: int,
    seed: int,
    why: str | None,
) -> list[EpsilonStarResult]:
    """:class:`AtomsCrossfit` at each of ``deltas`` (:mod:`.atoms`): the full-sample hull
    locates the test and gives the plug-in value, the halves the cross-fitted Epsilon*;
    ``why`` says why a tails method took this path (its note)."""
    train_atoms, pop_atoms = train.atoms, population.atoms
    if train_atoms is None or pop_atoms is None:
        raise InvalidInputError(
            "the atoms methods count every distinct loss; a summary that holds too many "
            "distinct values for that is for the tails methods. Found a summary without "
            "its distinct values."
        )
    thresholds, pop_below, train_below = _atom_counts(train_atoms, pop_atoms)
    full = Vertices.from_counts(thresholds, train_below, pop_below, train.n, population.n)
    halvings = atoms_halves(train, population, thresholds, n_splits=n_splits, seed=seed)
    note = f"{why}, so Epsilon* is the atoms-crossfit estimate ({_ATOMS_PATH})" if why else None
    if halvings is None:
        note = (
            f"{why + ', so ' if why else ''}Epsilon* is the atoms estimate at every distinct "
            "loss of the whole data (the halves of these summarised losses do not count "
            "every distinct value, so it is not cross-fitted)"
        )
    results = []
    for delta in deltas:
        found, test = atoms_supremum(full, delta)
        located = _located(
            found, train.n, population.n, delta=delta, method=AtomsCrossfit.method, seed=seed
        )
        if halvings is not None:
            located = _crossfitted(located, atoms_crossfit(halvings, delta))
        else:
            located = dataclasses.replace(located, plug_in_epsilon=located.epsilon)
        parts = [note, _randomised(test, located), _resolution_limited(found, train, population)]
        text = "; ".join(part for part in parts if part) or None
        results.append(dataclasses.replace(located, note=text))
    return results


def _randomised(test: AtomTest | None, located: EpsilonStarResult) -> str | None:
    """The note of a located test that calls members at random between two thresholds."""
    if test is None or test.low == test.high or not located.epsilon > 0:
        return None
    return (
        "the test calls members at random between two neighbouring points of the hull "
        f"(weight {test.weight:.3g} on the lower threshold)"
    )


def _resolution_limited(found: Supremum, train: Losses, population: Losses) -> str | None:
    """The note of a ratio whose denominator rate was counted 0 (read at the resolution)."""
    if found.term == 0 or denominator_rate(found.term, found.fpr, found.fnr) > 0:
        return None
    name = {1: "FPR", 2: "FNR", 3: "1 - FPR", 4: "1 - FNR"}[found.term]
    on_population = found.term in FPR_DENOMINATOR_TERMS
    side, n = ("population", population.n) if on_population else ("training", train.n)
    return (
        f"the test's {name} is 0 of {n:,} {side} records, read at the data's resolution "
        f"1 - 2^(-1/n) = {median_unbiased_zero_rate(n):.3g}, so Epsilon* is limited by the "
        "number of records, not by the model"
    )


def _tested(
    train: Losses,
    population: Losses,
    deltas: tuple[float, ...],
    config: TestedConfig,
    seed: int,
    tail_scale: float,
) -> list[EpsilonStarResult]:
    """The tested methods: the cross-fitted estimates, kept only if the leak test rejects; on
    losses too discrete for a tail model, the tails methods are atoms-tested, and
    tails-shape-tested chooses its tails' shape (:func:`_tail_shape`). One rule for every
    shape: without a leak found, Epsilon* is 0."""
    _refuse_all_equal(train, population)
    discrete = _discrete_losses(train, population)
    atoms = isinstance(config, AtomsTested) or discrete is not None
    name = AtomsTested.method if atoms else config.method
    leak = held_out_leak_test(train, population, seed=seed)
    found = leak.p_value < config.level
    if not (found or config.untested):
        why = None if isinstance(config, AtomsTested) else discrete
        return [_no_leak(train, population, d, config, name, leak, seed, why) for d in deltas]
    if isinstance(config, AtomsTested):
        crossfit = AtomsCrossfit(config.n_splits)
        estimates = _tailed_at(train, population, deltas, crossfit, seed, tail_scale=tail_scale)
    else:
        tails = TailsCrossfit(config.tail_size, config.n_splits)
        if isinstance(config, TailsShapeTested) and not atoms:
            shape = _tail_shape(train, population)
            estimates = _tails_at(train, population, deltas, tails, seed, tail_scale, shape)
        else:
            estimates = _tailed_at(train, population, deltas, tails, seed, tail_scale=tail_scale)
    results = []
    for result in estimates:
        tested = dataclasses.replace(
            result, method=name, leak_test=leak, untested_epsilon=result.epsilon
        )
        if not found and result.epsilon > 0:
            nan = float("nan")
            no_leak = _no_leak_note(leak, config.level, f"was {result.epsilon:.4g}")
            tested = dataclasses.replace(
                tested,
                epsilon=0.0,
                fpr=nan,
                fnr=nan,
                threshold=nan,
                attained_by=Supremum(0.0, nan, nan, nan, 0).term_name,
                note="; ".join(part for part in (result.note, no_leak) if part),
            )
        results.append(tested)
    return results


def _no_leak(
    train: Losses,
    population: Losses,
    delta: float,
    config: TestedConfig,
    name: str,
    leak: LeakTest,
    seed: int,
    why: str | None,
) -> EpsilonStarResult:
    """A tested method when the leak test finds none and ``untested`` is off: Epsilon* 0,
    no test located, and no cross-fitted estimate computed."""
    nan = float("nan")
    located = _located(
        Supremum(0.0, nan, nan, nan, 0),
        train.n,
        population.n,
        delta=delta,
        method=name,
        seed=seed,
    )
    no_leak = _no_leak_note(leak, config.level, "was not computed")
    return dataclasses.replace(
        located,
        leak_test=leak,
        note="; ".join(part for part in (why, no_leak) if part),
    )


def _no_leak_note(leak: LeakTest, level: float, estimate: str) -> str:
    """What a tested method says when its leak test finds no leak; ``estimate`` completes
    "the cross-fitted estimate …"."""
    return (
        f"the held-out exact leak test found no leak (p = {leak.p_value:.3g} ≥ {level:g}), "
        f"so Epsilon* is 0; the cross-fitted estimate {estimate}"
    )


def _crossfitted(located: EpsilonStarResult, cross: CrossFit) -> EpsilonStarResult:
    """The full-sample result with the cross-fitted Epsilon*: the full-sample fit still
    locates the test (or none, when the cross-fitted Epsilon* is 0); its own supremum is kept
    as the plug-in estimate, beside the cross-fitted score of each ratio."""
    crossed = dataclasses.replace(
        located, plug_in_epsilon=located.epsilon, crossfit_scores=cross.ratio_scores
    )
    if cross.epsilon > 0:
        return dataclasses.replace(crossed, epsilon=cross.epsilon)
    nan = float("nan")
    zero = Supremum(0.0, nan, nan, nan, 0)
    return dataclasses.replace(
        crossed, epsilon=0.0, fpr=nan, fnr=nan, threshold=nan, attained_by=zero.term_name
    )


def _empirical(
    train: Losses,
    population: Losses,
    delta: float,
    *,
    window: RateWindow,
    seed: int,
    note: str | None = None,
    zero_counts: ZeroCounts = "excluded",
) -> EpsilonStarResult:
    """The empirical estimate (every observed loss a threshold), with an optional note;
    ``zero_counts`` says how a rate counted as 0 enters (:mod:`.empirical`)."""
    found = _empirical_supremum(train, population, delta, window, zero_counts)
    located = _located(
        found, train.n, population.n, delta=delta, method="empirical", seed=seed, window=window
    )
    return dataclasses.replace(located, note=note)


def _discrete_losses(train: Losses, population: Losses) -> str | None:
    """Why the losses are too discrete for a tail model, or ``None`` if they are not.

    A tail holds up to 3·sqrt(n) records. A side with fewer distinct values than
    that, or whose smallest and largest values each repeat at least that often (both
    tails are single values), has atoms the interpolated body of the tail model
    would smear into a continuous CDF, inventing ratios between them. Saturated
    probabilities, clipped to the same loss at both ends, are the usual cause; an
    atom at one end only (confident correct predictions) leaves the other tail to
    model and is kept. A summary knows its distinct values up to its ``k`` (at least
    3·sqrt(n)) and its ``k`` most extreme values on each side, which decide both.
    """
    for side, losses in (("train", train), ("population", population)):
        n = losses.n
        limit = 3.0 * np.sqrt(n)
        atoms = losses.atoms
        distinct = atoms[0].size if atoms is not None else None
        if distinct is not None and distinct < limit:
            return (
                f"the {side} losses take {distinct} distinct values among {n:,} "
                f"(fewer than 3·sqrt(n) = {limit:.0f})"
            )
        low, high = losses.end_repeats()
        if min(low, high) >= limit:
            return (
                f"the {side} losses repeat their smallest value {low:,} times and their largest "
                f"{high:,} times among {n:,} (both tails are single values)"
            )
    return None


def _refuse_all_equal(train: Losses, population: Losses) -> None:
    """Refuse pooled losses that are all equal (no test tells anything apart): the loss
    transform of their range refuses it, with the message the parametric method gives."""
    wholes = (train.whole, population.whole)
    low = min(float(whole.lowest(1)[0]) for whole in wholes)
    high = max(float(whole.highest(1)[0]) for whole in wholes)
    LossTransform(loss_min=low, loss_max=high)


def _empirical_supremum(
    train: Losses, population: Losses, delta: float, window: RateWindow, zero_counts: ZeroCounts
) -> Supremum:
    """The empirical supremum: at every distinct value when both sides know their distinct
    values' counts (held losses always do), else at the thresholds where both sides count
    exactly (:func:`~epsstar.statistics.summaries.loss_sketch.exact_counts`)."""
    train_atoms, pop_atoms = train.atoms, population.atoms
    if train_atoms is None or pop_atoms is None:
        return sketch_supremum(train.whole, population.whole, delta, window, zero_counts)
    thresholds, pop_below, train_below = _atom_counts(train_atoms, pop_atoms)
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


def _atom_counts(train: Atoms, population: Atoms) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Every distinct value of either side, with ``#{population ≤ τ}`` and ``#{train ≤ τ}``."""
    thresholds = np.union1d(train[0], population[0])
    pop_below, train_below = (
        np.concatenate([[0], np.cumsum(counts)])[np.searchsorted(values, thresholds, "right")]
        for values, counts in (population, train)
    )
    return thresholds, pop_below.astype(np.float64), train_below.astype(np.float64)


def _located(
    found: Supremum,
    n_train: int,
    n_population: int,
    *,
    delta: float,
    method: str,
    seed: int,
    window: RateWindow | None = None,
) -> EpsilonStarResult:
    """The result for a located supremum in ``n_train`` and ``n_population`` losses; the
    rate window defaults to ``(δ, 1-δ)``."""
    if window is None:
        window = RateWindow.for_delta(delta)
    return EpsilonStarResult(
        epsilon=found.epsilon,
        delta=delta,
        method=method,
        family=None,
        fpr=found.fpr,
        fnr=found.fnr,
        threshold=found.threshold,
        threshold_transformed=None,
        attained_by=found.term_name,
        n_train=n_train,
        n_population=n_population,
        rate_window=(window.low, window.high),
        seed=seed,
    )
