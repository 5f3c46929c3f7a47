"""Read the data, train, write a model directory: the steps ``train`` and ``sweep`` share."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from epsstar.training.data.tables import TabularData, load_table
from epsstar.training.progress import EpochProgress, announce
from epsstar.training.results import EpochStats, TrainingResult
from epsstar.training.runs.export import check_output_dir, prepare_output_dir, write_model_dir
from epsstar.training.runs.fingerprint import data_fingerprint, fingerprint
from epsstar.training.trainer import (
    PrivacyPlan,
    TrainingConfig,
    check_memory,
    plan_privacy,
    train,
)

__all__ = ["load_inputs", "train_to_directory"]


def load_inputs(
    data: str | os.PathLike[str],
    label_column: str,
    population: str | os.PathLike[str] | None = None,
    features: Sequence[str] | None = None,
) -> tuple[TabularData, TabularData | None]:
    """The training table and, if given, the population table encoded the same way."""
    train_data = load_table(data, label_column, features=features)
    if population is None:
        return train_data, None
    held_out = load_table(
        population,
        label_column,
        features=train_data.feature_names,
        classes=train_data.classes,
    )
    return train_data, held_out


def train_to_directory(
    data: TabularData,
    config: TrainingConfig,
    out: str | os.PathLike[str],
    *,
    population: TabularData | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
    description: str = "training",
    plan: PrivacyPlan | None = None,
    on_epoch: Callable[[EpochStats], None] | None = None,
    data_part: dict[str, Any] | None = None,
) -> TrainingResult:
    """Validate, choose σ, train and write ``model.onnx``, ``model.pt``, ``training.json``.

    Everything that can fail on bad input (the output directory, the settings,
    an unreachable target ε) is checked before the directory is created.
    ``progress=None`` shows a progress bar only on a terminal. ``plan`` reuses a
    σ chosen earlier for the same settings (:func:`plan_privacy`). ``on_epoch``
    is called after every epoch, beside the progress bar. ``data_part`` is the data's
    fingerprint (:func:`~epsstar.training.runs.fingerprint.data_fingerprint`) when computed
    already. A directory this call created is removed again if training fails or is
    interrupted.
    """
    check_output_dir(out, overwrite)
    config.validate(data.n_records)
    check_memory(config, data)
    if data_part is None:
        data_part = data_fingerprint(data, population)
    if plan is None:
        if config.target_epsilon is not None:
            announce(
                f"{description}: choosing the noise multiplier for ε = "
                f"{config.target_epsilon:g} ...",
                progress,
            )
        plan = plan_privacy(config, data.n_records)
    created = not Path(out).exists()
    directory: Path = prepare_output_dir(out, overwrite)
    try:
        with EpochProgress(description, config.epochs, enabled=progress) as bar:

            def epoch_done(stats: EpochStats) -> None:
                bar.update(stats)
                if on_epoch is not None:
                    on_epoch(stats)

            trained = train(data, config, population=population, on_epoch=epoch_done, plan=plan)
        result = dataclasses.replace(trained.result, fingerprint=fingerprint(config, data_part))
        return write_model_dir(directory, trained.model, result)
    except BaseException:
        if created:
            shutil.rmtree(directory, ignore_errors=True)
        raise
