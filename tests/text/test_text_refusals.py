"""What a text audit does not do is refused in one line with exit code 2, before any model
or record is read (docs/text.md, "What a text audit does not do")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from epsstar.cli import main


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    # No model is loaded before the refusal: an empty folder with a config.json will do.
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}", encoding="utf-8")
    for name in ("train.jsonl", "pop.jsonl"):
        (tmp_path / name).write_text(json.dumps({"text": "a record"}) + "\n", encoding="utf-8")
    return [
        "audit",
        str(model),
        "--train",
        str(tmp_path / "train.jsonl"),
        "--population",
        str(tmp_path / "pop.jsonl"),
        "--text-column",
        "text",
        "--quiet",
    ]


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--slice-by", "topic"], "--slice-by (slice_by) works with tabular audits only"),
        (["--group-by", "user"], "--group-by (group_by) works with tabular audits only"),
        (["--attribute", "age"], "--attribute (attribute) works with tabular audits only"),
        (["--no-blind-baseline", "slow"], "--no-blind-baseline works with tabular audits only"),
    ],
)
def test_tabular_only_options_are_refused(
    files: list[str], extra: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*files, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert said in err[0]
    assert err[0].endswith("with text records (--text-column).")


def test_audit_many_refuses_a_text_entry_with_a_classifiers_keys(
    files: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(
        "model,train,population,text_column,label_column,features\n"
        "model,train.jsonl,pop.jsonl,text,,\n"
        "model,train.jsonl,pop.jsonl,text,label,\n",
        encoding="utf-8",
    )
    assert main(["audit-many", str(manifest), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"epsstar audit-many: error: {manifest} row 3: a language model's entry (text_column) "
        f"reads text records, without a classifier's label_column. Found label_column 'label'."
    ]


def test_audit_many_refuses_a_language_model_folder_with_a_label_column(
    files: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(
        "model,train,population,label_column\nmodel,train.jsonl,pop.jsonl,label\n",
        encoding="utf-8",
    )
    assert main(["audit-many", str(manifest), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "a language model's folder is audited on text records: give its manifest" in err[0]
    assert err[0].endswith(
        f"Found the folder {str(tmp_path / 'model')!r} with label_column 'label'."
    )
