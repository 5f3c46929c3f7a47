"""Reproduce the experiments of §4 of the Epsilon* paper with epsstar's own tools.

The paper is Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models". For
one data set, this script

1. writes the training and population data as Parquet files (UCI Adult: the shipped
   32,561 / 16,281 split; Purchase-100-like: ``epsstar.training.data.datasets.purchase_like``
   records
   split 208,731 / 102,809 like the paper's),
2. trains the paper's grid with ``epsstar sweep`` (non-private baselines for several epoch
   counts; DP-SGD to each target ε for every clip × batch size × microbatches combination,
   SGD with lr 0.01 and momentum 0.9, δ = 1/(n ln n)), resumable,
3. audits every model with ``epsstar audit-many`` (JSON and one HTML report per model),
4. draws the privacy–utility landscape with ``epsstar landscape``,
5. prints one row per strategy: Epsilon* mean [min, max] over the repeats of each estimator
   (the paper's ``parametric`` and epsstar's default, with the cross-fitted value the
   default held before its leak test and how many models the test found leaking), the
   empirical Epsilon*, utility (population AUROC for Adult, population accuracy for
   Purchase) mean [min, max], the DP ε the trainer achieved, and how many DP models' default
   Epsilon* exceeds that ε, beside the Epsilon* and utility the paper's text states for that
   strategy. A line above the table counts the DP models whose default Epsilon* exceeds the
   accountant's ε, and those at or above 1 (the paper: "every DP model below 1").

Everything runs through the command line a user has; the table is also written as
``summary.md`` beside the results. A killed run restarts where it stopped (the sweep skips
finished models; an audit pass whose results list every model of its manifest is reused).

    python benchmarks/reproduce.py adult                       # the paper's Adult grid, 260 models
    python benchmarks/reproduce.py purchase                    # the paper's Purchase grid
    python benchmarks/reproduce.py purchase --repeats 3 --dp-repeats 1 --microbatches 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from epsstar.cli.common.text_table import aligned_table
from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK, EXIT_PARTIAL
from epsstar.statistics.estimators.methods import DEFAULT_LEVEL
from epsstar.statistics.names import DEFAULT_METHOD


@dataclass(frozen=True, slots=True)
class PaperGrid:
    """The paper's settings for one data set (§4): the grid's fixed parts and its utility, and
    the figures its text states (Epsilon*, utility), per baseline and for the DP models as a
    whole; its figures themselves are plots, so the table can set only these beside ours."""

    baseline_epochs: list[int]
    batch_sizes: list[int]
    baseline_batch: int
    hidden: list[int]
    utility: str
    stated: dict[str, tuple[str, str]]
    stated_dp: tuple[str, str]

    def figures(self, strategy: str) -> tuple[str, str]:
        """The paper's stated (Epsilon*, utility) of ``strategy``, "-" where it states none."""
        if strategy in self.stated:
            return self.stated[strategy]
        return self.stated_dp if strategy.startswith("dp-") else ("-", "-")


PAPER = {
    "adult": PaperGrid(
        baseline_epochs=[1, 5, 10, 20],
        batch_sizes=[64, 512],
        baseline_batch=64,
        hidden=[100, 100, 100],
        utility="auroc",
        # §4.2: "all our model instances resulted in Epsilon* values below 0.3"
        stated={f"nonprivate-e{e}": ("< 0.3", "-") for e in (1, 5, 10, 20)},
        stated_dp=("< 0.3", "-"),
    ),
    "purchase": PaperGrid(
        baseline_epochs=[10, 50, 100],
        batch_sizes=[256, 1024],
        baseline_batch=256,
        hidden=[100, 100, 100],
        utility="accuracy",
        # §4.2: Epsilon* 2.48, 7.06, 7.79 and test accuracy 86 %, 90.4 %, 90.6 % after 10, 50,
        # 100 epochs; every DP model below 1, at 1 % to 72 % accuracy
        stated={
            "nonprivate-e10": ("2.48", "0.860"),
            "nonprivate-e50": ("7.06", "0.904"),
            "nonprivate-e100": ("7.79", "0.906"),
        },
        stated_dp=("< 1", "0.01-0.72"),
    ),
}
PURCHASE_SPLIT = (208_731, 102_809)


def write_data(dataset: str, folder: Path, seed: int) -> tuple[Path, Path]:
    """The training and population Parquet files (written once, reused on a rerun)."""
    train, population = folder / "train.parquet", folder / "population.parquet"
    if train.is_file() and population.is_file():
        return train, population
    folder.mkdir(parents=True, exist_ok=True)
    if dataset == "adult":
        from epsstar.training.data.datasets import adult

        return adult().write_parquet(folder)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from epsstar.training.data.datasets import purchase_like

    n_train, n_population = PURCHASE_SPLIT
    data = purchase_like(n_train + n_population, seed=seed)
    for path, rows in ((train, slice(0, n_train)), (population, slice(n_train, None))):
        table = {c: data.features[rows, i] for i, c in enumerate(data.columns)}
        table["label"] = data.labels[rows]
        pq.write_table(pa.table(table), path.with_suffix(".tmp"))
        path.with_suffix(".tmp").replace(path)
    return train, population


def toml_list(values: list[Any]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def write_sweep(
    path: Path,
    *,
    train: Path,
    population: Path,
    repeats: int,
    seed: int,
    hidden: list[int],
    baseline: dict[str, Any] | None,
    dp: dict[str, Any] | None,
) -> None:
    lines = [
        f"data = {json.dumps(str(train))}",
        'label_column = "label"',
        f"population = {json.dumps(str(population))}",
        f"repeats = {repeats}",
        f"seed = {seed}",
        "[model]",
        f"hidden = {toml_list(hidden)}",
        "lr = 0.01",
        "momentum = 0.9",
    ]
    if baseline is not None:
        lines += ["[baseline]"] + [f"{k} = {json.dumps(v)}" for k, v in baseline.items()]
    if dp is not None:
        lines += ["[dp]"] + [f"{k} = {json.dumps(v)}" for k, v in dp.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def epsstar(*args: str, threads: int, log: Path) -> None:
    """Run one epsstar command; its output goes to ``log`` and a failure stops the script."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    command = [sys.executable, "-m", "epsstar.cli", *args]
    with log.open("a", encoding="utf-8") as out:
        out.write(f"$ epsstar {' '.join(args)}\n")
        out.flush()
        code = subprocess.run(command, env=env, stdout=out, stderr=out, check=False).returncode
    if code not in (EXIT_OK, EXIT_GATE_FAILED, EXIT_PARTIAL):  # results were written
        sys.exit(f"epsstar {args[0]} failed with exit code {code}; see {log}")


def spread(values: list[float], spec: str) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return format(values[0], spec)
    return f"{np.mean(values):{spec}} [{min(values):{spec}}, {max(values):{spec}}]"


def up_to_date(result: Path, manifest: Path) -> bool:
    """An audit pass is reused when its JSON lists exactly the manifest's models, all audited.

    (The sweep rewrites the manifest on every run, so its time stamp says nothing.)
    """
    from epsstar.audit.many import read_manifest

    if not result.is_file():
        return False
    records = json.loads(result.read_text())["models"]
    audited = sorted(str(Path(r["entry"]["model"]).resolve()) for r in records if r.get("result"))
    listed = sorted(str(entry.model.resolve()) for entry in read_manifest(manifest))
    return audited == listed


def by_strategy(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if record.get("result"):
            groups.setdefault(record["entry"]["strategy"], []).append(record)
    return groups


TESTED = DEFAULT_METHOD
TESTED_COLUMNS = [f"{TESTED} untested", "leak found", "above DP epsilon"]


def _achieved_epsilon(record: dict[str, Any]) -> float | None:
    """The ε the trainer's accountant achieved for this model (None for a baseline)."""
    value = record["entry"]["params"].get("epsilon")
    return None if value in (None, "") else float(value)


def _dp_headlines(records: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(Epsilon*, the achieved ε) of every audited DP model among ``records``."""
    pairs = [
        (r["result"]["epsilon_star"], _achieved_epsilon(r)) for r in records if r.get("result")
    ]
    return [(star, eps) for star, eps in pairs if eps is not None]


def _tested_cells(members: list[dict[str, Any]]) -> list[str]:
    """The cross-fitted estimate the default held before its leak test, in how many of the
    models the test found a leak, and how many DP models' Epsilon* exceeds the achieved ε."""
    results = [m["result"] for m in members]
    untested = [
        r["untested_epsilon_star"] for r in results if r["untested_epsilon_star"] is not None
    ]
    # the level at which the held-out leak test keeps the estimate
    found = sum(
        1 for r in results if r["leak_p_value"] is not None and r["leak_p_value"] < DEFAULT_LEVEL
    )
    dp = _dp_headlines(members)
    above = f"{sum(star > eps for star, eps in dp)}/{len(dp)}" if dp else "-"
    return [spread(untested, ".3f"), f"{found}/{len(results)}", above]


def dp_verdict(records: list[dict[str, Any]]) -> str:
    """How many DP models' default Epsilon* exceeds the accountant's ε, and how many read 1
    or more (the paper: every DP model below 1)."""
    dp = _dp_headlines(records)
    above = sum(star > eps for star, eps in dp)
    high = sum(star >= 1 for star, _ in dp)
    return (
        f"{TESTED}: {above} of {len(dp)} DP models read an Epsilon* above the accountant's "
        f"epsilon; {high} read 1 or more"
    )


def summary_rows(by_method: dict[str, list[dict[str, Any]]], paper: PaperGrid) -> list[list[str]]:
    """One row per strategy: Epsilon* of each method, empirical Epsilon*, utility, DP ε, each
    beside what the paper states of that strategy."""
    methods = list(by_method)
    utility = paper.utility
    groups = {method: by_strategy(records) for method, records in by_method.items()}
    header = [
        "strategy",
        "models",
        "paper Epsilon*",
        *(f"Epsilon* {method}" for method in methods),
        *(TESTED_COLUMNS if TESTED in methods else []),
        "empirical",
        f"paper {utility}",
        f"population {utility}",
        "train accuracy",
        "DP epsilon",
        "noise",
    ]
    rows = [header]
    for strategy, members in groups[methods[0]].items():
        results = [m["result"] for m in members]
        params = members[0]["entry"]["params"]
        achieved = [eps for eps in map(_achieved_epsilon, members) if eps is not None]
        sigma = params.get("noise_multiplier")
        estimates = [
            spread([m["result"]["epsilon_star"] for m in groups[method].get(strategy, [])], ".3f")
            for method in methods
        ]
        tested = groups[TESTED].get(strategy, []) if TESTED in methods else []
        stated_epsilon, stated_utility = paper.figures(strategy)
        rows.append(
            [
                strategy,
                str(len(members)),
                stated_epsilon,
                *estimates,
                *(_tested_cells(tested) if TESTED in methods else []),
                spread([r["empirical_epsilon_star"] for r in results], ".3f"),
                stated_utility,
                spread([r["utility"]["population"][utility] for r in results], ".3f"),
                spread([r["utility"]["train"]["accuracy"] for r in results], ".3f"),
                spread(achieved, ".3f") if achieved else "-",
                f"{float(sigma):.3f}" if sigma not in (None, "") else "-",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", choices=sorted(PAPER))
    parser.add_argument("--out", type=Path, help="output folder (default: reproduce-DATASET)")
    parser.add_argument("--repeats", type=int, default=5, help="models per baseline (5)")
    parser.add_argument("--dp-repeats", type=int, default=5, help="models per DP strategy (5)")
    parser.add_argument("--dp-epochs", type=int, default=5, help="epochs of DP training (5)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1, 3, 10, 100])
    parser.add_argument("--clips", type=float, nargs="+", default=[1, 10, 30])
    parser.add_argument("--batch-sizes", type=int, nargs="+", help="DP batch sizes (paper's)")
    parser.add_argument("--microbatches", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--baseline-epochs", type=int, nargs="+", help="(paper's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1)")
    parser.add_argument("--jobs", type=int, default=1, help="parallel audits (1)")
    parser.add_argument(
        "--stack", type=int, default=1, help="models the sweep trains together (1; see sweep)"
    )
    parser.add_argument(
        "--workers", type=int, help="the sweep's worker processes (default: the sweep's own)"
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=["parametric", TESTED],
        help=f"estimators to audit with (the paper's and the default, {TESTED}, whose "
        "results also hold the cross-fitted estimate before its leak test); the first one "
        "gives the landscape and the reports",
    )
    args = parser.parse_args()

    paper = PAPER[args.dataset]
    out = (args.out or Path(f"reproduce-{args.dataset}")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    log = out / "log.txt"
    started = time.perf_counter()
    train, population = write_data(args.dataset, out / "data", args.seed)

    baseline = {
        "epochs": args.baseline_epochs or paper.baseline_epochs,
        "batch_size": paper.baseline_batch,
    }
    dp = {
        "target_epsilons": args.epsilons,
        "clips": args.clips,
        "batch_sizes": args.batch_sizes or paper.batch_sizes,
        "microbatches": args.microbatches,
        "epochs": args.dp_epochs,
    }
    sweeps = {
        "baselines": (args.repeats, baseline, None),
        "dp": (args.dp_repeats, None, dp),
    }
    results: list[tuple[str, Path]] = []
    timings: dict[str, float] = {}
    for name, (repeats, base, private) in sweeps.items():
        if repeats < 1:
            continue
        config = out / f"{name}.toml"
        write_sweep(
            config,
            train=train,
            population=population,
            repeats=repeats,
            seed=args.seed,
            hidden=paper.hidden,
            baseline=base,
            dp=private,
        )
        tick = time.perf_counter()
        epsstar(
            "sweep",
            str(config),
            "--out",
            str(out / name),
            "--quiet",
            "--stack",
            str(args.stack),
            *(["--workers", str(args.workers)] if args.workers else []),
            threads=args.threads,
            log=log,
        )
        timings[f"train {name}"] = time.perf_counter() - tick
        manifest = out / name / "manifest.csv"
        for index, method in enumerate(args.methods):
            result = out / f"{name}-{method}-results.json"
            tick = time.perf_counter()
            if not up_to_date(result, manifest):
                reports = ["--reports", str(out / "reports")] if index == 0 else []
                epsstar(
                    "audit-many",
                    str(manifest),
                    "--json",
                    str(result),
                    "--method",
                    method,
                    *reports,
                    "--jobs",
                    str(args.jobs),
                    "--quiet",
                    threads=args.threads,
                    log=log,
                )
            timings[f"audit {name} ({method})"] = time.perf_counter() - tick
            results.append((method, result))
    first = [str(path) for method, path in results if method == args.methods[0]]
    epsstar(
        "landscape",
        *first,
        "--out",
        str(out / "landscape.html"),
        "--utility",
        paper.utility,
        threads=args.threads,
        log=log,
    )

    by_method = {
        method: [
            model
            for kind, path in results
            if kind == method
            for model in json.loads(path.read_text())["models"]
        ]
        for method in args.methods
    }
    failed = [r for records in by_method.values() for r in records if r.get("error")]
    table = aligned_table(summary_rows(by_method, paper), left_columns=1)
    lines = [
        f"{args.dataset}: {len(by_method[args.methods[0]])} models ({len(failed)} failed "
        f"audits), {time.perf_counter() - started:.0f} s; "
        + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()),
        f"command: python benchmarks/reproduce.py {' '.join(sys.argv[1:])}",
        *([dp_verdict(by_method[TESTED])] if TESTED in by_method else []),
        "",
        table,
    ]
    text = "\n".join(lines)
    (out / "summary.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    for record in failed:
        print(f"FAILED {record['entry']['model']}: {record['error']}", file=sys.stderr)


if __name__ == "__main__":
    main()
