"""Epsilon* of DP-SGD models against the ε their accountant certifies.

Models are trained with the project's DP-SGD trainer to a target ε ∈ {1, 3} at
δ = 1/(n ln n) (PLD accountant, add/remove neighbours) on two data sets, several
seeds each:

- UCI Adult (32,561 training and 16,281 population rows): the demo's DP recipe
  (:mod:`epsstar.cli.commands.demo`: 3×100 MLP, 5 epochs, batch 64, clip 1, SGD lr 0.01,
  momentum 0.9);
- Purchase-like (``purchase_like``: 600 binary features, 100 classes; 10,000
  training and 10,000 population records, data seed 0): the Epsilon* paper's 3×100
  MLP, 30 epochs, batch 1024, clip 1, SGD lr 0.1, momentum 0.9 (the paper's lr
  0.01 with its batches and clip norms leaves DP models at 1-5 % test accuracy on
  10,000 records; these settings were the best of a few tried at ε = 3, seed 0);
- Purchase-like, the paper's grid strategy clip 1, batch 1024, 32 microbatches, SGD lr 0.01,
  momentum 0.9, 5 epochs (``purchase-paper``): on these records it stays at chance, and its
  losses are those of the exported model's float32 probabilities (its own forward pass,
  clipped as the loaders clip them). On the full grid such models gave few distinct losses;
  the table's ``distinct losses`` column says whether these do.

Each model's logit losses (exact, from its logits) on its training and population
rows go through the audit's statistics at the default settings
(:func:`epsstar.audit.attacks.from_losses.audit_losses` with ``AuditOptions()``: the
default estimator, the held-out lower bound and leak test, the ``significant``
gate, δ = 1/(n ln n), the trainer's δ). The tables count the models whose headline
Epsilon*, gate statistic and held-out lower bound exceed the accounted ε.

What an excess means: Theorem 4 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine
Learning Models", bounds the mechanism-level ε̄ (rates averaged over training runs) by the
mechanism's ε; one model's Epsilon* is an observation of a random quantity (Theorem 2), and the
accountant's ε is for add/remove neighbours while the membership game swaps a training record for a
population record. The check is therefore one of consistency, not a proof: an Epsilon* above the
accounted ε is not what DP-SGD leads one to expect, and the lines printed for such models
(unsupported rates, cross-fitted scores, plug-in and empirical values) show whether it rests on the
data or on extrapolated tails.

Trained models' losses are cached as .npz under ``--cache-dir`` (keyed by data set,
sizes, recipe and seed), so a rerun only audits; delete the folder after changing
the trainer.

    python benchmarks/dp_consistency.py     # 60 models: about 2 min on 2 cores
    python benchmarks/dp_consistency.py --seeds 2 --datasets adult --epsilons 3
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar import __version__
from epsstar.cli.commands import demo
from epsstar.cli.common.text_table import aligned_table

DATASETS = ("adult", "purchase-like", "purchase-paper")
#: The data sets drawn from the Purchase-like generator.
PURCHASE = ("purchase-like", "purchase-paper")
#: Purchase-like sizes and data seed (the population rows follow the training rows).
PURCHASE_ROWS = (10_000, 10_000)
PURCHASE_DATA_SEED = 0
BATCH_ROWS = 20_000


@dataclass(frozen=True, slots=True)
class Recipe:
    """The training settings of one data set (the seed and target ε are set per model)."""

    epochs: int
    batch_size: int
    hidden: tuple[int, ...]
    clip: float
    lr: float
    momentum: float
    microbatches: int | None = None
    #: Losses from the network's logits (exact), or from its float32 probabilities, as an
    #: exported model gives them.
    outputs: str = "logits"


RECIPES: dict[str, Recipe] = {
    "adult": Recipe(
        epochs=demo.DP_EPOCHS,
        batch_size=demo.BATCH_SIZE,
        hidden=demo.HIDDEN,
        clip=demo.CLIP,
        lr=0.01,
        momentum=0.9,
    ),
    "purchase-like": Recipe(
        epochs=30, batch_size=1024, hidden=(100, 100, 100), clip=1.0, lr=0.1, momentum=0.9
    ),
    "purchase-paper": Recipe(
        epochs=5,
        batch_size=1024,
        hidden=(100, 100, 100),
        clip=1.0,
        lr=0.01,
        momentum=0.9,
        microbatches=32,
        outputs="probabilities",
    ),
}


@dataclass(frozen=True, slots=True)
class Job:
    dataset: str
    target_epsilon: float
    seed: int
    cache_dir: Path


@dataclass(frozen=True, slots=True)
class ModelRow:
    """One audited model: what the accountant certifies and what the audit found."""

    dataset: str
    target_epsilon: float
    accounted_epsilon: float
    training_delta: float
    audit_delta: float
    seed: int
    epsilon_star: float
    method: str
    distinct_losses: int
    crossfit_epsilon: float
    gate_value: float
    leak_p_value: float
    lower_bound: float
    unsupported_rates: tuple[str, ...]
    attained_by: str
    fpr: float
    fnr: float
    empirical_epsilon: float
    plug_in_epsilon: float | None
    crossfit_scores: tuple[float, ...]
    train_accuracy: float
    test_accuracy: float
    train_seconds: float
    from_cache: bool


@dataclass(frozen=True, slots=True)
class CellSummary:
    """The models of one (data set, target ε) and how many of them exceed their accounted ε."""

    dataset: str
    target_epsilon: float
    models: int
    max_epsilon_star: float
    mean_epsilon_star: float
    headline_above: int
    gate_above: int
    lower_bound_above: int


def summarise(rows: Sequence[ModelRow]) -> list[CellSummary]:
    """One summary per (data set, target ε), in order of first appearance."""
    cells: dict[tuple[str, float], list[ModelRow]] = {}
    for row in rows:
        cells.setdefault((row.dataset, row.target_epsilon), []).append(row)
    summaries = []
    for (dataset, target), members in cells.items():
        estimates = np.array([m.epsilon_star for m in members])
        summaries.append(
            CellSummary(
                dataset=dataset,
                target_epsilon=target,
                models=len(members),
                max_epsilon_star=float(estimates.max()),
                mean_epsilon_star=float(estimates.mean()),
                headline_above=sum(m.epsilon_star > m.accounted_epsilon for m in members),
                gate_above=sum(m.gate_value > m.accounted_epsilon for m in members),
                lower_bound_above=sum(m.lower_bound > m.accounted_epsilon for m in members),
            )
        )
    return summaries


def cache_name(dataset: str, target_epsilon: float, seed: int, recipe: Recipe) -> str:
    """The .npz name of one model's losses: data set, ε, seed and a digest of the settings."""
    sizes = (*PURCHASE_ROWS, PURCHASE_DATA_SEED) if dataset in PURCHASE else ()
    digest = hashlib.sha256(repr((dataset, sizes, recipe)).encode()).hexdigest()[:10]
    return f"{dataset}_eps{target_epsilon:g}_seed{seed}_{digest}.npz"


# --- worker side: data, training, losses, audit ------------------------------------------------


def _init_worker() -> None:
    from epsstar.plumbing.runtime.threads import apply_threads

    apply_threads(1)


@cache
def _records(dataset: str) -> tuple[Any, Any]:
    """The training and population rows of ``dataset`` as :class:`TabularData`."""
    from epsstar.training.data.datasets import adult, purchase_like
    from epsstar.training.data.tables import TabularData

    if dataset == "adult":
        data = adult()
        splits = [
            (data.train_features, data.train_labels),
            (data.population_features, data.population_labels),
        ]
        names: tuple[str, ...] = data.feature_names
        classes: tuple[str, ...] = ("0", "1")
    else:
        n_train, n_population = PURCHASE_ROWS
        generated = purchase_like(n_train + n_population, seed=PURCHASE_DATA_SEED)
        features = generated.features.astype(np.float64)
        splits = [
            (features[:n_train], generated.labels[:n_train]),
            (features[n_train:], generated.labels[n_train:]),
        ]
        names = tuple(generated.columns)
        classes = tuple(str(k) for k in range(int(generated.labels.max()) + 1))
    train, population = (
        TabularData(
            features=x,
            labels=y,
            feature_names=names,
            classes=classes,
            label_column="label",
            source=f"{dataset} {role}",
        )
        for (x, y), role in zip(splits, ("train", "population"), strict=True)
    )
    return train, population


def _config(dataset: str, target_epsilon: float, seed: int) -> Any:
    from epsstar.training.trainer import TrainingConfig

    recipe = RECIPES[dataset]
    return TrainingConfig(
        epochs=recipe.epochs,
        batch_size=recipe.batch_size,
        hidden=recipe.hidden,
        clip=recipe.clip,
        lr=recipe.lr,
        momentum=recipe.momentum,
        microbatches=recipe.microbatches,
        target_epsilon=target_epsilon,
        # the comparison with opacus, which standardises on the training records as well
        standardise_on="data",
        seed=seed,
    )


@cache
def _plan(dataset: str, target_epsilon: float) -> Any:
    """The noise multiplier search, once per (data set, ε) in each worker."""
    from epsstar.training.trainer import plan_privacy

    train, _ = _records(dataset)
    return plan_privacy(_config(dataset, target_epsilon, 0), train.n_records)


def _logit_losses(model: Any, data: Any, outputs: str) -> tuple[NDArray[np.float64], float]:
    """Logit losses, exact from the model's logits or from its float32 probabilities
    (``outputs``), and its accuracy on ``data``."""
    import torch

    from epsstar.statistics.losses import compute_losses

    losses, correct = [], 0
    with torch.no_grad():
        for start in range(0, data.n_records, BATCH_ROWS):
            x = torch.as_tensor(data.features[start : start + BATCH_ROWS], dtype=torch.float32)
            y = data.labels[start : start + BATCH_ROWS]
            logits = model.network(model.standardiser(x)).double().numpy()
            if outputs == "logits":
                losses.append(compute_losses(y, logits, loss="logit", outputs="logits"))
            else:  # the exported model's float32 probabilities
                probabilities = model(x).numpy().astype(np.float64)
                binary = probabilities.shape[1] == 1
                losses.append(compute_losses(y, probabilities[:, 0] if binary else probabilities))
            predicted = (logits[:, 0] > 0) if logits.shape[1] == 1 else logits.argmax(axis=1)
            correct += int((predicted == y).sum())
    return np.concatenate(losses), correct / data.n_records


def _cache_path(job: Job) -> Path:
    recipe = RECIPES[job.dataset]
    return job.cache_dir / cache_name(job.dataset, job.target_epsilon, job.seed, recipe)


def _train_or_load(job: Job) -> dict[str, Any]:
    """The cached arrays of the job's model, trained and written now if missing."""
    from epsstar.training.trainer import train

    path = _cache_path(job)
    if not path.is_file():
        records, population = _records(job.dataset)
        start = time.perf_counter()
        trained = train(
            records,
            _config(job.dataset, job.target_epsilon, job.seed),
            plan=_plan(job.dataset, job.target_epsilon),
        )
        seconds = time.perf_counter() - start
        privacy = trained.result.privacy
        assert privacy is not None
        outputs = RECIPES[job.dataset].outputs
        train_losses, train_accuracy = _logit_losses(trained.model, records, outputs)
        population_losses, test_accuracy = _logit_losses(trained.model, population, outputs)
        job.cache_dir.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp.npz")
        np.savez(
            temporary,
            train=train_losses,
            population=population_losses,
            train_accuracy=train_accuracy,
            test_accuracy=test_accuracy,
            accounted_epsilon=privacy.epsilon,
            delta=privacy.delta,
            seconds=seconds,
        )
        temporary.replace(path)
    with np.load(path) as stored:
        return {key: stored[key] for key in stored.files}


def run_job(job: Job) -> ModelRow:
    """Train (or load) one model and audit its losses at the default settings."""
    from epsstar.audit.attacks.from_losses import audit_losses
    from epsstar.audit.options import AuditOptions
    from epsstar.statistics.utility import Utility

    cached = _cache_path(job).is_file()
    stored = _train_or_load(job)
    train_losses, population_losses = stored["train"], stored["population"]
    utility = {
        "train": Utility(n=train_losses.size, accuracy=float(stored["train_accuracy"]), auroc=None),
        "population": Utility(
            n=population_losses.size, accuracy=float(stored["test_accuracy"]), auroc=None
        ),
    }
    result = audit_losses(train_losses, population_losses, utility=utility, options=AuditOptions())
    assert result.gate is not None
    return ModelRow(
        dataset=job.dataset,
        target_epsilon=job.target_epsilon,
        accounted_epsilon=float(stored["accounted_epsilon"]),
        training_delta=float(stored["delta"]),
        audit_delta=result.delta,
        seed=job.seed,
        epsilon_star=result.epsilon_star,
        method=result.epsilon.method,
        distinct_losses=int(np.unique(train_losses).size),
        crossfit_epsilon=result.epsilon.untested_epsilon
        if result.epsilon.untested_epsilon is not None
        else result.epsilon_star,
        gate_value=result.gate.value,
        leak_p_value=result.gate.leak_p_value,
        lower_bound=result.lower_bound.epsilon,
        unsupported_rates=result.epsilon.unsupported_rates,
        attained_by=result.epsilon.attained_by,
        fpr=result.epsilon.fpr,
        fnr=result.epsilon.fnr,
        empirical_epsilon=result.empirical.epsilon,
        plug_in_epsilon=result.epsilon.plug_in_epsilon,
        crossfit_scores=tuple(float(s) for s in result.epsilon.crossfit_scores),
        train_accuracy=float(stored["train_accuracy"]),
        test_accuracy=float(stored["test_accuracy"]),
        train_seconds=float(stored["seconds"]),
        from_cache=cached,
    )


# --- tables ------------------------------------------------------------------------------------


def model_table(rows: Sequence[ModelRow]) -> str:
    header = [
        "data set",
        "target eps",
        "accounted eps",
        "seed",
        "Epsilon*",
        "method",
        "distinct losses",
        "cross-fitted",
        "gate stat",
        "leak p",
        "lower bound",
        "unsupported rates",
        "train acc",
        "test acc",
    ]
    table = [header]
    for row in rows:
        table.append(
            [
                row.dataset,
                f"{row.target_epsilon:g}",
                f"{row.accounted_epsilon:.4f}",
                str(row.seed),
                f"{row.epsilon_star:.4f}",
                row.method,
                f"{row.distinct_losses:,}",
                f"{row.crossfit_epsilon:.4f}",
                f"{row.gate_value:.4f}",
                f"{row.leak_p_value:.3g}",
                f"{row.lower_bound:.4f}",
                ", ".join(row.unsupported_rates) or "-",
                f"{row.train_accuracy:.4f}",
                f"{row.test_accuracy:.4f}",
            ]
        )
    return aligned_table(table, left_columns=1)


def summary_table(summaries: Sequence[CellSummary]) -> str:
    header = [
        "data set",
        "target eps",
        "models",
        "max Epsilon*",
        "mean Epsilon*",
        "Epsilon* > eps",
        "gate stat > eps",
        "lower bound > eps",
    ]
    table = [header]
    for cell in summaries:
        table.append(
            [
                cell.dataset,
                f"{cell.target_epsilon:g}",
                str(cell.models),
                f"{cell.max_epsilon_star:.4f}",
                f"{cell.mean_epsilon_star:.4f}",
                str(cell.headline_above),
                str(cell.gate_above),
                str(cell.lower_bound_above),
            ]
        )
    return aligned_table(table, left_columns=1)


def excess_details(rows: Sequence[ModelRow]) -> list[str]:
    """One line per model whose headline or gate statistic exceeds its accounted ε."""
    lines = []
    for row in rows:
        if row.epsilon_star > row.accounted_epsilon or row.gate_value > row.accounted_epsilon:
            plug_in = "-" if row.plug_in_epsilon is None else f"{row.plug_in_epsilon:.4f}"
            scores = ", ".join(f"{s:.4f}" for s in row.crossfit_scores) or "-"
            unsupported = ", ".join(row.unsupported_rates) or "none"
            lines.append(
                f"  {row.dataset} eps={row.target_epsilon:g} seed={row.seed}: "
                f"Epsilon* {row.epsilon_star:.4f} (accounted eps {row.accounted_epsilon:.4f}), "
                f"attained by {row.attained_by} at FPR {row.fpr:.3g}, FNR {row.fnr:.3g}; "
                f"unsupported rates {unsupported}; crossfit scores ({scores}); "
                f"plug-in {plug_in}; empirical {row.empirical_epsilon:.4f}; "
                f"gate stat {row.gate_value:.4f} (leak p {row.leak_p_value:.3g}); "
                f"lower bound {row.lower_bound:.4f}"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="models per cell, seeds 0..N-1")
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0])
    parser.add_argument(
        "--workers", type=int, default=2, help="worker processes (1 torch thread each)"
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path("/tmp/epsstar-dp-consistency"),
        help="folder of the cached losses (default: /tmp/epsstar-dp-consistency)",
    )
    args = parser.parse_args()
    if args.seeds < 1 or args.workers < 1:
        parser.error(
            f"--seeds and --workers must be at least 1. Found {args.seeds}, {args.workers}."
        )
    n_purchase, n_purchase_population = PURCHASE_ROWS
    print(
        f"epsstar {__version__}; {args.seeds} seed(s) per cell; data sets {args.datasets}; "
        f"target eps {args.epsilons}; {args.workers} worker(s), 1 torch thread each; "
        f"cache {args.cache_dir}"
    )
    print(
        "training: DP-SGD, PLD accountant, add/remove neighbours, delta = 1/(n ln n); "
        f"purchase-like {n_purchase:,} training + {n_purchase_population:,} population records "
        f"(data seed {PURCHASE_DATA_SEED})"
    )
    for name in args.datasets:
        print(f"  {name}: {RECIPES[name]}")
    print(
        "audit: audit_losses(..., AuditOptions()) on logit losses (exact from logits, or from "
        "float32 probabilities where the recipe says so): default estimator, "
        "significant gate, confidence 0.95, delta = 1/(n ln n)\n"
    )
    start = time.perf_counter()
    jobs = [
        Job(dataset, float(epsilon), seed, args.cache_dir)
        for dataset in args.datasets
        for epsilon in args.epsilons
        for seed in range(args.seeds)
    ]
    rows: list[ModelRow] = []
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.workers, mp_context=context, initializer=_init_worker) as pool:
        for row in pool.map(run_job, jobs):
            rows.append(row)
            source = "cached" if row.from_cache else f"trained in {row.train_seconds:.0f} s"
            print(
                f"  [{len(rows)}/{len(jobs)}] {row.dataset} eps={row.target_epsilon:g} "
                f"seed={row.seed} ({source}): Epsilon* {row.epsilon_star:.4f} "
                f"({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    mismatched = [r for r in rows if not np.isclose(r.training_delta, r.audit_delta, rtol=1e-12)]
    if mismatched:
        print(f"\nWARNING: {len(mismatched)} model(s) audited at another delta than trained at")
    print("\nOne row per model (delta = 1/(n ln n), the trainer's and the audit's)\n")
    print(model_table(rows))
    print("\nPer (data set, target eps): counts of models above their accounted eps\n")
    print(summary_table(summarise(rows)))
    print(
        f"\ngate statistic above the accounted eps: "
        f"{sum(r.gate_value > r.accounted_epsilon for r in rows)} of {len(rows)}"
    )
    print(
        f"headline above the accounted eps: "
        f"{sum(r.epsilon_star > r.accounted_epsilon for r in rows)} of {len(rows)}"
    )
    print(
        f"lower bound above the accounted eps: "
        f"{sum(r.lower_bound > r.accounted_epsilon for r in rows)} of {len(rows)}"
    )
    details = excess_details(rows)
    if details:
        print("\nModels whose headline or gate statistic exceeds the accounted eps:")
        print("\n".join(details))
    print(f"\nTotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
