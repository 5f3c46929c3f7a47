"""How often the blind baseline flags a population that differs from the training data, and
how often it flags one that does not; and what it costs.

Each repeat pools the Adult fixture's 8,000 rows (fixtures/models/kinds/adult_*.csv), draws
``--n`` training rows and ``--n`` population rows from the pool without overlap, changes the
population by one of the cases below, and runs the audit's blind baseline on the two tables:
the cross-fitted classifier (:mod:`epsstar.audit.premise.classifier`) and the held-out
Clopper-Pearson lower bound on its scores at δ = 1/(n ln n) and 95 % confidence. The premise
fails (the population is *flagged*) when that bound is above 0. No model is involved: the
blind baseline never sees one, so its verdict is the same whatever the model memorised.

Cases: ``same`` (both sides from the pool at random; the premise holds, so a flag is a
false alarm), ``age +0.5 sd`` (the population's age moved by half its standard deviation),
``class mix +10 pts`` (the population's share of incomes above 50K raised by 10 percentage
points, by drawing it from the two classes apart), ``de-duplicated`` (the training rows
drawn with replacement, so a fifth or so are repeats; the population without repeats).

The cost: the blind classifier on ``--cost-rows`` synthetic rows per side of 20 numeric
columns (the audit reads at most :data:`~epsstar.audit.premise.classifier.READ_ROWS` rows
per side for it, whatever the tables' size).

    python benchmarks/premise.py                      # 100 repeats, n = 1,000: minutes
    python benchmarks/premise.py --repeats 20 --n 2000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from epsstar import __version__
from epsstar.audit.data.records import LABEL, Records
from epsstar.audit.output.provenance import Timings
from epsstar.audit.output.result import AuditResult
from epsstar.audit.premise.classifier import blind_log_odds
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.attacks.power import attack_auc
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.estimators.estimator import default_delta

KINDS = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "kinds"
Pair = tuple[pd.DataFrame, pd.DataFrame]
Case = Callable[[pd.DataFrame, int, np.random.Generator], Pair]


def _split(pool: pd.DataFrame, n: int, rng: np.random.Generator) -> Pair:
    order = rng.permutation(len(pool))
    return pool.iloc[order[:n]], pool.iloc[order[n : 2 * n]]


def same(pool: pd.DataFrame, n: int, rng: np.random.Generator) -> Pair:
    return _split(pool, n, rng)


def age_shift(pool: pd.DataFrame, n: int, rng: np.random.Generator) -> Pair:
    train, population = _split(pool, n, rng)
    population = population.assign(age=population["age"] + 0.5 * pool["age"].std())
    return train, population


def class_mix(pool: pd.DataFrame, n: int, rng: np.random.Generator) -> Pair:
    rich = (pool[LABEL] == ">50K").to_numpy()
    order = rng.permutation(len(pool))
    train = pool.iloc[order[:n]]
    rest = pool.iloc[order[n:]]
    rest_rich = rich[order[n:]]
    share = rich.mean() + 0.10
    k = round(share * n)
    high = rest.iloc[rng.permutation(np.flatnonzero(rest_rich))[:k]]
    low = rest.iloc[rng.permutation(np.flatnonzero(~rest_rich))[: n - k]]
    return train, pd.concat([high, low])


def deduplicated(pool: pd.DataFrame, n: int, rng: np.random.Generator) -> Pair:
    order = rng.permutation(len(pool))
    train = pool.iloc[order[rng.integers(0, n, size=n)]]
    return train, pool.iloc[order[n : 2 * n]]


CASES: dict[str, Case] = {
    "same": same,
    "age +0.5 sd": age_shift,
    "class mix +10 pts": class_mix,
    "de-duplicated": deduplicated,
}


def _records(train: pd.DataFrame, population: pd.DataFrame) -> Records:
    t, p = train.reset_index(drop=True), population.reset_index(drop=True)
    return Records(t, p, np.arange(len(t)), np.arange(len(p)), len(t), len(p))


def _flag(train: pd.DataFrame, population: pd.DataFrame, seed: int) -> tuple[bool, float]:
    blind = blind_log_odds(_records(train, population), seed=seed)
    members, others = -blind.train, -blind.population
    delta = default_delta(members.size)
    bound = split_lower_bound(members, others, delta=delta, confidence=0.95, seed=seed)
    return bound.epsilon > 0, attack_auc(members, others)


def _adult() -> pd.DataFrame:
    frames = [pd.read_csv(KINDS / f"adult_{side}.csv") for side in ("train", "population")]
    return pd.concat(frames, ignore_index=True).rename(columns={"income": LABEL})


def _cost(rows: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    frames = [
        pd.DataFrame(rng.normal(size=(rows, 20)), columns=[f"x{i}" for i in range(20)]).assign(
            **{LABEL: rng.integers(0, 2, size=rows)}
        )
        for _ in range(2)
    ]
    blind_log_odds(_records(*(f.head(1000) for f in frames)))  # imports, once
    start = time.perf_counter()
    blind_log_odds(_records(*frames), seed=seed)
    return time.perf_counter() - start


def _timings(result: AuditResult) -> Timings:
    """An audit of files records its timings."""
    provenance = result.provenance
    assert provenance is not None
    assert provenance.seconds is not None
    return provenance.seconds


def _fixture_cost(repeats: int) -> list[list[str]]:
    """The audit's seconds on the shipped fixtures with the blind baseline (``premise``
    step) and without, in one warm process (imports paid before)."""
    from epsstar.audit import audit
    from epsstar.audit.data.reading import Tables
    from epsstar.audit.premise.settings import PremiseSettings

    models = KINDS.parent
    cases = {
        "multiclass_mlp.onnx, 600/400 rows": (
            models / "multiclass_mlp.onnx",
            Tables(models / "multiclass_train.csv", models / "multiclass_population.csv", "label"),
        ),
        "adult_pipeline.skops, 4,000/4,000 rows": (
            KINDS / "adult_pipeline.skops",
            Tables(KINDS / "adult_train.csv", KINDS / "adult_population.csv", "income"),
        ),
    }
    skip = PremiseSettings(skip_blind_baseline="cost measured", top_records=0)
    rows = [["fixture", "audit without (s)", "blind baseline (s)", "share of the audit"]]
    for name, (model, tables) in cases.items():
        audit(model, tables)  # imports and caches, once
        without, premise = [], []
        for _ in range(repeats):
            without.append(_timings(audit(model, tables, premise=skip)).total)
            premise.append(_timings(audit(model, tables)).premise or 0.0)
        base, extra = float(np.median(without)), float(np.median(premise))
        rows.append([name, f"{base:.2f}", f"{extra:.2f}", f"{extra / (base + extra):.0%}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--n", type=int, default=1000, help="rows per side")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cost-rows", type=int, default=20_000)
    parser.add_argument("--cost-only", action="store_true", help="only the cost tables")
    parser.add_argument("--cost-repeats", type=int, default=3)
    parser.add_argument("--cases", nargs="+", choices=list(CASES), help="only these cases")
    args = parser.parse_args()
    if args.cost_only:
        print(aligned_table(_fixture_cost(args.cost_repeats)))
        seconds = _cost(args.cost_rows, args.seed)
        print(f"blind classifier on {args.cost_rows:,} rows per side, 20 columns: {seconds:.1f} s")
        return
    print(
        f"epsstar {__version__}; Adult fixture, n = {args.n:,} per side; {args.repeats} repeats",
        flush=True,
    )
    pool = _adult()
    rows = [["case", "flagged", "mean blind AUC", "repeats"]]
    started = time.perf_counter()
    for index, (name, case) in enumerate(CASES.items()):
        if args.cases and name not in args.cases:
            continue
        flags, aucs = [], []
        for repeat in range(args.repeats):
            rng = np.random.default_rng([args.seed, index, repeat])
            flagged, auc = _flag(*case(pool, args.n, rng), seed=repeat)
            flags.append(flagged)
            aucs.append(auc)
        rows.append([name, f"{np.mean(flags):.0%}", f"{np.mean(aucs):.3f}", str(args.repeats)])
        print(
            f"{name}: flagged {np.mean(flags):.0%}, mean blind AUC {np.mean(aucs):.3f}", flush=True
        )
    print(aligned_table(rows))
    print(f"({time.perf_counter() - started:.0f} s)\n")
    seconds = _cost(args.cost_rows, args.seed)
    print(f"blind classifier on {args.cost_rows:,} rows per side, 20 columns: {seconds:.1f} s")


if __name__ == "__main__":
    main()
