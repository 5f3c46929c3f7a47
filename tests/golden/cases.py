"""The commands whose outputs are kept as golden files, and how they are compared.

Each case runs one ``epsstar`` command in this process on the shipped fixtures and keeps
its exit code, standard output, standard error and every file it writes (JSON, HTML). The
outputs are normalised before they are kept or compared: the checkout's and the run's
folders become ``<ROOT>`` and ``<OUT>``, and what changes from run to run (the time of
day, durations, the Python and epsstar versions, the library versions a training run
records, zip and file digests of files written in the run) is dropped.

Numbers are compared with a relative tolerance of 1e-6 by default: a change of the code
moves an Epsilon* by far more, while a new release of numpy or scipy may move the last
digits (summation order, an optimizer's stopping point). A number downstream of a float32
model's outputs is compared within its propagated tolerance as well, kept in the case's
``tolerances.json`` (``tests/golden/sensitivity.py``): another CPU's kernels round those
outputs differently. ``EPSSTAR_GOLDEN=exact`` compares every number bit for bit, which is
how a restructuring shows it changed nothing on one machine.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "fixtures" / "models"
KINDS = MODELS / "kinds"
LOSSES = ROOT / "fixtures" / "losses"
EXPECTED = Path(__file__).resolve().parent / "expected"

#: Keys whose values change from run to run, dropped wherever they appear.
VOLATILE_KEYS = frozenset(
    {
        "created",
        "seconds",
        "python",
        "epsstar_version",
        "command",
        "seconds_per_epoch",
        "wall_time_seconds",
        "threads",
        "versions",
    }
)
#: Relative tolerance of numbers (see the module docstring).
RELATIVE = 1e-6
#: The file of a case's propagated tolerances, beside its golden files.
TOLERANCES = "tolerances.json"
EXACT = os.environ.get("EPSSTAR_GOLDEN") == "exact"

Prepare = Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    """One command: ``argv`` may name ``{out}`` (the run's folder); ``files`` are the outputs
    kept, relative to it; ``prepare`` makes inputs in the run's folder first."""

    name: str
    argv: tuple[str, ...]
    files: tuple[str, ...] = ()
    prepare: Prepare | None = None
    #: Keys dropped from the JSON files of this case only (e.g. model digests of a
    #: model trained in the run, whose bytes depend on the zip library's timestamps).
    drop: frozenset[str] = field(default_factory=frozenset)


def _summarised_population(out: Path) -> None:
    """A population of 2^18 + 1,000 rows (the fixture's rows repeated, each feature moved by
    a seeded noise of scale 0.01 so that the losses are distinct), summarised."""
    frame = pd.read_parquet(MODELS / "binary_population.parquet")
    repeats = -(-(2**18 + 1_000) // len(frame))
    big = pd.concat([frame] * repeats, ignore_index=True)
    features = [column for column in big.columns if column != "label"]
    noise = np.random.default_rng(0).normal(scale=0.01, size=(len(big), len(features)))
    big[features] = (big[features].to_numpy() + noise).round(4)
    big.to_parquet(out / "big_population.parquet")


def _manifest(out: Path) -> None:
    rows = [
        ("logreg", 0, "binary_logreg.onnx"),
        ("logreg", 1, "binary_logreg.pt"),
        ("mlp", 0, "binary_mlp.onnx"),
        ("mlp", 1, "binary_mlp_torch.onnx"),
    ]
    lines = ["strategy,repeat,model,train,population,label_column"]
    for strategy, repeat, model in rows:
        lines.append(
            f"{strategy},{repeat},{MODELS / model},{MODELS / 'binary_train.csv'},"
            f"{MODELS / 'binary_population.csv'},label"
        )
    (out / "manifest.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _audit_many_results(out: Path) -> None:
    _manifest(out)
    from epsstar.cli.main import main

    argv = ["audit-many", str(out / "manifest.csv"), "--jobs", "1", "--quiet"]
    code = main([*argv, "--json", str(out / "many.json")])
    assert code == 0


def _slice_data(out: Path) -> None:
    """The binary fixture with a column ``group`` (A, B, C by row) on both sides."""
    for side in ("train", "population"):
        frame = pd.read_csv(MODELS / f"binary_{side}.csv")
        frame["group"] = np.array(["A", "B", "C"])[np.arange(len(frame)) % 3]
        frame.to_csv(out / f"{side}.csv", index=False)


def _references(out: Path) -> None:
    """Two reference models for the binary fixture, trained in the run's folder."""
    from epsstar.cli.main import main

    argv = ["references", "--data", str(MODELS / "binary_population.csv")]
    argv += ["--label-column", "label", "--count", "2", "--out", str(out / "refs"), "--quiet"]
    argv += ["--threads", "1"]
    assert main(argv) == 0


def _slices_and_references(out: Path) -> None:
    _slice_data(out)
    _references(out)


AUDIT_BINARY = (
    "--train",
    str(MODELS / "binary_train.csv"),
    "--population",
    str(MODELS / "binary_population.csv"),
    "--label-column",
    "label",
)
TRAINED = frozenset({"sha256", "model_sha256"})

CASES: tuple[Case, ...] = (
    Case(
        "audit-readme",
        (
            "audit",
            str(MODELS / "multiclass_mlp.onnx"),
            "--train",
            str(MODELS / "multiclass_train.csv"),
            "--population",
            str(MODELS / "multiclass_population.parquet"),
            "--label-column",
            "label",
            "--features",
            "x0,x1,x2,x3,x4,x5,x6,x7",
            "--max-epsilon",
            "1",
            "--json",
            "{out}/audit.json",
            "--report",
            "{out}/audit.html",
            "--quiet",
        ),
        ("audit.json", "audit.html"),
    ),
    Case(
        "audit-parametric-interval",
        (
            "audit",
            str(MODELS / "binary_mlp.onnx"),
            *AUDIT_BINARY,
            "--method",
            "parametric",
            "--family",
            "gmm",
            "--interval",
            "0.9",
            "--n-bootstrap",
            "20",
            "--json",
            "{out}/audit.json",
            "--report",
            "{out}/audit.html",
            "--quiet",
        ),
        ("audit.json", "audit.html"),
    ),
    Case(
        "audit-torchscript-tails",
        (
            "audit",
            str(MODELS / "binary_logreg.pt"),
            *AUDIT_BINARY,
            "--method",
            "tails",
            "--gate",
            "lower-bound",
            "--max-epsilon",
            "5",
            "--match-columns-by-position",
            "--json",
            "{out}/audit.json",
            "--quiet",
        ),
        ("audit.json",),
    ),
    Case(
        "audit-skops-pipeline",
        (
            "audit",
            str(KINDS / "adult_pipeline.skops"),
            "--train",
            str(KINDS / "adult_train.csv"),
            "--population",
            str(KINDS / "adult_population.csv"),
            "--label-column",
            "income",
            "--loss",
            "cross_entropy",
            "--json",
            "{out}/audit.json",
            "--report",
            "{out}/audit.html",
            "--quiet",
        ),
        ("audit.json", "audit.html"),
    ),
    Case(
        "audit-attacks-slices",
        (
            "audit",
            str(MODELS / "binary_mlp.onnx"),
            "--train",
            "{out}/train.csv",
            "--population",
            "{out}/population.csv",
            "--label-column",
            "label",
            "--features",
            "x0,x1,x2,x3,x4,x5,x6,x7",
            "--attack",
            "loss",
            "lira",
            "rmia",
            "--reference-models",
            "{out}/refs/ref-01/model.onnx",
            "{out}/refs/ref-02/model.onnx",
            "--slice-by",
            "group",
            "--max-epsilon",
            "3",
            "--json",
            "{out}/audit.json",
            "--report",
            "{out}/audit.html",
            "--quiet",
        ),
        ("audit.json", "audit.html"),
        prepare=_slices_and_references,
        drop=TRAINED,
    ),
    Case(
        "audit-summarised",
        (
            "audit",
            str(MODELS / "binary_logreg.onnx"),
            "--train",
            str(MODELS / "binary_train.parquet"),
            "--population",
            "{out}/big_population.parquet",
            "--label-column",
            "label",
            "--json",
            "{out}/audit.json",
            "--quiet",
        ),
        ("audit.json",),
        prepare=_summarised_population,
        # the case writes that Parquet file itself, and pyarrow puts its own version in it
        drop=frozenset({"population_sha256"}),
    ),
    Case(
        "audit-error-label",
        ("audit", str(MODELS / "binary_logreg.onnx"), *AUDIT_BINARY[:-1], "nope", "--quiet"),
    ),
    Case(
        "audit-error-missing",
        ("audit", "{out}/missing.onnx", *AUDIT_BINARY, "--quiet"),
    ),
    *(
        Case(
            f"epsilon-{method}",
            (
                "epsilon",
                "--train-losses",
                str(LOSSES / "train.npy"),
                "--population-losses",
                str(LOSSES / "population.npy"),
                "--method",
                method,
                "--delta",
                "1e-5",
                "--json",
                "{out}/epsilon.json",
                *extra,
            ),
            ("epsilon.json",),
        )
        for method, extra in (
            ("tails-tested", ()),
            ("tails", ()),
            ("tails-crossfit", ("--interval", "0.9", "--n-bootstrap", "20")),
            ("empirical", ("--rate-window", "0.001,0.999")),
            ("parametric", ("--family", "normal")),
            ("parametric-gmm", ()),
        )
    ),
    Case(
        "audit-many",
        (
            "audit-many",
            "{out}/manifest.csv",
            "--jobs",
            "1",
            "--json",
            "{out}/many.json",
            "--reports",
            "{out}/reports",
            "--max-epsilon",
            "2",
            "--match-columns-by-position",
            "--quiet",
        ),
        ("many.json", "reports/logreg-0.html"),
        prepare=_manifest,
    ),
    Case(
        "landscape",
        ("landscape", "{out}/many.json", "--out", "{out}/landscape.html"),
        ("landscape.html",),
        prepare=_audit_many_results,
    ),
    Case(
        "train-dp",
        (
            "train",
            "--data",
            str(MODELS / "binary_train.csv"),
            "--population",
            str(MODELS / "binary_population.csv"),
            "--label-column",
            "label",
            "--epochs",
            "2",
            "--target-epsilon",
            "3",
            "--hidden",
            "8",
            "--out",
            "{out}/model",
            "--threads",
            "1",
            "--quiet",
        ),
        ("model/training.json",),
        drop=TRAINED,
    ),
    Case("simulate", ("simulate", "--quick")),
)


def case_argv(case: Case, out: Path) -> list[str]:
    """The command line of ``case`` for a run in ``out``."""
    argv = [part.replace("{out}", str(out)) for part in case.argv]
    if case.name == "epsilon-parametric-gmm":
        index = argv.index("parametric-gmm")
        argv[index : index + 1] = ["parametric", "--family", "gmm"]
    return argv


# --- normalising ---------------------------------------------------------------------------------


def normalise_text(text: str, out: Path) -> str:
    """``text`` with the run's folders named, durations and versions masked."""
    for folder, name in ((out, "<OUT>"), (ROOT, "<ROOT>")):
        text = text.replace(str(folder), name).replace(folder.as_uri(), name)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\+00:00|Z)?", "<TIME>", text)
    text = re.sub(r"\b\d+(?:\.\d+)? ?(?:s|seconds|ms)\b", "<DURATION>", text)
    text = re.sub(r"(timings \(s\)</th><td>)[^<]*", r"\1<DURATIONS>", text)
    text = re.sub(r"epsstar \d+\.\d+\.\d+\S*", "epsstar <VERSION>", text)
    return re.sub(r"Python \d+\.\d+\.\d+", "Python <VERSION>", text)


def normalise_json(value: Any, out: Path, drop: frozenset[str]) -> Any:
    """``value`` without volatile keys, with the run's folders named."""
    if isinstance(value, dict):
        return {
            key: normalise_json(item, out, drop)
            for key, item in value.items()
            if key not in VOLATILE_KEYS and key not in drop
        }
    if isinstance(value, list):
        return [normalise_json(item, out, drop) for item in value]
    if isinstance(value, str):
        return normalise_text(value, out)
    return value


def run_case(case: Case, out: Path) -> dict[str, Any]:
    """Run ``case`` in the empty folder ``out``: its normalised outputs by name."""
    import contextlib
    import io

    from epsstar.cli.main import main

    if case.prepare is not None:
        discard = io.StringIO()
        with contextlib.redirect_stdout(discard), contextlib.redirect_stderr(discard):
            case.prepare(out)
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(case_argv(case, out))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    outputs: dict[str, Any] = {
        "exit": code,
        "stdout": normalise_text(stdout.getvalue(), out),
        "stderr": normalise_text(stderr.getvalue(), out),
    }
    for name in case.files:
        path = out / name
        if name.endswith(".json"):
            document = json.loads(path.read_text(encoding="utf-8"))
            outputs[name] = normalise_json(document, out, case.drop)
        else:
            outputs[name] = normalise_text(path.read_text(encoding="utf-8"), out)
    return outputs


def write_expected(case: Case, outputs: dict[str, Any]) -> None:
    """Keep ``outputs`` as the golden files of ``case``."""
    folder = EXPECTED / case.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, value in outputs.items():
        target = folder / (name.replace("/", "__") if name not in ("exit",) else "exit.txt")
        if name in ("stdout", "stderr"):
            target = folder / f"{name}.txt"
        if isinstance(value, (dict, list)):
            target.write_text(json.dumps(value, indent=1) + "\n", "utf-8")
        else:
            target.write_text(str(value), encoding="utf-8")


def write_tolerances(case: Case, tolerances: dict[str, float]) -> None:
    """Keep how far each number of ``case`` may move (an empty mapping keeps no file)."""
    target = EXPECTED / case.name / TOLERANCES
    if tolerances:
        target.write_text(json.dumps(tolerances, indent=1, sort_keys=True) + "\n", "utf-8")
    else:
        target.unlink(missing_ok=True)


def read_tolerances(case: Case) -> dict[str, float]:
    """How far each number of ``case`` downstream of a float32 model may move, by path."""
    path = EXPECTED / case.name / TOLERANCES
    return json.loads(path.read_text("utf-8")) if path.exists() else {}


def read_expected(case: Case) -> dict[str, Any]:
    """The golden files of ``case``, as :func:`run_case` returns them."""
    folder = EXPECTED / case.name
    found: dict[str, Any] = {
        "exit": int((folder / "exit.txt").read_text()),
        "stdout": (folder / "stdout.txt").read_text("utf-8"),
        "stderr": (folder / "stderr.txt").read_text("utf-8"),
    }
    for name in case.files:
        text = (folder / name.replace("/", "__")).read_text("utf-8")
        found[name] = json.loads(text) if name.endswith(".json") else text
    return found


# --- comparing -----------------------------------------------------------------------------------

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def close(expected: float, found: float, tolerance: float = 0.0) -> bool:
    if EXACT:
        return expected == found or (math.isnan(expected) and math.isnan(found))
    if abs(expected - found) <= tolerance:
        return True
    return math.isclose(expected, found, rel_tol=RELATIVE, abs_tol=1e-12)


def text_numbers_close(expected: str, found: str, last_place: bool, tolerance: float) -> bool:
    a, b = float(expected), float(found)
    if close(a, b, tolerance):
        return True
    if EXACT or not last_place:
        return False
    # a printed number may round the other way: one unit in its last printed place
    decimals = len(expected.split(".")[1].split("e")[0]) if "." in expected else 0
    return abs(a - b) <= 10.0**-decimals * 1.0001 and "e" not in expected.lower()


def differences(
    expected: Any, found: Any, where: str = "", tolerances: Mapping[str, float] | None = None
) -> Iterator[str]:
    """Where ``found`` differs from ``expected`` (numbers within the tolerance agree: the
    relative one, or the propagated one ``tolerances`` gives by path)."""
    tolerances = tolerances or {}
    if isinstance(expected, dict) and isinstance(found, dict):
        shared = set(expected) & set(found)
        expected_order = [key for key in expected if key in shared]
        found_order = [key for key in found if key in shared]
        if expected_order != found_order:
            yield f"{where}: keys in the order {found_order}, expected {expected_order}"
        for key in sorted(set(expected) | set(found)):
            if key not in found or key not in expected:
                yield f"{where}.{key}: only in {'expected' if key in expected else 'found'}"
                continue
            yield from differences(expected[key], found[key], f"{where}.{key}", tolerances)
    elif isinstance(expected, list) and isinstance(found, list):
        if len(expected) != len(found):
            yield f"{where}: {len(expected)} items expected, {len(found)} found"
            return
        for index, (a, b) in enumerate(zip(expected, found, strict=True)):
            yield from differences(a, b, f"{where}[{index}]", tolerances)
    elif isinstance(expected, str) and isinstance(found, str):
        yield from _text_differences(expected, found, where, tolerances)
    elif isinstance(expected, bool) or isinstance(found, bool) or expected is None:
        if expected != found:
            yield f"{where}: expected {expected!r}, found {found!r}"
    elif isinstance(expected, (int, float)) and isinstance(found, (int, float)):
        if not close(float(expected), float(found), tolerances.get(where, 0.0)):
            yield f"{where}: expected {expected!r}, found {found!r}"
    elif expected != found:
        yield f"{where}: expected {expected!r}, found {found!r}"


def _text_differences(
    expected: str, found: str, where: str, tolerances: Mapping[str, float]
) -> Iterator[str]:
    """Texts agree when they agree outside their numbers and each number agrees."""
    parts_a, parts_b = NUMBER.split(expected), NUMBER.split(found)
    numbers_a, numbers_b = NUMBER.findall(expected), NUMBER.findall(found)
    if parts_a != parts_b or len(numbers_a) != len(numbers_b):
        yield f"{where}: text differs\n{_first_difference(expected, found)}"
        return
    for index, (a, b) in enumerate(zip(numbers_a, numbers_b, strict=True)):
        tolerance = tolerances.get(f"{where}#{index}", 0.0)
        if not text_numbers_close(a, b, last_place=True, tolerance=tolerance):
            yield f"{where}: number {a} became {b}"
            return


def _first_difference(expected: str, found: str) -> str:
    lines_a, lines_b = expected.splitlines(), found.splitlines()
    for index, (a, b) in enumerate(zip(lines_a, lines_b, strict=False)):
        if a != b:
            return f"line {index + 1}:\n  expected {a[:300]!r}\n  found    {b[:300]!r}"
    return f"{len(lines_a)} lines expected, {len(lines_b)} found"
