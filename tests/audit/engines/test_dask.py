"""``--engine dask``: audit-many on a local cluster and on a real scheduler with two workers."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.conftest import invoke as _invoke

pytest.importorskip("distributed")
pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[3]
MODELS = ROOT / "fixtures" / "models"


def _manifest(folder: Path, models: list[Path]) -> Path:
    lines = ["model,train,population,label_column,strategy,repeat"]
    for repeat, model in enumerate(models):
        lines.append(
            f"{model},{MODELS / 'binary_train.csv'},{MODELS / 'binary_population.parquet'},"
            f"label,{model.stem},{repeat}"
        )
    path = folder / "manifest.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _comparable(document: dict[str, Any]) -> dict[str, Any]:
    """An ``audit-many --json`` document without what may differ between engines: the engine,
    the workers, the timings and the time of day, the command line (which names the engine),
    the threads (chosen by each process) and the reports' folders."""
    document = json.loads(json.dumps(document))
    document.pop("engine", None)
    for model in document["models"]:
        model.pop("worker", None)
        model.pop("report", None)
        if "result" in model:
            model["result"]["provenance"].pop("seconds")
            model["result"]["provenance"].pop("created")
            model["result"]["provenance"].pop("command")
            model["result"]["provenance"].pop("threads", None)
    return document


def test_audit_many_on_a_local_cluster_gives_the_single_engine_json(
    in_process: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], validate_json: Any
) -> None:
    models = [MODELS / "binary_logreg.onnx", MODELS / "binary_mlp.onnx", tmp_path / "gone.onnx"]
    manifest = _manifest(tmp_path, models)
    documents = {}
    for engine in ("single", "dask"):
        out = tmp_path / f"{engine}.json"
        reports = str(tmp_path / f"reports-{engine}")
        argv = ["audit-many", str(manifest), "--engine", engine, "--jobs", "1", "--json", str(out)]
        where = ["--scheduler", in_process] if engine == "dask" else []
        code, _, err = _invoke([*argv, "--reports", reports, *where], capsys)
        assert code == 3, err  # the missing model fails, the others are kept
        documents[engine] = json.loads(out.read_text())
        validate_json("audit-many", documents[engine])
    single, dask = documents["single"], documents["dask"]
    assert single["engine"] == {"name": "single"}
    assert dask["engine"] == {"name": "dask", "scheduler": in_process}
    assert all(model["worker"].startswith("tcp://127.0.0.1:") for model in dask["models"])
    assert not any("worker" in model for model in single["models"])
    assert _comparable(single) == _comparable(dask)
    assert "no such file" in dask["models"][2]["error"]
    for index in (0, 1):  # the reports came back from the workers
        assert dask["models"][index]["report"] == single["models"][index]["report"].replace(
            "reports-single", "reports-dask"
        )
        report = tmp_path / dask["models"][index]["report"]
        assert report.read_bytes().startswith(b"<!DOCTYPE html>")
    assert "(worker tcp://127.0.0.1:" in err


def test_engine_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = _manifest(tmp_path, [MODELS / "binary_logreg.onnx"])
    out = tmp_path / "out.json"
    argv = ["audit-many", str(manifest), "--quiet", "--json", str(out)]
    code, _, err = _invoke([*argv, "--scheduler", "tcp://127.0.0.1:1"], capsys)
    assert code == 2
    assert err.strip().endswith(
        "a scheduler address needs the dask engine. Found engine "
        "'single' with scheduler 'tcp://127.0.0.1:1'."
    )
    monkeypatch.setattr("epsstar.plumbing.runtime.dask_cluster.CONNECT_TIMEOUT", 1.0)
    address = f"tcp://127.0.0.1:{_free_port()}"
    code, _, err = _invoke([*argv, "--engine", "dask", "--scheduler", address], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "--scheduler: cannot reach a Dask scheduler there" in err
    assert err.strip().endswith(f"Found {address!r}.")
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, _, err = _invoke([*argv, "--engine", "dask"], capsys)
    assert code == 2
    assert "python -m pip install 'epsstar[dask]'" in err
    assert not out.exists()


def _audit_document(path: Path) -> dict[str, Any]:
    """An ``audit --json`` document without the timings, the time of day, the command line,
    the engine and the threads (on a Dask cluster each worker chooses its own). The blind
    baseline ran: the premise's figures are compared with the rest."""
    document = json.loads(path.read_text())
    for key in ("seconds", "created", "command", "engine", "threads"):
        document["provenance"].pop(key, None)
    assert document["blind_baseline"]["skipped"] is None
    assert isinstance(document["premise_holds"], bool)
    return dict(document)


def _partitioned(source: Path, folder: Path, parts: int) -> Path:
    """``source``'s rows in ``parts`` Parquet files ``part.0`` … (in row order)."""
    frame = pd.read_parquet(source)
    folder.mkdir()
    for index, rows in enumerate(np.array_split(np.arange(len(frame)), parts)):
        frame.iloc[rows].to_parquet(folder / f"part.{index}.parquet")
    return folder


AUDIT = ["audit", str(MODELS / "binary_mlp.onnx"), "--label-column", "label", "--seed", "3"]


def test_audit_of_partitions_on_a_local_cluster_gives_the_single_engine_result(
    in_process: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], validate_json: Any
) -> None:
    train, population = MODELS / "binary_train.parquet", MODELS / "binary_population.parquet"
    single = tmp_path / "single.json"
    argv = [*AUDIT, "--train", str(train), "--population", str(population), "--quiet"]
    code, _, err = _invoke([*argv, "--json", str(single)], capsys)
    assert code == 0, err
    # Twelve partitions (part.10 comes after part.9) and a file:// URL with storage options.
    parts = _partitioned(train, tmp_path / "train", 12)
    dask = tmp_path / "dask.json"
    argv = [*AUDIT, "--train", str(parts), "--population", population.as_uri(), "--json"]
    engine = ["--engine", "dask", "--scheduler", in_process]
    engine += ["--storage-options", '{"auto_mkdir": false}']
    code, _, err = _invoke([*argv, str(dask), *engine], capsys)
    assert code == 0, err
    assert "train: 12/12 partitions, 600 rows" in err
    assert "population: 1/1 partitions, 400 rows" in err
    written = json.loads(dask.read_text())
    validate_json("audit", written)
    assert written["provenance"]["engine"] == {
        "name": "dask",
        "scheduler": in_process,
        "partitions": {"train": 12, "population": 1},
    }
    expected, found = _audit_document(single), _audit_document(dask)
    assert found["provenance"].pop("train") == str(parts)
    assert found["provenance"].pop("population") == population.as_uri()
    digests = [
        hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(parts.iterdir(), key=lambda path: int(path.name.split(".")[1]))
    ]
    lines = "".join(f"part.{i}.parquet {digest}\n" for i, digest in enumerate(digests))
    assert found["provenance"].pop("train_sha256") == hashlib.sha256(lines.encode()).hexdigest()
    for key in ("train", "population", "train_sha256"):
        expected["provenance"].pop(key)
    assert found == expected


def test_reference_attacks_on_a_local_cluster_give_the_single_engine_result(
    in_process: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], validate_json: Any
) -> None:
    # Models of the binary task in three formats stand in for reference models (none was
    # trained on a population record); what matters here is that both engines agree.
    references = [
        str(MODELS / name)
        for name in ("binary_logreg.onnx", "binary_mlp_torch.onnx", "binary_logreg.pt")
    ]
    attacks = ["--attack", "loss", "lira", "rmia", "--reference-models", *references]
    train, population = MODELS / "binary_train.parquet", MODELS / "binary_population.parquet"
    single = tmp_path / "single.json"
    argv = [*AUDIT, "--train", str(train), "--population", str(population), "--quiet", *attacks]
    code, _, err = _invoke(
        [*argv, "--json", str(single), "--max-epsilon", "50", "--match-columns-by-position"], capsys
    )
    assert code == 0, err
    parts = _partitioned(population, tmp_path / "population", 5)
    dask = tmp_path / "dask.json"
    argv = [*AUDIT, "--train", str(train), "--population", str(parts), "--quiet", *attacks]
    engine = [
        "--engine",
        "dask",
        "--scheduler",
        in_process,
        "--max-epsilon",
        "50",
        "--match-columns-by-position",
    ]
    code, _, err = _invoke([*argv, "--json", str(dask), *engine], capsys)
    assert code == 0, err
    written = json.loads(dask.read_text())
    validate_json("audit", written)
    expected, found = _audit_document(single), _audit_document(dask)
    assert [a["attack"] for a in found["attacks"]] == ["loss", "lira", "rmia"]
    assert found["gate"]["n_tests"] == 3
    assert len(found["provenance"]["reference_models"]) == 3
    for key in ("population", "population_sha256"):
        expected["provenance"].pop(key)
        found["provenance"].pop(key)
    assert found == expected


def test_partitions_are_listed_in_natural_order_without_hidden_files(tmp_path: Path) -> None:
    from epsstar.audit.data.partitions import find_partitions

    folder = tmp_path / "data"
    (folder / "year=2024").mkdir(parents=True)
    names = ["part.10.parquet", "part.2.parquet", "part.1.parquet", "year=2024/part.0.parquet"]
    for name in [*names, "_metadata", "_common.parquet", ".part.3.parquet.crc", "notes.txt"]:
        (folder / name).write_bytes(b"")
    found = find_partitions(folder)
    assert [Path(p).relative_to(folder).as_posix() for p in found.partitions] == [
        "part.1.parquet",
        "part.2.parquet",
        "part.10.parquet",
        "year=2024/part.0.parquet",
    ]
    assert found.local
    url = find_partitions(f"file://{folder}/part.*.parquet", {"auto_mkdir": False})
    assert [Path(p).name for p in url.partitions] == [
        "part.1.parquet",
        "part.2.parquet",
        "part.10.parquet",
    ]
    assert url.storage_options == {"auto_mkdir": False}


def test_a_worker_refuses_a_model_file_other_than_the_audited_one(tmp_path: Path) -> None:
    from epsstar.audit.data.files import FileDigest
    from epsstar.audit.engines.worker_models import ModelSpec, checked_model
    from epsstar.audit.model.loading import ModelFile
    from epsstar.exceptions import InputFileError

    model = MODELS / "binary_logreg.onnx"
    spec = ModelSpec(ModelFile(model, "onnx"), (FileDigest(str(model), "0" * 64),))
    with pytest.raises(InputFileError, match="a worker's copy of a model file differs"):
        checked_model(spec)


def test_data_set_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    population = str(MODELS / "binary_population.parquet")
    argv = [*AUDIT, "--engine", "dask", "--quiet", "--population", population]
    code, _, err = _invoke([*argv, "--train", str(tmp_path / "nothing-*.parquet")], capsys)
    assert code == 2
    assert err.strip().endswith(f"Found nothing at {str(tmp_path / 'nothing-*.parquet')!r}.")
    code, _, err = _invoke([*argv, "--train", population], capsys)
    assert code == 2
    assert "must be different data sets" in err
    code, _, err = _invoke(
        [*AUDIT, "--train", population, "--population", population, "--storage-options", "[1]"],
        capsys,
    )
    assert code == 2
    assert "--storage-options: must be a JSON object. Found '[1]'." in err


def test_a_reference_model_of_other_classes_is_one_line_on_a_cluster(
    in_process: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train, population = MODELS / "binary_train.parquet", MODELS / "binary_population.parquet"
    out = tmp_path / "out.json"
    argv = [*AUDIT, "--train", str(train), "--population", str(population), "--quiet"]
    argv += ["--attack", "lira", "--reference-models", str(MODELS / "multiclass_mlp.onnx")]
    code, _, err = _invoke([*argv, "--engine", "dask", "--scheduler", in_process], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "multiclass_mlp.onnx" in err
    assert not out.exists()


# --- a real scheduler and two workers, each its own process ---------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class _Cluster:
    """``dask scheduler`` and two ``dask worker`` processes (``python -m dask …``, this
    interpreter's) on 127.0.0.1 (no nannies, so that
    a killed worker stays dead); the scheduler reports a task lost at its worker's first
    death (``allowed-failures`` 0) instead of rerunning it elsewhere."""

    def __init__(self, folder: Path) -> None:
        environment = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0",
        }
        port = _free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        self.processes = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "dask",
                    "scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--dashboard-address",
                    ":0",
                ],
                cwd=folder,
                env=environment,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        ]
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        for _ in range(2):
            worker_port = _free_port()
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "dask",
                    "worker",
                    self.address,
                    "--host",
                    "127.0.0.1",
                    "--worker-port",
                    str(worker_port),
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                ],
                cwd=folder,
                env=environment,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self.workers[f"tcp://127.0.0.1:{worker_port}"] = process
            self.processes.append(process)
        from distributed import Client

        deadline = time.monotonic() + 60
        while True:
            try:
                with Client(self.address, timeout=5) as client:
                    client.wait_for_workers(2, timeout=60)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise

    def close(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[_Cluster]:
    started = _Cluster(tmp_path)
    try:
        yield started
    finally:
        started.close()


@pytest.mark.slow
def test_a_real_cluster_runs_audit_many_and_reports_a_model_whose_worker_died(
    cluster: _Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str], validate_json: Any
) -> None:
    from epsstar.audit.engines.dask_engine import Engine
    from epsstar.audit.many import ModelAudit, audit_many, read_manifest

    # An audit whose population is three partitions, against the single engine's.
    train, population = MODELS / "binary_train.parquet", MODELS / "binary_population.parquet"
    parts = _partitioned(population, tmp_path / "population", 3)
    single, dask = tmp_path / "single.json", tmp_path / "dask.json"
    argv = [*AUDIT, "--train", str(train), "--quiet", "--json"]
    code, _, err = _invoke([*argv, str(single), "--population", str(population)], capsys)
    assert code == 0, err
    on_cluster = ["--engine", "dask", "--scheduler", cluster.address]
    code, _, err = _invoke([*argv, str(dask), "--population", str(parts), *on_cluster], capsys)
    assert code == 0, err
    assert json.loads(dask.read_text())["provenance"]["engine"]["scheduler"] == cluster.address
    expected, found = _audit_document(single), _audit_document(dask)
    for document in (expected, found):
        del document["provenance"]["population"], document["provenance"]["population_sha256"]
    assert found == expected

    manifest = _manifest(tmp_path, [MODELS / "binary_logreg.onnx", MODELS / "binary_mlp.onnx"])
    out = tmp_path / "many.json"
    argv = ["audit-many", str(manifest), "--engine", "dask", "--scheduler", cluster.address]
    code, _, err = _invoke([*argv, "--quiet", "--json", str(out)], capsys)
    assert code == 0, err
    document = json.loads(out.read_text())
    validate_json("audit-many", document)
    assert document["engine"] == {"name": "dask", "scheduler": cluster.address}
    assert {model["worker"] for model in document["models"]} <= set(cluster.workers)

    # A fleet of eight; one worker is killed as soon as the first model is done.
    fleet = read_manifest(_manifest(tmp_path, [MODELS / "binary_mlp.onnx"] * 8))
    killed: list[str] = []

    def kill_the_other_worker(record: ModelAudit) -> None:
        if not killed:
            victim = next(address for address in cluster.workers if address != record.worker)
            cluster.workers[victim].send_signal(signal.SIGKILL)
            killed.append(victim)

    records = audit_many(
        fleet, engine=Engine("dask", cluster.address), on_done=kill_the_other_worker
    )
    assert [record.entry.repeat for record in records] == list(range(8))
    lost = [record for record in records if record.failed]
    assert lost, "the killed worker was running a model"
    for record in lost:
        assert record.error == f"lost: the worker {killed[0]} running it died"
        assert record.worker == killed[0]
    survivors = [record for record in records if not record.failed]
    assert len(survivors) + len(lost) == 8
    assert all(record.result is not None for record in survivors)
    assert {record.worker for record in survivors} <= set(cluster.workers)


def test_a_summarised_audit_gives_the_same_json_on_both_engines(
    in_process: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Sides above EXACT_ROWS are summarised: by this process in the single engine, by the
    # workers (one summary per partition, merged here) on the cluster.
    monkeypatch.setattr("epsstar.audit.data.summary_plans.EXACT_ROWS", 300)
    monkeypatch.setattr("epsstar.audit.data.summary_plans.HASH_SAMPLE", 350)
    monkeypatch.setattr("epsstar.statistics.summaries.loss_summary.SAMPLE_SIZE", 250)
    monkeypatch.setattr("epsstar.statistics.summaries.loss_summary.EXACT_TAIL_FACTOR", 2)
    train, population = MODELS / "binary_train.parquet", MODELS / "binary_population.parquet"
    single = tmp_path / "single.json"
    argv = [*AUDIT, "--train", str(train), "--population", str(population), "--quiet"]
    code, _, err = _invoke([*argv, "--json", str(single)], capsys)
    assert code == 0, err
    parts = _partitioned(train, tmp_path / "train", 7)
    pd.read_parquet(train).iloc[:0].to_parquet(parts / "part.3a.parquet")  # empty: skipped
    dask = tmp_path / "dask.json"
    argv = [*AUDIT, "--train", str(parts), "--population", str(population), "--quiet"]
    engine = ["--engine", "dask", "--scheduler", in_process]
    code, _, err = _invoke([*argv, "--json", str(dask), *engine], capsys)
    assert code == 0, err
    written = json.loads(dask.read_text())
    validate_json("audit", written)
    expected, found = _audit_document(single), _audit_document(dask)
    summaries = expected["provenance"]["summaries"]
    assert summaries["train"] == {"tail_values": 192, "sample_rate": 250 / 600, "bins": 2**18}
    assert summaries["population"] is not None
    assert summaries["row_hash_rate"] == 350 / 600
    for key in ("train", "train_sha256"):
        expected["provenance"].pop(key)
        found["provenance"].pop(key)
    assert found == expected
    assert expected["method"] == "tails-shape-tested"


def test_an_audit_reads_its_partitions_from_s3(
    in_process: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A local S3 server (moto): the client reads the footers' row counts over S3, the
    # workers copy their partitions from it, and the summarised audit is the single engine's.
    s3fs = pytest.importorskip("s3fs")
    server_module = pytest.importorskip("moto.server")
    monkeypatch.setattr("epsstar.audit.data.summary_plans.EXACT_ROWS", 300)
    monkeypatch.setattr("epsstar.statistics.summaries.loss_summary.EXACT_TAIL_FACTOR", 2)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    port = _free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    try:
        options = {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{port}", "region_name": "x"},
        }
        s3 = s3fs.S3FileSystem(skip_instance_cache=True, **options)
        s3.mkdir("audit-data")
        train, population = MODELS / "binary_train.parquet", MODELS / "binary_population.parquet"
        parts = _partitioned(train, tmp_path / "train", 5)
        s3.put(str(parts) + "/", "audit-data/train/", recursive=True)
        s3.put(str(population), "audit-data/population.parquet")
        single = tmp_path / "single.json"
        argv = [*AUDIT, "--train", str(train), "--population", str(population), "--quiet"]
        code, _, err = _invoke([*argv, "--json", str(single)], capsys)
        assert code == 0, err
        dask = tmp_path / "dask.json"
        remote = ["--train", "s3://audit-data/train/", "--population"]
        remote += ["s3://audit-data/population.parquet", "--storage-options", json.dumps(options)]
        engine = ["--engine", "dask", "--scheduler", in_process, "--quiet"]
        code, _, err = _invoke([*AUDIT, *remote, *engine, "--json", str(dask)], capsys)
        assert code == 0, err
    finally:
        server.stop()
    written = json.loads(dask.read_text())
    validate_json("audit", written)
    assert written["provenance"]["engine"]["partitions"] == {"train": 5, "population": 1}
    expected, found = _audit_document(single), _audit_document(dask)
    assert found["provenance"].pop("train") == "s3://audit-data/train/"
    assert found["provenance"].pop("population") == "s3://audit-data/population.parquet"
    for key in ("train", "population", "train_sha256"):
        expected["provenance"].pop(key)
    found["provenance"].pop("train_sha256")
    assert expected["provenance"]["summaries"]["train"] is not None
    assert found == expected


def test_no_output_replaces_a_partition_behind_a_folder_or_glob(
    in_process: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = _partitioned(MODELS / "binary_train.parquet", tmp_path / "train", 3)
    before = {path.name: path.read_bytes() for path in parts.iterdir()}
    population = str(MODELS / "binary_population.parquet")
    engine = ["--engine", "dask", "--scheduler", in_process, "--quiet"]
    for source in (str(parts), f"{parts}/part.*.parquet"):
        for option in ("--json", "--report"):
            argv = [*AUDIT, "--train", source, "--population", population, *engine]
            code, _, err = _invoke([*argv, option, str(parts / "part.1.parquet")], capsys)
            assert code == 2, err
            assert "Traceback" not in err
            assert f"{option} would overwrite --train, an input of this run" in err
    assert {path.name: path.read_bytes() for path in parts.iterdir()} == before
