"""The audit pipeline and ``epsstar audit`` / ``audit-many`` end to end."""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.plugins import register_loader
from epsstar.audit.run import audit
from epsstar.cli import main
from epsstar.exceptions import PoorFitWarning
from epsstar.statistics.held_out_bound import split_lower_bound

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
    (folder / "model.onnx").write_bytes(
        to_onnx(model, features[:1].astype(np.float32)).SerializeToString()
    )
    skops.io.dump(model, folder / "model.skops")
    with (folder / "model.pkl").open("wb") as stream:
        pickle.dump(model, stream)
    return folder


def run_audit(workdir: Path, **options):  # type: ignore[no-untyped-def]
    with pytest.warns(PoorFitWarning) if options.pop("expect_poor", False) else _nothing():
        return audit(
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


def test_same_model_in_two_formats_gives_the_same_epsilon(workdir: Path) -> None:
    onnx = quiet_audit(workdir, model="model.onnx")
    skops = quiet_audit(workdir, model="model.pkl", trust=True)
    # skl2onnx runs in float32: the losses agree to ~1e-5, Epsilon* to the same order.
    np.testing.assert_allclose(onnx.train_losses, skops.train_losses, rtol=1e-4, atol=1e-4)
    assert onnx.empirical.epsilon == pytest.approx(skops.empirical.epsilon, abs=1e-3)
    assert onnx.epsilon_star == pytest.approx(skops.epsilon_star, abs=1e-3)


def test_gate(workdir: Path) -> None:
    result = quiet_audit(workdir, max_epsilon=0.0)
    assert result.passed is (result.epsilon_star <= 0.0)
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


def invoke(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(args)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


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
    code, out, _ = invoke([*base, "--max-epsilon", "0"], capsys)
    assert code == 1
    assert "FAIL" in out
    code, out, _ = invoke([*base, "--max-epsilon", "1000"], capsys)
    assert code == 0
    assert "PASS" in out


def test_headline_method_and_bootstrap_interval(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from epsstar.statistics.estimator import epsilon_star

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
        interval=0.9,
        n_bootstrap=20,
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
    assert default["method"] == "tails-crossfit"
    assert max(default["crossfit_scores"]) == default["epsilon_star"]
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
    first, second = out.splitlines()[:2]
    assert first.startswith("Epsilon* = ")
    assert first.endswith(", empirical)")
    assert second.startswith("  80% bootstrap interval (percentile, 10 resamples): [")


def test_unknown_method_is_refused_before_the_data_are_read(workdir: Path) -> None:
    from epsstar.exceptions import InvalidInputError

    # The "data" are the model file: reading them would fail with another message.
    model = workdir / "model.onnx"
    with pytest.raises(InvalidInputError, match="'bogus'"):
        audit(model, model, model, label_column="label", method="bogus")  # type: ignore[arg-type]


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
    from epsstar.audit import plugins

    register_loader("fake", _FakeLoader(), force=True)
    yield
    plugins._reset()  # forget the fake; the entry points are read again on next use


def bad_inputs(workdir: Path, tmp: Path) -> list[tuple[list[str], str]]:
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
    (tmp / "corrupt.onnx").write_bytes(b"\x08\x07garbage that is not a model")
    whole = (workdir / "model.onnx").read_bytes()
    (tmp / "truncated.onnx").write_bytes(whole[: len(whole) // 2])
    (tmp / "nan.fake").write_text("nan")
    (tmp / "above.fake").write_text("1.5")
    (tmp / "constant.fake").write_text("0.5")
    model, train, pop = (
        str(workdir / "model.onnx"),
        str(workdir / "train.csv"),
        str(workdir / "population.parquet"),
    )

    def args(m: str = model, t: str = train, p: str = pop, *extra: str) -> list[str]:
        return [
            "audit",
            m,
            "--train",
            t,
            "--population",
            p,
            "--label-column",
            "label",
            "--quiet",
            *extra,
        ]

    return [
        (args(str(tmp / "missing.onnx")), "no such file"),
        (args(m=model, t=str(tmp / "missing.csv")), "no such file"),
        (args(str(tmp / "corrupt.onnx")), "corrupt.onnx"),
        (args(str(tmp / "truncated.onnx")), "truncated.onnx"),
        (args(model, str(tmp / "narrow.csv")), "5"),
        (args(model, str(tmp / "nolabel.csv")), "label"),
        (args(model, str(tmp / "badlabel.csv")), "7"),
        (args(model, str(tmp / "inf.csv")), "x2"),
        (args(model, str(tmp / "empty.csv")), "0"),
        (args(model, str(tmp / "few.csv")), "at least 100"),
        (args(str(tmp / "nan.fake"), train, pop, "--loader", "fake"), "nan"),
        (args(str(tmp / "above.fake"), train, pop, "--loader", "fake"), "1.5"),
        (
            args(
                str(tmp / "constant.fake"),
                str(tmp / "ones.csv"),
                str(tmp / "ones.csv"),
                "--loader",
                "fake",
            ),
            "all losses are equal",
        ),
        (args(str(workdir / "model.pkl")), "--trust-model"),
        (args(model, train, pop, "--json", str(tmp / "no" / "such" / "dir.json")), "cannot write"),
        (args(model, train, pop, "--loader", "nosuch"), "onnx"),
        (args(model, train, pop, "--batch-size", "0"), "batch_size"),
        (args(model, train, pop, "--delta", "2"), "Found 2.0"),
        (args(model, train, pop, "--interval", "1.5"), "Found 1.5"),
        (args(model, train, pop, "--interval", "0.9", "--n-bootstrap", "1"), "n_bootstrap"),
        (args(model, train, pop, "--method", "bogus"), "bogus"),
    ]


def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    workdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_loader: None
) -> None:
    for args, message in bad_inputs(workdir, tmp_path):
        out_json = tmp_path / "out.json"
        code, _, err = invoke(
            [*args, "--json", str(out_json)] if "--json" not in args else args, capsys
        )
        assert code == 2, (args, err)
        lines = [
            line for line in err.strip().splitlines() if not line.startswith("epsstar: warning")
        ]
        assert len(lines) == 1, err
        assert message in lines[0], (message, lines[0])
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


def test_auroc_scores_beyond_the_budget_are_dropped_not_the_audit(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import epsstar.audit.run

    monkeypatch.setattr(epsstar.audit.run, "MAX_AUROC_VALUES", 250)
    result = quiet_audit(workdir)
    # Both sides exceed 250 scores (600 and 300 rows): accuracy stays, AUROC is skipped.
    for side in ("population", "train"):
        utility = result.utility[side]
        assert utility.auroc is None
        assert utility.auroc_note == "too many rows x classes to keep for AUROC"
        assert 0.5 < utility.accuracy <= 1
