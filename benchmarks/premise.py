"""How often the blind baseline flags a population that differs from the training data, and
how often it flags one that does not; and what it costs.

Each repeat pools the Adult fixture's 8,000 rows (fixtures/models/kinds/adult_*.csv), draws
``--n`` training rows and ``--n`` population rows from the pool without overlap, changes the
population by one of the cases below, and runs the audit's blind baseline on the two tables:
the cross-fitted classifier (:mod:`epsstar.audit.premise.classifier`) and the tests of the
premise (:func:`epsstar.audit.premise.baseline.premise_tests`: the held-out lower bound at
δ = 1/(n ln n), the blind ranks, the label frequencies, the exact repeats, each at 0.05/4;
and again at 0.01/4, the level a release gate reads the premise at). The premise fails (the
population is *flagged*) when one of them flags it. No model is involved: the blind
baseline never sees one, so its verdict is the same whatever the model memorised.

Cases where the premise holds (a flag is a false alarm): ``same`` (both sides from the pool
at random), ``same, text columns only`` (the same with Adult's eight text columns and the
label only: about 27 % of 1,000 such rows repeat an earlier one), ``same time window`` (both
sides from the earlier year of the time-window case below, split at random). Cases where it
does not: ``age +0.5 sd`` (the population's age moved by half its standard deviation),
``class mix +10 pts`` (the population's share of incomes above 50K raised by 10 percentage
points, by drawing it from the two classes apart), ``de-duplicated`` (the training rows
drawn with replacement, so about a third are repeats; the population without repeats),
``de-duplicated, text columns only`` (text columns only, the training rows at random with
their natural repeats, the population de-duplicated), ``later time window`` (every row
given a month by :func:`months`, which makes income's relation to education drift; the
training rows from the earlier year, the population from the later one; the month is not a
column the classifier reads), and the same with half the drift.

``--noise-columns N`` adds N columns of fair coin flips to every row of the pool before a
case draws its tables (the text-only cases keep their text columns alone), so the shifted
column is one among many, as in a table of 600 columns; ``--fit-columns`` runs every case
with each of several caps on the columns the classifier is fitted on
(:data:`~epsstar.audit.premise.classifier.FIT_COLUMNS`; 0: every column), on the same
draws.

The cost (``--cost-only``): audits of the shipped fixtures (and of ``--cost-records``
Purchase-100-like rows) with the blind baseline and without, alternately in one process;
then the blind classifier on ``--cost-rows`` synthetic rows per side of 20 numeric columns
(the audit keeps at most :data:`~epsstar.audit.premise.classifier.READ_ROWS` rows per side
for it, whatever the tables' size).

    python benchmarks/premise.py --null-repeats 300   # 100 repeats (300 unshifted): minutes
    python benchmarks/premise.py --repeats 20 --n 2000
    python benchmarks/premise.py --windows            # the time windows' income shares
    python benchmarks/premise.py --noise-columns 586 --fit-columns 0 16 32 64
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from epsstar import __version__
from epsstar.audit.data.reading import Tables
from epsstar.audit.data.records import LABEL, Records
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.provenance import Timings
from epsstar.audit.output.result import AuditResult
from epsstar.audit.premise.baseline import GATE_PREMISE_CONFIDENCE, premise_tests
from epsstar.audit.premise.classifier import FIT_COLUMNS, READ_ROWS, blind_log_odds
from epsstar.audit.premise.settings import PremiseSettings
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.attacks.power import attack_auc
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


#: Adult's text columns and the label: a table with many natural repeats (about 27 % of
#: 1,000 random rows repeat an earlier one).
CATEGORICAL = [
    "workclass",
    "education",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native-country",
    LABEL,
]


def same_categorical(pool: pd.DataFrame, n: int, rng: np.random.Generator) -> Pair:
    return _split(pool[CATEGORICAL], n, rng)


def deduplicated_categorical(pool: pd.DataFrame, n: int, rng: np.random.Generator) -> Pair:
    """The training rows at random; the population from the other rows, de-duplicated."""
    train, rest = _split(pool[CATEGORICAL], len(pool) // 2, rng)
    return train.iloc[:n], rest.drop_duplicates().iloc[:n]


#: How strongly income's relation to education drifts between the two time windows.
DRIFT: Final = 1.0


def months(pool: pd.DataFrame, rng: np.random.Generator, drift: float) -> NDArray[np.int64]:
    """A month (0 to 23) for every row, drawn so that the relation of income to education
    drifts: a row is in the later year (months 12 to 23) with probability
    ``sigmoid(drift * s)``, ``s = ±z`` (``z`` its standardised years of education, ``+``
    for incomes above 50K), its month in the year uniform. In the later year a graduate is
    more often rich and a school leaver more often poor than in the earlier one (at drift
    1, seed 0: 19 % against 21 % of incomes above 50K in the earlier year, 77 % against 13 %
    in the later one; ``--windows`` prints these shares)."""
    z = pool["education-num"].to_numpy(float)
    z = (z - z.mean()) / z.std()
    sign = np.where(pool[LABEL].to_numpy() == ">50K", 1.0, -1.0)
    later = rng.random(len(pool)) < 1 / (1 + np.exp(-drift * sign * z))
    month: NDArray[np.int64] = 12 * later + rng.integers(0, 12, size=len(pool))
    return month


def _window(
    pool: pd.DataFrame, rng: np.random.Generator, drift: float = DRIFT
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of the earlier year and of the later one; the month is not a column the
    model reads, so the blind classifier does not see it."""
    month = months(pool, rng, drift)
    return pool[month < 12], pool[month >= 12]


def later_window(
    pool: pd.DataFrame, n: int, rng: np.random.Generator, drift: float = DRIFT
) -> Pair:
    """Training rows from the earlier year, the population from the later one."""
    early, late = _window(pool, rng, drift)
    return early.sample(n, random_state=rng), late.sample(n, random_state=rng)


def half_drift(pool: pd.DataFrame, n: int, rng: np.random.Generator) -> Pair:
    return later_window(pool, n, rng, DRIFT / 2)


def same_window(pool: pd.DataFrame, n: int, rng: np.random.Generator) -> Pair:
    """Both sides from the earlier year, split at random."""
    early, _ = _window(pool, rng)
    return _split(early, n, rng)


def window_shares(pool: pd.DataFrame, seed: int) -> list[list[str]]:
    """The share of incomes above 50K among graduates (13 years of education or more) and
    the others, in each year, at each drift of the benchmark."""
    rows = [["drift", "year", "rows", ">50K", ">50K | graduate", ">50K | other"]]
    for drift in (DRIFT, DRIFT / 2):
        early, late = _window(pool, np.random.default_rng(seed), drift)
        for year, rows_of in (("earlier", early), ("later", late)):
            rich = rows_of[LABEL].to_numpy() == ">50K"
            graduate = rows_of["education-num"].to_numpy() >= 13
            rows.append(
                [
                    f"{drift:g}",
                    year,
                    f"{len(rows_of):,}",
                    f"{rich.mean():.0%}",
                    f"{rich[graduate].mean():.0%}",
                    f"{rich[~graduate].mean():.0%}",
                ]
            )
    return rows


CASES: dict[str, Case] = {
    "same": same,
    "same, text columns only": same_categorical,
    "same time window": same_window,
    "age +0.5 sd": age_shift,
    "class mix +10 pts": class_mix,
    "de-duplicated": deduplicated,
    "de-duplicated, text columns only": deduplicated_categorical,
    "later time window": later_window,
    "later time window, half the drift": half_drift,
}


def with_noise(pool: pd.DataFrame, columns: int, rng: np.random.Generator) -> pd.DataFrame:
    """The pool with ``columns`` columns of fair coin flips added (0 or 1, ``noise0``...)."""
    if not columns:
        return pool
    flips = rng.integers(0, 2, size=(len(pool), columns), dtype=np.uint8)
    noise = pd.DataFrame(flips, index=pool.index, columns=[f"noise{j}" for j in range(columns)])
    return pd.concat([pool, noise], axis=1)


def _records(train: pd.DataFrame, population: pd.DataFrame) -> Records:
    t, p = train.reset_index(drop=True), population.reset_index(drop=True)
    return Records(t, p, np.arange(len(t)), np.arange(len(p)), len(t), len(p))


def _flag(
    train: pd.DataFrame, population: pd.DataFrame, seed: int, fit_columns: int | None = None
) -> tuple[list[bool], float]:
    """Whether each test of the premise flags the pair at confidence 0.95 (the lower bound,
    the ranks, the label frequencies, the exact repeats), whether any flags it at
    confidence 0.99 (the release gate's premise level), and the blind AUC; the classifier
    fitted on at most ``fit_columns`` columns (``None``: every column)."""
    records = _records(train, population)
    width = len(records.train.columns)
    blind = blind_log_odds(records, seed=seed, fit_columns=fit_columns or width)
    labels = records.train[LABEL].to_numpy(), records.population[LABEL].to_numpy()
    delta = default_delta(blind.train.size)
    flags = []
    for confidence in (0.95, GATE_PREMISE_CONFIDENCE):
        options = AuditOptions(seed=seed, confidence=confidence)
        _, tests = premise_tests(blind, options, delta=delta, labels=labels)
        flags.append([test.flagged for test in tests])
    return [*flags[0], any(flags[1])], attack_auc(-blind.train, -blind.population)


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


def _timed_audit(
    model: Path, tables: Tables, premise: PremiseSettings
) -> tuple[float, float, float]:
    """One audit's wall seconds (its own ``total``), its ``premise`` step, and the CPU
    seconds of this process while it ran (every thread)."""
    from epsstar.audit import audit

    cpu = time.process_time()
    timed = _timings(audit(model, tables, premise=premise))
    return timed.total, timed.premise or 0.0, time.process_time() - cpu


def _share(model: Path, tables: Tables, name: str, repeats: int) -> list[str]:
    """One row of the cost table: the audit without the blind baseline and with it, run
    alternately ``repeats`` times in this process after one warm-up. The baseline's cost
    is the median of the paired differences (its records are kept while the tables stream,
    so part of it is in the inference step), and its share is that over the median with it,
    in wall seconds and in CPU seconds (the CPU share is what a shared machine's load
    changes least). The ``premise`` step (wall) is printed too."""
    skip = PremiseSettings(skip_blind_baseline="cost measured", top_records=0)
    with_it = PremiseSettings(top_records=0)
    _timed_audit(model, tables, with_it)  # imports and caches, once
    without, total = [], []
    for _ in range(repeats):
        without.append(_timed_audit(model, tables, skip))
        total.append(_timed_audit(model, tables, with_it))
    off, on = np.array(without), np.array(total)
    extra = np.median(on - off, axis=0)
    base = np.median(on, axis=0)
    return [
        name,
        f"{np.median(off[:, 0]):.2f}",
        f"{base[0]:.2f}",
        f"{np.median(on[:, 1]):.2f}",
        f"{extra[0]:.2f}",
        f"{extra[0] / base[0]:.0%}",
        f"{np.median(off[:, 2]):.2f} / {base[2]:.2f}",
        f"{extra[2] / base[2]:.0%}",
    ]


HEADER = [
    "tables",
    "audit without (s)",
    "audit with (s)",
    "premise step (s)",
    "baseline's cost (s)",
    "share (wall)",
    "CPU s without / with",
    "share (CPU)",
]


def _fixture_cost(repeats: int) -> list[list[str]]:
    """The cost table on the shipped fixtures (see :func:`_share`)."""
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
    return [HEADER] + [_share(model, t, name, repeats) for name, (model, t) in cases.items()]


def _large_cost(records: int, repeats: int) -> list[list[str]]:
    """The cost table on ``records`` Purchase-100-like rows (600 binary columns, 100
    classes, split 2:1), with the ONNX model of ``benchmarks/audit_throughput.py`` trained
    for one epoch."""
    import importlib.util
    import tempfile

    spec = importlib.util.spec_from_file_location(
        "audit_throughput", Path(__file__).with_name("audit_throughput.py")
    )
    assert spec is not None
    assert spec.loader is not None
    throughput = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(throughput)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        throughput.build(work, records, 1, 0)
        tables = Tables(work / "train.parquet", work / "population.parquet", "label")
        name = f"purchase-like ONNX MLP, {records * 2 // 3:,}/{records - records * 2 // 3:,} rows"
        return [HEADER, _share(work / "model.onnx", tables, name, repeats)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument(
        "--null-repeats",
        type=int,
        help="repeats of the cases that do not shift (default: --repeats)",
    )
    parser.add_argument("--n", type=int, default=1000, help="rows per side")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cost-rows", type=int, default=READ_ROWS)
    parser.add_argument("--cost-only", action="store_true", help="only the cost tables")
    parser.add_argument("--cost-repeats", type=int, default=3)
    parser.add_argument(
        "--cost-records", type=int, default=0, help="also the cost on this many rows"
    )
    parser.add_argument(
        "--noise-columns", type=int, default=0, help="columns of coin flips added to the pool"
    )
    parser.add_argument(
        "--fit-columns",
        type=int,
        nargs="+",
        default=[FIT_COLUMNS],
        help="caps on the columns the classifier is fitted on (0: every column)",
    )
    parser.add_argument("--cases", nargs="+", choices=list(CASES), help="only these cases")
    parser.add_argument("--windows", action="store_true", help="only the time windows' shares")
    args = parser.parse_args()
    if args.windows:
        print(aligned_table(window_shares(_adult(), args.seed)))
        return
    if args.cost_only:
        print(f"load average before: {os.getloadavg()}", flush=True)
        print(aligned_table(_fixture_cost(args.cost_repeats)), flush=True)
        if args.cost_records:
            print(aligned_table(_large_cost(args.cost_records, args.cost_repeats)), flush=True)
        print(f"load average after: {os.getloadavg()}")
        seconds = _cost(args.cost_rows, args.seed)
        print(f"blind classifier on {args.cost_rows:,} rows per side, 20 columns: {seconds:.1f} s")
        return
    print(
        f"epsstar {__version__}; Adult fixture, n = {args.n:,} per side; {args.repeats} repeats; "
        f"{args.noise_columns} noise columns",
        flush=True,
    )
    pool = _adult()
    rows = [
        [
            "case",
            "fit columns",
            "flagged",
            "by lower bound",
            "by ranks",
            "by labels",
            "by repeats",
            "flagged at 0.99",
            "mean blind AUC",
            "repeats",
            "CPU s",
        ]
    ]
    started = time.perf_counter()
    for index, (name, case) in enumerate(CASES.items()):
        if args.cases and name not in args.cases:
            continue
        repeats = args.repeats
        if name.startswith("same") and args.null_repeats:
            repeats = args.null_repeats
        for cap in args.fit_columns:
            flags, aucs = [], []
            cpu = time.process_time()
            for repeat in range(repeats):
                rng = np.random.default_rng([args.seed, index, repeat])
                noisy = with_noise(pool, args.noise_columns, rng)
                flagged, auc = _flag(*case(noisy, args.n, rng), repeat, cap or None)
                flags.append(flagged)
                aucs.append(auc)
            by_test = np.mean(flags, axis=0)
            rows.append(
                [
                    name,
                    str(cap or "every"),
                    f"{np.mean(np.any(np.array(flags)[:, :4], axis=1)):.0%}",
                    *(f"{share:.0%}" for share in by_test),
                    f"{np.mean(aucs):.3f}",
                    str(repeats),
                    f"{time.process_time() - cpu:.0f}",
                ]
            )
            print(" | ".join(rows[-1]), flush=True)
    print(aligned_table(rows))
    print(f"({time.perf_counter() - started:.0f} s)\n")
    seconds = _cost(args.cost_rows, args.seed)
    print(f"blind classifier on {args.cost_rows:,} rows per side, 20 columns: {seconds:.1f} s")


if __name__ == "__main__":
    main()
