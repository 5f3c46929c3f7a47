"""Broken trainers refuted, the correct trainer not: the audit of a training procedure.

Each trainer is epsstar's own DP-SGD (``epsstar.training.threat_models.OwnTrainer``) broken
on purpose through the test hooks of ``StepHooks`` (``Breakage``), claiming the accountant's
ε of the correct trainer: non-private (no noise, no clipping), no clipping, noise σ/10, noise
added at one step per epoch only, a model that memorises 95 % of its records (answers them
with their own label at probability 1), and the correct trainer. Each is audited in one run
(Steinke et al. 2023, (ε, δ) bound, confidence 0.95 shared by the threat models) under three
threat models at once: ``input`` (population canaries seen through the final model's
loss), ``gradient`` (Dirac gradient canaries seen in the final weights) and ``every-step``
(the same canaries seen in every step's noisy gradient sum).

Data: 300 training and 1000 population records of a 4-feature logistic problem (seeded); an
MLP with one hidden layer of 128 (769 parameters: room for 700 gradient canaries), 10 epochs of
batch 325 on about 650 records (sampling rate q ≈ ½, 20 steps: an included gradient canary is
never sampled with probability (1 − q)^20 ≈ 1e-6, against 0.11 with the 2 epochs of batch 64
on 550 records used before), clip 1, lr 0.5; σ is the one the accountant gives for the target
ε on 650 records (δ = 1e-5), 700 canaries of each kind. k: :func:`choose_k`'s rule, except
where its 2k guesses, every one right, could not exceed the claim (ε = 4: k = 30, at most
2.62); there k = m/2 − 3.5·√m/2 = 303 (up to 4.96 with every guess right, 4.34 with two
wrong). Repeats differ in the audit's seed (canaries, inclusion, training). Torch runs on
the threads :func:`choose_threads` gives (one on a busy machine: two threads on two shared
cores made each audit 5–25 times slower, the 40–70 s per audit measured before).

The last columns compare the wall time of one audit (its training run with the canaries and
the white-box observer, the scoring and the bounds) with one plain training run of the same
trainer on a table of the same size (300 + 350 records, no hooks), measured before each ε.

    python benchmarks/training_audit.py                      # ε ∈ {1, 4}, 5 repeats
    python benchmarks/training_audit.py --epsilons 1 4 2 --repeats 20
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
from epsstar.statistics.auditing.choose_k import choose_k
from epsstar.statistics.auditing.one_run import one_run_bounds
from epsstar.statistics.bounds.from_counts import bonferroni_confidence
from epsstar.training.data.tables import load_table
from epsstar.training.threads import apply_threads, choose_threads
from epsstar.training.threat_models.own_trainer import Breakage, OwnTrainer, parameter_count
from epsstar.training.trainer import TrainingConfig, plan_privacy, train

HIDDEN = (128,)
CANARIES = 700
DELTA = 1e-5
EPOCHS, BATCH = 10, 325
POPULATION = 1000
#: Records of a run: the 300 of the table and about half of the population canaries.
RECORDS = 300 + CANARIES // 2
THREAT_MODELS: tuple[ThreatModelName, ...] = ("input", "gradient", "every-step")
TRAINERS = {
    "correct": Breakage(),
    "non-private": Breakage(noise=0.0, clip=False),
    "no clipping": Breakage(clip=False),
    "noise σ/10": Breakage(noise=0.1),
    "noise once per epoch": Breakage(noise_once_per_epoch=True),
    "memorises 95 %": Breakage(memorise=0.95),
}


def design_k(claim: float) -> int | None:
    """``None`` (choose_k's rule) when its 2k guesses, all right, could exceed ``claim`` at the
    benchmark's confidence; else k = m/2 − 3.5·√m/2: the canaries included are Binomial(m, ½)
    (standard deviation √m/2), and guessing "in" for more than are included, or "out" for more
    than are left out, forces wrong guesses; this k does so with probability about 2e-4."""
    level = bonferroni_confidence(0.95, len(THREAT_MODELS))
    k = choose_k(CANARIES, claim, DELTA, confidence=level).k
    best = one_run_bounds(CANARIES, 2 * k, 2 * k, delta=DELTA, confidence=level).epsilon_lower
    return None if best > claim else int(CANARIES / 2 - 3.5 * np.sqrt(CANARIES) / 2)


def plain_seconds(tables: tuple[Path, Path], config: TrainingConfig, seed: int) -> float:
    """Wall time of one plain training run on the train table and 350 population records."""
    frames = [pd.read_csv(tables[0]), pd.read_csv(tables[1]).iloc[: RECORDS - 300]]
    path = tables[0].with_name("plain.csv")
    pd.concat(frames, ignore_index=True).to_csv(path, index=False)
    data = load_table(path, "label")
    start = time.perf_counter()
    train(data, replace(config, seed=seed))
    return time.perf_counter() - start


def _tables(folder: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(3)
    paths = []
    for name, n in (("train", 300), ("population", POPULATION)):
        x = rng.normal(size=(n, 4))
        y = (x @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.normal(size=n) > 0).astype(int)
        frame = pd.DataFrame({**{f"f{j}": x[:, j] for j in range(4)}, "label": y})
        frame.to_csv(folder / f"{name}.csv", index=False)
        paths.append(folder / f"{name}.csv")
    return paths[0], paths[1]


def _audit_trainer(
    tables: tuple[Path, Path], config: TrainingConfig, name: str, k: int | None, repeats: int
) -> tuple[int, dict[str, list[float]], float, float]:
    """Refutations, bounds per threat model, mean claim and total seconds of one trainer."""
    procedure = OwnTrainer(config, "label", parameter_count(4, 2, HIDDEN), breakage=TRAINERS[name])
    bounds: dict[str, list[float]] = {model: [] for model in THREAT_MODELS}
    refuted, claims, seconds = 0, [], 0.0
    for repeat in range(repeats):
        setup = TrainingAuditSetup(
            *tables, "label", canaries=CANARIES, threat_models=THREAT_MODELS, seed=repeat, k=k
        )
        start = time.perf_counter()
        result = audit_training(procedure, setup)
        seconds += time.perf_counter() - start
        refuted += result.refuted
        claims.append(result.claimed_epsilon)
        for audit in result.threat_models:
            bounds[audit.threat_model.name].append(audit.epsilon_lower_bound)
    return refuted, bounds, float(np.mean(claims)), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--trainers", nargs="+", default=list(TRAINERS), choices=list(TRAINERS))
    args = parser.parse_args()
    threads = choose_threads(1, args.threads)
    apply_threads(threads)
    print(f"torch threads: {threads}", flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as scratch:
        tables = _tables(Path(scratch))
        for epsilon in args.epsilons:
            target = TrainingConfig(
                epochs=EPOCHS,
                batch_size=BATCH,
                hidden=HIDDEN,
                lr=0.5,
                target_epsilon=epsilon,
                delta=DELTA,
            )
            plan = plan_privacy(target, RECORDS)
            assert plan is not None
            config = replace(target, target_epsilon=None, noise_multiplier=plan.noise_multiplier)
            k = design_k(plan.epsilon_after(plan.steps))
            plain_seconds(tables, config, 0)  # once untimed: torch's first optimiser imports
            plain = float(np.median([plain_seconds(tables, config, seed) for seed in range(3)]))
            print(
                f"  ε = {epsilon:g}: σ = {plan.noise_multiplier:.3f}, k = {k or 'choose_k'}, "
                f"plain training {plain:.2f} s",
                flush=True,
            )
            for name in args.trainers:
                found = _audit_trainer(tables, config, name, k, args.repeats)
                rows.append((epsilon, name, *found, plain))
                print(f"  done: {_row(rows[-1], args.repeats)}", flush=True)
    _print_tables(rows, args.repeats)


def _print_tables(rows: list[Row], repeats: int) -> None:
    print(f"\n{repeats} repeats each; σ for the target ε on {RECORDS} records, δ = {DELTA:g}\n")
    header = "| target ε | trainer | accounted ε | refuted | " + " | ".join(
        f"{m}: mean ε_lo (max)" for m in THREAT_MODELS
    )
    print(header + " | s per audit | s per plain training | ratio |")
    print("|" + "---|" * (len(THREAT_MODELS) + 7))
    for row in rows:
        print(_row(row, repeats))
    print("\nTightness of the correct trainer: measured ε_lo / accounted ε, mean (max)\n")
    print("| target ε | accounted ε | " + " | ".join(THREAT_MODELS) + " |")
    print("|" + "---|" * (len(THREAT_MODELS) + 2))
    for epsilon, name, _, bounds, claimed, *_ in rows:
        if name == "correct":
            cells = " | ".join(
                f"{np.mean(bounds[m]) / claimed:.3f} ({np.max(bounds[m]) / claimed:.3f})"
                for m in THREAT_MODELS
            )
            print(f"| {epsilon:g} | {claimed:.3f} | {cells} |")


Row = tuple[float, str, int, dict[str, list[float]], float, float, float]


def _row(row: Row, repeats: int) -> str:
    """One line of the table."""
    epsilon, name, refuted, bounds, claimed, seconds, plain = row
    cells = " | ".join(f"{np.mean(bounds[m]):.3f} ({np.max(bounds[m]):.3f})" for m in THREAT_MODELS)
    audit = seconds / repeats
    return (
        f"| {epsilon:g} | {name} | {claimed:.3f} | {refuted}/{repeats} | {cells} | "
        f"{audit:.1f} | {plain:.2f} | {audit / plain:.1f} |"
    )


if __name__ == "__main__":
    main()
