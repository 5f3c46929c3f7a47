"""Fast clipping and the noisy update against a naive per-example loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from epsstar.training.clipping import (
    clipped_gradient_sum,
    clipped_gradient_sum_vmap,
    clipped_square_sum,
    gradient_sum,
    loss_sum,
)
from epsstar.training.models import MLP
from epsstar.training.trainer import noisy_gradient


def naive_clipped_sum(
    model: MLP,
    x: torch.Tensor,
    y: torch.Tensor,
    binary: bool,
    clip: float,
    groups: torch.Tensor | None = None,
    n_groups: int = 0,
) -> list[torch.Tensor]:
    """One autograd call per clipping unit: the textbook definition."""
    params = list(model.parameters())
    if groups is None:
        units = [[i] for i in range(x.shape[0])]
    else:
        units = [[i for i in range(x.shape[0]) if int(groups[i]) == k] for k in range(n_groups)]
    total = [torch.zeros_like(p) for p in params]
    for unit in units:
        if not unit:
            continue
        loss = loss_sum(model(x[unit]), y[unit], binary) / len(unit)
        grads = torch.autograd.grad(loss, params)
        norm = math.sqrt(sum(float(g.pow(2).sum()) for g in grads))
        factor = min(1.0, clip / norm) if norm > 0 else 1.0
        for acc, g in zip(total, grads, strict=True):
            acc += factor * g
    return total


def _batch(n_classes: int, hidden: tuple[int, ...], n: int = 40, d: int = 9, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    outputs = 1 if n_classes == 2 else n_classes
    model = MLP(d, outputs, hidden, generator=generator, dtype=torch.float64)
    x = torch.randn(n, d, generator=generator, dtype=torch.float64) * 2.0
    y = torch.randint(n_classes, (n,), generator=generator)
    return model, x, y


def _close(left: list[torch.Tensor], right: list[torch.Tensor], tol: float = 1e-10) -> None:
    assert len(left) == len(right)
    for a, b in zip(left, right, strict=True):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


CASES = [(2, ()), (2, (7, 5)), (4, ()), (4, (6,)), (3, (5, 5, 5))]


@pytest.mark.parametrize(("n_classes", "hidden"), CASES)
@pytest.mark.parametrize("clip", [0.05, 1.0, 1e4])
def test_per_example_clipping_matches_naive_loop(
    n_classes: int, hidden: tuple[int, ...], clip: float
) -> None:
    model, x, y = _batch(n_classes, hidden)
    binary = n_classes == 2
    expected = naive_clipped_sum(model, x, y, binary, clip)
    with torch.no_grad():
        loss = sum(float(loss_sum(model(x[i : i + 1]), y[i : i + 1], binary)) for i in range(40))
    for result in (
        clipped_gradient_sum(model, x, y, binary, clip),
        clipped_gradient_sum_vmap(model, x, y, binary, clip),
    ):
        _close(result.gradients, expected)
        # The summed loss of the batch, before clipping; 1e-12 relative: float64 sums.
        assert result.loss == pytest.approx(loss, rel=1e-12)
        assert result.n_examples == 40


@pytest.mark.parametrize(("n_classes", "hidden"), CASES)
@pytest.mark.parametrize("clip", [0.05, 1.0, 1e4])
def test_clipped_squares_match_a_loop_over_examples(
    n_classes: int, hidden: tuple[int, ...], clip: float
) -> None:
    model, x, y = _batch(n_classes, hidden)
    binary = n_classes == 2
    params = list(model.parameters())
    expected = [torch.zeros_like(p) for p in params]
    for i in range(x.shape[0]):
        grads = torch.autograd.grad(loss_sum(model(x[i : i + 1]), y[i : i + 1], binary), params)
        norm = math.sqrt(sum(float(g.pow(2).sum()) for g in grads))
        factor = min(1.0, clip / norm) if norm > 0 else 1.0
        for acc, g in zip(expected, grads, strict=True):
            acc += (factor * g) ** 2
    _close(clipped_square_sum(model, x, y, binary, clip), expected)


@pytest.mark.parametrize(("n_classes", "hidden"), CASES)
@pytest.mark.parametrize("n_groups", [1, 3, 8, 40])
@pytest.mark.parametrize("method", ["gram", "outer", "auto"])
def test_microbatch_clipping_matches_naive_loop(
    n_classes: int, hidden: tuple[int, ...], n_groups: int, method: str
) -> None:
    model, x, y = _batch(n_classes, hidden, seed=n_groups)
    binary = n_classes == 2
    groups = torch.randint(n_groups, (x.shape[0],), generator=torch.Generator().manual_seed(5))
    for clip in (0.05, 1e4):
        expected = naive_clipped_sum(model, x, y, binary, clip, groups, n_groups)
        got = clipped_gradient_sum(
            model,
            x,
            y,
            binary,
            clip,
            groups=groups,
            n_groups=n_groups,
            group_norm_method=method,
        )
        _close(got.gradients, expected)


@pytest.mark.parametrize("method", ["gram", "outer"])
def test_empty_groups_including_the_last_add_nothing(method: str) -> None:
    """The trainer draws a group for every record, sampled or not, so a batch may leave
    groups empty, the last one too: they contribute nothing, the others are clipped."""
    model, x, y = _batch(3, (5,), n=12)
    groups = torch.tensor([0, 2, 2, 0, 4, 4, 2, 0, 4, 2, 0, 4])  # 1, 3 and 5 (the last) empty
    for clip in (0.05, 1e4):
        expected = naive_clipped_sum(model, x, y, False, clip, groups, 6)
        got = clipped_gradient_sum(
            model, x, y, False, clip, groups=groups, n_groups=6, group_norm_method=method
        )
        _close(got.gradients, expected)


def test_unclipped_limit_is_the_plain_gradient() -> None:
    model, x, y = _batch(4, (6,))
    params = list(model.parameters())
    plain = torch.autograd.grad(loss_sum(model(x), y, False), params)
    _close(clipped_gradient_sum(model, x, y, False, 1e9).gradients, list(plain))


def test_every_clipped_unit_has_norm_at_most_clip() -> None:
    model, x, y = _batch(2, (8,), n=1)
    for clip in (0.01, 0.1):
        grads = clipped_gradient_sum(model, x, y, True, clip).gradients
        norm = math.sqrt(sum(float(g.pow(2).sum()) for g in grads))
        assert norm == pytest.approx(clip, rel=1e-9)


@pytest.mark.parametrize(
    "summed",
    [
        lambda m, x, y: clipped_gradient_sum(m, x, y, True, 1.0),
        lambda m, x, y: clipped_gradient_sum(m, x, y, True, 1.0, groups=y[:0], n_groups=3),
        lambda m, x, y: clipped_gradient_sum_vmap(m, x, y, True, 1.0),
        lambda m, x, y: gradient_sum(m, x, y, True),
    ],
    ids=["per-example", "microbatches", "vmap", "unclipped"],
)
def test_empty_batch_gives_zero_sum(summed) -> None:  # type: ignore[no-untyped-def]
    """A Poisson batch may be empty: a zero gradient of every parameter's shape, no loss."""
    model, x, y = _batch(2, (3,))
    result = summed(model, x[:0], y[:0])
    assert (result.n_examples, result.loss) == (0, 0.0)
    shapes = [tuple(p.shape) for p in model.parameters()]
    assert [tuple(g.shape) for g in result.gradients] == shapes
    assert all(float(g.abs().sum()) == 0.0 for g in result.gradients)


@pytest.mark.parametrize(("n_classes", "hidden"), CASES)
@pytest.mark.parametrize("n", [1, 2, 17])
def test_unclipped_sum_is_the_gradient_of_the_summed_loss(
    n_classes: int, hidden: tuple[int, ...], n: int
) -> None:
    """The non-private baseline: Σ_i ∇ℓ_i, one autograd call per example, and Σ_i ℓ_i."""
    model, x, y = _batch(n_classes, hidden, n=n)
    binary = n_classes == 2
    result = gradient_sum(model, x, y, binary)
    expected = naive_clipped_sum(model, x, y, binary, clip=math.inf)
    _close(result.gradients, expected)
    assert result.n_examples == n
    with torch.no_grad():
        losses = [float(loss_sum(model(x[i : i + 1]), y[i : i + 1], binary)) for i in range(n)]
    assert result.loss == pytest.approx(sum(losses), rel=1e-12)
    # A batch of one record is a batch, not an empty one, for the vmap implementation too.
    if n == 1:
        _close(clipped_gradient_sum_vmap(model, x, y, binary, 1e9).gradients, expected)


@pytest.mark.parametrize("n_groups", [0, 4])
def test_noisy_update_matches_naive_loop_with_fixed_noise(n_groups: int) -> None:
    """(Σ clipped + N(0, σ²C²)) / normaliser, with the noise drawn from the same seed."""
    model, x, y = _batch(3, (6, 4), n=30)
    sigma, clip, normaliser = 0.7, 0.3, 12.5
    groups = None
    if n_groups:
        groups = torch.randint(n_groups, (30,), generator=torch.Generator().manual_seed(9))
    update = noisy_gradient(
        model,
        x,
        y,
        False,
        clip=clip,
        noise_std=sigma * clip,
        normaliser=normaliser,
        generator=torch.Generator().manual_seed(123),
        groups=groups,
        n_groups=n_groups,
    )
    draws = torch.Generator().manual_seed(123)
    clipped = naive_clipped_sum(model, x, y, False, clip, groups, n_groups)
    expected = [
        (c + sigma * clip * torch.randn(c.shape, generator=draws, dtype=c.dtype)) / normaliser
        for c in clipped
    ]
    _close(update.gradients, expected)


def test_noise_has_the_stated_scale() -> None:
    """Residuals of many noisy updates: mean 0, sd σC/normaliser, Gaussian (α = 0.001 tests)."""
    model, x, y = _batch(2, (5,), n=20)
    sigma, clip, normaliser = 1.3, 0.5, 4.0
    clean = [g / normaliser for g in clipped_gradient_sum(model, x, y, True, clip).gradients]
    generator = torch.Generator().manual_seed(2024)
    residuals = []
    for _ in range(400):
        update = noisy_gradient(
            model,
            x,
            y,
            True,
            clip=clip,
            noise_std=sigma * clip,
            normaliser=normaliser,
            generator=generator,
        )
        residuals.append(
            torch.cat([(u - c).flatten() for u, c in zip(update.gradients, clean, strict=True)])
        )
    sample = torch.stack(residuals).flatten().numpy() / (sigma * clip / normaliser)
    n = sample.size  # 400 draws x 36 parameters
    assert abs(sample.mean()) < 3.3 / math.sqrt(n)
    chi2 = float(np.sum(sample**2))
    low, high = stats.chi2.ppf([0.0005, 0.9995], df=n)
    assert low < chi2 < high
    assert stats.kstest(sample, "norm").pvalue > 0.001
    # A 10 % error in the scale would be caught.
    assert not (low < chi2 / 1.1**2 < high)
