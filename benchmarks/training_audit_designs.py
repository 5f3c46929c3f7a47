"""Designs that make the black box see more: what crafted canaries, repeated canaries and small
data buy a one-run audit of a trainer seen only through its final model.

Three trainers, each audited in one run (Steinke et al. 2023) with 1,000 canaries, claim
ε = 1 at δ = 1e-5 (the accountant's for the DP-SGD trainer), confidence 0.95, k from
``choose_k`` (the canary count and the claim, or the group's claim with repeats), symmetric
guesses; data: 1,000 training and 3,000 population records of a 4-feature logistic problem:

* ``own, non-private``: epsstar's trainer without DP-SGD (an MLP of 256 hidden units, 60 epochs
  of batch 64, lr 0.05);
* ``own, DP-SGD``: the same with DP-SGD for ε = 1 (clip 1; σ from the accountant, planned on
  the rows of ``--train`` a run trains on);
* ``logistic``: scikit-learn's logistic regression, nearly unregularised (C = 10⁴), through
  ``--function`` (``FunctionProcedure``).

Rows: the black-box threat models with their design: ``input`` (population canaries),
``crafted`` with the crafting of :class:`~epsstar.audit.training_audit.canaries.Crafting`
(distance d to d + 2 standard deviations from the median, label flipped or kept), each canary
repeated N times (``--canary-repeats``: the bound is of the group of N copies, and the table
gives the per-record ε it implies: ε_lo/N for the (ε, δ) bound, and the ε at δ of μ_lo/N for
the μ-GDP reading), small data (``--train-records 200``: each run trains on 200 of the 1,000
rows), and a pretrained start (``--init pretrained``: the own trainer's runs start from its
network pretrained without DP on the population without the canaries; ``n/a`` for the
logistic regression, whose function takes no ``init``). Each cell is the mean over
``--seeds`` audits of the per-record (ε, δ) bound and, in brackets, the per-record μ-GDP
reading; the last column is the mean seconds of one audit.
A correct DP-SGD trainer must stay at or below its claim in every row (the μ-GDP reading holds
only for Gaussian trade-off curves, as DP-SGD's approximately are).

    python benchmarks/training_audit_designs.py            # 2 seeds, about 8 minutes on one core
    python benchmarks/training_audit_designs.py --seeds 6 --trainers "own, non-private" \
        --designs "crafted d = 1" "crafted d = 4 (default)"
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.audit.training_audit.canaries import Crafting
from epsstar.audit.training_audit.procedure import FunctionProcedure, Procedure
from epsstar.audit.training_audit.threat_models import ThreatModelName
from epsstar.plumbing.runtime.threads import apply_threads, choose_threads
from epsstar.statistics.auditing.group_privacy import group_claim
from epsstar.training.threat_models.own_trainer import OwnTrainer, parameter_count
from epsstar.training.trainer import TrainingConfig

FEATURES = 4
COEFFICIENTS = np.array([1.0, -1.0, 0.5, 0.0])
TRAIN, POPULATION = 1000, 3000
CANARIES = 1000
CLAIM, DELTA = 1.0, 1e-5
HIDDEN = (256,)
OWN = TrainingConfig(epochs=60, batch_size=64, hidden=HIDDEN, lr=0.05, delta=DELTA)

MODULE = """
from pathlib import Path

import pandas as pd
import skops.io
from sklearn.linear_model import LogisticRegression


def fit(train_path, out_dir, seed):
    frame = pd.read_csv(train_path)
    model = LogisticRegression(C=1e4, max_iter=1000, random_state=seed)
    model.fit(frame.drop(columns="label"), frame["label"])
    skops.io.dump(model, Path(out_dir) / "model.skops")
"""


@dataclass(frozen=True, slots=True)
class Design:
    """A row: the threat model and what the design changes."""

    name: str
    threat_model: ThreatModelName
    crafting: Crafting = field(default_factory=Crafting)
    repeats: int = 1
    train_records: int | None = None
    pretrained: bool = False


#: Crafted canaries 1 to 3 standard deviations out (the default is 4 to 6).
NEAR = Crafting(distance=1.0)

DESIGNS = (
    Design("input", "input"),
    Design("input, 4 copies", "input", repeats=4),
    Design("input, 200 rows", "input", train_records=200),
    Design("crafted d = 1", "crafted", NEAR),
    Design("crafted d = 2", "crafted", Crafting(distance=2.0)),
    Design("crafted d = 4 (default)", "crafted"),
    Design("crafted d = 8", "crafted", Crafting(distance=8.0)),
    Design("crafted d = 1, label kept", "crafted", Crafting(distance=1.0, flip_label=False)),
    Design("crafted d = 1, 2 copies", "crafted", NEAR, repeats=2),
    Design("crafted d = 1, 4 copies", "crafted", NEAR, repeats=4),
    Design("crafted d = 1, 200 rows", "crafted", NEAR, train_records=200),
    Design("crafted d = 4, 200 rows", "crafted", train_records=200),
    Design("input, pretrained start", "input", pretrained=True),
    Design("crafted d = 1, pretrained start", "crafted", NEAR, pretrained=True),
)


def _tables(folder: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(5)
    paths = []
    for name, n in (("train", TRAIN), ("population", POPULATION)):
        x = rng.normal(size=(n, FEATURES))
        y = (x @ COEFFICIENTS + rng.normal(size=n) > 0).astype(int)
        frame = pd.DataFrame({**{f"f{j}": x[:, j] for j in range(FEATURES)}, "label": y})
        frame.to_csv(folder / f"{name}.csv", index=False)
        paths.append(folder / f"{name}.csv")
    return paths[0], paths[1]


def _trainers(folder: Path) -> dict[str, Procedure]:
    (folder / "designs_logistic.py").write_text(MODULE, encoding="utf-8")
    sys.path.insert(0, str(folder))
    parameters = parameter_count(FEATURES, 2, HIDDEN)
    dp = replace(OWN, target_epsilon=CLAIM)
    return {
        "own, non-private": OwnTrainer(OWN, "label", parameters),
        "own, DP-SGD": OwnTrainer(dp, "label", parameters),
        "logistic": FunctionProcedure("designs_logistic:fit", "label", trust=True),
    }


def _audit(
    procedure: Procedure, tables: tuple[Path, Path], design: Design, seed: int
) -> tuple[float, float, float] | None:
    """The per-record (ε, δ) bound, the per-record μ-GDP reading and the seconds of one audit
    (``None``: the trainer takes no pretrained start)."""
    if design.pretrained:
        if not isinstance(procedure, OwnTrainer):
            return None
        procedure = replace(procedure, init="pretrained")
    setup = TrainingAuditSetup(
        *tables,
        "label",
        canaries=CANARIES,
        threat_models=(design.threat_model,),
        claimed_epsilon=CLAIM,
        delta=DELTA,
        seed=seed,
        canary_repeats=design.repeats,
        train_records=design.train_records,
        crafting=design.crafting,
    )
    start = time.perf_counter()
    result = audit_training(procedure, setup)
    seconds = time.perf_counter() - start
    (audited,) = result.threat_models
    assert audited.one_run is not None
    group = group_claim(result.claimed_epsilon, result.delta, design.repeats)
    per_record = group.per_record(audited.epsilon_lower_bound)
    return per_record, group.per_record_gdp(audited.one_run.mu_lower), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2, help="audits per cell (default 2)")
    parser.add_argument("--trainers", nargs="*", default=None, help="trainers to run (all)")
    parser.add_argument(
        "--designs",
        nargs="*",
        default=None,
        choices=[d.name for d in DESIGNS],
        metavar="NAME",
        help="rows to run, by name (all)",
    )
    args = parser.parse_args()
    apply_threads(choose_threads(1, None))
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        tables = _tables(folder)
        trainers = _trainers(folder)
        names = args.trainers or list(trainers)
        print(
            f"one run, {CANARIES} canaries, claim epsilon = {CLAIM:g}, delta = {DELTA:g}; "
            "per-record (epsilon, delta) bound (mu-GDP reading), mean of "
            f"{args.seeds} seed(s)\n"
        )
        print("| design | " + " | ".join(names) + " | s per audit |")
        print("|---" * (len(names) + 2) + "|")
        for design in [d for d in DESIGNS if args.designs is None or d.name in args.designs]:
            cells, seconds = [], []
            for name in names:
                measured = [_audit(trainers[name], tables, design, s) for s in range(args.seeds)]
                found = [m for m in measured if m is not None]
                if not found:
                    cells.append("n/a")
                    continue
                bound, gdp, spent = (float(np.mean(v)) for v in zip(*found, strict=True))
                cells.append(f"{bound:.2f} ({gdp:.2f})")
                seconds.append(spent)
            timed = f"{np.mean(seconds):.1f}" if seconds else "–"
            print(f"| {design.name} | " + " | ".join(cells) + f" | {timed} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
