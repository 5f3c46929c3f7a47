"""The blind baseline on a Dask cluster: each partition's records sampled where it is
streamed, the samples joined into the single engine's sample, for the same premise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.audit.engines.test_dask import AUDIT, MODELS, _audit_document, _partitioned
from tests.conftest import invoke

pytest.importorskip("distributed")
pytest.importorskip("onnxruntime")

TRAIN, POPULATION = MODELS / "binary_train.parquet", MODELS / "binary_population.parquet"
#: Fewer records than either side holds, so that the sample is a choice of rows.
LIMIT = 150


def _audited(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, _, err = invoke([*argv, "--quiet", "--json", str(out)], capsys)
    assert code == 0, err
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def test_the_blind_baseline_on_a_cluster_reads_the_single_engines_sample(
    in_process: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("epsstar.audit.run.READ_ROWS", LIMIT)
    sides = ["--train", str(TRAIN), "--population", str(POPULATION)]
    single = _audited([*AUDIT, *sides], tmp_path / "single.json", capsys)
    # Partitions of 50 and 80 rows: each keeps at most 150 rows, the join keeps 150 of 600.
    train, population = (
        _partitioned(TRAIN, tmp_path / "train", 12),
        _partitioned(POPULATION, tmp_path / "population", 5),
    )
    sides = ["--train", str(train), "--population", str(population)]
    engine = ["--engine", "dask", "--scheduler", in_process]
    dask = _audited([*AUDIT, *sides, *engine], tmp_path / "dask.json", capsys)
    validate_json("audit", dask)
    assert dask["blind_baseline"]["fitted_rows"] == {"train": LIMIT, "population": LIMIT}
    expected = _audit_document(tmp_path / "single.json")
    found = _audit_document(tmp_path / "dask.json")
    for key in ("train", "population", "train_sha256", "population_sha256"):
        expected["provenance"].pop(key)
        found["provenance"].pop(key)
    assert found == expected
    assert single["premise_holds"] is True


def test_csv_partitions_are_sampled_from_streams_of_their_own(
    in_process: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # CSV partitions do not say their rows before they are read, so a partition cannot be
    # keyed past the rows before it: its own stream gives another simple random sample
    # (tests/audit/engines/test_record_sample.py checks that every row is equally likely),
    # hence other blind figures, and everything else the same.
    monkeypatch.setattr("epsstar.audit.run.READ_ROWS", LIMIT)
    frame = pd.read_parquet(TRAIN)
    folder = tmp_path / "train"
    folder.mkdir()
    for index, start in enumerate(range(0, len(frame), 200)):
        frame.iloc[start : start + 200].to_csv(folder / f"part.{index}.csv", index=False)
    sides = ["--train", str(TRAIN), "--population", str(POPULATION)]
    single = _audited([*AUDIT, *sides], tmp_path / "single.json", capsys)
    sides = ["--train", f"{folder}/*.csv", "--population", str(POPULATION)]
    engine = ["--engine", "dask", "--scheduler", in_process]
    dask = _audited([*AUDIT, *sides, *engine], tmp_path / "dask.json", capsys)
    assert dask["blind_baseline"]["fitted_rows"] == {"train": LIMIT, "population": LIMIT}
    assert dask["blind_baseline"]["auc"] != single["blind_baseline"]["auc"]
    assert dask["premise_holds"] is single["premise_holds"] is True
    for document in (single, dask):
        document.pop("blind_baseline")
        for key in ("seconds", "created", "command", "engine", "threads", "train"):
            document["provenance"].pop(key, None)
        document["provenance"].pop("train_sha256")
    assert dask == single


def test_attacks_that_read_every_record_are_refused_on_a_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    sides = ["--train", str(TRAIN), "--population", str(POPULATION)]
    argv = [*AUDIT, *sides, "--attack", "loss", "qmia", "--engine", "dask", "--json", str(out)]
    code, _, err = invoke(argv, capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        "epsstar audit: error: the qmia attack reads every record, which the dask engine's workers "
        "keep (they send back a sample for the blind baseline); use the single-process "
        "engine. Found --attack loss qmia with the dask engine."
    ]
    assert not out.exists()
