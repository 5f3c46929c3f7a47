"""Broken trainers refuted, the correct trainer not: the audit of a training procedure.

Each trainer is epsstar's own DP-SGD (``epsstar.training.threat_models.OwnTrainer``) broken
on purpose through the test hooks of ``StepHooks`` (``Breakage``), claiming the accountant's
ε of the correct trainer: non-private (no noise, no clipping), no clipping, noise σ/10, noise
added at one step per epoch only, and the correct trainer. Each is audited in one run
(Steinke et al. 2023, (ε, δ) bound, confidence 0.95 shared by the threat models) under three
threat models at once: ``input`` (population canaries seen through the final model's
loss), ``gradient`` (Dirac gradient canaries seen in the final weights) and ``every-step``
(the same canaries seen in every step's noisy gradient sum).

Data: 300 training and 600 population records of a 4-feature logistic problem (seeded);
an MLP with one hidden layer of 128 (769 parameters), 2 epochs, batch 64, clip 1, lr 0.5;
σ is the one the accountant gives for the target ε on 550 records (δ = 1e-4), 500 canaries of
each kind (fewer cannot refute ε = 4 at confidence 1 − 0.05/3 even with every guess
right). Repeats differ in the audit's seed (canaries, inclusion, training).

    python benchmarks/training_audit.py                      # ε ∈ {1, 4}, 5 repeats
    python benchmarks/training_audit.py --epsilons 1 2 4 8 --repeats 20
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.audit.training_audit.threat_models import ThreatModelName
from epsstar.training.threat_models.own_trainer import Breakage, OwnTrainer, parameter_count
from epsstar.training.trainer import TrainingConfig, plan_privacy

HIDDEN = (128,)
CANARIES = 500
DELTA = 1e-4
#: Records of a run: the 300 of the table and about half of the population canaries.
RECORDS = 300 + CANARIES // 2
THREAT_MODELS: tuple[ThreatModelName, ...] = ("input", "gradient", "every-step")
TRAINERS = {
    "correct": Breakage(),
    "non-private": Breakage(noise=0.0, clip=False),
    "no clipping": Breakage(clip=False),
    "noise σ/10": Breakage(noise=0.1),
    "noise once per epoch": Breakage(noise_once_per_epoch=True),
}


def _tables(folder: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(3)
    paths = []
    for name, n in (("train", 300), ("population", 600)):
        x = rng.normal(size=(n, 4))
        y = (x @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.normal(size=n) > 0).astype(int)
        frame = pd.DataFrame({**{f"f{j}": x[:, j] for j in range(4)}, "label": y})
        frame.to_csv(folder / f"{name}.csv", index=False)
        paths.append(folder / f"{name}.csv")
    return paths[0], paths[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tables = _tables(Path(scratch))
        rows = []
        for epsilon in args.epsilons:
            target = TrainingConfig(
                epochs=2, batch_size=64, hidden=HIDDEN, lr=0.5, target_epsilon=epsilon, delta=DELTA
            )
            plan = plan_privacy(target, RECORDS)
            assert plan is not None
            config = replace(target, target_epsilon=None, noise_multiplier=plan.noise_multiplier)
            for name, breakage in TRAINERS.items():
                procedure = OwnTrainer(
                    config, "label", parameter_count(4, 2, HIDDEN), breakage=breakage
                )
                bounds: dict[str, list[float]] = {model: [] for model in THREAT_MODELS}
                refuted, claims, seconds = 0, [], 0.0
                for repeat in range(args.repeats):
                    setup = TrainingAuditSetup(
                        *tables,
                        "label",
                        canaries=CANARIES,
                        threat_models=THREAT_MODELS,
                        seed=repeat,
                    )
                    start = time.perf_counter()
                    result = audit_training(procedure, setup)
                    seconds += time.perf_counter() - start
                    refuted += result.refuted
                    claims.append(result.claimed_epsilon)
                    for audit in result.threat_models:
                        bounds[audit.threat_model.name].append(audit.epsilon_lower_bound)
                rows.append((epsilon, name, refuted, bounds, float(np.mean(claims)), seconds))
                print(f"  done: {_row(rows[-1], args.repeats)}", flush=True)
    print(
        f"\n{args.repeats} repeats each; σ for the target ε on {RECORDS} records, δ = {DELTA:g}\n"
    )
    header = "| target ε | trainer | accounted ε | refuted | " + " | ".join(
        f"{m}: mean ε_lo (max)" for m in THREAT_MODELS
    )
    print(header + " | s per audit |")
    print("|" + "---|" * (len(THREAT_MODELS) + 5))
    for row in rows:
        print(_row(row, args.repeats))


Row = tuple[float, str, int, dict[str, list[float]], float, float]


def _row(row: Row, repeats: int) -> str:
    """One line of the table."""
    epsilon, name, refuted, bounds, claimed, seconds = row
    cells = " | ".join(f"{np.mean(bounds[m]):.3f} ({np.max(bounds[m]):.3f})" for m in THREAT_MODELS)
    return (
        f"| {epsilon:g} | {name} | {claimed:.3f} | {refuted}/{repeats} | {cells} | "
        f"{seconds / repeats:.1f} |"
    )


if __name__ == "__main__":
    main()
