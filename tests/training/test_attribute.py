"""Tracking the attribute's gradient sensitivity during DP-SGD (``epsstar train --attribute``):
the model is the one the same run gives untracked, R_t agrees with per-example gradients
formed by ``torch.func`` from the parameters the trainer's observer saw, and the bound is
Corollary 10's."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch.func import functional_call, grad, vmap

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.readings.attribute import attribute_bayes_security
from epsstar.statistics.readings.conversions import bayes_security_dpsgd
from epsstar.training.attribute import AttributeTracker, attribute_column, tracking_record
from epsstar.training.clipping import loss_sum
from epsstar.training.data.tables import TabularData, load_table
from epsstar.training.models import MLP, Standardiser
from epsstar.training.standardisation import fitted
from epsstar.training.trainer import StepHooks, TrainingConfig, plan_privacy, train

KINDS = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "kinds"


def adult_numeric(folder: Path, rows: int) -> tuple[Path, Path]:
    """The first ``rows`` rows of each Adult fixture as numbers: six numeric columns, ``sex``
    (1 for Male) and ``race`` (its code in sorted order), and the ``income`` label."""
    races = sorted(pd.read_csv(KINDS / "adult_train.csv")["race"].unique())
    paths = []
    for side in ("train", "population"):
        frame = pd.read_csv(KINDS / f"adult_{side}.csv").head(rows)
        numeric = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss"]
        out = frame[[*numeric, "hours-per-week"]].copy()
        out["sex"] = (frame["sex"] == "Male").astype(int)
        out["race"] = frame["race"].map({race: i for i, race in enumerate(races)})
        out["income"] = frame["income"]
        path = folder / f"{side}.csv"
        out.to_csv(path, index=False)
        paths.append(path)
    return paths[0], paths[1]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[TabularData, TabularData]:
    train_path, population_path = adult_numeric(tmp_path_factory.mktemp("adult"), 400)
    data = load_table(train_path, "income")
    return data, load_table(
        population_path, "income", features=data.feature_names, classes=data.classes
    )


def _config(hidden: tuple[int, ...] = ()) -> TrainingConfig:
    return TrainingConfig(epochs=2, batch_size=32, hidden=hidden, noise_multiplier=1.5, seed=7)


def _standardiser(
    config: TrainingConfig, data: TabularData, population: TabularData | None
) -> Standardiser:
    """The standardiser the trainer fits for ``config`` on these tables."""
    return fitted(config.standardisation(population is not None), data, population, torch.float32)


@pytest.mark.parametrize("hidden", [(), (6,)])
def test_tracking_leaves_the_model_bit_equal(
    tables: tuple[TabularData, TabularData], hidden: tuple[int, ...]
) -> None:
    data, population = tables
    config = _config(hidden)
    plain = train(data, config, population=population)
    standardiser = _standardiser(config, data, population)
    column = attribute_column(data, population, "sex")
    tracker = AttributeTracker(column, data, standardiser, clip=config.clip)
    tracked = train(data, config, population=population, hooks=StepHooks(sampled=tracker))
    for (name, a), (_, b) in zip(
        plain.model.state_dict().items(), tracked.model.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name
    assert tracker.distances().size == plain.result.hyperparameters.steps


def _independent_distances(
    data: TabularData, parameters: list[list[torch.Tensor]], hidden: tuple[int, ...], clip: float
) -> list[float]:
    """R_t over every record, from per-example gradients formed one by one by torch.func at
    the parameters of each step, clipped, and their pairwise distances in numpy."""
    standardiser = Standardiser.fit(data.features, torch.float32)
    x = standardiser(torch.as_tensor(data.features, dtype=torch.float32)).detach()
    j = data.feature_names.index("sex")
    network = MLP(data.n_features, 1, hidden, dtype=torch.float32)
    names = [name for name, _ in network.named_parameters()]
    labels = torch.as_tensor(data.labels)

    def one_loss(
        weights: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor
    ) -> torch.Tensor:
        return loss_sum(
            functional_call(network, weights, (xi.unsqueeze(0),)), yi.unsqueeze(0), True
        )

    found = []
    for step_parameters in parameters:
        weights = dict(zip(names, step_parameters, strict=True))
        versions = []
        for value in (0.0, 1.0):
            tried = x.clone()
            tried[:, j] = float((value - standardiser.mean[j]) / standardiser.scale[j])
            per_example = vmap(grad(one_loss), in_dims=(None, 0, 0))(weights, tried, labels)
            flat = torch.cat([per_example[n].flatten(1) for n in names], dim=1).double().numpy()
            norms = np.linalg.norm(flat, axis=1, keepdims=True)
            versions.append(flat * np.minimum(1.0, clip / np.maximum(norms, 1e-12)))
        found.append(float(np.linalg.norm(versions[0] - versions[1], axis=1).max()))
    return found


@pytest.mark.parametrize("hidden", [(), (5,)])
def test_distances_match_per_example_gradients(
    tables: tuple[TabularData, TabularData], hidden: tuple[int, ...]
) -> None:
    data, population = tables
    config = TrainingConfig(
        epochs=1,
        batch_size=100,
        hidden=hidden,
        noise_multiplier=1.0,
        clip=0.3,
        standardise_on="data",
        seed=1,
    )
    seen: list[list[torch.Tensor]] = []
    column = attribute_column(data, population, "sex")
    standardiser = _standardiser(config, data, None)
    every = AttributeTracker(column, data, standardiser, clip=config.clip, records="all")
    sampled = AttributeTracker(column, data, standardiser, clip=config.clip, records="sampled")

    def both(step: int, network: MLP, rows: torch.Tensor) -> None:
        every(step, network, rows)
        sampled(step, network, rows)

    hooks = StepHooks(observe=lambda step, params, noisy: seen.append(params), sampled=both)
    train(data, config, hooks=hooks)
    expected = _independent_distances(data, seen, hidden, config.clip)
    # 1e-5 relative: float32 gradients formed by two routes (one backward pass and inner
    # products here, per-example vmap there); a wrong clip, value or pairing moves R_t by more.
    np.testing.assert_allclose(every.distances(), expected, rtol=1e-5, atol=1e-7)
    assert np.all(sampled.distances() <= every.distances() + 1e-12)
    assert np.all(every.distances() <= 2 * config.clip + 1e-9)


def test_the_record_holds_corollary_10_and_the_data_independent_bound(
    tables: tuple[TabularData, TabularData],
) -> None:
    data, population = tables
    config = _config()
    plan = plan_privacy(config, data.n_records)
    assert plan is not None
    standardiser = _standardiser(config, data, population)
    column = attribute_column(data, population, "sex")
    tracker = AttributeTracker(column, data, standardiser, clip=config.clip)
    train(data, config, population=population, plan=plan, hooks=StepHooks(sampled=tracker))
    record = tracking_record(tracker, plan.sampling_rate, plan.noise_multiplier)
    r = np.asarray(record.distances)
    # By hand: erf(p‖R‖ / (2√2 σ C)).
    argument = plan.sampling_rate * np.linalg.norm(r) / (2 * math.sqrt(2) * 1.5 * config.clip)
    assert record.bound.advantage == pytest.approx(math.erf(argument), rel=1e-12)
    closed = bayes_security_dpsgd(plan.sampling_rate, plan.steps, 1.5, "substitution")
    assert record.data_independent.advantage == pytest.approx(
        closed.advantage_closed_form, rel=1e-12
    )
    assert record.bound.advantage <= record.data_independent.advantage
    document = record.to_dict()
    assert document["column"] == "sex"
    assert document["values"] == [0.0, 1.0]
    assert document["steps"] == plan.steps == len(record.distances)


def test_every_step_at_2c_is_corollary_7() -> None:
    """Corollary 10 with R_t = 2C at every step is the membership bound (Corollary 7,
    substitution), whatever C: the special case §5.1 of the paper names."""
    for p, steps, sigma, clip in ((0.01, 1000, 1.0, 1.0), (0.2, 7, 3.0, 0.25), (1.0, 1, 0.8, 4.0)):
        tracked = attribute_bayes_security(p, np.full(steps, 2 * clip), sigma, clip)
        closed = bayes_security_dpsgd(p, steps, sigma, "substitution")
        assert tracked.advantage == pytest.approx(closed.advantage_closed_form, rel=1e-12)


def test_one_full_batch_step_is_the_total_variation_of_two_gaussians() -> None:
    """p = 1, T = 1: the bound is the total variation between N(0, σ²C²) and N(R, σ²C²),
    integrated numerically here (Corollary 5 of the paper, independently)."""
    from scipy import integrate, stats

    sigma, clip, r = 1.3, 0.7, 0.9
    tracked = attribute_bayes_security(1.0, [r], sigma, clip)
    scale = sigma * clip
    tv, _ = integrate.quad(
        lambda v: 0.5 * abs(stats.norm.pdf(v, 0, scale) - stats.norm.pdf(v, r, scale)), -20, 20
    )
    # 1e-8: quadrature error; a factor of 2 in the argument moves it by 1e-1.
    assert tracked.advantage == pytest.approx(tv, abs=1e-8)


@pytest.mark.parametrize(
    ("column", "message"),
    [
        ("income", "not the label. Found 'income'."),
        ("zip", "must name a feature the model reads (age, fnlwgt"),
    ],
)
def test_columns_that_cannot_be_tracked_are_refused(
    tables: tuple[TabularData, TabularData], column: str, message: str
) -> None:
    data, population = tables
    with pytest.raises(InvalidInputError) as caught:
        attribute_column(data, population, column)
    assert message in str(caught.value)
