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
import torch.nn.functional as F
from scipy import stats

from epsstar.training.data.tables import TabularData
from epsstar.training.models import MLP
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
        standardise_on="data",
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


def _one_step_by_hand(data: TabularData, config: TrainingConfig, normaliser: float) -> np.ndarray:
    """The weights after one step with every record in the batch, computed here: the
    initial weights and groups drawn as the trainer draws them from its seed, then
    w0 − lr · Σ_units min(1, C/‖∇_unit‖) ∇_unit / normaliser in float64, one autograd call
    per clipping unit (a unit's gradient is the mean over its records); without privacy
    the plain Σ_i ∇_i / normaliser."""
    generator = torch.Generator().manual_seed(config.seed)
    network = MLP(data.n_features, 1, config.hidden, generator=generator, dtype=torch.float32)
    network = network.double()
    n = data.n_records
    assert bool((torch.rand(n, generator=generator) < 1.0).all())  # q = 1: all sampled
    x = torch.as_tensor((data.features - data.features.mean(0)) / data.features.std(0))
    y = torch.as_tensor(data.labels, dtype=torch.float64)
    if config.microbatches is None:
        units = [[i] for i in range(n)]
    else:
        groups = torch.randint(config.microbatches, (n,), generator=generator)
        units = [torch.nonzero(groups == k).flatten().tolist() for k in range(6)]
    params = list(network.parameters())
    total = [torch.zeros_like(p) for p in params]
    for unit in units:
        logits = network(x[unit]).reshape(-1)
        loss = F.binary_cross_entropy_with_logits(logits, y[unit], reduction="mean")
        grads = torch.autograd.grad(loss, params)
        norm = math.sqrt(sum(float(g.pow(2).sum()) for g in grads))
        factor = min(1.0, config.clip / norm) if config.private else 1.0
        weight = factor * (1 if config.private and config.microbatches else len(unit))
        for acc, g in zip(total, grads, strict=True):
            acc += weight * g
    with torch.no_grad():
        stepped = [p - config.lr * t / normaliser for p, t in zip(params, total, strict=True)]
    return torch.cat([p.flatten() for p in stepped]).numpy()


@pytest.mark.parametrize(
    ("private", "microbatches", "normaliser"),
    [(True, None, 1200.0), (True, 6, 6.0), (False, None, 1200.0)],
    ids=["per-example", "microbatches", "not-private"],
)
def test_one_step_clips_each_unit_as_stated(
    binary_table: TabularData, private: bool, microbatches: int | None, normaliser: float
) -> None:
    """A clip of 0.01, below every unit's gradient norm: the trained weights are those of
    the clipped update computed by hand. The noise is removed exactly: runs with σ = 0.5
    and σ = 1 draw the same z, so 2·w(0.5) − w(1) is the step without noise."""
    config = TrainingConfig(
        standardise_on="data",
        epochs=1,
        batch_size=binary_table.n_records,
        hidden=(8,),
        lr=LR,
        clip=0.01,
        microbatches=microbatches,
        noise_multiplier=1.0 if private else None,
        seed=5,
    )
    expected = _one_step_by_hand(binary_table, config, normaliser)
    if private:
        half, one = (
            _weights(dataclasses.replace(config, noise_multiplier=sigma), binary_table)
            for sigma in (0.5, 1.0)
        )
        got = 2 * half - one
    else:
        got = _weights(config, binary_table)
    # float32 weights of magnitude ≤ 1, combined as above: 3e-8 measured; the clipped
    # update moves them by ~1e-2, and an unclipped one, a missing group or noise where
    # there should be none by more than 1e-4.
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-6)


def test_an_epochs_loss_is_the_mean_over_the_records_its_steps_saw(
    binary_table: TabularData,
) -> None:
    """Two Poisson steps (q = 1/2) with a learning rate of 1e-12, so the weights stay at
    their initial values: the epoch's loss is Σ_steps Σ_{i ∈ batch} ℓ_i / Σ_steps |batch|,
    with the batches drawn as the trainer draws them from its seed."""
    n = binary_table.n_records
    config = TrainingConfig(epochs=1, batch_size=n // 2, hidden=(8,), lr=1e-12, seed=2)
    record = train(binary_table, config).result
    generator = torch.Generator().manual_seed(config.seed)
    network = MLP(binary_table.n_features, 1, config.hidden, generator=generator).double()
    features = binary_table.features
    x = torch.as_tensor((features - features.mean(0)) / features.std(0))
    y = torch.as_tensor(binary_table.labels, dtype=torch.float64)
    with torch.no_grad():
        losses = F.binary_cross_entropy_with_logits(
            network(x).reshape(-1), y, reduction="none"
        ).numpy()
    total, seen = 0.0, 0
    for _ in range(2):
        batch = (torch.rand(n, generator=generator) < 0.5).numpy()
        total, seen = total + float(losses[batch].sum()), seen + int(batch.sum())
    assert record.hyperparameters.steps_per_epoch == 2
    # float32 losses averaged over ~1,200 records: 1e-6 relative; one record more or less
    # in the count, or one step's loss left out, moves the mean by more than 1e-4.
    assert record.history[0].loss == pytest.approx(total / seen, rel=1e-6)
