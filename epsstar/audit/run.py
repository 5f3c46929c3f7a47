"""Audit one saved model: losses, Epsilon*, its confidence lower bound, readings, utility.

The pipeline streams the training and population tables through the model in
batches (:mod:`epsstar.audit.tables`), turns predictions into per-record losses in core
(:mod:`epsstar.statistics.losses`), and then computes

* the headline Epsilon* (by default the estimator's default method; any of
  :data:`epsstar.statistics.estimator.METHODS` by name, with an optional bootstrap
  interval) and the empirical Epsilon* (:mod:`epsstar.statistics.estimator`);
* a Clopper-Pearson lower bound on ε (:func:`epsstar.statistics.bounds.epsilon_lower_bound`)
  that is statistically valid: each side is split in two at random (seeded); the
  threshold is chosen on one half and the errors are counted on the other, so
  the choice does not bias the counts;
* plain-language readings: the posterior-belief bound ρ_β of Epsilon*
  (``identifiability-bernau-2021.md``), the membership advantage (observed,
  max TPR - FPR, and the bound implied by (ε*, δ)), and the TPR of the loss
  attack at 0.1 % and 1 % FPR (observed, fitted, and the (ε*, δ) bound);
* the model's utility: accuracy and AUROC on the population data, accuracy (and
  AUROC for binary models) on the training data.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from epsstar import __version__
from epsstar.audit.result import AuditResult
from epsstar.exceptions import InputFileError, InsufficientDataError, InvalidInputError
from epsstar.statistics._validation import (
    FloatArray,
    check_confidence,
    check_delta,
    check_in_range,
    check_positive_int,
)
from epsstar.statistics.estimator import (
    MIN_PARAMETRIC_RECORDS,
    MIN_RECORDS,
    default_delta,
    epsilon_star,
)
from epsstar.statistics.held_out_bound import split_lower_bound
from epsstar.statistics.losses import compute_losses
from epsstar.statistics.names import DEFAULT_METHOD, METHODS, Family, LossName, Method
from epsstar.statistics.names import OutputKind as Outputs
from epsstar.statistics.readings import membership_readings
from epsstar.statistics.utility import Utility, auroc

__all__ = [
    "AuditResult",
    "audit",
    "sha256_of",
]

#: Multi-class AUROC needs every probability row; above this many numbers it is skipped.
MAX_AUROC_VALUES = 50_000_000


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- running the model over a table ---------------------------------------------------------


@dataclass(slots=True)
class _Side:
    """What streaming one table through the model collects."""

    losses: list[FloatArray] = field(default_factory=list)
    labels: list[np.ndarray] = field(default_factory=list)
    scores: list[np.ndarray] = field(default_factory=list)
    correct: int = 0
    rows: int = 0
    keep_scores: bool = True

    def utility(self, n_outputs: int, *, with_auroc: bool = True) -> Utility:
        if self.rows == 0:
            raise InsufficientDataError("a data set has no rows. Found 0.")
        accuracy = self.correct / self.rows
        if not with_auroc:
            return Utility(self.rows, accuracy, None, "not computed for training data")
        if not self.keep_scores:
            return Utility(self.rows, accuracy, None, "too many rows x classes to keep for AUROC")
        value, note = auroc(np.concatenate(self.labels), np.concatenate(self.scores), n_outputs)
        return Utility(self.rows, accuracy, value, note)


def _class_scores(predictions: np.ndarray, output_kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(predicted class index, AUROC scores) of one batch of predictions."""
    if predictions.ndim == 1 or predictions.shape[1] == 1:
        column = predictions.reshape(-1)
        cut = 0.5 if output_kind == "probabilities" else 0.0
        return (column >= cut).astype(np.int64), column
    if predictions.shape[1] == 2:
        return np.argmax(predictions, axis=1), predictions[:, 1] - predictions[:, 0]
    if output_kind == "logits":
        from scipy.special import softmax

        probabilities = softmax(predictions, axis=1)
    else:
        probabilities = predictions
    return np.argmax(predictions, axis=1), probabilities


def _n_outputs(predictions: np.ndarray) -> int:
    return 2 if predictions.ndim == 1 or predictions.shape[1] == 1 else int(predictions.shape[1])


def _stream(
    model: Any,
    path: Path,
    *,
    classes: tuple[object, ...] | None,
    role: str,
    label_column: str,
    features: Sequence[str] | None,
    batch_size: int,
    loss: LossName,
    label_map_holder: list[Any],
    advance: Callable[[int], None] | None,
) -> tuple[_Side, int]:
    from epsstar.audit.tables import iter_batches, label_map_for

    side = _Side()
    n_outputs = 0
    for batch in iter_batches(
        path, label_column=label_column, features=features, batch_size=batch_size
    ):
        predictions = np.asarray(model.predict(batch.features), dtype=np.float64)
        if predictions.shape[0] != batch.features.shape[0]:
            raise InvalidInputError(
                f"the model must return one prediction per {role} row "
                f"({batch.features.shape[0]} rows). Found output shape {predictions.shape}."
            )
        n_outputs = _n_outputs(predictions)
        if not label_map_holder:
            label_map_holder.append(label_map_for(classes, n_outputs))
        labels = label_map_holder[0].encode(batch.labels)
        try:
            side.losses.append(
                compute_losses(labels, predictions, loss=loss, outputs=model.output_kind)
            )
        except InvalidInputError as error:
            raise InvalidInputError(f"{role} data, model output: {error}") from None
        predicted, scores = _class_scores(predictions, model.output_kind)
        side.correct += int(np.count_nonzero(predicted == labels))
        side.rows += labels.size
        # AUROC needs every score; past the budget the scores are dropped, not the audit.
        if side.keep_scores and side.rows * (n_outputs if n_outputs > 2 else 1) > MAX_AUROC_VALUES:
            side.keep_scores = False
            side.labels.clear()
            side.scores.clear()
        if side.keep_scores:
            side.labels.append(labels)
            side.scores.append(scores)
        if advance is not None:
            advance(labels.size)
    return side, n_outputs


def _recorded_classes(model_path: Path) -> tuple[object, ...] | None:
    """Class labels recorded by ``epsstar train`` beside the model (``training.json``).

    Exported reference models output one column per class without naming the
    classes; the trainer records which label each column stands for.
    """
    import json

    record = model_path.parent / "training.json"
    if not record.is_file():
        return None
    try:
        classes = json.loads(record.read_text(encoding="utf-8"))["data"]["classes"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return tuple(classes) if isinstance(classes, list) and classes else None


def audit(
    model: str | Path,
    train: str | Path,
    population: str | Path,
    *,
    label_column: str,
    features: Sequence[str] | None = None,
    delta: float | None = None,
    loader: str | None = None,
    outputs: Outputs | None = None,
    loss: LossName = "logit",
    method: Method | None = None,
    family: Family = "normal",
    interval: float | None = None,
    n_bootstrap: int = 200,
    max_epsilon: float | None = None,
    confidence: float = 0.95,
    trust: bool = False,
    seed: int = 0,
    batch_size: int = 16_384,
    progress: bool = False,
    command: str | None = None,
) -> AuditResult:
    """Audit a saved model against its training data and population data.

    ``delta`` defaults to 1/(n ln n) with n the number of training rows (the
    Epsilon* paper's choice, §4.1); it is always reported. ``loader`` names a
    plugin from the ``epsstar.loaders`` entry-point group (default: chosen by the
    model file's suffix); ``outputs`` overrides its logits/probabilities
    detection; ``trust`` allows formats that can execute code when loaded.
    ``method`` chooses the headline estimator (default: the estimator's
    default); ``interval`` (a level such as 0.95) adds a bootstrap interval from
    ``n_bootstrap`` resamples. The result is deterministic for a given ``seed``.
    """
    from epsstar.audit.plugins import get_loader, loader_for_path

    model_path, train_path, pop_path = Path(model), Path(train), Path(population)
    for name, path in (("model", model_path), ("train", train_path), ("population", pop_path)):
        if not path.is_file():
            raise InputFileError(f"{name}: no such file. Found {str(path)!r}.")
    if max_epsilon is not None:
        max_epsilon = check_in_range(
            "max_epsilon", max_epsilon, 0.0, float("inf"), low_inclusive=True
        )
    confidence = check_confidence(confidence)
    batch_size = check_positive_int("batch_size", batch_size)
    # Checked here, before the data are streamed, as the estimator would check them later.
    if method is not None and method not in METHODS:
        raise InvalidInputError(f"method must be one of {', '.join(METHODS)}. Found {method!r}.")
    if interval is not None:
        check_in_range("interval", interval, 0.0, 1.0)
        check_positive_int("n_bootstrap", n_bootstrap, minimum=2)
    started = time.perf_counter()

    plugin, info = get_loader(loader) if loader else loader_for_path(model_path)
    loaded = plugin.load(model_path, outputs=outputs, trust=trust)
    classes = loaded.classes if loaded.classes is not None else _recorded_classes(model_path)
    loaded_at = time.perf_counter()

    label_map_holder: list[Any] = []
    sides: dict[str, _Side] = {}
    n_outputs = 0
    with _progress_bar(progress) as bar:
        for role, path in (("train", train_path), ("population", pop_path)):
            advance = bar(role, path) if bar is not None else None
            sides[role], n_outputs = _stream(
                loaded,
                path,
                classes=classes,
                role=role,
                label_column=label_column,
                features=features,
                batch_size=batch_size,
                loss=loss,
                label_map_holder=label_map_holder,
                advance=advance,
            )
    train_losses = np.concatenate(sides["train"].losses) if sides["train"].losses else np.empty(0)
    pop_losses = (
        np.concatenate(sides["population"].losses) if sides["population"].losses else np.empty(0)
    )
    headline_method = DEFAULT_METHOD if method is None else method
    minimum = max(MIN_PARAMETRIC_RECORDS, MIN_RECORDS[headline_method])
    for role, values in (("training", train_losses), ("population", pop_losses)):
        if values.size < minimum:
            raise InsufficientDataError(
                f"the {role} data need at least {minimum} rows for the {headline_method} "
                f"estimate and the lower bound. Found {values.size}."
            )
    delta = default_delta(train_losses.size) if delta is None else check_delta(delta)
    streamed_at = time.perf_counter()

    headline = epsilon_star(
        train_losses,
        pop_losses,
        delta=delta,
        family=family,
        seed=seed,
        interval=interval,
        n_bootstrap=n_bootstrap,
        method=headline_method,
    )
    empirical = epsilon_star(train_losses, pop_losses, delta=delta, method="empirical")
    bound = split_lower_bound(
        train_losses, pop_losses, delta=delta, confidence=confidence, seed=seed
    )
    readings = membership_readings(train_losses, pop_losses, headline)
    measured_at = time.perf_counter()
    utility = {
        "population": sides["population"].utility(n_outputs),
        # Multi-class AUROC costs one sort per class; on training data accuracy suffices.
        "train": sides["train"].utility(n_outputs, with_auroc=n_outputs <= 2),
    }
    finished = time.perf_counter()
    provenance = {
        "model": str(model_path),
        "model_sha256": sha256_of(model_path),
        "loader": info.to_dict(),
        "output_kind": loaded.output_kind,
        "loss": loss,
        "label_column": label_column,
        "features": list(features) if features is not None else None,
        "classes": [str(c) for c in label_map_holder[0].classes] if label_map_holder else None,
        "classes_from": "model"
        if loaded.classes is not None
        else ("training.json" if classes is not None else "column order"),
        "train": str(train_path),
        "population": str(pop_path),
        "n_train": int(train_losses.size),
        "n_population": int(pop_losses.size),
        "seed": seed,
        "confidence": confidence,
        "epsstar_version": __version__,
        "python": sys.version.split()[0],
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": {
            "load": round(loaded_at - started, 3),
            "inference": round(streamed_at - loaded_at, 3),
            "statistics": round(measured_at - streamed_at, 3),
            "utility": round(finished - measured_at, 3),
            "total": round(finished - started, 3),
        },
        "command": command,
    }
    return AuditResult(
        epsilon=headline,
        empirical=empirical,
        lower_bound=bound,
        readings=readings,
        utility=utility,
        provenance=provenance,
        max_epsilon=max_epsilon,
        train_losses=train_losses,
        population_losses=pop_losses,
    )


class _progress_bar:  # noqa: N801 - used as a context manager factory
    """A rich progress bar with one task per data set, or nothing when disabled."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.progress: Any = None

    def __enter__(self) -> Callable[[str, Path], Callable[[int], None]] | None:
        if not self.enabled:
            return None
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        from epsstar.audit.tables import count_rows

        console = Console(stderr=True)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not console.is_terminal,
        )
        self.progress.start()

        def add(role: str, path: Path) -> Callable[[int], None]:
            # Counting rows can mean reading a CSV file once more: only for a visible bar.
            total = count_rows(path) if console.is_terminal else None
            task = self.progress.add_task(f"{role} rows", total=total)
            return lambda rows: self.progress.advance(task, rows)

        return add

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()
