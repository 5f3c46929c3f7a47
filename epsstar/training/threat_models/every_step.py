"""The ``every-step`` score: each step and coordinate read with its own estimated variance.

The white-box adversary of Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for
Differentially Private Machine Learning" (§III-IV) sees every step's noisy sum g̃_t and subtracts
what it expects, E_t (:mod:`.observer`). On gradient canary j's coordinate c_j the residual
r_t = (g̃_t − E_t)[c_j] is, with u_t = r_t + ½qC,

    u_t = n_t + d_t          without the canary (or in a step that does not sample it),
    u_t = n_t + d_t + C      in a step that samples it (probability q when it is included),

where n_t is the step's noise, N(0, s_t²), and d_t the batch's own departure from its
expectation on that coordinate: Poisson sampling of the data's clipped gradients, of variance

    v_t[i] = q(1 − q)·Σ_{x ∈ train} clip(∇ℓ(θ_t; x))_i² + (q/2)(1 − q/2)·Σ_{canary records c}
             clip(∇ℓ(θ_t; c))_i²

(a canary record joins a step with probability q/2 a priori). Treating n_t + d_t as Gaussian
with variance V_t[j] = s_t² + v_t[c_j], the log-likelihood ratio of "in" against "out" that
step t adds is log(1 − q + q·exp((C·u_t − ½C²)/V_t[j])); the score is its sum over the steps.
A coordinate on which the data's gradients move a lot, or a step with much noise, weighs
little; a noiseless step on a quiet coordinate decides. The weight of a whole step (the
previous score, Σ_t w_t r_t with one w_t per step) could not remove the departure d_t in the
noiseless steps of a trainer that adds its noise once per epoch: that departure differs from
coordinate to coordinate, and only a per-coordinate variance discounts it.

s_t² is read off the step, not taken from the mechanism (a trainer that skips its noise on
some steps would then go unseen): on the coordinates that carry no canary, r_t[i]/√(s² +
v_t[i]) is N(0, 1), so s_t² is the s² at which the median of their squares is the median of
χ²₁ (0.4549), found by Brent's method (``scipy.optimize.brentq``: the median is continuous
and decreasing in s²), 0 when even s² = 0 leaves it below. When fewer than
:data:`FREE_COORDINATES` coordinates are free of canaries, the canary coordinates serve too,
each folded to its distance from the nearer of the two values a canary can add (0 or C),
which needs no inclusion bit. Every variance is floored at (10⁻⁶C)².

Why the one-run bound stays valid. Steinke, Nasr & Jagielski 2023 ("Privacy Auditing with One (1)
Training Run") bound the right guesses of any guess vector that is a function of the training run's
output alone. This score reads the run's output (θ_t and g̃_t of every step) and what the adversary
knows before the run — the data, every canary record and coordinate, q and C — and never the
inclusion bits: v_t uses every canary record with its prior weight q/2, s_t² the free (or folded)
coordinates. It is fixed before the run, so its ranking of the canaries is one such function, and
any such score keeps the bounds; the Gaussian model of n_t + d_t only decides how good the score is,
not whether the bound holds.
"""

from __future__ import annotations

import math

import torch
from scipy.optimize import brentq

__all__ = ["FREE_COORDINATES", "noise_variance", "step_log_likelihood_ratio"]

#: Fewest canary-free coordinates from which the noise variance is read alone.
FREE_COORDINATES = 16
#: The median of χ² with one degree of freedom (``scipy.stats.chi2.median(1)``).
CHI2_1_MEDIAN = 0.454936423119572


def _floor(clip: float) -> float:
    return (1e-6 * clip) ** 2


def noise_variance(
    residual: torch.Tensor,
    spread: torch.Tensor,
    coordinates: torch.Tensor,
    sampling_rate: float,
    clip: float,
) -> float:
    """s_t² of the module from one step's ``residual`` (every coordinate) and the batch's
    ``spread`` v_t (every coordinate); ``coordinates`` are the canaries'."""
    free = torch.ones(residual.numel(), dtype=torch.bool)
    free[coordinates] = False
    r, v = residual.double(), spread.double()
    squares, spreads = r[free] ** 2, v[free]
    if int(free.sum()) < FREE_COORDINATES:
        u = r[coordinates] + 0.5 * sampling_rate * clip
        folded = torch.minimum(u.abs(), (u - clip).abs())
        squares = torch.cat([squares, folded**2])
        spreads = torch.cat([spreads, v[coordinates]])
    if squares.numel() == 0:
        return _floor(clip)
    floor = _floor(clip)

    def excess(s2: float) -> float:
        return float((squares / (s2 + spreads).clamp_min(floor)).median()) - CHI2_1_MEDIAN

    if excess(0.0) <= 0.0:
        return 0.0
    high = max(float(squares.max()), floor)
    while excess(high) > 0.0:
        high *= 4.0
    # A variance finer than the floor changes no ratio the score reads.
    return float(brentq(excess, 0.0, high, xtol=floor, rtol=1e-9))


def step_log_likelihood_ratio(
    residual: torch.Tensor, variance: torch.Tensor, sampling_rate: float, clip: float
) -> torch.Tensor:
    """log(1 − q + q·exp((C·u − ½C²)/V)) per canary coordinate, u = residual + ½qC (module)."""
    q = sampling_rate
    u = residual.double() + 0.5 * q * clip
    z = (clip * u - 0.5 * clip * clip) / variance.double().clamp_min(_floor(clip))
    absent = math.log1p(-q) if q < 1.0 else -math.inf  # a full batch samples every canary
    return torch.logaddexp(torch.full_like(z, absent), math.log(q) + z)
