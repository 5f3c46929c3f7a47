"""K models trained as one batched computation are the K models trained one at a time.

Every model of :func:`epsstar.training.batched.train_many` draws its batches, groups and
noise from its own generator in the order :func:`epsstar.training.trainer.train` draws
them, so its exported weights equal those of the run alone up to the order of the float32
sums inside the batched products; its privacy record is the same.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from epsstar.cli import main
from epsstar.exceptions import InvalidInputError
from epsstar.training.batched import RowSubset, train_many
from epsstar.training.data.tables import TabularData
from epsstar.training.trainer import TrainedModel, TrainingConfig, train

#: float32 weights of magnitude ≤ 1 after 2 epochs of ~20 steps, summed in another order:
#: 2.7e-7 measured. A model stepped with another model's batch, groups, noise, clip or
#: normaliser moves by more than 1e-3 (checked by the mutation test below).
WEIGHTS_ATOL = 1e-5


def _weights(trained: TrainedModel) -> np.ndarray:
    network = trained.model.network
    return torch.cat([p.detach().double().flatten() for p in network.parameters()]).numpy()


def _same_model(batched: TrainedModel, alone: TrainedModel) -> None:
    np.testing.assert_allclose(_weights(batched), _weights(alone), rtol=0, atol=WEIGHTS_ATOL)
    one, other = batched.result, alone.result
    assert one.privacy == other.privacy  # the same σ, steps, accountant and ε, exactly
    assert one.hyperparameters == other.hyperparameters
    assert one.data == other.data
    for got, expected in zip(one.history, other.history, strict=True):
        assert got.epsilon == expected.epsilon
        # the mean float32 loss of ~2,000 records summed in another order
        assert got.loss == pytest.approx(expected.loss, rel=1e-5)


SETTINGS = {
    "per-example": {"noise_multiplier": 1.0, "clip": 0.5, "standardise_on": "data"},
    "microbatches": {
        "noise_multiplier": 1.0,
        "clip": 0.5,
        "microbatches": 8,
        "standardise_on": "data",
    },
    "not-private": {},
}


@pytest.mark.parametrize(
    ("table", "setting"),
    [("binary_table", setting) for setting in SETTINGS] + [("multiclass_table", "per-example")],
)
def test_each_model_is_the_model_trained_alone(
    table: str, setting: str, request: pytest.FixtureRequest
) -> None:
    data: TabularData = request.getfixturevalue(table)
    base = TrainingConfig(epochs=2, batch_size=100, hidden=(16,), lr=0.1, **SETTINGS[setting])
    configs = [dataclasses.replace(base, seed=seed) for seed in (3, 1, 4)]
    for batched, config in zip(train_many(data, configs), configs, strict=True):
        _same_model(batched, train(data, config))


def test_models_on_their_own_rows_with_their_own_settings(binary_table: TabularData) -> None:
    """Different rows (so different standardisers and sampling rates), clip norms and noise
    in one stack; each model is the run alone on its rows, named by its subset."""
    rng = np.random.default_rng(0)
    n = binary_table.n_records
    subsets = [
        RowSubset(np.sort(rng.choice(n, size, replace=False)), f"half {k}")
        for k, size in enumerate((600, 640, 700))
    ]
    configs = [
        TrainingConfig(
            standardise_on="data",
            epochs=2,
            batch_size=60,
            hidden=(8, 8),
            clip=c,
            noise_multiplier=s,
            seed=k,
        )
        for k, (c, s) in enumerate([(0.5, 1.0), (1.0, 0.7), (0.2, 2.0)])
    ]
    batched = train_many(binary_table, configs, subsets=subsets, max_stack=3)
    for model, config, subset in zip(batched, configs, subsets, strict=True):
        assert model.result.data.train == subset.source
        _same_model(model, train(subset.of(binary_table), config))


def test_the_noise_reaches_every_model(
    binary_table: TabularData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Zeroing the drawn noise (everything else as drawn) changes every model's weights."""
    import epsstar.training.batched as batched

    config = TrainingConfig(
        standardise_on="data", epochs=1, batch_size=100, hidden=(16,), noise_multiplier=1.0
    )
    configs = [dataclasses.replace(config, seed=seed) for seed in range(4)]
    noisy = train_many(binary_table, configs)
    draw = batched._draw

    def silent(*args: Any) -> Any:
        draws = draw(*args)
        assert draws.noise is not None
        for tensor in draws.noise:
            tensor.zero_()
        return draws

    monkeypatch.setattr(batched, "_draw", silent)
    quiet = train_many(binary_table, configs)
    for loud, calm in zip(noisy, quiet, strict=True):
        # 12 steps of N(0, σ²C²)/(q·n) noise at lr 0.01 with momentum move a weight by
        # ~1e-3; a model whose noise were lost would move by 0 (float32 rounding 1e-7).
        assert np.abs(_weights(loud) - _weights(calm)).max() > 1e-4


def test_a_model_stepped_with_another_models_draws_is_caught(
    binary_table: TabularData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comparison can fail: giving every model model 0's noise breaks it."""
    import epsstar.training.batched as batched

    draw = batched._draw

    def shared_noise(*args: Any) -> Any:
        draws = draw(*args)
        if draws.noise is not None:
            for tensor in draws.noise:
                tensor[1:] = tensor[0]
        return draws

    monkeypatch.setattr(batched, "_draw", shared_noise)
    config = TrainingConfig(
        standardise_on="data", epochs=1, batch_size=100, hidden=(16,), noise_multiplier=1.0
    )
    configs = [dataclasses.replace(config, seed=seed) for seed in range(2)]
    first, second = train_many(binary_table, configs)
    alone = _weights(train(binary_table, configs[1]))
    assert np.abs(_weights(first) - _weights(train(binary_table, configs[0]))).max() < 1e-5
    assert np.abs(_weights(second) - alone).max() > 1e-3


def test_models_that_cannot_share_steps_are_trained_in_their_own_stacks(
    binary_table: TabularData,
) -> None:
    """Different architectures and epochs in one call, and a stack limit of 2; the models
    come back in the order given."""
    configs = [
        TrainingConfig(epochs=1, batch_size=200, hidden=(8,), seed=0),
        TrainingConfig(epochs=2, batch_size=200, hidden=(4, 4), seed=1),
        TrainingConfig(epochs=1, batch_size=200, hidden=(8,), seed=2),
        TrainingConfig(epochs=1, batch_size=200, hidden=(8,), seed=3),
    ]
    batched = train_many(binary_table, configs, max_stack=2)
    for model, config in zip(batched, configs, strict=True):
        _same_model(model, train(binary_table, config))


def test_a_stack_of_one_is_the_trainers_run_bit_for_bit(
    binary_table: TabularData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model that stacks with no other (here: its own architecture) is trained by the
    one-model trainer, not stepped as a stack, so its weights, losses and record equal the
    run alone exactly, and its epochs are reported under its own index."""
    import epsstar.training.batched as batched

    def no_stack(*args: Any) -> Any:
        raise AssertionError("a stack of one model was stepped as a stack")

    monkeypatch.setattr(batched, "_train_stack", no_stack)
    rows = RowSubset(np.arange(0, binary_table.n_records, 2), "even rows")
    configs = [
        TrainingConfig(
            standardise_on="data",
            epochs=2,
            batch_size=100,
            hidden=(8,),
            noise_multiplier=1.0,
            seed=5,
        ),
        TrainingConfig(
            standardise_on="data",
            epochs=2,
            batch_size=100,
            hidden=(6, 6),
            noise_multiplier=1.0,
            seed=6,
        ),
    ]
    seen: list[tuple[int, int]] = []
    single = train_many(
        binary_table,
        configs,
        subsets=[None, rows],
        on_epoch=lambda k, stats: seen.append((k, stats.epoch)),
    )
    assert sorted(seen) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    for model, config, data in zip(
        single, configs, (binary_table, rows.of(binary_table)), strict=True
    ):
        alone = train(data, config)
        np.testing.assert_array_equal(_weights(model), _weights(alone))
        assert model.result.history[-1].loss == alone.result.history[-1].loss
        assert model.result.data == alone.result.data


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"configs": []}, "at least one configuration. Found 0."),
        ({"max_stack": 0}, "max_stack must be a positive integer. Found 0."),
        ({"subsets": [None, None]}, "one entry per configuration (1). Found 2."),
    ],
)
def test_bad_arguments_are_refused(
    binary_table: TabularData, kwargs: dict[str, object], message: str
) -> None:
    arguments: dict[str, Any] = {"configs": [TrainingConfig(epochs=1)], **kwargs}
    with pytest.raises(InvalidInputError) as caught:
        train_many(binary_table, **arguments)
    assert str(caught.value).endswith(message)


def test_train_models_writes_one_folder_per_seed(
    csv_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``epsstar train --models 2`` writes model-1 (seed 7) and model-2 (seed 8), each the
    record ``epsstar train --seed`` writes for that seed alone (wall times aside)."""
    options = ["--data", str(csv_files[0]), "--population", str(csv_files[1])]
    options += ["--label-column", "label", "--epochs", "1", "--hidden", "8"]
    options += ["--noise-multiplier", "1", "--quiet"]
    assert main(["train", *options, "--models", "2", "--seed", "7", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model-1", "model-2"]
    alone = tmp_path.parent / f"{tmp_path.name}-alone"
    assert main(["train", *options, "--seed", "8", "--out", str(alone)]) == 0
    batched = json.loads((tmp_path / "model-2" / "training.json").read_text())
    expected = json.loads((alone / "training.json").read_text())
    for record in (batched, expected):
        record.pop("wall_time_seconds")
        for stats in record["history"]:
            stats.pop("seconds")
    assert batched["hyperparameters"]["seed"] == 8
    assert batched["fingerprint"] == expected["fingerprint"]
    assert batched["privacy"] == expected["privacy"]
    # losses and utilities of float32 weights that agree to 1e-5 (WEIGHTS_ATOL)
    _close(batched, expected)
    code = main(["train", *options, "--models", "0", "--out", str(tmp_path / "none")])
    assert code == 2
    assert capsys.readouterr().err.strip().endswith("--models must be from 1 to 1,000. Found 0.")


def _close(got: object, expected: object) -> None:
    """Equal JSON values, numbers to a relative 1e-5."""
    if isinstance(expected, dict):
        assert isinstance(got, dict)
        assert got.keys() == expected.keys()
        for key in expected:
            _close(got[key], expected[key])
    elif isinstance(expected, list):
        assert isinstance(got, list)
        assert len(got) == len(expected)
        for one, other in zip(got, expected, strict=True):
            _close(one, other)
    elif isinstance(expected, float):
        assert got == pytest.approx(expected, rel=1e-5)
    else:
        assert got == expected
