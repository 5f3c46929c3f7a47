"""The sweep file (TOML or JSON, ``docs/training.md``): its declared schema and the grid.

Every key is declared with :mod:`epsstar.plumbing.files.schema` and checked before
anything is planned: ``data``, ``label_column`` and optionally ``population``,
``features``, ``out``, ``repeats`` and ``seed`` at the top; ``[model]`` (``hidden``,
``lr``, ``momentum``, ``standardise_on``); ``[baseline]`` (``epochs``, one
``batch_size``) and ``[dp]`` (``target_epsilons`` × ``clips`` × ``batch_sizes`` ×
``microbatches`` × ``epochs``, with ``delta``, ``accountant`` and ``max_noise_multiplier``).
A list may be written as a single value. The grid's size (strategies × repeats) is
bounded by :data:`MAX_MODELS` before it is built. Every strategy's standardisation is
chosen when the file is read (:mod:`epsstar.training.standardisation`), so a [dp] grid
without a population or a ``standardise_on`` is refused before anything is trained.
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.schema import (
    Fields,
    Integer,
    ListOf,
    Number,
    Spec,
    Table,
    Text,
    Where,
    load_document,
)
from epsstar.statistics.names import ACCOUNTANTS, STANDARDISATIONS
from epsstar.training.runs.settings import (
    BATCH_SIZE,
    CLIP,
    EPOCHS,
    HIDDEN,
    LR,
    MOMENTUM,
    NAME,
    SEED,
)
from epsstar.training.trainer import TrainingConfig

__all__ = [
    "MAX_MODELS",
    "SWEEP_SCHEMA",
    "GridStrategy",
    "SweepConfig",
    "load_sweep_config",
    "on_device",
]

#: The most models one sweep may describe (strategies × repeats).
MAX_MODELS: Final[int] = 100_000
#: The most values one list of the grid may hold.
_MAX_VALUES = 1_000


@dataclass(frozen=True, slots=True)
class GridStrategy:
    """One strategy of the sweep's grid: a label (also its directory name) and its settings.

    The settings have seed 0; repeat r of the sweep trains with ``seed + r``.
    """

    label: str
    config: TrainingConfig


@dataclass(frozen=True, slots=True)
class SweepConfig:
    """A parsed sweep file; paths are resolved against the file's directory."""

    data: Path
    label_column: str
    population: Path | None
    features: tuple[str, ...] | None
    out: Path | None
    repeats: int
    seed: int
    strategies: tuple[GridStrategy, ...]
    #: The sweep file, when read from one (an input no output may replace).
    source: Path | None = None


@dataclass(frozen=True, slots=True)
class _Microbatches(Spec[int | None]):
    """A microbatch count ≥ 1, or ``"per-example"`` (None: every example clipped)."""

    @property
    def rule(self) -> str:
        return "an integer ≥ 1 or 'per-example'"

    def check(self, value: object, where: Where) -> int | None:
        if value == "per-example":
            return None
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 10**9:
            return value
        raise where.error(self.rule, value)


_PATH = Text()
_FEATURES = ListOf(NAME, min_items=1, max_items=1_000_000)
_REPEATS = Integer(1)
_STANDARDISE_ON = Text(choices=STANDARDISATIONS.names)
_MODEL = Table(
    {"hidden": HIDDEN, "lr": LR, "momentum": MOMENTUM, "standardise_on": _STANDARDISE_ON}
)
_BASELINE_EPOCHS = ListOf(EPOCHS, min_items=1, max_items=_MAX_VALUES, single=True)
_BASELINE_BATCH = ListOf(BATCH_SIZE, min_items=1, max_items=1, single=True)
_BASELINE = Table({"epochs": _BASELINE_EPOCHS, "batch_size": _BASELINE_BATCH}, required=("epochs",))
_EPSILONS = ListOf(Number(0.0, 1e6, open_low=True), 1, _MAX_VALUES, single=True)
_CLIPS = ListOf(CLIP, 1, _MAX_VALUES, single=True)
_BATCH_SIZES = ListOf(BATCH_SIZE, 1, _MAX_VALUES, single=True)
_MICROBATCHES = ListOf(_Microbatches(), 1, _MAX_VALUES, single=True)
_DP_EPOCHS = ListOf(EPOCHS, 1, _MAX_VALUES, single=True)
_DELTA = Number(0.0, 1.0, open_low=True, open_high=True)
_ACCOUNTANT = Text(choices=ACCOUNTANTS.names)
_MAX_NOISE = Number(0.0, 1e6, open_low=True)
_DP = Table(
    {
        "target_epsilons": _EPSILONS,
        "clips": _CLIPS,
        "batch_sizes": _BATCH_SIZES,
        "microbatches": _MICROBATCHES,
        "epochs": _DP_EPOCHS,
        "delta": _DELTA,
        "accountant": _ACCOUNTANT,
        "max_noise_multiplier": _MAX_NOISE,
    },
    required=("target_epsilons", "epochs"),
)
#: The whole sweep file.
SWEEP_SCHEMA: Final = Table(
    {
        "data": _PATH,
        "label_column": NAME,
        "population": _PATH,
        "features": _FEATURES,
        "out": _PATH,
        "repeats": _REPEATS,
        "seed": SEED,
        "model": _MODEL,
        "baseline": _BASELINE,
        "dp": _DP,
    },
    required=("data", "label_column"),
)


def _fmt(value: float) -> str:
    return f"{value:g}"


def _model_settings(top: Fields) -> TrainingConfig:
    """The [model] table as the settings every strategy starts from."""
    model = top.get("model", _MODEL)
    if model is None:
        return TrainingConfig(epochs=1)
    standardise_on = model.get("standardise_on", _STANDARDISE_ON)
    return TrainingConfig(
        epochs=1,
        hidden=model.get("hidden", HIDDEN) or (),
        lr=_or(model.get("lr", LR), 0.01),
        momentum=_or(model.get("momentum", MOMENTUM), 0.9),
        standardise_on=STANDARDISATIONS.check(standardise_on) if standardise_on else None,
    )


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def _baseline_strategies(baseline: Fields, common: TrainingConfig) -> list[GridStrategy]:
    """One non-private strategy per epoch count of the [baseline] table."""
    (batch_size,) = baseline.get("batch_size", _BASELINE_BATCH) or (64,)
    return [
        GridStrategy(f"nonprivate-e{epochs}", replace(common, epochs=epochs, batch_size=batch_size))
        for epochs in baseline.need("epochs", _BASELINE_EPOCHS)
    ]


_Lists = tuple[
    tuple[float, ...], tuple[float, ...], tuple[int, ...], tuple[int | None, ...], tuple[int, ...]
]


def _dp_lists(dp: Fields) -> _Lists:
    """The [dp] grid's axes, each with its default."""
    return (
        dp.need("target_epsilons", _EPSILONS),
        dp.get("clips", _CLIPS) or (1.0,),
        dp.get("batch_sizes", _BATCH_SIZES) or (64,),
        dp.get("microbatches", _MICROBATCHES) or (None,),
        dp.need("epochs", _DP_EPOCHS),
    )


def _dp_strategies(dp: Fields, common: TrainingConfig) -> list[GridStrategy]:
    """The [dp] grid: target ε × clip × batch size × microbatches × epochs, in that order."""
    shared = replace(
        common,
        delta=dp.get("delta", _DELTA),
        accountant=dp.get("accountant", _ACCOUNTANT) or "pld",
        max_noise_multiplier=_or(dp.get("max_noise_multiplier", _MAX_NOISE), 1000.0),
    )
    return [
        GridStrategy(
            f"dp-eps{_fmt(epsilon)}-C{_fmt(clip)}-B{batch_size}-"
            f"m{'ex' if groups is None else groups}-e{epochs}",
            replace(
                shared,
                epochs=epochs,
                batch_size=batch_size,
                clip=clip,
                target_epsilon=epsilon,
                microbatches=groups,
            ),
        )
        for epsilon, clip, batch_size, groups, epochs in itertools.product(*_dp_lists(dp))
    ]


def _check_size(source: Path, top: Fields, repeats: int) -> None:
    """Refuse a grid of more than :data:`MAX_MODELS` models before it is built."""
    baseline = top.get("baseline", _BASELINE)
    dp = top.get("dp", _DP)
    count = 0 if baseline is None else len(baseline.need("epochs", _BASELINE_EPOCHS))
    if dp is not None:
        count += math.prod(len(values) for values in _dp_lists(dp))
    if count * repeats > MAX_MODELS:
        raise InvalidInputError(
            f"{source}: the sweep describes too many models ({count} strategies × {repeats} "
            f"repeats); at most {MAX_MODELS:,} are allowed. Found {count * repeats:,}."
        )


def _grid(source: Path, top: Fields, has_population: bool) -> tuple[GridStrategy, ...]:
    """Every strategy of the [baseline] and [dp] tables, each with its standardisation
    chosen; labels must be distinct."""
    common = _model_settings(top)
    baseline = top.get("baseline", _BASELINE)
    dp = top.get("dp", _DP)
    strategies = [] if baseline is None else _baseline_strategies(baseline, common)
    strategies += [] if dp is None else _dp_strategies(dp, common)
    if not strategies:
        raise InvalidInputError(
            f"{source}: the sweep needs a [baseline] or a [dp] table. Found neither."
        )
    seen: set[str] = set()
    for strategy in strategies:
        if strategy.label in seen:
            raise InvalidInputError(
                f"{source}: every strategy of the grid must be distinct. Found "
                f"{strategy.label!r} twice."
            )
        seen.add(strategy.label)
    try:
        return tuple(replace(s, config=s.config.standardising(has_population)) for s in strategies)
    except InvalidInputError as error:
        raise InvalidInputError(
            f"{source}: {error} (in a sweep file: 'population', or 'standardise_on' in [model])"
        ) from None


def _resolve(base: Path, value: str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def on_device(config: SweepConfig, device: str) -> SweepConfig:
    """``config`` with every model trained on ``device`` (``--device``; not part of a
    model's fingerprint, so a sweep may be resumed on another device)."""
    strategies = tuple(
        replace(s, config=replace(s.config, device=device)) for s in config.strategies
    )
    return replace(config, strategies=strategies)


def load_sweep_config(path: str | os.PathLike[str]) -> SweepConfig:
    """Parse and check a sweep file (``.toml`` or ``.json``) by :data:`SWEEP_SCHEMA`;
    errors name the file and the key."""
    source = Path(path)
    if not source.exists():
        raise InvalidInputError(f"sweep config does not exist. Found {str(source)!r}.")
    top = SWEEP_SCHEMA.check(load_document(source, "sweep config"), Where(str(source)))
    repeats = top.get("repeats", _REPEATS) or 1
    _check_size(source, top, repeats)
    base = source.resolve().parent
    data = _resolve(base, top.need("data", _PATH))
    assert data is not None  # required
    population = _resolve(base, top.get("population", _PATH))
    return SweepConfig(
        data=data,
        label_column=top.need("label_column", NAME),
        population=population,
        features=top.get("features", _FEATURES),
        out=_resolve(base, top.get("out", _PATH)),
        repeats=repeats,
        seed=top.get("seed", SEED) or 0,
        strategies=_grid(source, top, population is not None),
        source=source,
    )
