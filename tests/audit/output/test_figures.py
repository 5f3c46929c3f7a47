"""The figures of one audit's report (epsstar.audit.output.figures): histograms, curves, KS grid."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import integrate, stats
from scipy.special import ndtr, ndtri

from epsstar.audit.output.figures import (
    CURVE_POINTS,
    HISTOGRAM_BINS,
    TAIL_QUANTILE,
    AuditFigures,
    audit_figures,
    clip_values,
    dp_boundary_corner,
    fitted_density,
    histogram,
    ks_grid,
    loss_figure,
    observed_tradeoff,
)
from epsstar.audit.output.result import AuditResult
from epsstar.statistics.estimators.estimator import epsilon_star
from epsstar.statistics.fitting import GaussianMixtureFit, NormalFit
from epsstar.statistics.losses import compute_losses
from tests.conftest import made_up_provenance
from tests.reports.conftest import synthetic_result


@pytest.fixture(scope="module")
def result() -> AuditResult:
    return synthetic_result(3000, seed=4)


@pytest.fixture(scope="module")
def figures(result: AuditResult) -> AuditFigures:
    return audit_figures(result, ks_components=(1, 2, 3), ks_sample_sizes=(100, 400))


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@given(
    arrays(np.float64, st.integers(1, 300), elements=finite),
    arrays(np.float64, st.integers(1, 300), elements=finite),
    st.booleans(),
)
def test_histogram_counts_and_left_out_values_add_up_to_n(
    train: np.ndarray, population: np.ndarray, density: bool
) -> None:
    bars = histogram(train, population, density=density)
    assert bars.edges.size == HISTOGRAM_BINS + 1 == bars.bins + 1
    assert np.all(np.diff(bars.edges) > 0)
    for values, side in ((train, bars.train), (population, bars.population)):
        assert side.counts.sum() + side.outside == values.size
        assert side.outside >= 0
        assert side.heights.shape == side.counts.shape


def test_histogram_heights(result: AuditResult) -> None:
    for density in (False, True):
        bars = histogram(result.train_losses, result.population_losses, density=density)
        for values, side in (
            (result.train_losses, bars.train),
            (result.population_losses, bars.population),
        ):
            drawn = side.counts.sum() / values.size
            assert drawn > 0.99  # only the trimmed tails are left out
            if density:
                assert np.sum(side.heights * np.diff(bars.edges)) == pytest.approx(drawn)
            else:
                assert side.heights.sum() == pytest.approx(100.0 * drawn)
        assert bars.central_share == pytest.approx(0.998)


def test_histogram_of_equal_values_has_a_positive_width() -> None:
    bars = histogram(np.full(5, 2.0), np.full(3, 2.0), density=True)
    assert bars.edges[0] == 1.5
    assert bars.edges[-1] == 2.5
    assert bars.train.counts.sum() == 5


def test_fitted_densities() -> None:
    x = np.linspace(-30.0, 30.0, 20001)
    normal = NormalFit(mean=1.0, sd=2.0)
    np.testing.assert_allclose(fitted_density(normal, x), stats.norm.pdf(x, 1.0, 2.0))
    mixture = GaussianMixtureFit(weights=(0.3, 0.7), means=(-2.0, 3.0), sds=(1.0, 0.5))
    assert integrate.trapezoid(fitted_density(mixture, x), x) == pytest.approx(1.0)

    @dataclasses.dataclass
    class LogisticFit:  # any fit with a CDF: its density is the CDF's derivative
        def cdf(self, values: np.ndarray) -> np.ndarray:
            return np.asarray(stats.logistic.cdf(values))

    fit = LogisticFit()
    density = fitted_density(fit, x)  # type: ignore[arg-type]
    np.testing.assert_allclose(density, stats.logistic.pdf(x), atol=1e-5)


def test_loss_and_transformed_figures(result: AuditResult, figures: AuditFigures) -> None:
    losses = figures.losses
    assert losses.x_range == (losses.histogram.edges[0], losses.histogram.edges[-1])
    tallest = max(losses.histogram.train.heights.max(), losses.histogram.population.heights.max())
    assert losses.y_range == (0.0, pytest.approx(1.1 * tallest))
    assert losses.fitted is None
    transformed = figures.transformed
    assert transformed is not None
    fitted = transformed.fitted
    assert fitted is not None
    assert fitted.family == result.epsilon.family
    assert fitted.x[0] == transformed.x_range[0]
    assert fitted.x[-1] == transformed.x_range[1]
    assert transformed.y_range[1] >= max(fitted.train.max(), fitted.population.max())


def test_tradeoff_figure(result: AuditResult, figures: AuditFigures) -> None:
    figure = figures.tradeoff
    eps = result.epsilon
    low, high = figure.axis
    assert 0.0 < low < high < 1.0
    assert figure.smallest_supported_fpr == 1.0 / eps.n_population
    assert figure.smallest_supported_fnr == 1.0 / eps.n_train
    # The (ε*, δ) boundary f(x) = max(0, 1 − δ − e^ε x, e^−ε (1 − δ − x)).
    x, y = figure.boundary.x, figure.boundary.y
    e, d = eps.epsilon, eps.delta
    expected = np.maximum(0.0, np.maximum(1 - d - math.exp(e) * x, math.exp(-e) * (1 - d - x)))
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-15)
    assert x.min() < low
    assert x.max() > high
    # The μ-GDP curve passes through the point that attains Epsilon*.
    star = figure.star
    assert star is not None
    assert (star.fpr, star.fnr, star.epsilon) == (eps.fpr, eps.fnr, eps.epsilon)
    assert figure.gdp_mu is not None
    assert figure.gdp_mu > 0
    assert ndtr(-ndtri(star.fpr) - figure.gdp_mu) == pytest.approx(star.fnr)
    assert figure.empirical_star is not None
    assert figure.empirical_star.epsilon == result.empirical.epsilon
    for curve in (figure.empirical, figure.fitted):
        assert curve is not None
        assert np.all(np.diff(curve.x) >= 0)  # FPR rises with the threshold, FNR falls
        assert np.all(np.diff(curve.y) <= 1e-12)


def test_the_boundary_corner_and_the_no_leak_line(
    result: AuditResult, figures: AuditFigures
) -> None:
    figure = figures.tradeoff
    e, d = result.epsilon.epsilon, result.delta
    corner = figure.boundary_corner
    assert corner.fpr == corner.fnr
    assert corner.epsilon == e
    # Both lines of the boundary give the same FNR there, and it is the boundary's value.
    first, second = 1 - d - math.exp(e) * corner.fpr, math.exp(-e) * (1 - d - corner.fpr)
    assert first == pytest.approx(second, rel=1e-12)
    assert first == pytest.approx(corner.fnr, rel=1e-12)
    # Left of the corner the steep line is the larger, right of it the shallow one.
    x = figure.boundary.x
    steep, shallow = 1 - d - math.exp(e) * x, math.exp(-e) * (1 - d - x)
    assert np.all((steep >= shallow) == (x <= corner.fpr))
    # FNR = 1 − FPR, straight on log-odds axes (logit(1 − r) = −logit(r)): its two ends
    # lie beyond both ends of the axes.
    np.testing.assert_array_equal(figure.no_leak.x, [x.min(), x.max()])
    np.testing.assert_allclose(figure.no_leak.y, 1.0 - figure.no_leak.x)
    low, high = figure.axis
    assert figure.no_leak.x[0] < low < high < figure.no_leak.x[1]


@given(st.floats(0.0, 50.0), st.floats(1e-12, 0.5))
def test_the_boundary_corner_is_on_the_diagonal(epsilon: float, delta: float) -> None:
    corner = dp_boundary_corner(epsilon, delta)
    assert corner.fpr == corner.fnr
    # f(x) = x where the two lines cross; e^ε x + x = 1 − δ.
    assert corner.fpr * (1 + math.exp(epsilon)) == pytest.approx(1 - delta, rel=1e-12)


def test_clip_values_are_the_extreme_losses_of_clipped_probabilities() -> None:
    """The clip values equal the losses of the probabilities 0 and 1, computed the usual way."""
    certain = np.array([[1.0, 0.0], [0.0, 1.0]])
    labels = np.array([0, 0])  # right with probability 1, then wrong with probability 1
    for loss in ("logit", "cross_entropy"):
        ends = clip_values(loss, "probabilities")
        assert ends is not None
        lowest, highest = compute_losses(labels, certain, loss=loss, outputs="probabilities")
        assert ends == pytest.approx((lowest, highest), rel=1e-12)
    assert clip_values("logit", "logits") is None
    assert clip_values(None, None) is None


def test_losses_at_the_clip_values_are_counted(result: AuditResult) -> None:
    lowest, highest = clip_values("logit", "probabilities")  # type: ignore[misc]
    train, population = result.train_losses.copy(), result.population_losses.copy()
    train[:300], population[:40] = lowest, lowest
    train[300:302] = highest
    clipped = dataclasses.replace(
        result,
        train_losses=train,
        population_losses=population,
        provenance=made_up_provenance(3000, 3000, loss="logit", output_kind="probabilities"),
    )
    figure = loss_figure(clipped)
    low_end, high_end = figure.clipped
    assert (low_end.end, low_end.value, low_end.train, low_end.population) == (
        "lowest",
        lowest,
        300,
        40,
    )
    assert (high_end.end, high_end.train, high_end.population) == ("highest", 2, 0)
    others = np.concatenate([train[302:], population[40:]])
    assert low_end.nearest == others.min()
    # 340 of 6,000 losses: more than the trimmed 0.1 %, so the spike is drawn; 2 are not.
    bars = figure.histogram
    assert bars.edges[0] == lowest
    assert low_end.bar_top == max(bars.train.heights[0], bars.population.heights[0])
    assert high_end.bar_top is None
    assert figure.tails == pytest.approx(
        tuple(np.quantile(others, [TAIL_QUANTILE, 1 - TAIL_QUANTILE]))
    )
    assert loss_figure(result).clipped == ()  # no loss at a clip value
    from_logits = dataclasses.replace(
        clipped, provenance=made_up_provenance(3000, 3000, output_kind="logits")
    )
    assert loss_figure(from_logits).clipped == ()  # losses from logits are never clipped


def test_observed_tradeoff_is_exact_on_small_data_and_bounded_on_large() -> None:
    train, population = np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0])
    curve = observed_tradeoff(train, population, 1e-3)
    np.testing.assert_allclose(curve.x, [0.0, 0.5, 0.5, 1.0])  # thresholds 1, 2, 3, 4
    np.testing.assert_allclose(curve.y, [2 / 3, 1 / 3, 0.0, 0.0])
    rng = np.random.default_rng(0)
    large = observed_tradeoff(rng.normal(size=200_000), rng.normal(1, 1, 200_000), 1e-6)
    assert large.x.size <= 4 * 2 * CURVE_POINTS
    assert large.x.min() < 1e-4  # it still reaches into the tails


def test_ks_grid_has_one_row_per_mixture_size(result: AuditResult, figures: AuditFigures) -> None:
    grid = figures.ks_grid
    assert grid is not None
    assert grid.components == (1, 2, 3)
    for side in (grid.train, grid.population):
        assert side.error is None
        assert side.used == 2000  # the seeded subsample
        assert side.sample_sizes == (100, 400)
        assert [row.n_components for row in side.rows] == [1, 2, 3]
        for row in side.rows:
            assert len(row.pvalues) == len(side.sample_sizes)
            assert all(0.0 <= p <= 1.0 for p in row.pvalues)
    again = ks_grid(result, components=(1, 2, 3), sample_sizes=(100, 400))
    assert again == grid  # seeded


def test_ks_grid_caps_sample_sizes_and_records_errors(result: AuditResult) -> None:
    small = synthetic_result(300, seed=1)
    grid = ks_grid(small, components=(1,), sample_sizes=(100, 400, 700))
    assert grid is not None
    assert grid.train.sample_sizes == (100, 150)  # sizes above half the values become half
    flat = dataclasses.replace(result, train_losses=np.full(3000, 1.0))
    grid = ks_grid(flat, components=(1,), sample_sizes=(100,))
    assert grid is not None
    assert grid.train.error
    assert grid.train.rows == ()
    assert grid.population.error is None
    assert ks_grid(result, components=()) is None


def test_figures_of_an_estimate_without_fits(result: AuditResult) -> None:
    empirical = epsilon_star(
        result.train_losses, result.population_losses, delta=result.delta, method="empirical"
    )
    plain = dataclasses.replace(result, epsilon=empirical)
    figures = audit_figures(plain)
    assert figures.transformed is None
    assert figures.ks_grid is None
    assert figures.tradeoff.fitted is None


def test_figures_do_not_grow_with_the_records() -> None:
    figures = audit_figures(synthetic_result(300_000), ks_components=())
    assert figures.tradeoff.empirical.x.size <= 8 * CURVE_POINTS
    assert figures.losses.histogram.edges.size == HISTOGRAM_BINS + 1
