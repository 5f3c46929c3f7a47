"""The training loop: determinism, the privacy record, utility."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from opacus.accountants import PRVAccountant

from epsstar.exceptions import InvalidInputError
from epsstar.training.accounting import membership_advantage
from epsstar.training.data.tables import TabularData
from epsstar.training.trainer import TrainingConfig, plan_privacy, train


def _weights(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.slow
def test_same_seed_same_model_and_record(binary_table: TabularData) -> None:
    config = TrainingConfig(
        epochs=2,
        batch_size=50,
        hidden=(8,),
        target_epsilon=2.0,
        microbatches=5,
        standardise_on="data",
        seed=7,
    )
    plan = plan_privacy(config, binary_table.n_records)
    first, second = train(binary_table, config, plan=plan), train(binary_table, config, plan=plan)
    for a, b in zip(_weights(first.model), _weights(second.model), strict=True):
        assert torch.equal(a, b)
    assert [h.loss for h in first.result.history] == [h.loss for h in second.result.history]
    other = train(binary_table, dataclasses.replace(config, seed=8), plan=plan)
    assert not torch.equal(_weights(first.model)[2], _weights(other.model)[2])


@pytest.mark.slow
def test_dp_record_is_consistent_and_independently_checked(binary_table: TabularData) -> None:
    config = TrainingConfig(
        standardise_on="data", epochs=3, batch_size=40, hidden=(6,), target_epsilon=1.5, clip=0.5
    )
    result = train(binary_table, config).result
    privacy = result.privacy
    assert privacy is not None
    n = binary_table.n_records
    assert privacy.delta == pytest.approx(1 / (n * math.log(n)))
    assert privacy.sampling_rate == pytest.approx(40 / n)
    assert privacy.steps == 3 * round(n / 40) == result.hyperparameters.steps
    assert privacy.epsilon <= 1.5
    assert privacy.epsilon > 1.45  # the smallest σ that meets the target was chosen
    assert privacy.sensitivity == 0.5
    assert privacy.noise_std == pytest.approx(privacy.noise_multiplier * 0.5)
    assert privacy.accountant["name"] == "pld"
    # A second library, from the recorded (σ, q, steps, δ) only.
    prv = PRVAccountant()
    prv.history = [(privacy.accounting_noise_multiplier, privacy.sampling_rate, privacy.steps)]
    assert prv.get_epsilon(delta=privacy.delta) == pytest.approx(privacy.epsilon, rel=0.04)
    assert privacy.posterior_belief_bound == pytest.approx(1 / (1 + math.exp(-privacy.epsilon)))
    assert 0 < privacy.advantage_bound_gaussian < 1
    security = privacy.bayes_security
    assert set(security) == {"add_remove", "substitution"}
    # Corollary 7: substitution uses σ·√2, add/remove 2√2·σ.
    argument = (
        privacy.sampling_rate * math.sqrt(privacy.steps) / (math.sqrt(2) * privacy.noise_multiplier)
    )
    assert security["substitution"]["beta_closed_form"] == pytest.approx(math.erfc(argument))
    assert security["add_remove"]["beta_closed_form"] == pytest.approx(math.erfc(argument / 2))
    # The exact values come from the PLD of the recorded (σ, q, steps) and the recorded grid.
    for relation, reading in security.items():
        exact = membership_advantage(
            privacy.accounting_noise_multiplier,
            privacy.sampling_rate,
            privacy.steps,
            relation,
            coarsest_interval=reading["value_discretization_interval"],
        )
        assert reading["value_discretization_interval"] == exact.value_discretization_interval
        assert reading["advantage_exact"] == exact.advantage
        assert reading["beta_exact"] == pytest.approx(1 - exact.advantage)
        assert reading["closed_form_unreliable"] is (reading["noise_multiplier"] < 1)
    # The add/remove (ε, δ) guarantee caps that advantage at (e^ε − 1 + 2δ)/(e^ε + 1).
    epsilon = privacy.epsilon
    cap = (math.exp(epsilon) - 1 + 2 * privacy.delta) / (math.exp(epsilon) + 1)
    assert 0 < security["add_remove"]["advantage_exact"] <= cap
    assert security["substitution"]["beta_exact"] < security["add_remove"]["beta_exact"]
    epsilons = [h.epsilon for h in result.history]
    assert epsilons == sorted(epsilons)
    assert epsilons[-1] == privacy.epsilon


@pytest.mark.slow
def test_microbatches_double_the_sensitivity(binary_table: TabularData) -> None:
    n = binary_table.n_records
    base = TrainingConfig(standardise_on="data", epochs=2, batch_size=60, target_epsilon=1.0)
    per_example = plan_privacy(base, n)
    grouped = plan_privacy(dataclasses.replace(base, microbatches=6), n)
    assert per_example is not None
    assert grouped is not None
    assert grouped.sensitivity_factor == 2.0
    assert grouped.noise_multiplier == pytest.approx(2 * per_example.noise_multiplier)
    assert grouped.accounting_noise_multiplier == per_example.accounting_noise_multiplier
    same = plan_privacy(dataclasses.replace(base, microbatches=60), n)
    assert same is not None
    assert same.sensitivity_factor == 1.0
    record = train(binary_table, dataclasses.replace(base, microbatches=6), plan=grouped)
    privacy = record.result.privacy
    assert privacy is not None
    assert privacy.sensitivity == 2.0
    assert privacy.clipping_unit == "microbatch"
    security = privacy.bayes_security
    assert 0 < security["add_remove"]["beta_exact"] < 1
    assert security["substitution"]["beta_exact"] is None  # no dominating pair for groups
    assert security["substitution"]["advantage_exact"] is None
    assert security["substitution"]["beta_closed_form"] > 0
    assert record.result.hyperparameters.update_normaliser == 6


def test_fixed_noise_multiplier(binary_table: TabularData) -> None:
    result = train(
        binary_table, TrainingConfig(standardise_on="data", epochs=1, noise_multiplier=2.0)
    ).result
    assert result.privacy is not None
    assert result.privacy.noise_multiplier == 2.0
    assert result.privacy.target_epsilon is None


@pytest.mark.slow
def test_non_private_baseline_learns(
    binary_table: TabularData, multiclass_table: TabularData
) -> None:
    for table in (binary_table, multiclass_table):
        result = train(table, TrainingConfig(epochs=4, batch_size=32, hidden=(16,))).result
        assert result.privacy is None
        assert result.hyperparameters.clip is None
        assert result.utility_train.accuracy > 0.7
        losses = [h.loss for h in result.history]
        assert losses[-1] < losses[0]
    assert result.utility_train.auroc is None  # multi-class: accuracy only


def test_population_utility(binary_table: TabularData) -> None:
    half = binary_table.n_records // 2
    part = lambda rows: dataclasses.replace(  # noqa: E731
        binary_table, features=binary_table.features[rows], labels=binary_table.labels[rows]
    )
    result = train(
        part(slice(0, half)), TrainingConfig(epochs=3, lr=0.1), population=part(slice(half, None))
    ).result
    assert result.utility_population is not None
    assert result.utility_population.n_records == binary_table.n_records - half
    assert result.utility_population.auroc is not None
    assert result.utility_population.auroc > 0.8
    wrong = dataclasses.replace(binary_table, feature_names=("a", "b", "c", "d"))
    with pytest.raises(InvalidInputError, match="population data"):
        train(binary_table, TrainingConfig(epochs=1), population=wrong)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"batch_size": 5000}, "batch_size must be at most the number of training records"),
        ({"epochs": 0}, "epochs must be an integer"),
        ({"target_epsilon": 1.0, "noise_multiplier": 1.0}, "either target_epsilon"),
        ({"target_epsilon": -1.0}, "target_epsilon must be in"),
        ({"target_epsilon": 1.0, "clip": 0.0}, "clip must be in"),
        ({"target_epsilon": 1.0, "delta": 0.7}, "delta must be in"),
        ({"target_epsilon": 1.0, "accountant": "gdp"}, "accountant must be one of"),
        ({"target_epsilon": 1e-4, "max_noise_multiplier": 10.0}, "cannot be reached"),
    ],
)
def test_bad_settings(binary_table: TabularData, changes: dict[str, object], message: str) -> None:
    """A setting is refused when the record is built, or, against the data, when planned."""
    with pytest.raises(InvalidInputError, match=message):
        plan_privacy(
            dataclasses.replace(TrainingConfig(epochs=1), **changes), binary_table.n_records
        )


def test_single_class_is_refused(binary_table: TabularData) -> None:
    table = dataclasses.replace(
        binary_table, labels=np.zeros(binary_table.n_records, dtype=np.int64), classes=("0",)
    )
    with pytest.raises(InvalidInputError, match="at least 2 values"):
        train(table, TrainingConfig(epochs=1))


def test_the_plan_records_where_delta_came_from(binary_table: TabularData) -> None:
    n = binary_table.n_records
    given = plan_privacy(
        TrainingConfig(standardise_on="data", epochs=1, noise_multiplier=1.0, delta=1e-6), n
    )
    assert given is not None
    assert (given.delta, given.delta_rule) == (1e-6, "given")
    default = plan_privacy(TrainingConfig(standardise_on="data", epochs=1, noise_multiplier=1.0), n)
    assert default is not None
    assert default.delta == pytest.approx(1 / (n * math.log(n)), rel=1e-12)
    assert default.delta_rule == "1/(n ln n)"


def test_a_small_target_refines_the_accounting_grid(binary_table: TabularData) -> None:
    """The PLD grid step is ε/100 for targets below 0.1 (at most 1e-3, at least 1e-4)."""
    n = binary_table.n_records
    plan = plan_privacy(
        TrainingConfig(standardise_on="data", epochs=1, batch_size=50, target_epsilon=0.05), n
    )
    assert plan is not None
    assert plan.accountant.value_discretization_interval == pytest.approx(5e-4)
    assert plan.epsilon_after(plan.steps) <= 0.05
    assert (plan.target_epsilon, plan.steps_per_epoch, plan.steps) == (0.05, 24, 24)


def test_the_noise_cap_bounds_the_microbatch_sigma(binary_table: TabularData) -> None:
    """With microbatches σ is twice the accountant's; max_noise_multiplier caps σ itself."""
    n = binary_table.n_records
    base = TrainingConfig(standardise_on="data", epochs=2, batch_size=60, target_epsilon=1.0)
    per_example = plan_privacy(base, n)
    assert per_example is not None
    needed = 2 * per_example.noise_multiplier  # σ of the grouped run
    grouped = dataclasses.replace(base, microbatches=6, max_noise_multiplier=1.2 * needed)
    plan = plan_privacy(grouped, n)
    assert plan is not None
    assert plan.noise_multiplier == pytest.approx(needed, rel=1e-6)
    with pytest.raises(InvalidInputError, match="cannot be reached"):
        plan_privacy(dataclasses.replace(grouped, max_noise_multiplier=0.8 * needed), n)
