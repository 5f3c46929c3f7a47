"""User-level Epsilon* (``--group-by``) against record-level Epsilon*, with 1 to 50 records
per user.

Each user draws a number of records uniformly from 1 to 50, a centre ``μ_u ~ N(0, 0.5 I)``
in 8 dimensions and a bias ``b_u ~ N(0, 1)``; a record is ``x = μ_u + N(0, I)`` with a
binary label drawn from ``sigmoid(w·x / √8 + b_u)`` (``w ~ N(0, I)``, one draw per run).
``--users`` users are members, as many others are the population; no user is on both sides.
Two models per draw, fitted with scikit-learn on the members' records and saved with skops:
a logistic regression (C = 1) and an MLP of 64 ReLU units without weight decay (``alpha =
1e-6``, 300 epochs of Adam), which fits records, and through them users. Each is audited
once by :func:`epsstar.audit.audit` (the code behind ``epsstar audit --group-by user``),
the blind baseline skipped (the two sides are one draw, split by user). Printed: the
record-level Epsilon*, lower bound (95 %) and AUC of the loss attack beside the user-level
ones of each aggregate (``mean``: a user's mean loss; ``llr_sum``: minus the sum of the
records' log-likelihood ratios).

    python benchmarks/user_level.py                 # 200 users a side: about a minute
    python benchmarks/user_level.py --users 400 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import importlib
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from epsstar import __version__
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.names import Method

FEATURES = [f"x{i}" for i in range(8)]


def _skops() -> Any:
    """``skops.io`` (imported by name: it ships no type information)."""
    return importlib.import_module("skops.io")


def _users(n_users: int, rng: np.random.Generator, w: np.ndarray, prefix: str) -> pd.DataFrame:
    sizes = rng.integers(1, 51, size=n_users)
    owner = np.repeat(np.arange(n_users), sizes)
    centres = rng.normal(scale=np.sqrt(0.5), size=(n_users, 8))
    bias = rng.normal(size=n_users)
    x = centres[owner] + rng.normal(size=(owner.size, 8))
    p = 1 / (1 + np.exp(-(x @ w / np.sqrt(8) + bias[owner])))
    frame = pd.DataFrame(x, columns=FEATURES)
    labels = (rng.random(owner.size) < p).astype(int)
    return frame.assign(label=labels, user=[f"{prefix}{u}" for u in owner])


def _models() -> dict[str, Any]:
    return {
        "logreg": LogisticRegression(C=1.0, max_iter=2000),
        "mlp": MLPClassifier(hidden_layer_sizes=(64,), alpha=1e-6, max_iter=300, random_state=0),
    }


#: The headline method of the table in docs/premise.md (the default when it was made).
METHOD: Method = "tails-tested"


def _audit(model: Path, train: Path, population: Path) -> Any:
    from epsstar.audit import AuditOptions, ModelFile, Tables, audit
    from epsstar.audit.premise.settings import PremiseSettings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit(
            ModelFile(model, trust=True),
            Tables(train, population, "label", features=FEATURES),
            AuditOptions(seed=0, method=METHOD),
            premise=PremiseSettings(
                skip_blind_baseline="benchmark: one draw split by user",
                group_by="user",
                top_records=0,
            ),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200, help="users per side")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    header = ["seed", "model", "records", "users", "level", "Epsilon*", "lower bound", "AUC"]
    rows = [header]
    with tempfile.TemporaryDirectory(prefix="epsstar-users-") as folder:
        for seed in args.seeds:
            rng = np.random.default_rng(seed)
            w = rng.normal(size=8)
            train, population = _users(args.users, rng, w, "m"), _users(args.users, rng, w, "n")
            paths = [Path(folder) / f"{side}-{seed}.csv" for side in ("train", "population")]
            train.to_csv(paths[0], index=False)
            population.to_csv(paths[1], index=False)
            for name, estimator in _models().items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    estimator.fit(train[FEATURES].to_numpy(), train["label"].to_numpy())
                model = Path(folder) / f"{name}-{seed}.skops"
                _skops().dump(estimator, model)
                result = _audit(model, *paths)
                users = result.user_level
                counts = f"{len(train):,} / {len(population):,}"
                people = f"{users.users[0]} / {users.users[1]}"
                rows.append(
                    [
                        str(seed),
                        name,
                        counts,
                        people,
                        "record",
                        f"{result.epsilon_star:.3f}",
                        f"{result.lower_bound.epsilon:.3f}",
                        f"{result.attacks[0].auc:.4f}",
                    ]
                )
                for aggregate in users.aggregates:
                    rows.append(
                        [
                            str(seed),
                            name,
                            counts,
                            people,
                            f"user, {aggregate.aggregate}",
                            f"{aggregate.epsilon.epsilon:.3f}",
                            f"{aggregate.lower_bound.epsilon:.3f}",
                            f"{aggregate.auc:.4f}",
                        ]
                    )
    print(
        f"User-level against record-level Epsilon* (loss attack), 1-50 records per user, "
        f"{args.users} users a side; epsstar {__version__}\n"
    )
    print(aligned_table(rows, left_columns=5))


if __name__ == "__main__":
    main()
