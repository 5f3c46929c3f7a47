"""Generated data sets for benchmarks and reproductions.

``purchase_like`` imitates the Purchase-100 task of the Epsilon* paper (§4.1 of
``epsilon-star-negoescu-2024.md``: about 600 binary purchase features and 100
classes): each class is a shopper profile, a vector of per-item purchase
probabilities drawn from a Beta distribution so that most items are rarely
bought and a few often. Every class shares one base profile and adds its own:
``profile_k = (1 - separation) * base + separation * specific_k``; a record draws
its items independently from its class's profile. Classes overlap (a 3x100 MLP
reaches about 82 % held-out accuracy on 20,000 records at the default
separation while fitting its training records perfectly), so a model can fit
the training records better than unseen ones, which is what a membership audit
needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from epsstar._validation import check_in_range, check_positive_int

__all__ = ["TabularData", "purchase_like"]


@dataclass(frozen=True, slots=True)
class TabularData:
    """Features (n, d) and integer labels (n,)."""

    features: np.ndarray
    labels: np.ndarray

    @property
    def columns(self) -> list[str]:
        return [f"f{i}" for i in range(self.features.shape[1])]


def purchase_like(
    n_records: int,
    *,
    n_features: int = 600,
    n_classes: int = 100,
    seed: int = 0,
    concentration: float = 0.2,
    separation: float = 0.25,
) -> TabularData:
    """Purchase-100-like records: binary features (uint8) and class labels (int64)."""
    n = check_positive_int("n_records", n_records)
    d = check_positive_int("n_features", n_features)
    k = check_positive_int("n_classes", n_classes, minimum=2)
    mix = check_in_range("separation", separation, 0.0, 1.0, high_inclusive=True)
    rng = np.random.default_rng(seed)
    # The profiles come from their own stream, so every size of data set shares them.
    profile_rng = np.random.default_rng([seed, 1])
    base = profile_rng.beta(concentration, 1.0, size=d)
    profiles = (1.0 - mix) * base + mix * profile_rng.beta(concentration, 1.0, size=(k, d))
    labels = rng.integers(0, k, size=n)
    features = np.empty((n, d), dtype=np.uint8)
    for start in range(0, n, 50_000):
        block = labels[start : start + 50_000]
        features[start : start + block.size] = rng.random((block.size, d)) < profiles[block]
    return TabularData(features=features, labels=labels.astype(np.int64))
