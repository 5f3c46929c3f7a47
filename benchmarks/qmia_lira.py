"""QMIA (no reference models) against offline LiRA (K reference models) and the loss attack.

Six targets built like the fixtures (``fixtures/make_models.py``: its ``make_data``
generator of 8 mixed normal features with a binary and a 4-class label, and its ``train``
recipes, a logistic regression and a 16-unit MLP from scikit-learn, saved with skops), plus
``mlp64``, a 64-unit MLP without weight decay that memorises, at
sizes where a TPR at 0.1 % FPR means something: ``--n`` training records, ``--n`` population
records, and a reference pool of ``2 --n`` further records from the same draw. The K
reference models of offline LiRA follow the target's recipe, each on a random half of the
pool (as many records as the target). Each target is audited once by
:func:`epsstar.audit.audit` (the code behind ``epsstar audit``) with ``--attack loss qmia
lira`` and the K reference models, the blind baseline skipped (it does not change these
attacks' scores). Printed per target and attack: Epsilon*, its held-out lower bound (95 %),
the TPR at 0.1 % and 1 % FPR, and the AUC.

    python benchmarks/qmia_lira.py                 # n = 2,000, K = 8: about 8 minutes
    python benchmarks/qmia_lira.py --n 1000 --k 4
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import tempfile
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
from sklearn.neural_network import MLPClassifier

from epsstar import __version__
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.names import AttackName, Method

ROOT = Path(__file__).resolve().parents[1]
ATTACKS: tuple[AttackName, ...] = ("loss", "qmia", "lira")


def _skops() -> Any:
    """``skops.io`` (imported by name: it ships no type information)."""
    return importlib.import_module("skops.io")


def _fixture_builder() -> ModuleType:
    """``fixtures/make_models.py``, loaded from the checkout (it is a script, not a module)."""
    spec = importlib.util.spec_from_file_location("make_models", ROOT / "fixtures/make_models.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _frame(features: np.ndarray, labels: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame(features, columns=[f"x{i}" for i in range(features.shape[1])])
    return frame.assign(label=labels)


def _save(estimator: Any, path: Path) -> Path:
    _skops().dump(estimator, path)
    return path


def _fit(builder: ModuleType, model: str, frame: pd.DataFrame, columns: list[str]) -> Any:
    """The fixtures' recipe (``logreg``, ``mlp``), or ``mlp64``: 64 ReLU units without weight
    decay (``alpha = 1e-6``, 300 epochs of Adam), which memorises."""
    x, y = frame[columns].to_numpy(), frame["label"].to_numpy()
    if model == "mlp64":
        network = MLPClassifier(hidden_layer_sizes=(64,), alpha=1e-6, max_iter=300, random_state=0)
        return network.fit(x, y)
    return builder.train(model, x, y)


def _target(
    builder: ModuleType, task: str, model: str, n: int, k: int, seed: int, folder: Path
) -> tuple[Path, Path, Path, list[Path]]:
    """The target, its two tables and its K reference models, written into ``folder``."""
    vars(builder).update(N_TRAIN=n, N_POPULATION=3 * n)  # make_data draws their sum
    features, labels = builder.make_data(np.random.default_rng(seed))[task]
    train = _frame(features[:n], labels[:n])
    population = _frame(features[n : 2 * n], labels[n : 2 * n])
    pool = _frame(features[2 * n :], labels[2 * n :])
    paths = [folder / f"{task}_{model}_{side}.csv" for side in ("train", "population")]
    train.to_csv(paths[0], index=False)
    population.to_csv(paths[1], index=False)
    columns = list(train.columns[:-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        target = _save(_fit(builder, model, train, columns), folder / f"{task}_{model}.skops")
        rng = np.random.default_rng(seed + 1)
        references = []
        for j in range(k):
            half = pool.iloc[rng.permutation(len(pool))[: len(pool) // 2]]
            fitted = _fit(builder, model, half, columns)
            references.append(_save(fitted, folder / f"{task}_{model}_ref{j}.skops"))
    return target, paths[0], paths[1], references


#: The headline method of the table in docs/attacks.md (the default when it was made).
METHOD: Method = "tails-tested"


def _audit(target: Path, train: Path, population: Path, references: list[Path]) -> Any:
    from epsstar.audit import AuditOptions, ModelFile, Tables, audit
    from epsstar.audit.attacks.scoring import AttackSettings
    from epsstar.audit.premise.settings import PremiseSettings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit(
            ModelFile(target, trust=True),
            Tables(train, population, "label"),
            AuditOptions(seed=0, method=METHOD),
            attack=AttackSettings(ATTACKS, tuple(references)),
            premise=PremiseSettings(skip_blind_baseline="benchmark", top_records=0),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="training and population records")
    parser.add_argument("--k", type=int, default=8, help="reference models of offline LiRA")
    parser.add_argument("--seed", type=int, default=0)
    models = ["logreg", "mlp", "mlp64"]
    parser.add_argument("--models", nargs="+", choices=models, default=models)
    args = parser.parse_args()
    builder = _fixture_builder()
    rows = [["target", "attack", "Epsilon*", "lower bound", "TPR@0.1%", "TPR@1%", "AUC"]]
    with tempfile.TemporaryDirectory(prefix="epsstar-qmia-") as folder:
        for task in ("binary", "multiclass"):
            for model in args.models:
                built = _target(builder, task, model, args.n, args.k, args.seed, Path(folder))
                result = _audit(*built[:3], built[3])
                for a in result.attacks:
                    rows.append(
                        [
                            f"{task} {model}",
                            a.name,
                            f"{a.epsilon.epsilon:.3f}",
                            f"{a.lower_bound.epsilon:.3f}",
                            f"{a.tpr_at(0.001):.4f}",
                            f"{a.tpr_at(0.01):.4f}",
                            f"{a.auc:.4f}",
                        ]
                    )
    print(
        f"QMIA against offline LiRA (K = {args.k}) and the loss attack; n = {args.n:,} "
        f"training and population records; epsstar {__version__}\n"
    )
    print(aligned_table(rows, left_columns=2))


if __name__ == "__main__":
    main()
