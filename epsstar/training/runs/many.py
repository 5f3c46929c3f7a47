"""Train K models as one batched computation and write a model folder for each.

The K-model counterpart of :func:`epsstar.training.runs.pipeline.train_to_directory`:
every check that can fail on bad input runs before training, the models are trained
together by :func:`epsstar.training.batched.train_many` (each the model its own run
would give), and each is written to its own folder (``model.onnx``, ``model.pt``,
``training.json``, as :func:`~epsstar.training.runs.pipeline.write_trained` writes it) once
all are trained. An error or Ctrl-C while training leaves every folder as it was; the
folders are then written one after another.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from epsstar.plumbing.files.staging import refuse_replacing_inputs
from epsstar.training.batched import RowSubset, train_many
from epsstar.training.data.tables import TabularData
from epsstar.training.progress import EpochProgress
from epsstar.training.results import EpochStats, TrainingResult
from epsstar.training.runs.export import check_output_dir
from epsstar.training.runs.fingerprint import data_fingerprint, fingerprint
from epsstar.training.runs.pipeline import model_files, write_trained
from epsstar.training.trainer import PrivacyPlan, TrainingConfig

__all__ = ["model_folders", "train_to_directories"]


def model_folders(out: str | os.PathLike[str], count: int) -> list[Path]:
    """``out/model-1`` … ``out/model-K``, numbered with as many digits as K has."""
    width = len(str(count))
    return [Path(out) / f"model-{k + 1:0{width}d}" for k in range(count)]


def train_to_directories(
    data: TabularData,
    configs: Sequence[TrainingConfig],
    outs: Sequence[str | os.PathLike[str]],
    *,
    subsets: Sequence[RowSubset | None] | None = None,
    population: TabularData | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
    description: str = "training",
    plans: Sequence[PrivacyPlan | None] | None = None,
    on_epoch: Callable[[int, EpochStats], None] | None = None,
) -> list[TrainingResult]:
    """Train model k with ``configs[k]`` (on ``subsets[k]`` of ``data`` when given) into
    ``outs[k]``, all K at once; the records as written, in order.

    ``plans[k]`` reuses a σ chosen earlier for model k; ``on_epoch(k, stats)`` is called
    after every epoch of model k.
    """
    chosen = [None] * len(configs) if subsets is None else list(subsets)
    inputs = [("--data", data.source)]
    if population is not None:
        inputs.append(("--population", population.source))
    for out in outs:
        check_output_dir(out, overwrite)
    refuse_replacing_inputs([file for out in outs for file in model_files(out)], inputs)
    epochs = max(config.epochs for config in configs)
    last = len(configs) - 1
    with EpochProgress(f"{description} ({len(configs)} models)", epochs, enabled=progress) as bar:

        def epoch_done(k: int, stats: EpochStats) -> None:
            if k == last:
                bar.update(stats)
            if on_epoch is not None:
                on_epoch(k, stats)

        trained = train_many(
            data,
            configs,
            subsets=chosen,
            population=population,
            plans=plans,
            on_epoch=epoch_done,
        )
    results = []
    whole = None if all(chosen) else data_fingerprint(data, population)
    for model, config, subset, out in zip(trained, configs, chosen, outs, strict=True):
        part = whole if subset is None else data_fingerprint(subset.of(data), population)
        assert part is not None
        result = dataclasses.replace(model.result, fingerprint=fingerprint(config, part))
        results.append(write_trained(out, model.model, result))
    return results
