"""Broken trainers refuted, the correct trainer not: the audit of a training procedure.

Each trainer is epsstar's own DP-SGD (``epsstar.training.threat_models.OwnTrainer``) broken
on purpose through the test hooks of ``StepHooks`` (``Breakage``), claiming the accountant's
ε of the correct trainer: non-private (no noise, no clipping), no clipping, noise σ/10, noise
added at one step per epoch only, a model that memorises 95 % of its records (answers them
with their own label at probability 1), and the correct trainer. Each is audited in one run
(Steinke et al. 2023, (ε, δ) bound; at ε ≥ 8, which that bound cannot refute at δ = 1e-5,
the μ-GDP bound of Mahloujifar et al. 2024; confidence 0.95 shared by the threat models)
under three threat models at once: ``input`` (population canaries seen through the final
model's loss), ``gradient`` (Dirac gradient canaries seen in the final weights) and
``every-step`` (the same canaries seen in every step's noisy gradient sum, each step and
coordinate read with its own variance: the noise read off the step plus the batch's Poisson
spread on that coordinate), with the guessing rule ``--guesses``
(default ``both``: top/bottom-k and "in"-only top-k, each at half the error rate).
``--di-trainers`` adds rows of the DI adversary (threat model ``di`` alone) and
``--many-runs R`` rows of the many-run design (R runs with and R without one gradient canary,
``every-step``, μ-GDP bound, batch 150 on the 300 records so that q ≈ ½, ``--many-repeats``).

Data: 300 training and 3500 population records of a 24-feature logistic problem (four
informative features, seeded); an MLP with one hidden layer of 128 (3,329 parameters: room for
3,000 gradient canaries, one parameter each), 10 epochs of batch 1650 on about 1800 records
(300 and half the 3,000 population canaries; sampling rate q ≈ ½, 20 steps: an included
gradient canary is never sampled with probability (1 − q)^20 ≈ 1e-6), clip 1, lr 0.5; σ is the
one the accountant gives for the target ε on 1800 records (δ = 1e-5; the same as for the
previous design of 700 canaries on 650 records, since q and the steps are the same), 3,000
canaries of each kind. The canaries are the cap of a one-run audit: at ε = 4, 700 of them left
room for three wrong guesses of 606, and the broken trainers that leak on part of their
canaries or through a shrunken noise missed that in a quarter to a half of the repeats
(docs/training-audit.md has the arithmetic). k: :func:`choose_k`'s rule, except where its 2k
guesses, every one right, could not exceed the claim (ε = 4 and 8: k = 71 and 126); there
k = 0.45·m = 1350, fixed by the design. Repeats differ in the audit's seed (canaries,
inclusion, training). Torch runs on the threads :func:`choose_threads` gives (one on a busy
machine: two threads on two shared cores made each audit 5–25 times slower).

The last columns compare the wall time of one audit (its training run with the canaries and
the white-box observer, the scoring and the bounds) with one plain training run of the same
trainer on a table of the same size (300 + 1500 records, no hooks), measured before each ε.

    python benchmarks/training_audit.py                      # ε ∈ {1, 4}, 5 repeats
    python benchmarks/training_audit.py --epsilons 4 8 --repeats 20
    python benchmarks/training_audit.py --epsilons 1 2 --repeats 20
    python benchmarks/training_audit.py --epsilons 4 1 --repeats 0 --trainers \\
        --many-runs 20 --many-repeats 3

The DI rows (``--di-trainers correct non-private``) read each population canary's gradient
against every other at each step: with 3,000 canaries that is far slower than the rest.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.audit.training_audit.result import BOUNDS, BoundName
from epsstar.audit.training_audit.threat_models import ThreatModelName
from epsstar.plumbing.runtime.threads import apply_threads, choose_threads
from epsstar.statistics.auditing.one_run.bounds import one_run_bounds
from epsstar.statistics.auditing.one_run.choose_k import choose_k
from epsstar.statistics.bounds.from_counts import bonferroni_confidence
from epsstar.statistics.names import GUESS_RULES, GuessRule
from epsstar.statistics.readings.conversions import gdp_epsilon
from epsstar.training.data.tables import load_table
from epsstar.training.threat_models.own_trainer import Breakage, OwnTrainer, parameter_count
from epsstar.training.trainer import TrainingConfig, plan_privacy, train

FEATURES = 24
#: The logistic problem's coefficients: four informative features, the others noise.
COEFFICIENTS = np.array([1.0, -1.0, 0.5, 0.0] + [0.0] * (FEATURES - 4))
#: 24·128 + 128 + 128 + 1 = 3,329 parameters: room for 3,000 gradient canaries (one each).
HIDDEN = (128,)
CANARIES = 3000
DELTA = 1e-5
#: Records of a run: the 300 of the table and about half of the population canaries.
RECORDS = 300 + CANARIES // 2
#: Batch RECORDS/2: the sampling rate q ≈ ½ whatever the canary count, so 10 epochs are 20
#: steps and σ for a target ε is the one of the 650-record design with 700 canaries.
EPOCHS, BATCH = 10, RECORDS // 2
#: The batch of the many-run design's runs (300 records and at most one canary: q ≈ ½).
MANY_BATCH = 150
#: Population records: every canary one of them, and some to spare.
POPULATION = CANARIES + 500
THREAT_MODELS: tuple[ThreatModelName, ...] = ("input", "gradient", "every-step")
TRAINERS = {
    "correct": Breakage(),
    "non-private": Breakage(noise=0.0, clip=False),
    "no clipping": Breakage(clip=False),
    "noise σ/10": Breakage(noise=0.1),
    "noise once per epoch": Breakage(noise_once_per_epoch=True),
    "memorises 95 %": Breakage(memorise=0.95),
}


def bound_for(epsilon: float) -> BoundName:
    """The bound that decides: the (ε, δ) bound of Steinke et al. 2023, except at ε ≥ 8, which
    it cannot refute at δ = 1e-5 with any number of canaries (its δ term); there the μ-GDP
    bound of Mahloujifar et al. 2024, which has no such floor and holds for Gaussian trade-off
    curves (DP-SGD's, approximately)."""
    return "gdp" if epsilon >= 8.0 else "epsilon-delta"


def design_k(claim: float, bound: BoundName, threat_models: int) -> int | None:
    """``None`` (choose_k's rule) when its 2k guesses, all right, could exceed ``claim`` at the
    benchmark's confidence; else k = 0.45·m, fixed before any score: the canaries included are
    Binomial(m, ½), and guessing "in" for more than are included, or "out" for more than are
    left out, forces wrong guesses (at m = 3000 this k does so with probability below 1e-7);
    and the "in"-only guesses of the memorising trainer stay among its exposed members (about
    0.95·m/2) except with probability about 0.3 % (docs/training-audit.md)."""
    level = bonferroni_confidence(0.95, threat_models)
    method = BOUNDS[bound].one_run
    k = choose_k(CANARIES, claim, DELTA, confidence=level, method=method).k
    best = one_run_bounds(CANARIES, 2 * k, 2 * k, delta=DELTA, confidence=level)
    reach = gdp_epsilon(DELTA, best.mu_lower) if BOUNDS[bound].gaussian else best.epsilon_lower
    return None if reach > claim else int(0.45 * CANARIES)


def plain_seconds(tables: tuple[Path, Path], config: TrainingConfig, seed: int) -> float:
    """Wall time of one plain training run on the train table and RECORDS − 300 population
    records (the size of a run)."""
    frames = [pd.read_csv(tables[0]), pd.read_csv(tables[1]).iloc[: RECORDS - 300]]
    path = tables[0].with_name("plain.csv")
    pd.concat(frames, ignore_index=True).to_csv(path, index=False)
    data = load_table(path, "label")
    population = load_table(tables[1], "label", features=data.feature_names, classes=data.classes)
    start = time.perf_counter()
    train(data, replace(config, seed=seed), population=population)
    return time.perf_counter() - start


def _tables(folder: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(3)
    paths = []
    for name, n in (("train", 300), ("population", POPULATION)):
        x = rng.normal(size=(n, FEATURES))
        y = (x @ COEFFICIENTS + rng.normal(size=n) > 0).astype(int)
        frame = pd.DataFrame({**{f"f{j}": x[:, j] for j in range(FEATURES)}, "label": y})
        frame.to_csv(folder / f"{name}.csv", index=False)
        paths.append(folder / f"{name}.csv")
    return paths[0], paths[1]


def _audit_trainer(
    tables: tuple[Path, Path], config: TrainingConfig, name: str, design: Design, repeats: int
) -> tuple[int, dict[str, list[float]], float, float]:
    """Refutations, bounds per threat model, mean claim and total seconds of one trainer."""
    parameters = parameter_count(FEATURES, 2, HIDDEN)
    procedure = OwnTrainer(
        config, "label", parameters, population=str(tables[1]), breakage=TRAINERS[name]
    )
    bounds: dict[str, list[float]] = {model: [] for model in design.threat_models}
    refuted, claims, seconds = 0, [], 0.0
    for repeat in range(repeats):
        setup = TrainingAuditSetup(
            *tables,
            "label",
            canaries=CANARIES,
            runs=design.runs,
            threat_models=design.threat_models,
            seed=repeat,
            k=design.k,
            bound=design.bound,
            guesses=design.guesses,
        )
        start = time.perf_counter()
        result = audit_training(procedure, setup)
        seconds += time.perf_counter() - start
        refuted += result.refuted
        claims.append(result.claimed_epsilon)
        for audit in result.threat_models:
            bounds[audit.threat_model.name].append(audit.epsilon_lower_bound)
    return refuted, bounds, float(np.mean(claims)), seconds


@dataclass(frozen=True, slots=True)
class Design:
    """One audit design: its threat models, runs per arm (1: one run), k, bound and rule."""

    name: str
    threat_models: tuple[ThreatModelName, ...]
    runs: int
    k: int | None
    bound: BoundName
    guesses: GuessRule
    config: TrainingConfig | None = None


def _many_config(target: TrainingConfig) -> TrainingConfig:
    """The trainer of the many-run design: a run holds the 300 records and at most the one
    canary, so batch 150 keeps q ≈ ½ and σ is the accountant's for the target ε on 301."""
    many = replace(target, batch_size=MANY_BATCH)
    plan = plan_privacy(many, 301)
    assert plan is not None
    return replace(many, target_epsilon=None, noise_multiplier=plan.noise_multiplier)


def _designs(
    args: argparse.Namespace, claim: float, epsilon: float, target: TrainingConfig
) -> list[tuple[Design, list[str]]]:
    """The designs run at one ε, each with the trainers it audits and its repeats."""
    bound = bound_for(epsilon)
    one = Design(
        "one run",
        THREAT_MODELS,
        1,
        design_k(claim, bound, len(THREAT_MODELS)),
        bound,
        args.guesses,
    )
    designs = [(one, list(args.trainers))]
    if args.di_trainers:
        di = Design("one run, DI", ("di",), 1, design_k(claim, bound, 1), bound, args.guesses)
        designs.append((di, list(args.di_trainers)))
    if args.many_runs:
        many = Design(
            f"{args.many_runs} runs per arm",
            ("every-step",),
            args.many_runs,
            None,
            "gdp",
            args.guesses,
            _many_config(target),
        )
        designs.append((many, list(args.many_trainers)))
    return designs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--trainers", nargs="*", default=list(TRAINERS), choices=list(TRAINERS))
    parser.add_argument("--guesses", default="both", choices=GUESS_RULES.names)
    parser.add_argument("--di-trainers", nargs="*", default=[], choices=list(TRAINERS))
    parser.add_argument("--many-runs", type=int, default=0, help="runs per arm (0: none)")
    parser.add_argument("--many-repeats", type=int, default=3)
    parser.add_argument(
        "--many-trainers", nargs="*", default=["correct", "non-private"], choices=list(TRAINERS)
    )
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
            designs = _designs(args, plan.epsilon_after(plan.steps), epsilon, target)
            plain_seconds(tables, config, 0)  # once untimed: torch's first optimiser imports
            plain = float(np.median([plain_seconds(tables, config, seed) for seed in range(3)]))
            print(
                f"  ε = {epsilon:g}: σ = {plan.noise_multiplier:.3f}, bound {designs[0][0].bound}, "
                f"k = {designs[0][0].k or 'choose_k'}, plain training {plain:.2f} s",
                flush=True,
            )
            for design, trainers in designs:
                repeats = args.many_repeats if design.runs > 1 else args.repeats
                for name in trainers:
                    trainer = design.config or config
                    found = _audit_trainer(tables, trainer, name, design, repeats)
                    rows.append((epsilon, design, name, repeats, *found, plain))
                    print(f"  done: {_row(rows[-1])}", flush=True)
    _print_tables(rows)


def _print_tables(rows: list[Row]) -> None:
    print(f"\nσ for the target ε on {RECORDS} records, δ = {DELTA:g}\n")
    print(
        "| target ε | design | bound | trainer | accounted ε | refuted | mean ε_lo (max) per "
        "threat model | s per audit | s per plain training | ratio |"
    )
    print("|" + "---|" * 10)
    for row in rows:
        print(_row(row))
    print("\nTightness of the correct trainer: measured ε_lo / accounted ε, mean (max)\n")
    print("| target ε | design | bound | accounted ε | threat model | ratio |")
    print("|" + "---|" * 6)
    for epsilon, design, name, _, _, bounds, claimed, *_ in rows:
        if name == "correct":
            for m in design.threat_models:
                ratio = f"{np.mean(bounds[m]) / claimed:.3f} ({np.max(bounds[m]) / claimed:.3f})"
                print(
                    f"| {epsilon:g} | {design.name} | {design.bound} | {claimed:.3f} | {m} "
                    f"| {ratio} |"
                )


Row = tuple[float, Design, str, int, int, dict[str, list[float]], float, float, float]


def _row(row: Row) -> str:
    """One line of the table."""
    epsilon, design, name, repeats, refuted, bounds, claimed, seconds, plain = row
    cells = "; ".join(
        f"{m} {np.mean(bounds[m]):.3f} ({np.max(bounds[m]):.3f})" for m in design.threat_models
    )
    audit = seconds / repeats
    return (
        f"| {epsilon:g} | {design.name} | {design.bound} | {name} | {claimed:.3f} | "
        f"{refuted}/{repeats} | {cells} | {audit:.1f} | {plain:.2f} | {audit / plain:.1f} |"
    )


if __name__ == "__main__":
    main()
