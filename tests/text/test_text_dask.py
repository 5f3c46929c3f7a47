"""``epsstar audit MODEL_DIR --text-column ... --engine dask``: the records scored on a
local cluster, a range of chunks per task, for the single engine's JSON."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tiny_lm import TinyCorpus

from epsstar.audit.engines.dask_text import TextData, score_range
from epsstar.audit.engines.text_scoring import ScoringPlan
from epsstar.audit.engines.worker_models import model_spec
from epsstar.audit.model.loading import ModelFile
from epsstar.cli import main
from epsstar.exceptions import InputFileError, InvalidInputError
from tests.audit.engines.test_dask import MODELS
from tests.audit.engines.test_dask import _comparable as _comparable_fleet
from tests.conftest import invoke

pytest.importorskip("distributed")

ATTACKS = ["loss", "zlib", "mink", "minkpp", "lowercase", "ref"]


def _argv(corpus: TinyCorpus, untrained: Path, out: Path) -> list[str]:
    return [
        "audit",
        str(corpus.model),
        "--train",
        str(corpus.train),
        "--population",
        str(corpus.population),
        "--text-column",
        "text",
        "--attack",
        *ATTACKS,
        "--reference-models",
        str(untrained),
        "--json",
        str(out),
    ]


def _comparable(path: Path) -> dict[str, Any]:
    """The document without the timings, the time of day, the command line, the engine and
    the threads."""
    document = json.loads(path.read_text())
    for key in ("seconds", "created", "command", "engine", "threads"):
        document["provenance"].pop(key, None)
    return dict(document)


def test_a_text_audit_on_a_cluster_gives_the_single_engine_json(
    corpus: TinyCorpus,
    untrained: Path,
    in_process: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Callable[[str, Any], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Chunks of 50 records: each side's 120 records are three tasks, joined in order.
    monkeypatch.setattr("epsstar.audit.engines.text_scoring.TEXT_CHUNK_ROWS", 50)
    loads: list[Path] = []
    load = ModelFile.load

    def counted(self: ModelFile) -> Any:
        loads.append(Path(self.path))
        return load(self)

    monkeypatch.setattr(ModelFile, "load", counted)
    single, dask = tmp_path / "single.json", tmp_path / "dask.json"
    assert main([*_argv(corpus, untrained, single), "--quiet"]) in (0, 1)
    capsys.readouterr()
    loads.clear()
    engine = ["--engine", "dask", "--scheduler", in_process]
    assert main([*_argv(corpus, untrained, dask), *engine]) in (0, 1)
    err = capsys.readouterr().err
    assert "train: 3/3 partitions, 120 rows" in err
    assert "population: 3/3 partitions, 120 rows" in err
    written = json.loads(dask.read_text())
    validate_json("audit", written)
    assert written["provenance"]["engine"] == {
        "name": "dask",
        "scheduler": in_process,
        "partitions": {"train": 3, "population": 3},
    }
    # The client loads each model once (for its files and classes), and the workers of this
    # process share one loaded copy across the six tasks.
    assert sorted(map(str, loads)) == sorted(2 * [str(corpus.model), str(untrained)])
    expected, found = _comparable(single), _comparable(dask)
    assert [attack["attack"] for attack in found["attacks"]] == ATTACKS
    assert found == expected


def test_a_worker_refuses_a_text_file_other_than_the_audited_one(
    corpus: TinyCorpus, tmp_path: Path
) -> None:
    loaded = ModelFile(corpus.model).load()
    spec = model_spec(ModelFile(corpus.model), loaded.model)
    data = TextData(corpus.train, "0" * 64, "text", 120)
    with pytest.raises(InputFileError) as raised:
        score_range(spec, (), data, ScoringPlan(8), (0, None))
    assert str(raised.value) == (
        f"a worker's copy of a data file differs from the one audited here (sha256 "
        f"{str(raised.value).split('sha256 ')[1][:16]}... instead of 0000000000000000...). "
        f"Found {str(corpus.train)!r}."
    )


def test_audit_many_of_a_text_model_on_a_cluster_gives_the_single_engine_json(
    corpus: TinyCorpus,
    in_process: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Callable[[str, Any], None],
) -> None:
    # A language model and a classifier in one manifest (an empty cell is absent).
    manifest = tmp_path / "manifest.csv"
    rows = [
        "model,train,population,text_column,label_column,strategy,repeat",
        f"{corpus.model},{corpus.train},{corpus.population},text,,fine-tuned,0",
        f"{MODELS / 'binary_logreg.onnx'},{MODELS / 'binary_train.csv'},"
        f"{MODELS / 'binary_population.parquet'},,label,table,0",
    ]
    manifest.write_text("\n".join(rows) + "\n", encoding="utf-8")
    documents = {}
    for engine in ("single", "dask"):
        out = tmp_path / f"{engine}.json"
        argv = ["audit-many", str(manifest), "--engine", engine, "--jobs", "1", "--quiet"]
        where = ["--scheduler", in_process] if engine == "dask" else []
        reports = ["--reports", str(tmp_path / f"reports-{engine}")]
        code, _, err = invoke([*argv, "--json", str(out), *reports, *where], capsys)
        assert code == 0, err
        documents[engine] = json.loads(out.read_text())
        validate_json("audit-many", documents[engine])
    single, dask = documents["single"], documents["dask"]
    report = (tmp_path / dask["models"][0]["report"]).read_text(encoding="utf-8")
    assert report.startswith("<!DOCTYPE html>")
    assert "GPT2LMHeadModel" in report
    text, table = (model["entry"] for model in dask["models"])
    assert (text["text_column"], "label_column" in text) == ("text", False)
    assert (table["label_column"], "text_column" in table) == ("label", False)
    result = dask["models"][0]["result"]
    assert result["text"]["model"]["architecture"] == "GPT2LMHeadModel"
    assert result["epsilon_star"] > 1.0  # the fine-tuned model leaks (test_text_audit.py)
    assert _comparable_fleet(single) == _comparable_fleet(dask)


def test_a_failed_task_is_one_line_naming_its_file_and_writes_nothing(
    corpus: TinyCorpus,
    in_process: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A worker that cannot score its chunk (here: told to refuse it) stops the audit with the
    # worker's one line, prefixed with the file the chunk came from.
    def refused(*_: object, **__: object) -> None:
        raise InvalidInputError("row 7: this record cannot be scored")

    monkeypatch.setattr("epsstar.audit.engines.dask_text.score_chunks", refused)
    out = tmp_path / "out.json"
    argv = ["audit", str(corpus.model), "--train", str(corpus.train), "--population"]
    argv += [str(corpus.population), "--text-column", "text", "--quiet", "--json", str(out)]
    code, _, err = invoke([*argv, "--engine", "dask", "--scheduler", in_process], capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"epsstar audit: error: {corpus.train}: row 7: this record cannot be scored"
    ]
    assert not out.exists()
