"""σ reaches the weights: the noise of a whole training run has the stated scale σ·C.

One step with every record in the batch (q = 1) and the same seed: two runs that differ
only in σ draw the same initial weights, the same batch, the same groups and the same
standard-normal noise z, so their weights differ by exactly

    w(σ₂) − w(σ₁) = −lr · C · (σ₂ − σ₁) · z / normaliser

(SGD's first step with momentum moves by −lr · gradient). The z recovered from two
trained models must then be independent standard-normal draws, one per parameter: a run
whose noise were dropped, or scaled by anything but σ·C, or divided by another normaliser,
fails here. Checked with tests at level 0.001 on 1,801 parameters.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from scipy import stats

from epsstar.training.data.tables import TabularData
from epsstar.training.trainer import TrainingConfig, train

SIGMAS = (2.0, 50.0)
CLIP = 0.5
LR = 1.0


def _weights(config: TrainingConfig, data: TabularData) -> np.ndarray:
    network = train(data, config).model.network
    return torch.cat([p.detach().double().flatten() for p in network.parameters()]).numpy()


@pytest.mark.parametrize(("microbatches", "normaliser"), [(None, 1200.0), (6, 6.0)])
def test_the_noise_of_a_step_is_sigma_times_clip(
    binary_table: TabularData, microbatches: int | None, normaliser: float
) -> None:
    n = binary_table.n_records
    assert n == 1200
    base = TrainingConfig(
        epochs=1,
        batch_size=n,  # q = 1: one step, every record in it
        hidden=(300,),
        lr=LR,
        momentum=0.9,
        clip=CLIP,
        microbatches=microbatches,
        seed=11,
    )
    low, high = (
        _weights(dataclasses.replace(base, noise_multiplier=sigma), binary_table)
        for sigma in SIGMAS
    )
    z = -(high - low) * normaliser / (LR * CLIP * (SIGMAS[1] - SIGMAS[0]))
    k = z.size  # 4·300 + 300 + 300 + 1 parameters (the standardiser holds no parameters)
    assert k == 1801
    assert abs(z.mean()) < 3.3 / math.sqrt(k)  # |N(0, 1/k)| below 3.3 sd: level 0.001
    chi2 = float(np.sum(z**2))
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], df=k)
    assert lo < chi2 < hi
    assert stats.kstest(z, "norm").pvalue > 0.001
    # The check has the power to see a 10 % error in the scale (σ·C·1.1 or σ·C/1.1).
    assert not (lo < chi2 / 1.1**2 < hi)
    assert not (lo < chi2 * 1.1**2 < hi)
