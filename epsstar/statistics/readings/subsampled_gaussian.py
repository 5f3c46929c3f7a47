"""Monte Carlo of the membership advantage of DP-SGD's Poisson-subsampled Gaussian mechanism.

An independent check of the advantage the accountant computes from the privacy loss
distribution (Cherubin et al. 2024, "Closed-Form Bounds for DP-SGD against Record-level Inference",
Proposition 8: β* = 1 − δ(0)), written without dp_accounting. Per step, with sampling rate q and
noise σ (sensitivity 1):

- add/remove: P = (1 − q)·N(0, σ²) + q·N(1, σ²) against Q = N(0, σ²);
- substitution: P = (1 − q)·N(0, σ²) + q·N(−1, σ²) against (1 − q)·N(0, σ²) + q·N(1, σ²).

Over T steps, δ(0) = E_P[(1 − e^{−L})₊] with L the summed privacy loss log dP/dQ; it is
estimated by sampling from P.
"""

from __future__ import annotations

import math

import numpy as np

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import check_in_range

__all__ = ["advantage_monte_carlo"]


def advantage_monte_carlo(
    q: float, sigma: float, steps: int, neighbouring: str, samples: int, seed: int = 0
) -> tuple[float, float]:
    """δ(0) of ``steps`` compositions (module doc) from ``samples`` draws: mean, standard error."""
    if neighbouring not in ("add_remove", "substitution"):
        raise InvalidInputError(
            f"neighbouring must be 'add_remove' or 'substitution'. Found {neighbouring!r}."
        )
    check_in_range("q", q, 0.0, 1.0, high_inclusive=True)
    check_in_range("sigma", sigma, 0.0, math.inf)
    if steps < 1 or samples < 1:
        raise InvalidInputError(f"steps and samples must be at least 1. Found {steps}, {samples}.")
    rng = np.random.default_rng(seed)
    # q = 1 (the full batch) leaves no mass to N(0, σ²): log(1 − q) = −∞
    log_keep = math.log1p(-q) if q < 1.0 else -math.inf
    log_q, two_var = math.log(q), 2.0 * sigma**2
    loss = np.zeros(samples)
    for _ in range(steps):
        sampled = (rng.random(samples) < q).astype(float)
        noise = sigma * rng.standard_normal(samples)
        if neighbouring == "add_remove":
            x = noise + sampled
            loss += np.logaddexp(log_keep, log_q + (2.0 * x - 1.0) / two_var)
        else:
            x = noise - sampled
            common = log_keep - x * x / two_var
            loss += np.logaddexp(common, log_q - (x + 1.0) ** 2 / two_var)
            loss -= np.logaddexp(common, log_q - (x - 1.0) ** 2 / two_var)
    gain = -np.expm1(-np.maximum(loss, 0.0))
    return float(gain.mean()), float(gain.std() / math.sqrt(samples))
