"""The audit pipeline and ``epsstar audit`` / ``audit-many`` end to end."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.model.plugins import register_loader
from epsstar.exceptions import PoorFitWarning
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from tests.conftest import audit_files, invoke
from tests.numerics import estimator_layers, loss_tolerance, network_tolerance
from tests.shifted_audit import largest_moves

COLUMNS = [f"x{i}" for i in range(6)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small overfitted binary model in three files, with its data."""
    import skops.io
    from skl2onnx import to_onnx
    from sklearn.neural_network import MLPClassifier

    folder = tmp_path_factory.mktemp("audit")
    rng = np.random.default_rng(0)
    features = rng.normal(size=(900, 6))
    labels = (features @ rng.normal(size=6) + rng.normal(scale=1.5, size=900) > 0).astype(int)
    frame = pd.DataFrame(features, columns=COLUMNS).assign(label=labels)
    frame.iloc[:600].to_csv(folder / "train.csv", index=False)
    frame.iloc[600:].to_parquet(folder / "population.parquet")
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # overfitting is the point
        model = MLPClassifier((32,), max_iter=300, random_state=0).fit(features[:600], labels[:600])
    # opset 17: skl2onnx 1.20 with onnx 1.17 would write 22, which onnxruntime 1.18 refuses
    (folder / "model.onnx").write_bytes(
        to_onnx(model, features[:1].astype(np.float32), target_opset=17).SerializeToString()
    )
    skops.io.dump(model, folder / "model.skops")
    with (folder / "model.pkl").open("wb") as stream:
        pickle.dump(model, stream)
    return folder


def run_audit(workdir: Path, **options):  # type: ignore[no-untyped-def]
    with pytest.warns(PoorFitWarning) if options.pop("expect_poor", False) else _nothing():
        return audit_files(
            workdir / options.pop("model", "model.onnx"),
            workdir / "train.csv",
            workdir / "population.parquet",
            label_column="label",
            **options,
        )


class _nothing:  # noqa: N801
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def quiet_audit(workdir: Path, **options):  # type: ignore[no-untyped-def]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PoorFitWarning)
        return run_audit(workdir, **options)


def test_audit_result_and_json_contract(workdir: Path) -> None:
    result = quiet_audit(workdir, max_epsilon=50.0)
    payload = result.to_dict()
    json.dumps(payload, allow_nan=False)
    for key in (
        "epsilon_star",
        "delta",
        "epsilon_lower_bound",
        "passed",
        "max_epsilon",
        "n_train",
        "n_population",
        "fpr",
        "fnr",
        "threshold",
        "fit",
        "loader",
        "model_sha256",
        "utility",
        "readings",
        "provenance",
    ):
        assert key in payload
    assert payload["n_train"] == 600
    assert payload["n_population"] == 300
    assert payload["delta"] == pytest.approx(1 / (600 * np.log(600)))
    assert payload["passed"] is True
    assert payload["loader"]["name"] == "onnx"
    assert payload["loader"]["distribution"] == "epsstar"
    assert 0.5 < payload["utility"]["population"]["accuracy"] <= 1
    assert 0.5 < payload["utility"]["population"]["auroc"] <= 1
    assert 0 <= payload["epsilon_lower_bound"] <= payload["epsilon_star"] + 5
    readings = payload["readings"]
    assert 0.5 <= readings["posterior_belief_bound"] < 1
    assert [r["fpr"] for r in readings["tpr_at_fpr"]] == [0.001, 0.01]
    for reading in readings["tpr_at_fpr"]:
        assert reading["tpr_observed"] <= reading["tpr_bound"] + 0.05
    import hashlib

    assert (
        payload["model_sha256"] == hashlib.sha256((workdir / "model.onnx").read_bytes()).hexdigest()
    )


def test_curves_locate_the_epsilon_star_test(workdir: Path) -> None:
    result = quiet_audit(workdir, method="parametric")
    curves = result.curves()
    fitted, empirical = curves["fitted"], curves["empirical"]
    assert np.all(np.diff(fitted.fpr) >= 0)
    assert np.all(np.diff(empirical.fnr) <= 0)
    # The maximising test lies on the fitted curve.
    on_curve = np.interp(result.epsilon.threshold, fitted.thresholds, fitted.fpr)
    assert on_curve == pytest.approx(result.epsilon.fpr, rel=1e-3)


def test_audit_is_deterministic_for_a_seed(workdir: Path) -> None:
    first, second = quiet_audit(workdir, seed=3).to_dict(), quiet_audit(workdir, seed=3).to_dict()
    for payload in (first, second):
        payload.pop("provenance")
    assert first == second


@pytest.mark.kernels
def test_same_model_in_two_formats_gives_the_same_epsilon(workdir: Path) -> None:
    """skl2onnx runs in float32: the losses and both Epsilon* lie within the tolerances their
    arithmetic allows from the float64 model's (``tests/numerics.py``)."""
    with (workdir / "model.pkl").open("rb") as stream:
        estimator = pickle.load(stream)
    layers = estimator_layers(estimator)

    def tolerance(
        model: Any, features: Callable[[], np.ndarray], predictions: np.ndarray
    ) -> np.ndarray:
        logits = network_tolerance(layers, features(), against_float64=True)
        return loss_tolerance(logits, predictions, "probabilities", evaluations=1)

    onnx = quiet_audit(workdir, model="model.onnx")
    skops = quiet_audit(workdir, model="model.pkl", trust=True)
    train = pd.read_csv(workdir / "train.csv")[COLUMNS].to_numpy()
    expected = tolerance(None, lambda: train, estimator.predict_proba(train)[:, 1])
    np.testing.assert_array_less(np.abs(onnx.train_losses - skops.train_losses), expected)

    def audit() -> Any:
        return quiet_audit(workdir, model="model.pkl", trust=True)

    values = (lambda r: r.empirical.epsilon, lambda r: r.epsilon_star)
    for value, moved in zip(values, largest_moves(audit, values, tolerance), strict=True):
        assert abs(value(onnx) - value(skops)) <= moved + 1e-12, moved


def test_gate(workdir: Path) -> None:
    failed = quiet_audit(workdir, max_epsilon=0.0)
    assert failed.epsilon_star > 0.0  # the model is overfitted
    assert failed.passed is False
    assert quiet_audit(workdir, max_epsilon=failed.epsilon_star).passed is True  # ε* ≤ gate
    assert quiet_audit(workdir).passed is None


def test_split_lower_bound_is_conservative_for_identical_distributions() -> None:
    rng = np.random.default_rng(1)
    bounds = [
        split_lower_bound(rng.normal(size=2000), rng.normal(size=2000), delta=1e-5, seed=s).epsilon
        for s in range(20)
    ]
    # At 95 % confidence, a valid bound is 0 in nearly every repeat when nothing leaks.
    assert sum(b > 0 for b in bounds) <= 3


def test_split_lower_bound_detects_separated_distributions() -> None:
    rng = np.random.default_rng(2)
    bound = split_lower_bound(rng.normal(-3, 1, 5000), rng.normal(0, 1, 5000), delta=1e-5)
    assert bound.epsilon > 2.0


def audit_command(workdir: Path) -> list[str]:
    """``epsstar audit`` of the module's ONNX model and data, without a progress bar."""
    return [
        "audit",
        str(workdir / "model.onnx"),
        "--train",
        str(workdir / "train.csv"),
        "--population",
        str(workdir / "population.parquet"),
        "--label-column",
        "label",
        "--quiet",
    ]


def test_cli_gate_exit_codes(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = audit_command(workdir)
    code, out, _ = invoke([*base, "--json", str(tmp_path / "a.json")], capsys)
    assert code == 0
    payload = json.loads((tmp_path / "a.json").read_text())
    assert f"Epsilon* = {payload['epsilon_star']:.4f}" in out
    assert payload["provenance"]["command"].startswith("epsstar ")
    code, out, _ = invoke([*base, "--max-epsilon", "0", "--match-columns-by-position"], capsys)
    assert code == 1
    assert "FAIL" in out
    code, out, _ = invoke([*base, "--max-epsilon", "1000", "--match-columns-by-position"], capsys)
    assert code == 0
    assert "PASS" in out


def test_headline_method_and_bootstrap_interval(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from epsstar.statistics.estimators.estimator import epsilon_star
    from epsstar.statistics.estimators.methods import Bootstrap

    result = run_audit(workdir, method="tails", interval=0.9, n_bootstrap=20, seed=3)
    payload = result.to_dict()
    json.dumps(payload, allow_nan=False)
    assert payload["method"] == "tails"
    assert payload["family"] is None
    assert payload["fit"] == {}
    assert payload["tail_fit"]["train"]["family"] == "relative-tails"
    # The headline is the estimator's own figure on the audit's losses, interval included.
    direct = epsilon_star(
        result.train_losses,
        result.population_losses,
        delta=result.delta,
        method="tails",
        interval=Bootstrap(0.9, n_bootstrap=20),
        seed=3,
    )
    assert payload["epsilon_star"] == direct.epsilon
    interval = payload["epsilon_star_interval"]
    assert interval == direct.interval.to_dict()  # type: ignore[union-attr]
    assert interval["level"] == 0.9
    assert interval["n_bootstrap"] == 20
    assert interval["low"] <= interval["high"]
    assert payload["empirical"]["method"] == "empirical"
    # Readings use the headline estimate; the tails method has no fitted CDFs to read.
    assert all(r["tpr_fitted"] is None for r in payload["readings"]["tpr_at_fpr"])
    assert "fitted" not in result.curves()
    default = quiet_audit(workdir).to_dict()
    assert default["epsilon_star_interval"] is None
    assert default["method"] == "tails-shape-tested"
    assert max(default["crossfit_scores"]) == default["untested_epsilon_star"]
    assert default["epsilon_star"] in (0.0, default["untested_epsilon_star"])
    assert default["plug_in_epsilon_star"] >= 0

    code, out, _ = invoke(
        [
            *audit_command(workdir),
            "--method",
            "empirical",
            "--interval",
            "0.8",
            "--n-bootstrap",
            "10",
        ],
        capsys,
    )
    assert code == 0
    matching, first, second = out.splitlines()[:3]
    assert matching.startswith("columns matched by position")
    assert first.startswith("Epsilon* = ")
    assert first.endswith(", empirical)")
    assert second.startswith("  80% bootstrap interval (percentile, 10 resamples): [")


def test_unknown_method_is_refused_before_the_data_are_read(workdir: Path) -> None:
    from epsstar.exceptions import InvalidInputError

    # The "data" are the model file: reading them would fail with another message.
    model = workdir / "model.onnx"
    with pytest.raises(InvalidInputError, match="'bogus'"):
        audit_files(model, model, model, label_column="label", method="bogus")  # type: ignore[arg-type]


@dataclass
class _FakeModel:
    outputs: np.ndarray | float
    n_features: int | None = None
    classes: tuple[object, ...] | None = None
    output_kind: str = "probabilities"

    def predict(self, features: np.ndarray) -> np.ndarray:
        return np.broadcast_to(
            np.asarray(self.outputs, dtype=np.float64), (features.shape[0],)
        ).copy()


class _FakeLoader:
    name = "fake"
    suffixes = (".fake",)
    value: float = 0.5

    def load(self, path: Path, *, outputs: str | None = None, trust: bool = False) -> _FakeModel:
        return _FakeModel(float(path.read_text()))


@pytest.fixture
def fake_loader() -> Iterator[None]:
    from epsstar.audit.model import plugins

    register_loader("fake", _FakeLoader(), force=True)
    yield
    plugins._reset()  # forget the fake; the entry points are read again on next use


def write_bad_files(workdir: Path, tmp: Path) -> None:
    frame = pd.read_csv(workdir / "train.csv")
    frame.drop(columns=["label"]).to_csv(tmp / "nolabel.csv", index=False)
    frame.assign(label=np.where(np.arange(len(frame)) == 5, 7, frame["label"])).to_csv(
        tmp / "badlabel.csv", index=False
    )
    frame.assign(x2=np.where(np.arange(len(frame)) == 9, np.inf, frame["x2"])).to_csv(
        tmp / "inf.csv", index=False
    )
    frame.drop(columns=["x5"]).to_csv(tmp / "narrow.csv", index=False)
    frame.iloc[:0].to_csv(tmp / "empty.csv", index=False)
    frame.iloc[:20].to_csv(tmp / "few.csv", index=False)
    frame.assign(label=1).to_csv(tmp / "ones.csv", index=False)
    frame.assign(label=1, x0=frame["x0"] + 1).to_csv(tmp / "other_ones.csv", index=False)
    (tmp / "corrupt.onnx").write_bytes(b"\x08\x07garbage that is not a model")
    whole = (workdir / "model.onnx").read_bytes()
    (tmp / "truncated.onnx").write_bytes(whole[: len(whole) // 2])
    (tmp / "nan.fake").write_text("nan")
    (tmp / "above.fake").write_text("1.5")
    (tmp / "constant.fake").write_text("0.5")


ONNX, TRAIN, POPULATION = "model.onnx", "train.csv", "population.parquet"
FAKE = ["--loader", "fake"]
# (name, model, training data, population data, more options, the telling part of the message);
# files are the module's (workdir) or those of write_bad_files.
BAD_AUDITS = [
    ("missing model", "missing.onnx", TRAIN, POPULATION, [], "model: no such file"),
    ("missing data", ONNX, "missing.csv", POPULATION, [], "train: no such file"),
    ("corrupt model", "corrupt.onnx", TRAIN, POPULATION, [], "must be a valid ONNX model"),
    ("truncated model", "truncated.onnx", TRAIN, POPULATION, [], "must be a valid ONNX model"),
    ("too few columns", ONNX, "narrow.csv", POPULATION, [], "6 columns, the input width"),
    ("no label column", ONNX, "nolabel.csv", POPULATION, [], "label column 'label' must be"),
    ("unknown label", ONNX, "badlabel.csv", POPULATION, [], "unknown label value(s): 7."),
    ("infinite feature", ONNX, "inf.csv", POPULATION, [], "'x2' must be finite. Found inf"),
    ("no rows", ONNX, "empty.csv", POPULATION, [], "at least one row. Found none."),
    ("too few rows", ONNX, "few.csv", POPULATION, [], "at least 100 rows"),
    ("nan output", "nan.fake", TRAIN, POPULATION, FAKE, "probabilities in [0, 1]"),
    ("output above 1", "above.fake", TRAIN, POPULATION, FAKE, "probabilities in [0, 1]"),
    ("equal losses", "constant.fake", "ones.csv", "other_ones.csv", FAKE, "all losses are equal"),
    ("pickle", "model.pkl", TRAIN, POPULATION, [], "--trust-model"),
    (
        "folder is a file",
        ONNX,
        TRAIN,
        POPULATION,
        ["--json", "nolabel.csv/dir.json"],
        "is a file, not a folder",
    ),
    ("loader", ONNX, TRAIN, POPULATION, ["--loader", "nosuch"], "onnx, served, sklearn"),
    ("batch size", ONNX, TRAIN, POPULATION, ["--batch-size", "0"], "--batch-size must be"),
    ("delta", ONNX, TRAIN, POPULATION, ["--delta", "2"], "delta must be in"),
    ("interval", ONNX, TRAIN, POPULATION, ["--interval", "1.5"], "interval must be in"),
    (
        "bootstrap",
        ONNX,
        TRAIN,
        POPULATION,
        ["--interval", "0.9", "--n-bootstrap", "1"],
        "--n-bootstrap must be",
    ),
    ("method", ONNX, TRAIN, POPULATION, ["--method", "bogus"], "invalid choice"),
]
# The bad value each message ends with, where it is not in the file names.
BAD_VALUES = {
    "too few columns": "Found 5.",
    "nan output": "Found nan.",
    "output above 1": "Found 1.5.",
    "loader": "Found 'nosuch'.",
    "batch size": "Found 0.",
    "delta": "Found 2.0.",
    "interval": "Found 1.5.",
    "bootstrap": "Found 1.",
}


@pytest.mark.parametrize(
    ("case", "model", "train", "population", "options", "message"),
    BAD_AUDITS,
    ids=[case[0] for case in BAD_AUDITS],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    case: str,
    model: str,
    train: str,
    population: str,
    options: list[str],
    message: str,
    workdir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fake_loader: None,
) -> None:
    write_bad_files(workdir, tmp_path)

    def where(name: str) -> str:
        return str(workdir / name if (workdir / name).exists() else tmp_path / name)

    out_json = tmp_path / "out.json"
    outputs = [] if "--json" in options else ["--json", str(out_json)]
    if "--json" in options:
        options = [*options[:-1], str(tmp_path / options[-1])]
    args = ["audit", where(model), "--train", where(train), "--population", where(population)]
    code, _, err = invoke([*args, "--label-column", "label", "--quiet", *options, *outputs], capsys)
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if not line.startswith("epsstar: warning")]
    assert len(lines) == 1, err
    assert message in lines[0]
    assert lines[0].endswith(BAD_VALUES.get(case, ""))
    assert not out_json.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.json")]


def test_toml_manifest(workdir: Path, tmp_path: Path) -> None:
    from epsstar.audit.many import read_manifest
    from epsstar.exceptions import InputFileError

    manifest = tmp_path / "grid.toml"
    manifest.write_text(
        f"""
train = "{workdir / "train.csv"}"
population = "{workdir / "population.parquet"}"
label_column = "label"

[[models]]
model = "{workdir / "model.onnx"}"
strategy = "dp-eps1"
repeat = 0
target_epsilon = 1.0

[[models]]
model = "relative/model.onnx"
strategy = "baseline"
repeat = 2
features = "x0,x1"
"""
    )
    first, second = read_manifest(manifest)
    assert first.strategy == "dp-eps1"
    assert first.params == {"target_epsilon": 1.0}
    assert second.model == tmp_path / "relative" / "model.onnx"
    assert second.features == ("x0", "x1")
    assert second.repeat == 2
    (tmp_path / "bad.toml").write_text("[[models]]\nstrategy = 'x'\n")
    with pytest.raises(InputFileError, match="missing model, train, population, label_column"):
        read_manifest(tmp_path / "bad.toml")


@pytest.mark.slow
def test_audit_many(workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "manifest.csv"
    rows = [
        {"model": str(workdir / "model.onnx"), "strategy": "mlp", "repeat": 0, "epochs": 300},
        {"model": str(workdir / "model.pkl"), "strategy": "mlp", "repeat": 1, "epochs": 300},
        {"model": str(workdir / "model.onnx"), "strategy": "other", "repeat": 0, "epochs": 10},
        {"model": str(tmp_path / "missing.onnx"), "strategy": "other", "repeat": 1, "epochs": 10},
    ]
    frame = pd.DataFrame(rows).assign(
        train_data=str(workdir / "train.csv"),
        population_data=str(workdir / "population.parquet"),
        label_column="label",
    )
    frame.to_csv(manifest, index=False)
    out = tmp_path / "many.json"
    code, stdout, stderr = invoke(
        [
            "audit-many",
            str(manifest),
            "--jobs",
            "2",
            "--trust-model",
            "--json",
            str(out),
            "--quiet",
        ],
        capsys,
    )
    assert code == 3  # one model could not be audited ...
    payload = json.loads(out.read_text())
    assert payload["n_failed"] == 1  # ... and the other three still have results
    assert "no such file" in payload["models"][3]["error"]
    assert "missing.onnx" in stderr
    mlp = next(s for s in payload["strategies"] if s["strategy"] == "mlp")
    values = [m["result"]["epsilon_star"] for m in payload["models"][:2]]
    assert mlp["n_models"] == 2
    assert mlp["epsilon_star_min"] == min(values)
    expected = float(np.log(np.mean(np.exp(values))))
    assert mlp["mechanism_epsilon"] == pytest.approx(expected)
    assert mlp["params"] == {"epochs": "300"}
    assert "mlp" in stdout
    # Each audit records the command that ran it, not "(Python API)".
    command = payload["models"][0]["result"]["provenance"]["command"]
    assert command.startswith("epsstar audit-many ")
    assert str(manifest) in command


def test_auroc_scores_beyond_the_budget_are_dropped_not_the_audit(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import epsstar.audit.engines.streaming

    monkeypatch.setattr(epsstar.audit.engines.streaming, "MAX_AUROC_VALUES", 250)
    result = quiet_audit(workdir)
    # Both sides exceed 250 scores (600 and 300 rows): accuracy stays, AUROC is skipped.
    for side in ("population", "train"):
        utility = result.utility[side]
        assert utility.auroc is None
        assert utility.auroc_note == "too many rows x classes to keep for AUROC"
        assert 0.5 < utility.accuracy <= 1


def test_refused_predictions_are_said_once_with_the_advice(
    workdir: Path, tmp_path: Path, fake_loader: None
) -> None:
    from epsstar.exceptions import InvalidInputError

    (tmp_path / "above.fake").write_text("1.5")
    with pytest.raises(
        InvalidInputError,
        match=r"^the model's predictions on the train data \(probabilities, as detected; pass "
        r"outputs='logits' if the model returns logits\): predictions must be probabilities in "
        r"\[0, 1\]; 600 value\(s\) are not, the first at index 0\. Found 1\.5\.$",
    ):
        audit_files(
            tmp_path / "above.fake",
            workdir / "train.csv",
            workdir / "population.parquet",
            label_column="label",
            loader="fake",
        )


@dataclass
class _Recorder:
    events: list[tuple[str, object]]

    def start(self, role: str, path: Path, rows: int | None) -> None:
        self.events.append((role, path, rows))

    def advance(self, rows: int) -> None:
        self.events.append(("rows", rows))


def test_progress_is_told_each_table_and_its_rows(workdir: Path) -> None:
    recorder = _Recorder([])
    quiet_audit(workdir, batch_size=256, progress=recorder)
    assert recorder.events == [
        ("train", workdir / "train.csv", None),  # a CSV file's rows are not known beforehand
        ("rows", 256),
        ("rows", 256),
        ("rows", 88),
        ("population", workdir / "population.parquet", 300),  # the Parquet metadata's
        ("rows", 256),
        ("rows", 44),
    ]
    from epsstar.exceptions import InvalidInputError

    with pytest.raises(InvalidInputError, match=r"progress must be None or have start.*Found True"):
        run_audit(workdir, progress=True)


def test_audit_losses_is_the_audit_without_the_model(workdir: Path) -> None:
    from epsstar.audit import AuditOptions, audit_losses

    audited = quiet_audit(workdir, seed=4, max_epsilon=3.0)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PoorFitWarning)
        again = audit_losses(
            audited.train_losses,
            audited.population_losses,
            utility=audited.utility,
            options=AuditOptions(seed=4, max_epsilon=3.0),
        )
    assert again.provenance is None
    first, second = audited.to_dict(), again.to_dict()
    assert second["loader"] is None
    assert second["model_sha256"] is None
    assert second["output_reading"] is None
    for payload in (first, second):
        # The attacks' records (the loss attack's, by default) need the model's outputs.
        for key in (
            "columns_from",
            "provenance",
            "loader",
            "model_sha256",
            "output_reading",
            "warnings",
            "attacks",
            "strongest_attack",
            # The premise's readings read the records (the blind baseline, the exposed rows).
            "blind_baseline",
            "premise_holds",
            "exposed_records",
        ):
            payload.pop(key, None)
    assert first == second


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"delta": 2.0}, "Found 2.0"),
        ({"method": "bogus"}, "method must be one of .* Found 'bogus'"),
        ({"interval": 1.5}, "interval.*Found 1.5"),
        ({"interval": 0.9, "n_bootstrap": 1}, "n_bootstrap"),
        ({"max_epsilon": -1.0}, "max_epsilon.*Found -1.0"),
        ({"confidence": 1.0}, "confidence"),
    ],
)
def test_audit_options_are_checked_when_built(options: dict[str, object], message: str) -> None:
    from epsstar.audit import AuditOptions
    from epsstar.exceptions import InvalidInputError

    with pytest.raises(InvalidInputError, match=message):
        AuditOptions(**options)  # type: ignore[arg-type]


def test_audit_losses_needs_enough_losses() -> None:
    from epsstar.audit import audit_losses
    from epsstar.exceptions import InsufficientDataError
    from epsstar.statistics.utility import Utility

    utility = {"population": Utility(10, 0.5, None), "train": Utility(10, 0.5, None)}
    rng = np.random.default_rng(0)
    with pytest.raises(InsufficientDataError, match=r"training data need at least .* Found 10\."):
        audit_losses(rng.normal(size=10), rng.normal(size=500), utility=utility)


def test_streaming_returns_the_label_map_for_the_second_table(workdir: Path) -> None:
    from epsstar.audit.data.reading import TableRead
    from epsstar.audit.engines.streaming import stream_table
    from epsstar.audit.model.plugins import get_loader

    model = get_loader("onnx")[0].load(workdir / "model.onnx")
    train = stream_table(model, TableRead(workdir / "train.csv", "train", "label"))
    assert train.rows == 600
    assert train.losses.shape == (600,)
    assert train.n_outputs == 2
    assert train.label_map.classes == (0, 1)
    assert train.labels is not None
    assert train.scores is not None
    assert train.labels.shape == train.scores.shape == (600,)
    population = stream_table(
        model,
        TableRead(workdir / "population.parquet", "population", "label", batch_size=7),
        label_map=train.label_map,
    )
    assert population.label_map is train.label_map
    assert population.rows == 300
    utility = population.utility()
    assert utility.n == 300
    assert utility.auroc is not None
    assert population.utility(with_auroc=False).auroc_note == "not computed for training data"


def test_a_multi_class_models_training_scores_are_not_kept() -> None:
    """A training table of a multi-class model gets no AUROC, so its class scores (one per
    class and record) are not kept; the population's are, and both utilities read as the
    audit reports them."""
    from epsstar.audit.data.reading import TableRead
    from epsstar.audit.engines.streaming import stream_table, wants_auroc
    from epsstar.audit.model.plugins import get_loader

    models = Path(__file__).resolve().parents[2] / "fixtures" / "models"
    model = get_loader("onnx")[0].load(models / "multiclass_mlp.onnx")
    train = stream_table(
        model,
        TableRead(models / "multiclass_train.csv", "train", "label"),
        classes=("a", "b", "c", "d"),
    )
    population = stream_table(
        model,
        TableRead(models / "multiclass_population.csv", "population", "label"),
        label_map=train.label_map,
    )
    assert train.n_outputs > 2
    assert train.scores is None
    assert train.labels is None
    assert population.scores is not None
    assert population.scores.shape == (population.rows, population.n_outputs)
    assert not wants_auroc("train", train.n_outputs)
    kept = train.utility(with_auroc=False)
    assert kept.auroc is None
    assert kept.auroc_note == "not computed for training data"
    assert 0 < kept.accuracy <= 1
    assert population.utility().auroc is not None


def test_the_second_table_must_match_the_label_map(workdir: Path) -> None:
    from epsstar.audit.data.reading import TableRead
    from epsstar.audit.data.tables import LabelMap
    from epsstar.audit.engines.streaming import stream_table
    from epsstar.exceptions import InvalidInputError

    with pytest.raises(
        InvalidInputError,
        match=r"^the model's predictions on the population data must stand for its 3 classes, "
        r"as before\. Found 2\.$",
    ):
        stream_table(
            _FakeModel(0.5),
            TableRead(workdir / "population.parquet", "population", "label"),
            label_map=LabelMap((0, 1, 2)),
        )


def test_cli_gate_rules_compare_their_own_statistic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's 4-class MLP: the estimate (2.52) and a found leak fail a gate at 1; the
    held-out lower bound (about 0.26) passes it."""
    models = Path(__file__).resolve().parents[2] / "fixtures" / "models"
    base = [
        "audit",
        str(models / "multiclass_mlp.onnx"),
        "--train",
        str(models / "multiclass_train.csv"),
        "--population",
        str(models / "multiclass_population.parquet"),
        "--label-column",
        "label",
        "--max-epsilon",
        "1",
        "--match-columns-by-position",
        "--quiet",
    ]
    verdicts = {}
    for rule in ("significant", "estimate", "lower-bound"):
        target = tmp_path / f"{rule}.json"
        code, out, _ = invoke([*base, "--gate", rule, "--json", str(target)], capsys)
        payload = json.loads(target.read_text())
        gate = payload["gate"]
        assert gate["rule"] == rule
        assert f"gate ({rule})" in out
        expected = {
            "estimate": payload["epsilon_star"],
            "lower-bound": payload["epsilon_lower_bound"],
            "significant": payload["epsilon_star"] if gate["leak_found"] else 0.0,
        }[rule]
        assert gate["statistic"] == expected
        assert payload["passed"] is (expected <= 1)
        verdicts[rule] = code
    assert verdicts == {"significant": 1, "estimate": 1, "lower-bound": 0}
    code, _, err = invoke([*base, "--gate", "lenient"], capsys)
    assert code == 2
    assert "lenient" in err
