"""``epsstar audit-training``'s designs that let a black box see more, end to end: repeated
canaries (``--canary-repeats``: each included canary N times in the run's table, the group claim
decides), small data (``--train-records``: one fixed sample of ``--train``, canaries alone at 0),
a given initial model (``--init`` with ``{init}`` or a function's ``init``), the work folder that
refuses another design, a correct DP-SGD trainer that none of them refutes, and bad input
refused in one line (exit 2, no file written)."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.cli import main
from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK, EXIT_USAGE
from epsstar.statistics.auditing.feasibility import smallest_canary_count
from epsstar.statistics.auditing.group_privacy import group_claim

#: Trainers that check the table they are handed: how many copies of each canary (a row not in
#: train.csv), how many rows of train.csv, the initial model's copy; a failed check is an
#: error of the function (exit 2). Each run's rows of train.csv are logged beside the module.
MODULE = """
import hashlib
import os
from pathlib import Path

import pandas as pd
import skops.io
from sklearn.tree import DecisionTreeClassifier

HERE = Path(__file__).parent


def _checked(train_path):
    frame = pd.read_csv(train_path)
    train = pd.read_csv(HERE / "train.csv")
    keys = frame.round(9).astype(str).agg("|".join, axis=1)
    known = set(train.round(9).astype(str).agg("|".join, axis=1))
    in_train = keys.isin(known)
    copies = keys[~in_train].value_counts()
    wanted = int(os.environ["DESIGN_REPEATS"])
    if len(copies) and set(copies) != {wanted}:
        raise ValueError(f"canary copies {sorted(set(copies))}, not {wanted}")
    rows = int(os.environ["DESIGN_TRAIN_ROWS"])
    if int(in_train.sum()) != rows:
        raise ValueError(f"{int(in_train.sum())} rows of train.csv, not {rows}")
    with open(HERE / "samples.log", "a", encoding="utf-8") as log:
        log.write(hashlib.sha256("".join(sorted(keys[in_train])).encode()).hexdigest() + "\\n")
    return frame


def _save(frame, out_dir, seed):
    model = DecisionTreeClassifier(random_state=seed)
    model.fit(frame.drop(columns="label"), frame["label"])
    skops.io.dump(model, Path(out_dir) / "model.skops")


def fit(train_path, out_dir, seed):
    _save(_checked(train_path), out_dir, seed)


def fit_from(train_path, out_dir, seed, init):
    copy = Path(init)
    if copy.read_bytes() != b"a worst-case start" or copy.parent.parent != Path(out_dir).parent:
        raise ValueError(f"not the run's copy of the initial model: {init}")
    _save(_checked(train_path), out_dir, seed)
"""

#: The same trainer as a command with {init}.
SCRIPT = """
import sys
from designs_fit import fit_from

fit_from(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random labels: a tree that remembers its records fits the members only."""
    where = tmp_path_factory.mktemp("designs")
    rng = np.random.default_rng(0)
    for name, n in (("train", 120), ("population", 600)):
        frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
        frame["label"] = rng.integers(0, 2, size=n)
        frame.to_csv(where / f"{name}.csv", index=False)
    (where / "designs_fit.py").write_text(MODULE, encoding="utf-8")
    (where / "designs_script.py").write_text(SCRIPT, encoding="utf-8")
    (where / "start.bin").write_bytes(b"a worst-case start")
    return where


@pytest.fixture
def audit(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[int, dict[str, Any] | None]]:
    """``audit(out, repeats, rows, *options)``: the command line in ``folder`` (the function's
    import path), its exit code and JSON document (``None``: none written)."""
    monkeypatch.chdir(folder)

    def run(out: Path, repeats: int, rows: int, *options: str) -> tuple[int, dict[str, Any] | None]:
        monkeypatch.setenv("DESIGN_REPEATS", str(repeats))
        monkeypatch.setenv("DESIGN_TRAIN_ROWS", str(rows))
        tables = ["--train", "train.csv", "--population", "population.csv"]
        code = main(
            [
                "audit-training",
                *tables,
                "--label-column",
                "label",
                "--json",
                str(out),
                "--quiet",
                "--claimed-epsilon",
                "1",
                "--delta",
                "1e-5",
                "--canaries",
                "100",
                *list(options),
            ]
        )
        document = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
        return code, document

    return run


def test_repeated_canaries_appear_n_times_and_the_group_claim_decides(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    tmp_path: Path,
    validate_json: Callable[[str, Any], None],
) -> None:
    code, document = audit(
        tmp_path / "a.json", 3, 120, "--function", "designs_fit:fit", "--canaries", "500",
        "--canary-repeats", "3", "--claimed-epsilon", "0.3", "--report", str(tmp_path / "a.html"),
    )  # fmt: skip
    assert document is not None
    validate_json("audit-training", document)
    group = group_claim(0.3, 1e-5, 3)
    assert document["canary_repeats"] == 3
    assert document["group_claim"]["group_epsilon"] == pytest.approx(0.9)
    assert document["group_claim"]["group_delta"] == pytest.approx(group.group_delta)
    (audited,) = document["threat_models"]
    bound = audited["epsilon_lower_bound"]
    assert audited["per_record_epsilon"] == pytest.approx(bound / 3)
    assert audited["one_run"]["delta"] == pytest.approx(group.group_delta)
    # the tree remembers its canaries: refuted, by a bound above the group's 0.9
    assert bound > 0.9
    assert code == EXIT_GATE_FAILED
    assert document["refuted"] is True
    assert "group of 3 copies" in document["verdict"]
    page = (tmp_path / "a.html").read_text(encoding="utf-8")
    assert "3 copies of each included canary" in page
    assert f"input: {audited['per_record_epsilon']:.4g}" in page
    level = document["confidence_each"]
    assert document["smallest_canaries"]["epsilon-delta"] == smallest_canary_count(
        0.9, group.group_delta, confidence=level
    )


def test_one_copy_keeps_the_document_of_an_audit_without_repeats(
    audit: Callable[..., tuple[int, dict[str, Any] | None]], tmp_path: Path
) -> None:
    _, document = audit(tmp_path / "a.json", 1, 120, "--function", "designs_fit:fit")
    assert document is not None
    assert document["canary_repeats"] == 1
    assert document["group_claim"] is None
    assert document["train_records"] is None
    assert "train-records" not in document["seeds"]
    assert document["threat_models"][0]["per_record_epsilon"] is None


def test_every_run_trains_on_one_sample_of_train_drawn_from_the_seed(
    audit: Callable[..., tuple[int, dict[str, Any] | None]], folder: Path, tmp_path: Path
) -> None:
    log = folder / "samples.log"
    log.unlink(missing_ok=True)
    for seed in ("0", "0", "1"):
        code, document = audit(
            tmp_path / f"s{seed}.json", 1, 30, "--function", "designs_fit:fit",
            "--train-records", "30", "--seed", seed, "--canaries", "100",
        )  # fmt: skip
        assert code != EXIT_USAGE
        assert document is not None
        assert document["train_records"] == 30
        assert "train-records" in document["seeds"]
    first, again, other = log.read_text(encoding="utf-8").split()
    assert first == again != other


def test_no_rows_of_train_leaves_the_canaries_alone(
    audit: Callable[..., tuple[int, dict[str, Any] | None]], tmp_path: Path
) -> None:
    code, document = audit(
        tmp_path / "a.json", 2, 0, "--function", "designs_fit:fit", "--train-records", "0",
        "--canary-repeats", "2", "--canaries", "100",
    )  # fmt: skip
    assert code != EXIT_USAGE
    assert document is not None
    assert document["train_records"] == 0


@pytest.mark.parametrize("procedure", ["function", "command"])
def test_each_run_starts_from_its_own_copy_of_the_initial_model(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    folder: Path,
    tmp_path: Path,
    procedure: str,
) -> None:
    chosen = (
        ["--function", "designs_fit:fit_from"]
        if procedure == "function"
        else [
            "--command",
            f"{sys.executable} designs_script.py {{train}} {{out}} {{seed}} {{init}}",
        ]
    )
    code, document = audit(
        tmp_path / "a.json", 1, 120, *chosen, "--init", "start.bin", "--canaries", "100"
    )
    assert code != EXIT_USAGE
    assert document is not None
    digest = hashlib.sha256(b"a worst-case start").hexdigest()
    assert document["procedure"]["init"] == {"file": "start.bin", "sha256": digest}
    assert (folder / "start.bin").read_bytes() == b"a worst-case start"


def test_a_work_folder_of_another_design_is_refused(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work = ["--work", str(tmp_path / "work"), "--function", "designs_fit:fit", "--canaries", "100"]
    code, _ = audit(tmp_path / "a.json", 2, 120, *work, "--canary-repeats", "2")
    assert code != EXIT_USAGE
    capsys.readouterr()
    for changed in (["--canary-repeats", "3"], ["--train-records", "30"], []):
        out = tmp_path / "b.json"
        code, document = audit(out, 2, 120, *work, *changed)
        err = capsys.readouterr().err
        assert code == EXIT_USAGE, changed
        assert document is None
        assert err.count("\n") == 1
        assert "settings differ in" in err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--canary-repeats", "0"], "--canary-repeats must be an integer ≥ 1. Found 0."),
        (["--train-records", "-1"], "--train-records must be an integer ≥ 0. Found -1."),
        (["--k", "0"], "--k must be an integer ≥ 1. Found 0."),
        (["--train-records", "121"], "at most the 120 rows of --train. Found 121."),
        (["--canary-repeats", "30"], "30 copies of each canary: "),
        (
            ["--canary-repeats", "2", "--claimed-epsilon", "4", "--canaries", "300"],
            "threat model input (the claim for a group of the 2 copies of each canary): no "
            "number of canaries",
        ),
        (
            ["--init", "missing.bin"],
            "--init must name a model file or a model folder. Found 'missing.bin'.",
        ),
        (["--init", "."], "--init needs a function that takes it"),
        (["--init", "start.bin"], "--init needs a function that takes it"),
    ],
)
def test_bad_designs_of_a_function_are_refused_in_one_line(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    message: str,
) -> None:
    code, document = audit(tmp_path / "a.json", 1, 120, "--function", "designs_fit:fit", *options)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert document is None
    assert err.count("\n") == 1
    assert message in err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--command", "python fit.py {train} {out} {init}"], "give it with --init PATH"),
        (
            ["--command", "python fit.py {train} {out}", "--init", "start.bin"],
            "{init} in --command",
        ),
        (["--epochs", "1", "--init", "start.bin"], "--init for epsstar's own trainer must be"),
        (
            [
                "--epochs",
                "1",
                "--target-epsilon",
                "1",
                "--threat-model",
                "gradient",
                "--canary-repeats",
                "2",
            ],
            "threat models that see the final model only. Found 'gradient'.",
        ),
        (
            ["--epochs", "1", "--target-epsilon", "1", "--train-records", "0"],
            "it needs at least --batch-size (64) of them. Found 0.",
        ),
    ],
)
def test_bad_designs_of_a_command_or_the_own_trainer_are_refused_in_one_line(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    message: str,
) -> None:
    code, document = audit(tmp_path / "a.json", 1, 120, *options)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert document is None
    assert err.count("\n") == 1
    assert message in err


def test_a_correct_dp_sgd_trainer_is_not_refuted_by_repeats_and_small_data(
    audit: Callable[..., tuple[int, dict[str, Any] | None]], tmp_path: Path
) -> None:
    code, document = audit(
        tmp_path / "a.json", 2, 20, "--epochs", "4", "--batch-size", "10",
        "--target-epsilon", "2", "--hidden", "8", "--canaries", "300", "--seed", "3",
        "--canary-repeats", "2", "--train-records", "20",
        "--threat-model", "input", "--threat-model", "crafted",
    )  # fmt: skip
    assert document is not None
    assert code == EXIT_OK
    assert document["refuted"] is False
    assert document["group_claim"]["repeats"] == 2
    for audited in document["threat_models"]:
        assert audited["epsilon_lower_bound"] <= document["group_claim"]["group_epsilon"]


def test_a_correct_dp_sgd_trainer_from_a_pretrained_start_is_not_refuted_inside_or_out(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    trainer = ["--epochs", "4", "--batch-size", "20", "--target-epsilon", "2", "--hidden", "8"]
    work = ["--work", str(tmp_path / "work"), "--seed", "1"]
    code, document = audit(
        tmp_path / "a.json", 1, 120, *trainer, *work, "--canaries", "300", "--init",
        "pretrained", "--threat-model", "input", "--threat-model", "every-step",
    )  # fmt: skip
    assert document is not None
    assert code == EXIT_OK
    assert document["refuted"] is False
    assert document["procedure"]["init"] == "pretrained"
    assert "pretrain" in document["seeds"]
    capsys.readouterr()
    code, document = audit(
        tmp_path / "b.json", 1, 120, *trainer, *work, "--canaries", "300",
        "--threat-model", "input", "--threat-model", "every-step",
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert document is None
    assert "settings differ in 'procedure'" in capsys.readouterr().err


def test_many_runs_repeat_their_canary_and_compare_with_the_group(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    tmp_path: Path,
    validate_json: Callable[[str, Any], None],
) -> None:
    code, document = audit(
        tmp_path / "a.json", 2, 120, "--function", "designs_fit:fit", "--runs", "12",
        "--canary-repeats", "2", "--claimed-epsilon", "0.1", "--bound", "gdp",
    )  # fmt: skip
    assert code != EXIT_USAGE
    assert document is not None
    validate_json("audit-training", document)
    group = group_claim(0.1, 1e-5, 2)
    assert document["design"] == "many-runs"
    assert document["group_claim"]["group_mu"] == pytest.approx(group.group_mu)
    (audited,) = document["threat_models"]
    assert audited["many_runs"]["delta"] == pytest.approx(group.group_delta)
    assert audited["refutes"] == (audited["epsilon_lower_bound"] > group.group_epsilon_gdp)
    assert audited["per_record_epsilon"] == pytest.approx(
        group.per_record_gdp(audited["many_runs"]["mu_lower"])
    )


def test_a_k_fixed_by_the_design_is_every_rule_s_k(
    audit: Callable[..., tuple[int, dict[str, Any] | None]], tmp_path: Path
) -> None:
    """``--k`` replaces the k chosen from the canary count and the claim, for every rule of
    ``--guesses both`` (capped at half the canaries), and is recorded as the chosen k."""
    code, document = audit(tmp_path / "a.json", 1, 120, "--function", "designs_fit:fit", "--k", "7")
    assert code in (0, 1)
    assert document is not None
    for model in document["threat_models"]:
        assert model["chosen_k"]["k"] == 7
        assert model["chosen_k"]["canaries"] == model["canaries"]
