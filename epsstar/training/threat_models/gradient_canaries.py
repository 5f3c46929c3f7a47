"""Gradient canaries: Dirac gradients a run adds to the clipped sum of the steps that sample them.

Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for Differentially Private Machine
Learning" (§III-A, "the adversary has direct control of the gradient updates"): the DP-SGD analysis
holds for any record, so in particular for one whose gradient is whatever the adversary likes. A
gradient canary is such a record: canary j has the gradient a·e_{c_j}, a Dirac direction on its own
parameter c_j (distinct parameters, so that no canary's gradient moves another's coordinate), of
norm a = :data:`CANARY_NORM` × C, larger than the clip norm C so that a trainer that does not clip
lets it through whole. Like every record of the data it joins a step with the sampling rate q
(Poisson sampling, drawn here from the canaries' own generator, so that the trainer's batches and
noise are those of a run without canaries), and only if the run includes it. The trainer clips it
like one example's gradient (:class:`~epsstar.training.trainer.StepHooks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray

from epsstar.exceptions import InvalidInputError

__all__ = ["CANARY_NORM", "GradientInjector", "canary_coordinates"]

#: A gradient canary's norm, in clip norms: the trainer clips it to C; one that does not clip
#: lets it through ten times larger.
CANARY_NORM = 10.0


def canary_coordinates(n_parameters: int, count: int, seed: int) -> NDArray[np.int64]:
    """``count`` distinct parameter indices drawn with ``seed`` (one per gradient canary)."""
    if count > n_parameters:
        raise InvalidInputError(
            f"gradient canaries need one parameter each; the model has {n_parameters}. "
            f"Found {count} canaries."
        )
    chosen = np.random.default_rng(seed).choice(n_parameters, size=count, replace=False)
    return chosen.astype(np.int64)


@dataclass
class GradientInjector:
    """The ``inject`` hook: the included canaries a step samples, as rows of gradients."""

    coordinates: NDArray[np.int64]
    included: Sequence[bool]
    n_parameters: int
    sampling_rate: float
    clip: float
    seed: int

    def __post_init__(self) -> None:
        self._generator = torch.Generator().manual_seed(self.seed)
        self._members = torch.as_tensor(
            self.coordinates[np.asarray(self.included, dtype=bool)], dtype=torch.int64
        )

    def __call__(self, step: int) -> torch.Tensor | None:
        sampled = torch.rand(self._members.numel(), generator=self._generator) < self.sampling_rate
        coordinates = self._members[sampled]
        if coordinates.numel() == 0:
            return None
        rows = torch.zeros((coordinates.numel(), self.n_parameters), dtype=torch.float32)
        rows[torch.arange(coordinates.numel()), coordinates] = CANARY_NORM * self.clip
        return rows
