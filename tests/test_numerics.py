"""The derived float32 tolerances (``tests/numerics.py``) bound what float32 arithmetic does,
and the golden comparison accepts another machine's last bits within them, nothing more."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tests.golden.cases import CASES, differences, read_tolerances
from tests.numerics import (
    module_layers,
    module_tolerance,
    moments_tolerance,
    network_tolerance,
    propagated,
)

torch = pytest.importorskip("torch")


def _network(seed: int) -> tuple[object, np.ndarray]:
    torch.manual_seed(seed)
    network = torch.nn.Sequential(
        torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 3),
    )  # fmt: skip
    features = np.random.default_rng(seed).normal(scale=3.0, size=(500, 20))
    return network.eval(), features


@pytest.mark.kernels
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_float32_network_lies_within_its_tolerance_of_float64(seed: int) -> None:
    network, features = _network(seed)
    with torch.inference_mode():
        single = network(torch.as_tensor(features, dtype=torch.float32)).double().numpy()
        exact = copy.deepcopy(network).double()(torch.as_tensor(features)).numpy()
    layers = module_layers(network)
    tolerance = network_tolerance(layers, features, against_float64=True)
    assert np.all(np.abs(single - exact) <= tolerance)
    # the module run on absolute values gives the same bound as its layers
    np.testing.assert_allclose(
        module_tolerance(network, features), network_tolerance(layers, features), rtol=1e-5
    )


@pytest.mark.kernels
def test_batches_and_threads_stay_within_two_evaluations_tolerance() -> None:
    network, features = _network(3)
    x = torch.as_tensor(features, dtype=torch.float32)
    threads = torch.get_num_threads()
    try:
        with torch.inference_mode():
            whole = network(x).double().numpy()
            torch.set_num_threads(1)
            rows = np.concatenate(
                [network(x[i : i + 7]).double().numpy() for i in range(0, 500, 7)]
            )
    finally:
        torch.set_num_threads(threads)
    tolerance = network_tolerance(module_layers(network), features)
    assert np.all(np.abs(whole - rows) <= tolerance)


def test_a_one_signed_shift_gives_a_linear_statistic_s_whole_derivative_bound() -> None:
    generator = np.random.default_rng(0)
    train, population = generator.normal(size=300), generator.normal(1.0, size=400)
    tau_train, tau_population = generator.random(300) * 1e-3, generator.random(400) * 1e-3

    def gap(a: np.ndarray, b: np.ndarray) -> float:
        return float(b.mean() - a.mean())

    moved = propagated(gap, train, population, tau_train, tau_population)
    assert moved == pytest.approx(tau_train.mean() + tau_population.mean(), rel=1e-9)


def test_the_moments_move_within_their_tolerance() -> None:
    generator = np.random.default_rng(1)
    logits = generator.normal(scale=2.0, size=(50, 300))
    logs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    tolerance = np.full(50, 1e-4)
    mu, sigma, mu_tolerance, sigma_tolerance = moments_tolerance(logs, tolerance)
    for _ in range(20):
        moved = logs + generator.uniform(-1, 1, size=logs.shape) * tolerance[:, None]
        p = np.exp(moved)
        new_mu = (p * moved).sum(axis=1)
        new_sigma = np.sqrt((p * moved * moved).sum(axis=1) - new_mu**2)
        # first order: the bound, plus the second-order remainder of a 1e-4 move
        assert np.all(np.abs(new_mu - mu) <= mu_tolerance * (1 + 1e-3))
        assert np.all(np.abs(new_sigma - sigma) <= sigma_tolerance * (1 + 1e-3))


def _golden(path: list[object], value: float) -> dict[str, object]:
    """A golden output holding ``value`` at ``path`` (zeros before a list index)."""
    document: object = value
    for key in reversed(path):
        document = [0.0] * key + [document] if isinstance(key, int) else {key: document}
    assert isinstance(document, dict)
    return document


@pytest.mark.parametrize(
    ("case", "path", "kept", "elsewhere"),
    [
        # the values a two-core Intel Xeon with AVX-512 gave
        (
            "audit-torchscript-tails",
            ["audit.json", "epsilon_star_by_delta", 0, "epsilon_star"],
            0.1838952289309701,
            0.1838949779588437,
        ),
        (
            "audit-many",
            ["many.json", "models", 1, "result", "crossfit_scores", 3],
            3.4026415267628704e-05,
            3.402653443045837e-05,
        ),
    ],
)
def test_golden_numbers_accept_another_machine_s_kernels_and_no_more(
    case: str, path: list[object], kept: float, elsewhere: float
) -> None:
    tolerances = read_tolerances(next(c for c in CASES if c.name == case))
    expected = _golden(path, kept)
    assert not list(differences(expected, _golden(path, elsewhere), case, tolerances))
    assert list(differences(expected, _golden(path, elsewhere), case, {}))
    where = case + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)
    beyond = kept + 1.01 * tolerances[where] + 1e-6 * abs(kept)
    assert list(differences(expected, _golden(path, beyond), case, tolerances))
