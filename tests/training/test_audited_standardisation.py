"""In an audit of epsstar's own trainer, every run standardises on the audit's ``--population``
(fixed before any run, whatever canaries the run includes), and so does the white-box
observer; ``--standardise-on data`` fits each run's own table instead.

Whether an audit refutes the trainer standardised on the data and not the trainer standardised
on the population takes hundreds of runs (``benchmarks/case_opacus.py``, docs/case-studies.md);
these tests follow the standardiser through a few runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.cli.commands.audit_training import _procedure
from epsstar.cli.main import build_parser
from epsstar.training.data.tables import TabularData
from epsstar.training.models import Standardiser
from epsstar.training.threat_models import own_trainer
from epsstar.training.threat_models.own_trainer import OwnTrainer
from epsstar.training.trainer import TrainedModel


def _tables(folder: Path) -> tuple[Path, Path]:
    """20 training rows of 2 classes and 60 population rows of 3 classes, whose mean and
    spread differ from the training rows'."""
    rng = np.random.default_rng(8)
    paths = folder / "train.csv", folder / "population.csv"
    for path, n, shift in zip(paths, (20, 60), (0.0, 4.0), strict=True):
        frame = pd.DataFrame(rng.normal(size=(n, 3)) * (1 + shift) + shift, columns=list("abc"))
        frame["label"] = np.arange(n) % (2 if shift == 0.0 else 3)
        frame.to_csv(path, index=False)
    return paths


def _trainer(tables: tuple[Path, Path], *extra: str) -> OwnTrainer:
    """The procedure ``audit-training`` builds from its options."""
    args = build_parser().parse_args(
        [
            "audit-training",
            *("--train", str(tables[0]), "--population", str(tables[1])),
            *("--label-column", "label", "--epochs", "1", "--batch-size", "6"),
            *("--hidden", "4", "--noise-multiplier", "8", *extra),
        ]
    )
    procedure = _procedure(args, None)
    assert isinstance(procedure, OwnTrainer)
    return procedure


class _Seen:
    """What every run trained on and with, and what its white-box observer read."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.runs: list[tuple[TabularData, TrainedModel]] = []
        self.observed: list[Any] = []
        trained, watcher = own_trainer.train, own_trainer.WhiteBoxObserver

        def training(data: TabularData, *args: Any, **kwargs: Any) -> TrainedModel:
            model = trained(data, *args, **kwargs)
            self.runs.append((data, model))
            return model

        def watched(network: Any, mechanism: Any, observed: Any) -> Any:
            self.observed.append(observed)
            return watcher(network, mechanism, observed)

        monkeypatch.setattr(own_trainer, "train", training)
        monkeypatch.setattr(own_trainer, "WhiteBoxObserver", watched)


def _audit(trainer: OwnTrainer, tables: tuple[Path, Path]) -> dict[str, Any]:
    setup = TrainingAuditSetup(
        *tables, "label", runs=14, threat_models=("crafted", "every-step"), seed=3
    )
    return audit_training(trainer, setup).to_dict()


def _standardised(features: np.ndarray, standardiser: Standardiser) -> torch.Tensor:
    with torch.no_grad():
        return standardiser(torch.as_tensor(features, dtype=torch.float32))


@pytest.mark.slow
def test_every_run_and_its_observer_standardise_on_the_population(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tables = _tables(tmp_path)
    trainer = _trainer(tables)
    assert (trainer.config.standardise_on, trainer.population) == ("population", str(tables[1]))
    seen = _Seen(monkeypatch)
    result = _audit(trainer, tables)
    assert result["procedure"]["training"]["standardise_on"] == "population"
    population = pd.read_csv(tables[1])[list("abc")].to_numpy(dtype=np.float64)
    expected = Standardiser.fit(population, torch.float32)
    assert len(seen.runs) == 28
    sizes = set()
    for data, model in seen.runs:
        sizes.add(data.n_records)
        assert torch.equal(model.model.standardiser.mean, expected.mean)
        assert torch.equal(model.model.standardiser.scale, expected.scale)
        assert model.result.model.standardisation.covered_by_guarantee is True
    assert sizes == {20, 21}  # with and without the canary: one standardiser
    base = pd.read_csv(tables[0])[list("abc")].to_numpy(dtype=np.float64)
    assert len(seen.observed) == 28
    for observed in seen.observed:
        assert torch.equal(observed.train[0], _standardised(base, expected))


@pytest.mark.slow
def test_standardising_on_the_data_fits_each_run_s_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tables = _tables(tmp_path)
    trainer = _trainer(tables, "--standardise-on", "data")
    assert trainer.config.standardise_on == "data"
    seen = _Seen(monkeypatch)
    result = _audit(trainer, tables)
    assert result["procedure"]["training"]["standardise_on"] == "data"
    means = set()
    for data, model in seen.runs:
        own = Standardiser.fit(data.features, torch.float32)
        assert torch.equal(model.model.standardiser.mean, own.mean)
        assert model.result.model.standardisation.covered_by_guarantee is False
        means.add(tuple(own.mean.tolist()))
    assert len(means) > 1  # the canary moves the mean: what the guarantee does not cover
