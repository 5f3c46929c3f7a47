"""``--init pretrained`` in epsstar's own trainer: the network pretrained once on public data,
seeded, and every run starting from exactly those weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from epsstar.training.data.tables import TabularData
from epsstar.training.threat_models.own_trainer import OwnTrainer, parameter_count
from epsstar.training.trainer import TrainingConfig, train


def _write(table: TabularData, path: Path) -> Path:
    frame = pd.DataFrame(table.features, columns=list(table.feature_names))
    frame["label"] = table.labels
    frame.to_csv(path, index=False)
    return path


def test_the_pretrained_start_is_seeded_and_every_run_starts_there(
    binary_table: TabularData, tmp_path: Path
) -> None:
    config = TrainingConfig(epochs=2, batch_size=64, hidden=(8,), lr=0.05)
    trainer = OwnTrainer(config, "label", parameter_count(4, 2, (8,)), init="pretrained")
    public = _write(binary_table, tmp_path / "public.csv")
    assert trainer.needs_public()
    ready = trainer.prepared(public, seed=7)
    again = trainer.prepared(public, seed=7)
    assert not ready.needs_public()
    assert ready.initial is not None
    assert again.initial is not None
    assert [w.shape for w in ready.initial] == [(8, 4), (8,), (1, 8), (1,)]
    for first, second in zip(ready.initial, again.initial, strict=True):
        np.testing.assert_array_equal(first, second)
    # a run that barely moves ends where it started: at the pretrained weights, not the seeded
    still = TrainingConfig(epochs=1, batch_size=64, hidden=(8,), lr=1e-12, momentum=0.0)
    start = [torch.as_tensor(w, dtype=torch.float32) for w in ready.initial]
    moved = train(binary_table, still, initial=start).model.network
    seeded = train(binary_table, still).model.network
    for value, kept, fresh in zip(start, moved.parameters(), seeded.parameters(), strict=True):
        torch.testing.assert_close(kept.detach(), value)
        assert not torch.allclose(fresh.detach(), value)


def test_a_trainer_without_init_needs_nothing_and_names_nothing() -> None:
    config = TrainingConfig(epochs=1, batch_size=64, hidden=(8,))
    trainer = OwnTrainer(config, "label", parameter_count(4, 2, (8,)))
    assert not trainer.needs_public()
    assert "init" not in trainer.describe()
