"""Attribute inference on Adult (sex, race) against the bounds DP-SGD gives it.

The Adult fixtures (``fixtures/models/kinds/adult_{train,population}.csv``, 4,000 rows each)
as numbers: six numeric columns, ``sex`` (1 for Male) and ``race`` (its code in sorted
order), label ``income``. For each ε and attribute, ``epsstar train --attribute COLUMN``
(logistic regression, 5 epochs, batch 64, the other settings at their defaults) tracks R_t
at every step, then ``epsstar audit --attribute COLUMN`` measures the attack of Yeom et al.
on the model. Printed per row: the measured advantage (accuracy on members less accuracy on
non-members) and the ε lower bound it implies, the data-dependent bound (Corollary 10 of
Cherubin et al. 2024, "Closed-Form Bounds for DP-SGD against Record-level Inference", with the
tracked R_t), the data-independent one (every R_t = 2C, Corollary 7), the bound of the declared
(ε, δ) (eq. 5), the largest R_t, and the seconds the tracking took beside the training's.

    python benchmarks/attribute_bound.py                       # about two minutes
    python benchmarks/attribute_bound.py --epsilons 1 8 --records all
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from pathlib import Path

import pandas as pd

from epsstar import __version__
from epsstar.cli import main
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.readings.attribute import attribute_security_from_dp

KINDS = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "kinds"


def _tables(folder: Path) -> None:
    races = sorted(pd.read_csv(KINDS / "adult_train.csv")["race"].unique())
    for side in ("train", "population"):
        frame = pd.read_csv(KINDS / f"adult_{side}.csv")
        numeric = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss"]
        out = frame[[*numeric, "hours-per-week"]].copy()
        out["sex"] = (frame["sex"] == "Male").astype(int)
        out["race"] = frame["race"].map({race: i for i, race in enumerate(races)})
        out["income"] = frame["income"]
        out.to_csv(folder / f"{side}.csv", index=False)


def _run(argv: list[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    if code != 0:
        raise SystemExit(f"{argv[0]} failed with exit code {code}")


def _row(folder: Path, epsilon: float, column: str, records: str) -> list[str]:
    out = folder / f"eps{epsilon:g}-{column}"
    data = ["--train", str(folder / "train.csv"), "--population", str(folder / "population.csv")]
    train = ["train", "--data", data[1], "--population", data[3], "--label-column", "income"]
    train += ["--epochs", "5", "--target-epsilon", f"{epsilon:g}", "--attribute", column]
    _run([*train, "--attribute-records", records, "--out", str(out), "--quiet"])
    audit = ["audit", str(out / "model.onnx"), *data, "--label-column", "income"]
    audit += ["--attribute", column, "--no-blind-baseline", "not part of this benchmark"]
    _run([*audit, "--top-records", "0", "--json", str(out / "audit.json"), "--quiet"])
    record = json.loads((out / "training.json").read_text())
    tracked = record["attribute_inference"]
    inferred = json.loads((out / "audit.json").read_text())["attribute_inference"]
    privacy = record["privacy"]
    declared = attribute_security_from_dp(privacy["epsilon"], privacy["delta"])
    return [
        f"{epsilon:g}",
        column,
        f"{inferred['advantage']:.4f}",
        f"{inferred['lower_bound']:.3f}",
        f"{tracked['bound']['advantage_bound']:.4f}",
        f"{tracked['data_independent_bound']['advantage_bound']:.4f}",
        f"{declared.advantage:.4f}",
        f"{tracked['r_max']:.3f}",
        f"{tracked['bound']['error_order']:.3g}",
        f"{tracked['seconds']:.1f} / {record['wall_time_seconds']:.1f}",
    ]


def main_benchmark() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 50.0])
    parser.add_argument("--columns", nargs="+", default=["sex", "race"])
    parser.add_argument("--records", choices=("sampled", "all"), default="sampled")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        _tables(folder)
        for epsilon in args.epsilons:
            for column in args.columns:
                rows.append(_row(folder, epsilon, column, args.records))
    header = [
        "ε",
        "attribute",
        "measured adv.",
        "ε lower bd",
        "Cor. 10 (tracked)",
        "Cor. 7 (R_t=2C)",
        "(ε,δ) eq. 5",
        "max R_t",
        "√(pT)/σ",
        "tracking / training s",
    ]
    print(f"epsstar {__version__}; R_t over {args.records} records")
    print(aligned_table([header, *rows], left_columns=2))


if __name__ == "__main__":
    main_benchmark()
