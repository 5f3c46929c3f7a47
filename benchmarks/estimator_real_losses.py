"""Estimators against Epsilon* on the losses of real trained models (Purchase-100-like data).

A few models of different leak levels are trained with the project's trainer on
100,000 ``purchase_like`` records; their logit losses on those records and on
1,000,000 further records of the same distribution are treated as the true
training and population loss distributions. The truth at δ is the Epsilon* of
these two discrete distributions (the empirical estimator on the full sets:
exact rates, admissible rates in (δ, 1-δ)). Each estimator then sees n losses
drawn without replacement from each side; the table gives the mean error
(estimate - truth) and its sd over the repeats (repeats share samples across
estimators and δ). Losses are cached as .npz, so a rerun skips the training.

    python benchmarks/estimator_real_losses.py       # ~6 min; ~1-3 min with the losses cached
    python benchmarks/estimator_real_losses.py --repeats 3 --ns 1000
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from epsstar import __version__, epsilon_star
from epsstar.cli.common.text_table import aligned_table
from epsstar.exceptions import PoorFitWarning
from epsstar.statistics.estimators.methods import (
    Empirical,
    EstimatorConfig,
    Parametric,
    Tails,
    method_config,
)
from epsstar.statistics.losses import compute_losses
from epsstar.statistics.names import METHODS
from epsstar.training.data.datasets import purchase_like
from epsstar.training.data.tables import TabularData
from epsstar.training.trainer import TrainingConfig, train

#: Columns of the error table: label -> the estimator's configuration.
ESTIMATORS: dict[str, EstimatorConfig] = {
    "normal (paper)": Parametric(family="normal"),
    "empirical": Empirical(),
    "empirical (0.001, 0.999)": Empirical(rate_window=(0.001, 0.999)),
    "tails": Tails(),
}
# Any method added to the library later gets a column with its default options.
for _method in METHODS:
    if _method not in {"parametric", "empirical", "tails"}:
        ESTIMATORS[_method] = method_config(_method)

#: The models: label -> training settings (lr 0.01, momentum 0.9, batch 256 throughout).
MODELS: dict[str, dict[str, Any]] = {
    "logreg 10 ep": {"hidden": (), "epochs": 10},
    "mlp 2 ep": {"hidden": (100, 100, 100), "epochs": 2},
    "mlp 10 ep": {"hidden": (100, 100, 100), "epochs": 10},
    "mlp 30 ep": {"hidden": (100, 100, 100), "epochs": 30},
    "mlp dp eps=3 5 ep": {"hidden": (100, 100, 100), "epochs": 5, "target_epsilon": 3.0},
}

#: Below this many records on the tail side, the truth itself is marked as fragile.
FEW_TAIL_RECORDS = 10
BATCH_ROWS = 50_000


@dataclass(frozen=True)
class ModelLosses:
    label: str
    train: np.ndarray
    population: np.ndarray
    train_accuracy: float
    population_accuracy: float
    dp_epsilon: float
    seconds: float


def cache_name(label: str, n_train: int, n_population: int, seed: int) -> str:
    slug = "".join(c if c.isalnum() else "-" for c in label).strip("-")
    return f"{slug}_train{n_train}_pop{n_population}_seed{seed}.npz"


def losses_of(model: Any, features: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    """Logit losses from the logits (exact) and from the float32 probabilities, in batches."""
    from_logits, from_probabilities, correct = [], [], 0
    with torch.no_grad():
        for start in range(0, labels.size, BATCH_ROWS):
            x = torch.as_tensor(features[start : start + BATCH_ROWS], dtype=torch.float32)
            y = labels[start : start + BATCH_ROWS]
            logits = model.network(model.standardiser(x))
            probabilities = torch.softmax(logits, dim=1)
            from_logits.append(
                compute_losses(y, logits.double().numpy(), loss="logit", outputs="logits")
            )
            from_probabilities.append(
                compute_losses(y, probabilities.double().numpy(), loss="logit")
            )
            correct += int((logits.argmax(dim=1).numpy() == y).sum())
    return {
        "logits": np.concatenate(from_logits),
        "probabilities": np.concatenate(from_probabilities),
        "accuracy": np.float64(correct / labels.size),
    }


def load_or_train(
    cache: Path, n_train: int, n_population: int, seed: int, outputs: str
) -> list[ModelLosses]:
    """Every model's losses, from the cache or trained now (the data is made only if needed)."""
    cache.mkdir(parents=True, exist_ok=True)
    data: Any = None
    found = []
    for label, settings in MODELS.items():
        path = cache / cache_name(label, n_train, n_population, seed)
        if not path.is_file():
            if data is None:
                print(f"  generating {n_train + n_population:,} purchase_like records", flush=True)
                data = purchase_like(n_train + n_population, seed=seed)
            start = time.perf_counter()
            records = TabularData(
                features=data.features[:n_train].astype(np.float64),
                labels=data.labels[:n_train],
                feature_names=tuple(data.columns),
                classes=tuple(str(k) for k in range(int(data.labels.max()) + 1)),
                label_column="label",
                source=f"purchase_like({n_train + n_population}, seed={seed})[:{n_train}]",
            )
            # Standardised on the training table, as every model of the tables in
            # docs/accuracy.md was (the trainer's choice before DP training had to name one),
            # so that a rerun trains those same models.
            config = TrainingConfig(
                batch_size=256,
                lr=0.01,
                momentum=0.9,
                seed=seed,
                standardise_on="data",
                **settings,
            )
            trained = train(records, config)
            del records
            privacy = trained.result.privacy
            train_side = losses_of(trained.model, data.features[:n_train], data.labels[:n_train])
            population_side = losses_of(
                trained.model, data.features[n_train:], data.labels[n_train:]
            )
            seconds = time.perf_counter() - start
            arrays = {
                "train": train_side["logits"],
                "population": population_side["logits"],
                "train_from_probabilities": train_side["probabilities"],
                "population_from_probabilities": population_side["probabilities"],
                "train_accuracy": train_side["accuracy"],
                "population_accuracy": population_side["accuracy"],
                "dp_epsilon": np.float64(privacy.epsilon if privacy else np.nan),
                "seconds": np.float64(seconds),
            }
            temporary = path.with_suffix(".tmp.npz")
            np.savez(temporary, **arrays)
            temporary.replace(path)
            print(f"  trained {label} ({seconds:.0f} s) -> {path}", flush=True)
        with np.load(path) as stored:
            suffix = "" if outputs == "logits" else "_from_probabilities"
            found.append(
                ModelLosses(
                    label=label,
                    train=stored["train" + suffix],
                    population=stored["population" + suffix],
                    train_accuracy=float(stored["train_accuracy"]),
                    population_accuracy=float(stored["population_accuracy"]),
                    dp_epsilon=float(stored["dp_epsilon"]),
                    seconds=float(stored["seconds"]),
                )
            )
    return found


def truth_of(losses: ModelLosses, delta: float) -> tuple[float, int]:
    """The full sets' Epsilon* and how many records lie in the tail that attains it."""
    result = epsilon_star(losses.train, losses.population, delta=delta, method="empirical")
    if result.epsilon == 0:
        return 0.0, 0
    n_train, n_pop = losses.train.size, losses.population.size
    tail = {
        "(1-delta-FNR)/FPR": result.fpr * n_pop,
        "(1-delta-FPR)/FNR": result.fnr * n_train,
        "(FNR-delta)/(1-FPR)": (1 - result.fpr) * n_pop,
        "(FPR-delta)/(1-FNR)": (1 - result.fnr) * n_train,
    }[result.attained_by]
    return result.epsilon, round(tail)


def estimate_errors(
    losses: ModelLosses,
    n: int,
    deltas: list[float],
    truths: dict[float, float],
    repeats: int,
    seed: int,
    names: list[str],
) -> dict[tuple[str, float], list[float]]:
    rng = np.random.default_rng([seed, n, list(MODELS).index(losses.label)])
    errors: dict[tuple[str, float], list[float]] = {
        (name, delta): [] for name in names for delta in deltas
    }
    for repeat in range(repeats):
        train = rng.choice(losses.train, size=n, replace=False)
        population = rng.choice(losses.population, size=n, replace=False)
        for name in names:
            config = ESTIMATORS[name]
            for delta in deltas:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PoorFitWarning)
                    found = epsilon_star(train, population, delta=delta, seed=repeat, method=config)
                errors[name, delta].append(found.epsilon - truths[delta])
    return errors


def spread(values: list[float]) -> str:
    sd = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    return f"{np.mean(values):+.3f} ± {sd:.3f}"


def model_table(models: list[ModelLosses], deltas: list[float], truth: Callable[..., Any]) -> str:
    header = ["model", "DP eps", "train acc", "pop acc", "distinct train", "distinct pop"]
    header += [f"eps* at {delta:g} (tail records)" for delta in deltas]
    rows = [header]
    for losses in models:
        row = [
            losses.label,
            "-" if np.isnan(losses.dp_epsilon) else f"{losses.dp_epsilon:.2f}",
            f"{losses.train_accuracy:.3f}",
            f"{losses.population_accuracy:.3f}",
            f"{np.unique(losses.train).size:,}",
            f"{np.unique(losses.population).size:,}",
        ]
        for delta in deltas:
            value, tail = truth(losses, delta)
            row.append(f"{value:.3f} ({tail:,})")
        rows.append(row)
    return aligned_table(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--deltas", type=float, nargs="+", default=[1e-3, 1e-4, 1e-5])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-train", type=int, default=100_000)
    parser.add_argument("--n-population", type=int, default=1_000_000)
    parser.add_argument(
        "--outputs",
        choices=["logits", "probabilities"],
        default="logits",
        help="losses from the logits (exact) or from the model's float32 probabilities",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("out/real-losses"),
        help="folder of the cached loss arrays (default: out/real-losses)",
    )
    parser.add_argument(
        "--estimators", nargs="+", default=list(ESTIMATORS), choices=list(ESTIMATORS)
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(
        f"epsstar {__version__}, torch {torch.__version__}, numpy {np.__version__}, "
        f"Python {platform.python_version()}, {platform.machine()}, {args.threads} torch thread(s)"
    )
    print(
        f"purchase_like: {args.n_train:,} training + {args.n_population:,} population records, "
        f"seed={args.seed}; losses from {args.outputs}; n={args.ns} delta={args.deltas} "
        f"repeats={args.repeats}\n"
    )
    start = time.perf_counter()
    models = load_or_train(args.cache, args.n_train, args.n_population, args.seed, args.outputs)
    truths = {(m.label, d): truth_of(m, d) for m in models for d in args.deltas}
    print("\nModels and the true Epsilon* of their full loss sets\n")
    print(model_table(models, args.deltas, lambda m, d: truths[m.label, d]))

    header = ["model", "n", "delta", "true eps*", *(f"err {name}" for name in args.estimators)]
    rows = [header]
    for losses in models:
        for n in args.ns:
            values = {d: truths[losses.label, d][0] for d in args.deltas}
            errors = estimate_errors(
                losses, n, args.deltas, values, args.repeats, args.seed, args.estimators
            )
            for delta in args.deltas:
                value, tail = truths[losses.label, delta]
                mark = "*" if tail < FEW_TAIL_RECORDS and value > 0 else ""
                rows.append(
                    [losses.label, f"{n:,}", f"{delta:g}", f"{value:.3f}{mark}"]
                    + [spread(errors[name, delta]) for name in args.estimators]
                )
            print(f"  done {losses.label} n={n:,}", flush=True)
    print(f"\nMean error against the truth ± sd over {args.repeats} repeats (nats)\n")
    print(aligned_table(rows))
    print(
        f"\n* the truth rests on fewer than {FEW_TAIL_RECORDS} records of the full sets "
        "(the tail side of the maximising test)"
    )
    print(f"\nTotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
