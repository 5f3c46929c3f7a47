"""Reference models for offline LiRA and RMIA: K models trained like the target, on halves
of a reference split.

The data split. The user's data are cut into three disjoint parts: the target's training
records (the members), the population records (the non-members the audit scores, RMIA's
``z`` among them) and a *reference split*. Reference model k is trained without privacy
(the K models as one batched computation, :mod:`epsstar.training.batched`, each the model
the trainer's non-private loop gives alone) on a random half of the reference split
(rows drawn without replacement, seeded by ``(seed, k)``), so every population record is
OUT for every reference model, as the attacks need (:mod:`epsstar.statistics.attacks`).
:func:`shared_rows` refuses a reference split that holds a population row.

The recipe. With the target's ``training.json`` (as ``epsstar train`` writes it) the
reference models get its architecture (hidden widths), epochs, expected batch size,
learning rate and momentum, the table of its standardisation (a target standardised on its
population has the reference models standardised on ``--population``, which they then
need), its feature columns in order and its classes in order; without it they get
:data:`DEFAULT_RECIPE`, and the result says that they are a proxy for a target trained some
other way.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final

import numpy as np

from epsstar.audit.data.checks import row_hashes
from epsstar.audit.data.tables.formats import read_schema
from epsstar.audit.model.features import Features
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.input_bounds import shown
from epsstar.plumbing.files.schema import (
    Anything,
    ListOf,
    Nullable,
    Spec,
    Table,
    Where,
    load_document,
)
from epsstar.plumbing.files.staging import (
    atomic_write_json,
    interrupts_deferred,
    refuse_replacing_inputs,
)
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.plumbing.records.json_types import JsonValue
from epsstar.statistics.names import STANDARDISATIONS, StandardiseOn
from epsstar.training.batched import RowSubset
from epsstar.training.data.tables import TabularData
from epsstar.training.runs.export import MODEL_FILES, check_output_dir
from epsstar.training.runs.settings import BATCH_SIZE, EPOCHS, HIDDEN, LR, MOMENTUM, NAME
from epsstar.training.trainer import TrainingConfig, check_memory

__all__ = [
    "DEFAULT_RECIPE",
    "MAX_MODELS",
    "RECIPE_SCHEMA",
    "SCHEMA_VERSION",
    "Recipe",
    "ReferenceModel",
    "ReferencesResult",
    "check_count",
    "check_recipe_columns",
    "half_rows",
    "half_subset",
    "read_recipe",
    "shared_rows",
    "train_references",
]

#: The file that lists the reference models of a run.
REFERENCES_FILE: Final[str] = "references.json"
#: The most reference models one run may train.
MAX_MODELS: Final[int] = 1_000

#: Version of ``references.json`` (``epsstar/schemas/references.schema.json``).
SCHEMA_VERSION: Final[int] = 1

#: The recipe without a ``training.json``: an MLP with one hidden layer of 64 units,
#: 20 epochs of SGD (expected batch 64, learning rate 0.01, momentum 0.9).
DEFAULT_RECIPE: Final[TrainingConfig] = TrainingConfig(epochs=20, hidden=(64,))


_SKIP = json_rule(skip=True)


@dataclass(frozen=True, slots=True)
class Recipe(JsonRecord):
    """How the reference models are trained, and where that came from.

    ``source`` is the ``training.json`` read, or ``None`` for :data:`DEFAULT_RECIPE`
    (then ``proxy`` is true). ``feature_names`` and ``classes`` are the target's, if known.
    Its JSON holds the source and the settings a recipe reads, and says that the reference
    models are trained without DP.
    """

    config: TrainingConfig = field(metadata=_SKIP)
    source: str | None
    feature_names: tuple[str, ...] | None = field(default=None, metadata=_SKIP)
    classes: tuple[str, ...] | None = field(default=None, metadata=_SKIP)

    @json_property(after="source")
    def proxy(self) -> bool:
        return self.source is None

    @json_property(after="source")
    def hidden(self) -> tuple[int, ...]:
        return tuple(self.config.hidden)

    @json_property(after="source")
    def epochs(self) -> int:
        return self.config.epochs

    @json_property(after="source")
    def batch_size(self) -> int:
        return self.config.batch_size

    @json_property(after="source")
    def lr(self) -> float:
        return self.config.lr

    @json_property(after="source")
    def momentum(self) -> float:
        return self.config.momentum

    @json_property()
    def private(self) -> bool:
        """Reference models are trained without DP."""
        return False


def _ignored(*keys: str) -> dict[str, Spec[Any]]:
    """Keys of ``training.json`` a recipe may hold and does not read."""
    return dict.fromkeys(keys, Anything())


_FEATURE_NAMES = ListOf(NAME, min_items=1, max_items=1_000_000)
_CLASSES = ListOf(NAME, min_items=2, max_items=1_000_000)
_DATA = Table(
    {
        "feature_names": Nullable(_FEATURE_NAMES),
        "classes": Nullable(_CLASSES),
        **_ignored("train", "population", "label_column", "n_train", "n_population"),
    }
)
#: ``model.standardisation``: a record, or the text of older records (:func:`_standardised_on`).
_STANDARDISATION = Anything()
_MODEL = Table(
    {
        "hidden": HIDDEN,
        **_ignored("architecture", "n_features", "n_outputs", "n_parameters", "output"),
        "standardisation": _STANDARDISATION,
    },
    required=("hidden",),
)
_HYPERPARAMETERS = Table(
    {
        "epochs": EPOCHS,
        "batch_size": BATCH_SIZE,
        "lr": LR,
        "momentum": MOMENTUM,
        **_ignored("sampling", "sampling_rate", "steps_per_epoch", "steps", "optimizer"),
        **_ignored("clip", "microbatches", "update_normaliser", "seed", "dtype"),
    },
    required=("epochs", "batch_size", "lr", "momentum"),
)
#: The keys of a ``training.json`` (``epsstar/schemas/training.schema.json``): those a
#: recipe reads are declared with their types and ranges, the others are let through.
RECIPE_SCHEMA: Final = Table(
    {
        "data": _DATA,
        "model": _MODEL,
        "hyperparameters": _HYPERPARAMETERS,
        **_ignored("schema_version", "kind", "private", "privacy", "utility", "history"),
        **_ignored("wall_time_seconds", "versions", "files", "fingerprint", "device"),
        **_ignored("attribute_inference"),
    },
    required=("model", "hyperparameters"),
)


def _standardised_on(record: object) -> StandardiseOn | None:
    """The table the target's standardisation was fitted on, from its ``model.standardisation``
    (a record; the text of older records named the training features); None when absent."""
    if isinstance(record, str):
        return "data"
    if isinstance(record, dict) and record.get("fitted_on") in STANDARDISATIONS:
        return STANDARDISATIONS.check(record["fitted_on"])
    return None


def read_recipe(path: str | Path | None) -> Recipe:
    """The recipe of the target's ``training.json`` at ``path`` (``None``: the default),
    every field it reads checked by :data:`RECIPE_SCHEMA` before any training."""
    if path is None:
        return Recipe(DEFAULT_RECIPE, None)
    file = Path(path)
    if file.suffix.lower() != ".json":
        raise InputFileError(f"--recipe must be a training.json file. Found {str(file)!r}.")
    document = RECIPE_SCHEMA.check(load_document(file, "--recipe"), Where(str(file)))
    model = document.need("model", _MODEL)
    hyper = document.need("hyperparameters", _HYPERPARAMETERS)
    data = document.get("data", _DATA)
    config = TrainingConfig(
        epochs=hyper.need("epochs", EPOCHS),
        batch_size=hyper.need("batch_size", BATCH_SIZE),
        hidden=model.need("hidden", HIDDEN),
        lr=hyper.need("lr", LR),
        momentum=hyper.need("momentum", MOMENTUM),
        standardise_on=_standardised_on(model.get("standardisation", _STANDARDISATION)),
    )
    names = None if data is None else data.get("feature_names", _DATA.fields["feature_names"])
    classes = None if data is None else data.get("classes", _DATA.fields["classes"])
    return Recipe(config, str(file), names, classes)


def check_recipe_columns(recipe: Recipe, path: str | Path) -> None:
    """Refuse reference data that lack a feature column of the recipe (its
    ``data.feature_names``), naming the recipe, before the data are read."""
    if recipe.feature_names is None:
        return
    columns = read_schema(path).columns
    missing = [name for name in recipe.feature_names if name not in columns]
    if missing:
        raise InputFileError(
            f"{path}: the reference data must have every feature column of the target, as "
            f"--recipe {recipe.source} lists them in data.feature_names; "
            f"{len(missing)} are not in the file. Found {shown(missing[0])} missing."
        )


def check_count(count: int) -> int:
    """The number of reference models, from 1 to :data:`MAX_MODELS`."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_MODELS:
        raise InvalidInputError(
            f"--count must be an integer from 1 to {MAX_MODELS:,} reference models. Found {count}."
        )
    return count


def half_rows(n_records: int, count: int, seed: int) -> list[np.ndarray]:
    """Row indices of each reference model's training half: ⌊n/2⌋ rows drawn without
    replacement, model k's by a generator seeded with ``(seed, k)``; sorted."""
    check_count(count)
    if n_records < 2:
        raise InvalidInputError(f"the reference split needs at least 2 rows. Found {n_records}.")
    return [
        np.sort(np.random.default_rng([seed, k]).choice(n_records, n_records // 2, replace=False))
        for k in range(count)
    ]


def half_subset(data: TabularData, rows: np.ndarray, k: int) -> RowSubset:
    """The rows of ``data`` that reference model ``k`` is trained on, and their name."""
    return RowSubset(rows, f"{data.source} (reference half {k}, {rows.size} rows)")


def half_of(data: TabularData, rows: np.ndarray, k: int) -> TabularData:
    """The rows of ``data`` that reference model ``k`` is trained on (classes kept)."""
    return half_subset(data, rows, k).of(data)


def shared_rows(reference: TabularData, population: TabularData) -> tuple[int, int | None]:
    """How many reference rows equal a population row (features and label), and the first.

    Rows are compared by the audit's canonical row hash
    (:func:`epsstar.audit.data.checks.row_hashes`: values rounded to float32, -0 as 0), so a
    row stored as float32 in one file and as float64 text in the other, or with -0.0 for
    0.0, is the same row; both tables' labels are encoded with the reference's classes.
    """
    seen = row_hashes(Features.from_matrix(population.features), population.labels)
    mine = row_hashes(Features.from_matrix(reference.features), reference.labels)
    hits = np.flatnonzero(np.isin(mine, seen))
    return int(hits.size), (int(hits[0]) if hits.size else None)


@dataclass(frozen=True, slots=True)
class ReferenceModel(JsonRecord):
    """One trained reference model: its folder, model file and training rows."""

    directory: str
    model: str
    n_records: int
    seed: int


@dataclass(frozen=True, slots=True)
class ReferencesResult(JsonRecord):
    """What ``epsstar references`` trained (``references.json``)."""

    json_constants: ClassVar[Mapping[str, JsonValue]] = {"schema_version": SCHEMA_VERSION}

    recipe: Recipe
    data: str
    n_reference_rows: int
    population_checked: str | None
    seed: int
    models: tuple[ReferenceModel, ...]

    @json_property(after="n_reference_rows")
    def split(self) -> str:
        """How each model's training rows are drawn."""
        return (
            "each model on a random half of the reference rows, drawn without "
            "replacement with the seed (seed, k); no reference row may be a population row"
        )


def _outputs(folder: Path, count: int) -> list[tuple[str, Path]]:
    """Every file a run of ``count`` reference models writes into ``folder``."""
    files = [("--out", folder / REFERENCES_FILE)]
    for k in range(count):
        files += [("--out", folder / f"ref-{k + 1:02d}" / name) for name in MODEL_FILES.values()]
    return files


def _place(staged: Path, target: Path) -> bool:
    """Move a model folder trained in ``staged`` to ``target``; into an existing folder
    file by file, ``training.json`` last (its other files are left alone). True when
    ``target`` was made."""
    if not target.exists():
        os.rename(staged, target)
        return True
    (target / MODEL_FILES["record"]).unlink(missing_ok=True)
    for name in (MODEL_FILES["onnx"], MODEL_FILES["torchscript"], MODEL_FILES["record"]):
        os.replace(staged / name, target / name)
    return False


def _commit(staging: Path, folder: Path, result: ReferencesResult) -> None:
    """Put every trained model in place and write ``references.json``, Ctrl-C deferred;
    a failure removes the model folders this commit made."""
    made: list[Path] = []
    try:
        with interrupts_deferred():
            for model in result.models:
                target = Path(model.directory)
                if _place(staging / target.name, target):
                    made.append(target)
            atomic_write_json(folder / REFERENCES_FILE, result.to_dict())
    except BaseException:
        for target in made:
            shutil.rmtree(target, ignore_errors=True)
        raise


def _check_references(
    data: TabularData, population: TabularData | None, config: TrainingConfig, rows: int
) -> None:
    """Refuse a population that shares rows with the reference data, settings that cannot
    run on a half, and a network that does not fit in memory."""
    if population is not None:
        count_shared, first = shared_rows(data, population)
        if count_shared:
            raise InvalidInputError(
                f"the reference data must hold no population record, or LiRA and RMIA are "
                f"not valid tests; {count_shared} row(s) are also in {population.source}, the "
                f"first at row {first}. Found {data.source!r}."
            )
    config.validate(rows)
    check_memory(config, data)


def _reference_settings(
    recipe: Recipe, population: TabularData | None
) -> tuple[TrainingConfig, TabularData | None]:
    """The recipe's settings without DP and with the table of their standardisation chosen,
    and the population table they standardise on (None: they fit their own halves)."""
    config = dataclasses.replace(recipe.config, target_epsilon=None, noise_multiplier=None)
    if config.standardise_on == "population" and population is None:
        raise InvalidInputError(
            f"the recipe's target standardised its features on its population table: give "
            f"--population, the audit's population, to standardise the reference models the "
            f"same way. Found none (--recipe {recipe.source})."
        )
    config = config.standardising(population is not None)
    return config, population if config.standardise_on == "population" else None


def train_references(
    data: TabularData,
    recipe: Recipe,
    out: str | Path,
    *,
    count: int,
    seed: int = 0,
    population: TabularData | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
    inputs: Sequence[tuple[str, str | os.PathLike[str]]] = (),
) -> ReferencesResult:
    """Train ``count`` reference models into ``out/ref-01``, ``out/ref-02``, ... (each
    with model.onnx, model.pt and training.json) and write ``out/references.json``.

    ``data`` is the reference split; ``population``, when given, is checked to share no
    row with it. Model k is trained by the non-private loop on :func:`half_rows` ``[k]``
    with the recipe's settings and the seed ``seed + k``; the K models are trained together
    as one batched computation (:mod:`epsstar.training.batched`), each the model its own
    run would give. ``inputs`` (``(option, path)``)
    are the files the run read, with the recipe: no output may replace one. The models are
    trained in a hidden folder inside ``out`` and moved into place together once all are
    trained; an error or Ctrl-C before that removes every folder this run made and leaves
    the folders that were there as they were.
    """
    from epsstar.training.runs.many import train_to_directories
    from epsstar.training.runs.pipeline import first_missing

    check_output_dir(out, overwrite)
    folder = Path(out)
    read = [*inputs, *([] if recipe.source is None else [("--recipe", recipe.source)])]
    refuse_replacing_inputs(_outputs(folder, count), read)
    halves = half_rows(data.n_records, count, seed)
    config, public = _reference_settings(recipe, population)
    _check_references(data, population, config, halves[0].size)
    created = first_missing(folder)
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".epsstar-references-", dir=folder))
    try:
        names = [f"ref-{k + 1:02d}" for k in range(count)]
        train_to_directories(
            data,
            [dataclasses.replace(config, seed=seed + k) for k in range(count)],
            [staging / name for name in names],
            subsets=[half_subset(data, rows, k) for k, rows in enumerate(halves)],
            population=public,
            progress=progress,
            description="references",
        )
        models = []
        for k, (name, rows) in enumerate(zip(names, halves, strict=True)):
            directory = folder / name
            models.append(
                ReferenceModel(
                    str(directory), str(directory / MODEL_FILES["onnx"]), rows.size, seed + k
                )
            )
        result = ReferencesResult(
            recipe=recipe,
            data=data.source,
            n_reference_rows=data.n_records,
            population_checked=None if population is None else population.source,
            seed=seed,
            models=tuple(models),
        )
        _commit(staging, folder, result)
    except BaseException:
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result
