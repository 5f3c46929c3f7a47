"""Read the data, train, write a model directory: the steps ``train`` and ``sweep`` share."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.staging import interrupts_deferred, refuse_replacing_inputs
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.training.attribute import (
    AttributeTracker,
    Records,
    attribute_column,
    tracking_record,
)
from epsstar.training.data.tables import TabularData, load_table
from epsstar.training.models import ExportedModel
from epsstar.training.progress import EpochProgress, announce
from epsstar.training.results import EpochStats, TrainingResult
from epsstar.training.runs.export import (
    MODEL_FILES,
    check_output_dir,
    prepare_output_dir,
    write_model_dir,
)
from epsstar.training.runs.fingerprint import data_fingerprint, fingerprint
from epsstar.training.standardisation import fitted
from epsstar.training.trainer import (
    PrivacyPlan,
    StepHooks,
    TrainingConfig,
    check_memory,
    plan_privacy,
    train,
)

__all__ = [
    "first_missing",
    "load_inputs",
    "model_files",
    "train_to_directory",
    "train_tracking_attribute",
    "write_trained",
]


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


def model_files(out: str | os.PathLike[str]) -> list[tuple[str, Path]]:
    """The files a model folder receives, as ``("--out", path)`` outputs."""
    return [("--out", Path(out) / name) for name in MODEL_FILES.values()]


def first_missing(path: Path) -> Path | None:
    """The outermost folder of ``path`` that does not exist yet (None: it exists)."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing = folder
    return missing


def write_trained(
    out: str | os.PathLike[str], model: ExportedModel, result: TrainingResult
) -> TrainingResult:
    """Make ``out`` and write the model's three files, ``training.json`` last, with Ctrl-C
    deferred until they are written; folders this call made are removed if it fails."""
    directory = Path(out)
    created = first_missing(directory)
    try:
        with interrupts_deferred():
            prepare_output_dir(directory, overwrite=True)
            return write_model_dir(directory, model, result)
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise


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
    data_part: JsonObject | None = None,
) -> TrainingResult:
    """Validate, choose σ, train and write ``model.onnx``, ``model.pt``, ``training.json``.

    Everything that can fail on bad input (the output directory, an output that would
    replace the data, the settings, the table of the standardisation, the network's memory,
    an unreachable target ε) is checked before training. ``progress=None`` shows a progress
    bar only on a terminal.
    ``plan`` reuses a σ chosen earlier for the same settings (:func:`plan_privacy`).
    ``on_epoch`` is called after every epoch, beside the progress bar. ``data_part`` is the
    data's fingerprint (:func:`~epsstar.training.runs.fingerprint.data_fingerprint`) when
    computed already. The model is trained in memory and written only when done
    (:func:`write_trained`): an error or Ctrl-C while training leaves ``out`` as it was.
    """
    return _train_and_write(
        data,
        config,
        out,
        population=population,
        overwrite=overwrite,
        progress=progress,
        description=description,
        plan=plan,
        on_epoch=on_epoch,
        data_part=data_part,
    )


def train_tracking_attribute(
    data: TabularData,
    config: TrainingConfig,
    out: str | os.PathLike[str],
    column: str,
    *,
    population: TabularData | None = None,
    records: Records = "sampled",
    overwrite: bool = False,
    progress: bool | None = None,
) -> TrainingResult:
    """:func:`train_to_directory` with the sensitivity to ``column`` tracked at every step
    (:mod:`epsstar.training.attribute`) and its bound recorded in ``training.json``; the
    model is the one the same run gives untracked. Needs DP-SGD with per-example clipping."""
    tracked = attribute_column(data, population, column)
    if not config.private:
        raise InvalidInputError(
            "--attribute needs DP-SGD (--target-epsilon or --noise-multiplier): without "
            "noise the bound of Corollary 10 is 1. Found neither."
        )
    if config.clipping_groups() is not None:
        raise InvalidInputError(
            "--attribute needs per-example clipping (Corollary 10 bounds one record's "
            f"clipped gradient). Found --microbatches {config.microbatches}."
        )
    choice = config.standardisation(population is not None)
    standardiser = fitted(choice, data, population, torch.float32)
    tracker = AttributeTracker(tracked, data, standardiser, clip=config.clip, records=records)
    return _train_and_write(
        data,
        config,
        out,
        population=population,
        overwrite=overwrite,
        progress=progress,
        description="train",
        tracker=tracker,
    )


def _train_and_write(
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
    data_part: JsonObject | None = None,
    tracker: AttributeTracker | None = None,
) -> TrainingResult:
    """What :func:`train_to_directory` says, with ``tracker`` (if any) seeing every step."""
    config = config.standardising(population is not None)
    check_output_dir(out, overwrite)
    inputs = [("--data", data.source)]
    if population is not None:
        inputs.append(("--population", population.source))
    refuse_replacing_inputs(model_files(out), inputs)
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
    with EpochProgress(description, config.epochs, enabled=progress) as bar:

        def epoch_done(stats: EpochStats) -> None:
            bar.update(stats)
            if on_epoch is not None:
                on_epoch(stats)

        hooks = None if tracker is None else StepHooks(sampled=tracker)
        trained = train(
            data, config, population=population, on_epoch=epoch_done, plan=plan, hooks=hooks
        )
    result = dataclasses.replace(trained.result, fingerprint=fingerprint(config, data_part))
    if tracker is not None:
        assert plan is not None  # tracking is refused without DP-SGD
        record = tracking_record(tracker, plan.sampling_rate, plan.noise_multiplier)
        result = dataclasses.replace(result, attribute_inference=record)
    return write_trained(out, trained.model, result)
