"""Many training runs of a small trainer: ``audit-training --function`` against ``--command``.

The same logistic-regression trainer (scikit-learn, saved as .skops) is audited with R runs
with the canary and R without (``--runs R``), once as a function imported by each worker
(``--function``) and once as a script each run starts anew (``--command``). The command is
timed on fewer runs (``--command-runs``), and both are reported per training run, so that the
ratio compares like with like; the function's whole audit time is printed for its R.

    python benchmarks/function_runs.py --runs 500 --command-runs 20 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]

MODULE = """
from pathlib import Path

import pandas as pd
import skops.io
from sklearn.linear_model import LogisticRegression


def fit(train_path, out_dir, seed):
    frame = pd.read_csv(train_path)
    model = LogisticRegression(max_iter=200, random_state=seed)
    model.fit(frame.drop(columns="label"), frame["label"])
    skops.io.dump(model, Path(out_dir) / "model.skops")
"""

SCRIPT = """
import sys
from fitmod import fit

fit(sys.argv[1], sys.argv[2], int(sys.argv[3]))
"""


def audit(
    folder: Path, runs: int, jobs: int, procedure: list[str]
) -> tuple[float, dict[str, object]]:
    """Wall seconds of one audit-training and its JSON."""
    out = folder / f"audit-{procedure[0].strip('-')}-{runs}.json"
    command = [
        sys.executable, "-m", "epsstar", "audit-training",
        "--train", "train.csv", "--population", "population.csv", "--label-column", "label",
        "--runs", str(runs), "--jobs", str(jobs), "--claimed-epsilon", "0.5",
        "--json", str(out), "--quiet", *procedure,
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(
        command, cwd=folder, capture_output=True, text=True, check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)},
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr)
    return seconds, json.loads(out.read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500, help="R of the --function audit")
    parser.add_argument("--command-runs", type=int, default=20, help="R of the --command one")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        rng = np.random.default_rng(0)
        for table, n in (("train", 1_000), ("population", 2_000)):
            frame = pd.DataFrame(rng.normal(size=(n, 8)), columns=[f"x{i}" for i in range(8)])
            frame["label"] = rng.integers(0, 2, size=n)
            frame.to_csv(folder / f"{table}.csv", index=False)
        (folder / "fitmod.py").write_text(MODULE, encoding="utf-8")
        (folder / "fit_script.py").write_text(SCRIPT, encoding="utf-8")
        script = f"{sys.executable} fit_script.py {{train}} {{out}} {{seed}}"
        rows = []
        for label, runs, procedure in (
            ("--function fitmod:fit", args.runs, ["--function", "fitmod:fit"]),
            ("--command (a script)", args.command_runs, ["--command", script]),
        ):
            seconds, document = audit(folder, runs, args.jobs, procedure)
            trainings = len(document["training_runs"])  # type: ignore[arg-type]
            rows.append((label, runs, trainings, seconds, seconds / trainings))
    print(f"audit-training of a logistic regression (1,000 records), --jobs {args.jobs}")
    print("| procedure | --runs | training runs | wall s | s per training run |")
    print("|---|---:|---:|---:|---:|")
    for label, runs, trainings, seconds, each in rows:
        print(f"| {label} | {runs:,} | {trainings:,} | {seconds:.1f} | {each:.3f} |")
    print(f"command / function, per training run: {rows[1][4] / rows[0][4]:.1f}x")


if __name__ == "__main__":
    main()
