"""The HTML report of one audit: verdict, readings, charts, goodness of fit, provenance.

The report is one self-contained file: styles inline, charts as inline SVG drawn
here, no script, font, image or other request. Its size does not grow with the
number of records: histograms have :data:`HISTOGRAM_BINS` bins, curves at most
a few hundred points, and the Appendix-8.2 goodness-of-fit grid runs on a seeded
subsample of :data:`KS_GRID_MAX_VALUES` transformed losses per side.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats
from scipy.special import ndtr, ndtri

from .svg import Chart

if TYPE_CHECKING:
    from epsstar.audit.run import AuditResult
    from epsstar.statistics._validation import FloatArray
    from epsstar.statistics.fitting.base import FittedDistribution

__all__ = [
    "HISTOGRAM_BINS",
    "KS_GRID_COMPONENTS",
    "KS_GRID_MAX_VALUES",
    "KS_GRID_SAMPLE_SIZES",
    "audit_context",
]

#: Bins of every histogram.
HISTOGRAM_BINS = 60
#: Share of the pooled values cut from each end of a histogram's axis.
HISTOGRAM_TRIM = 0.001
#: Mixture components and sample sizes of the goodness-of-fit grid (Appendix 8.2).
KS_GRID_COMPONENTS: tuple[int, ...] = tuple(range(1, 11))
KS_GRID_SAMPLE_SIZES: tuple[int, ...] = (100, 400, 700, 1000)
#: The grid is computed on at most this many transformed losses per side (seeded subsample).
KS_GRID_MAX_VALUES = 2000
#: Points per curve tail on the trade-off chart.
CURVE_POINTS = 120


# --- helpers -----------------------------------------------------------------------------------


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _histogram(
    sides: Mapping[str, FloatArray], *, density: bool
) -> tuple[FloatArray, dict[str, FloatArray], dict[str, int]]:
    """Shared bin edges over the central pooled values; heights per side; values left out."""
    pooled = np.concatenate(list(sides.values()))
    low, high = np.quantile(pooled, [HISTOGRAM_TRIM, 1.0 - HISTOGRAM_TRIM])
    if not high > low:
        low, high = float(np.min(pooled)), float(np.max(pooled))
    if not high > low:
        low, high = low - 0.5, high + 0.5
    edges = np.linspace(low, high, HISTOGRAM_BINS + 1)
    heights, outside = {}, {}
    for side, values in sides.items():
        counts, _ = np.histogram(values, bins=edges)
        outside[side] = int(values.size - counts.sum())
        scale = values.size * (np.diff(edges) if density else 1.0)
        heights[side] = counts / scale * (1.0 if density else 100.0)
    return edges, heights, outside


def _pdf(fit: FittedDistribution, x: FloatArray) -> FloatArray:
    """Density of a fit: from its parameters, else by differentiating its CDF."""
    params = fit.to_dict()
    if "weights" in params and "means" in params and "sds" in params:
        total = np.zeros_like(x)
        for w, m, s in zip(params["weights"], params["means"], params["sds"], strict=True):
            total += w * stats.norm.pdf(x, m, s)
        return total
    if "mean" in params and "sd" in params:
        return np.asarray(stats.norm.pdf(x, params["mean"], params["sd"]), dtype=np.float64)
    return np.gradient(np.asarray(fit.cdf(x), dtype=np.float64), x)


def _empirical_points(
    train: FloatArray, population: FloatArray, low: float
) -> tuple[FloatArray, FloatArray]:
    """(FPR, FNR) of the loss-threshold test at a bounded set of observed thresholds.

    Small data: every distinct loss. Large data: the losses at geometrically
    spaced ranks towards both tails of both sides, so the log-log curve keeps
    its shape with a fixed number of points.
    """
    sorted_train, sorted_pop = np.sort(train), np.sort(population)
    pooled = np.unique(np.concatenate([sorted_train, sorted_pop]))
    if pooled.size <= 4 * CURVE_POINTS:
        thresholds = pooled
    else:
        levels = np.geomspace(max(low, 1.0 / max(train.size, population.size)), 0.5, CURVE_POINTS)
        levels = np.concatenate([levels, 1.0 - levels])
        thresholds = np.unique(
            np.concatenate(
                [
                    np.quantile(sorted_pop, levels, method="inverted_cdf"),
                    np.quantile(sorted_train, levels, method="inverted_cdf"),
                ]
            )
        )
    fpr = np.searchsorted(sorted_pop, thresholds, side="right") / sorted_pop.size
    fnr = 1.0 - np.searchsorted(sorted_train, thresholds, side="right") / sorted_train.size
    return fpr, fnr


def _axis_low(values: Iterable[float]) -> float:
    positive = [v for v in values if _finite(v) and v > 0]
    low = min(positive) if positive else 1e-6
    return float(min(1e-2, max(1e-12, 10.0 ** (math.floor(math.log10(low)) - 1))))


# --- charts ------------------------------------------------------------------------------------


def loss_chart(result: AuditResult) -> tuple[Any, dict[str, int]]:
    edges, heights, outside = _histogram(
        {"train": result.train_losses, "population": result.population_losses}, density=False
    )
    top = float(max(h.max() for h in heights.values())) * 1.1 or 1.0
    chart = Chart(
        "Losses of training and population records",
        (float(edges[0]), float(edges[-1])),
        (0.0, top),
        "loss (lower = the model fits the record better)",
        "% of the side's records",
    )
    chart.bars(edges, heights["population"], css="bar-population", label="population")
    chart.bars(edges, heights["train"], css="bar-train", label="training")
    return chart.render(), outside


def transformed_chart(result: AuditResult) -> tuple[Any, dict[str, int]] | None:
    eps = result.epsilon
    if eps.transform is None or not eps.fits:
        return None
    phi = {
        "train": eps.transform.forward(result.train_losses),
        "population": eps.transform.forward(result.population_losses),
    }
    edges, heights, outside = _histogram(phi, density=True)
    x = np.linspace(edges[0], edges[-1], 240)
    pdfs = {side: _pdf(eps.fits[side].fit, x) for side in ("train", "population")}
    top = max(
        float(max(h.max() for h in heights.values())), *(float(p.max()) for p in pdfs.values())
    )
    chart = Chart(
        "Transformed losses and fitted densities",
        (float(edges[0]), float(edges[-1])),
        (0.0, top * 1.1 or 1.0),
        "transformed loss φ (higher = lower loss)",
        "density",
    )
    chart.bars(edges, heights["population"], css="bar-population", label="population φ")
    chart.bars(edges, heights["train"], css="bar-train", label="training φ")
    family = eps.family or "fit"
    chart.line(x, pdfs["population"], css="fit-population", label=f"population {family} fit")
    chart.line(x, pdfs["train"], css="fit-train", label=f"training {family} fit")
    return chart.render(), outside


def tradeoff_chart(result: AuditResult) -> tuple[Any, dict[str, Any]]:
    """FNR against FPR on log axes with the ε* point, the (ε*, δ) boundary and μ-GDP curve."""
    from epsstar.statistics.conversions import gdp_mu_from_rates
    from epsstar.statistics.curves import parametric_curve
    from epsstar.statistics.fitting import LossDistribution

    eps = result.epsilon
    n_train, n_pop = eps.n_train, eps.n_population
    rates = [eps.fpr, eps.fnr, result.empirical.fpr, result.empirical.fnr]
    low = _axis_low([eps.delta, 1.0 / n_pop, 1.0 / n_train, *rates])
    high = 1.0 - _axis_low([1.0 / n_pop, 1.0 / n_train, *(1.0 - r for r in rates if _finite(r))])
    chart = Chart(
        "Trade-off between false positives and false negatives",
        (low, high),
        (low, high),
        "FPR: share of non-members flagged as members (log-odds scale)",
        "FNR: share of members missed (log-odds scale)",
        x_scale="logit",
        y_scale="logit",
        width=640,
        height=520,
    )
    chart.region(
        (low, 1.0 / n_pop),
        (low, high),
        css="unsupported",
        label="not supported by the data (extrapolated)",
        tooltip=f"FPR below 1/{n_pop:,} population records: extrapolated",
    )
    chart.region(
        (low, high),
        (low, 1.0 / n_train),
        css="unsupported",
        tooltip=f"FNR below 1/{n_train:,} training records: extrapolated",
    )
    tail = np.geomspace(low / 10.0, 0.5, 200)
    x = np.unique(np.concatenate([tail, 1.0 - tail]))
    e, d = eps.epsilon, eps.delta
    boundary = np.maximum.reduce(
        [np.zeros_like(x), 1.0 - d - np.exp(min(e, 700.0)) * x, np.exp(-e) * (1.0 - d - x)]
    )
    chart.line(x, boundary, css="dp-boundary", label=f"(ε*, δ) boundary, ε* = {e:.3g}")
    info: dict[str, Any] = {"mu": None}
    if _finite(eps.fpr) and _finite(eps.fnr):
        mu = gdp_mu_from_rates(eps.fpr, eps.fnr)
        if math.isfinite(mu) and mu > 0:
            info["mu"] = mu
            chart.line(x, ndtr(-ndtri(x) - mu), css="gdp", label=f"μ-GDP, μ = {mu:.3g}")
    fpr, fnr = _empirical_points(result.train_losses, result.population_losses, low)
    chart.line(fpr, fnr, css="curve-empirical", label="observed (empirical)")
    if eps.transform is not None and eps.fits:
        curve = parametric_curve(
            LossDistribution(eps.fits["train"].fit, eps.transform),
            LossDistribution(eps.fits["population"].fit, eps.transform),
            points_per_tail=CURVE_POINTS,
            smallest_rate=max(low / 10.0, 1e-300),
        )
        chart.line(curve.fpr, curve.fnr, css="curve-fitted", label=f"fitted ({eps.family})")
    if _finite(result.empirical.fpr) and _finite(result.empirical.fnr):
        chart.point(
            result.empirical.fpr,
            result.empirical.fnr,
            css="point-empirical",
            label="empirical ε* attained",
            tooltip=f"empirical ε* = {result.empirical.epsilon:.4g} at FPR "
            f"{result.empirical.fpr:.3g}, FNR {result.empirical.fnr:.3g}",
        )
    if _finite(eps.fpr) and _finite(eps.fnr):
        chart.point(
            eps.fpr,
            eps.fnr,
            css="point-star",
            radius=6,
            label="ε* attained",
            tooltip=f"ε* = {e:.4g} at FPR {eps.fpr:.3g}, FNR {eps.fnr:.3g}",
        )
    info["low"] = low
    return chart.render(), info


# --- goodness of fit ---------------------------------------------------------------------------


def ks_grid(
    result: AuditResult,
    *,
    components: Sequence[int] = KS_GRID_COMPONENTS,
    sample_sizes: Sequence[int] = KS_GRID_SAMPLE_SIZES,
    max_values: int = KS_GRID_MAX_VALUES,
) -> dict[str, Any] | None:
    """Appendix 8.2's grid of hold-out KS p-values per side, on a seeded subsample."""
    from epsstar.exceptions import EpsstarError
    from epsstar.statistics.goodness_of_fit import ks_table

    eps = result.epsilon
    if eps.transform is None or not components or not sample_sizes:
        return None
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    rng = np.random.default_rng([eps.seed, 82])
    sides: dict[str, dict[str, Any]] = {}
    for side, losses in (("train", result.train_losses), ("population", result.population_losses)):
        values = eps.transform.forward(losses)
        if values.size > max_values:
            values = rng.choice(values, size=max_values, replace=False)
        sizes = sorted({min(int(s), values.size // 2) for s in sample_sizes})
        try:
            # Thread pools cost more than they save on one-dimensional fits of this size.
            with threadpool_limits(1):
                table = ks_table(values, components=components, sample_sizes=sizes, seed=eps.seed)
        except EpsstarError as error:
            sides[side] = {"error": str(error), "used": int(values.size)}
            continue
        cells = {(t.n_components, t.n_samples): t.pvalue for t in table}
        sides[side] = {
            "used": int(values.size),
            "sizes": sizes,
            "rows": [(k, [cells[(k, s)] for s in sizes]) for k in components],
        }
    return {"sides": sides, "max_values": max_values, "components": list(components)}


# --- the whole context ---------------------------------------------------------------------------


def estimator_description(method: str, family: str | None) -> str:
    """How the headline Epsilon* was estimated, in words for the report (the names table's)."""
    from epsstar.statistics.names import FAMILIES, METHODS

    if method not in METHODS:
        return f"uses the '{method}' estimator (docs/accuracy.md)"
    described = METHODS[method].description
    if family is not None and family in FAMILIES:
        described += f" (here {FAMILIES[family].description})"
    return described


def audit_context(result: AuditResult, *, ks_grid_options: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template shows, computed from the result and its losses."""
    payload = result.to_dict()
    loss_svg, loss_outside = loss_chart(result)
    transformed = transformed_chart(result)
    tradeoff_svg, tradeoff = tradeoff_chart(result)
    eps = result.epsilon
    return {
        "r": payload,
        "epsilon_star_repr": repr(float(result.epsilon_star)),
        "verdict": {True: "PASS", False: "FAIL", None: "NO GATE"}[result.passed],
        "estimator": estimator_description(eps.method, eps.family),
        "charts": {
            "loss": loss_svg,
            "transformed": transformed[0] if transformed else None,
            "tradeoff": tradeoff_svg,
        },
        "outside": {
            "loss": loss_outside,
            "transformed": transformed[1] if transformed else None,
        },
        "mu": tradeoff["mu"],
        "one_over_n": {"train": 1.0 / eps.n_train, "population": 1.0 / eps.n_population},
        "ks_grid": ks_grid(result, **ks_grid_options),
        "bins": HISTOGRAM_BINS,
        "trim": HISTOGRAM_TRIM,
    }
