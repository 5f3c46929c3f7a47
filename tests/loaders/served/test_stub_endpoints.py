"""The served loader against a scripted loopback server: retries and their back-off,
timeouts, the rate limit, redirects, credentials, proxies, and the one-line errors of the
command line (exit 2, no output file) for unreachable hosts, HTTP errors, malformed JSON,
wrong shapes and class labels."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pytest
from servers import Answer, free_port, stub_server

from epsstar.audit.inputs.served import Serving, shown_url
from epsstar.audit.run import ModelFile, Tables, audit
from epsstar.cli import main
from epsstar.exceptions import InvalidInputError
from epsstar.loaders.served import ServedLoader

FEATURES = ["a", "b", "c"]
FAST = Serving(connect_timeout=2, read_timeout=5, retries=3, backoff=0.05)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Any]:
    """Training and population CSV files and a logistic regression fitted on the former."""
    from sklearn.linear_model import LogisticRegression

    folder = tmp_path_factory.mktemp("served-data")
    rng = np.random.default_rng(7)
    x = rng.normal(size=(240, 3))
    y = (x[:, 0] + 0.5 * rng.normal(size=240) > 0).astype(int)
    model = LogisticRegression().fit(x[:120], y[:120])
    paths = []
    for name, rows in (("train", slice(0, 120)), ("population", slice(120, 240))):
        frame = pd.DataFrame(x[rows], columns=FEATURES).assign(label=y[rows])
        frame.to_csv(folder / f"{name}.csv", index=False)
        paths.append(folder / f"{name}.csv")
    return paths[0], paths[1], model


def open_inference(model: Any, *, output: str = "predict_proba") -> Callable[..., Answer]:
    """A script answering as an Open Inference Protocol server serving ``model`` as ``m``."""

    def script(method: str, address: str, body: Any) -> Answer:
        path = urlsplit(address).path  # a proxy receives the whole URL
        if method == "GET" and path.startswith("/v2/models/m"):
            return 200, {"name": "m", "versions": ["3"], "inputs": [], "outputs": []}, {}, 0
        if method == "GET" and path.startswith("/v2"):
            return 200, {"name": "stub", "version": "0.1"}, {}, 0
        tensor = body["inputs"][0]
        rows = np.asarray(tensor["data"], dtype=np.float64).reshape(tensor["shape"])
        scores = model.predict_proba(rows)
        answer = {"name": output, "shape": list(scores.shape), "datatype": "FP64"}
        return 200, {"outputs": [{**answer, "data": scores.ravel().tolist()}]}, {}, 0

    return script


def _tables(data: tuple[Path, Path, Any]) -> Tables:
    return Tables(data[0], data[1], "label", features=FEATURES, batch_size=50)


def _load(url: str, serving: Serving = FAST) -> Any:
    return ServedLoader().load_url(url, serving=serving)


def _cli(url: str, data: tuple[Path, Path, Any], *extra: str) -> list[str]:
    return [
        "audit", url, "--train", str(data[0]), "--population", str(data[1]),
        "--label-column", "label", "--features", ",".join(FEATURES), "--quiet",
        "--retries", "2", "--backoff", "0.01", *extra,
    ]  # fmt: skip


# --- a whole audit -------------------------------------------------------------------------


def test_an_audit_through_the_server_equals_the_audit_of_the_model_in_process(
    data: tuple[Path, Path, Any], tmp_path: Path
) -> None:
    """Each batch of --batch-size rows is one request; the losses are the model's own."""
    import joblib

    joblib.dump(data[2], tmp_path / "model.joblib")
    with stub_server(open_inference(data[2])) as stub:
        served = audit(stub.url + "/v2/models/m", _tables(data))
        infers = [r for r in stub.requests if r.path.endswith("/infer")]
    local = audit(
        ModelFile(tmp_path / "model.joblib", outputs="probabilities", trust=True), _tables(data)
    )
    np.testing.assert_array_equal(served.train_losses, local.train_losses)
    np.testing.assert_array_equal(served.population_losses, local.population_losses)
    assert served.epsilon_star == local.epsilon_star
    assert served.lower_bound.epsilon == local.lower_bound.epsilon
    # 120 + 120 rows in batches of 50 (no probe: the metadata states no input width)
    assert [len(r.body["inputs"][0]["data"]) // 3 for r in infers] == [50, 50, 20] * 2
    provenance = served.provenance
    assert provenance is not None
    assert provenance.served is not None
    assert provenance.model_files == ()
    assert provenance.model_sha256 is None
    assert (provenance.served.model_name, provenance.served.model_version) == ("m", "3")
    assert provenance.served.server == "stub 0.1"


def test_the_command_line_records_the_url_without_credentials(
    data: tuple[Path, Path, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Callable[[str, Any], None],
) -> None:
    with stub_server(open_inference(data[2])) as stub:
        url = stub.url.replace("http://", "http://ann:s3cret@") + "/v2/models/m?token=t0ken"
        out = tmp_path / "audit.json"
        junit, report = tmp_path / "gate.xml", tmp_path / "r.html"
        outputs = ["--json", str(out), "--report", str(report), "--junit-xml", str(junit)]
        code = main([*_cli(url, data), *outputs, "--max-epsilon", "5"])
        received = stub.requests
    captured = capsys.readouterr()
    assert code == 0, captured.err
    document = json.loads(out.read_text())
    validate_json("audit", document)
    served = document["provenance"]["served"]
    assert served["url"] == f"{stub.url}/v2/models/m"
    assert served["protocol"] == "open-inference-v2"
    assert served["file_digest"] is None
    assert document["model_sha256"] is None
    assert document["provenance"]["model_files"] == []
    html = report.read_text()
    assert "no model file was read, so no SHA-256 exists" in html
    everything = out.read_text() + html + junit.read_text() + captured.out + captured.err
    assert "s3cret" not in everything
    assert "t0ken" not in everything
    assert f"{stub.url}/v2/models/m" in junit.read_text()
    assert f"model served at {stub.url}/v2/models/m" in captured.out
    # the credentials and the query reach the server on every request
    expected = "Basic " + base64.b64encode(b"ann:s3cret").decode()
    assert all(r.headers.get("Authorization") == expected for r in received)
    assert all(r.path.endswith("?token=t0ken") for r in received)


# --- retries, back-off, timeouts, rate ------------------------------------------------------


def _flaky(
    statuses: list[int], then: Callable[..., Answer], headers: dict[str, str] | None = None
) -> Callable[..., Answer]:
    """``statuses`` answered to the first requests, then ``then``'s answers."""
    left = list(statuses)

    def script(method: str, path: str, body: Any) -> Answer:
        if left:
            return left.pop(0), b"busy\nsecond line", headers or {}, 0
        return then(method, path, body)

    return script


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_a_busy_server_is_asked_again_with_a_growing_back_off(
    status: int, data: tuple[Path, Path, Any]
) -> None:
    with stub_server(_flaky([status] * 3, open_inference(data[2]))) as stub:
        model = _load(stub.url + "/v2/models/m", Serving(retries=3, backoff=0.1))
        times = [r.at for r in stub.requests[:4]]
    assert model.served.model_name == "m"
    gaps = np.diff(times)
    # urllib3's schedule: at once, then backoff × 2, × 4
    assert gaps[1] >= 0.2 - 0.02, gaps
    assert gaps[2] >= 0.4 - 0.02, gaps


def test_retries_are_bounded_then_one_line_with_the_status_and_first_line(
    data: tuple[Path, Path, Any],
) -> None:
    with stub_server(_flaky([503] * 10, open_inference(data[2]))) as stub:
        with pytest.raises(InvalidInputError) as error:
            _load(stub.url + "/v2/models/m", Serving(retries=2, backoff=0.01))
        count = len(stub.requests)
    assert count == 3
    message = str(error.value)
    assert "\n" not in message
    assert f"{stub.url}/v2/models/m" in message
    assert "HTTP 503" in message
    assert "busy" in message
    assert "second line" not in message


def test_retry_after_is_honoured(data: tuple[Path, Path, Any]) -> None:
    with stub_server(_flaky([429], open_inference(data[2]), {"Retry-After": "1"})) as stub:
        _load(stub.url + "/v2/models/m", Serving(retries=1, backoff=0.01))
        first, second = stub.requests[:2]
    assert second.at - first.at >= 0.95


def test_an_unreachable_host_is_one_line_after_the_retries() -> None:
    port = free_port()  # nobody listens
    started = time.monotonic()
    with pytest.raises(InvalidInputError) as error:
        _load(f"http://127.0.0.1:{port}/v2/models/m", Serving(retries=2, backoff=0.05))
    message = str(error.value)
    assert time.monotonic() - started < 5
    assert "\n" not in message
    assert f"127.0.0.1:{port}/v2/models/m" in message
    assert "must be reachable" in message
    assert "after 3 attempts" in message
    assert "refused" in message.lower()


def test_no_message_quotes_the_credentials_of_an_unreachable_host() -> None:
    port = free_port()
    with pytest.raises(InvalidInputError) as error:
        _load(f"http://ann:s3cret@127.0.0.1:{port}/v2/models/m?token=t0ken", FAST)
    assert "s3cret" not in str(error.value)
    assert "t0ken" not in str(error.value)
    assert f"http://127.0.0.1:{port}/v2/models/m: the server must be reachable" in str(error.value)


def test_a_slow_answer_is_the_read_timeout_and_not_sent_again(data: tuple[Path, Path, Any]) -> None:
    def slow(method: str, path: str, body: Any) -> Answer:
        status, answer, headers, _ = open_inference(data[2])(method, path, body)
        return status, answer, headers, 3.0

    with stub_server(slow) as stub:
        started = time.monotonic()
        with pytest.raises(InvalidInputError, match=r"read timeout of 0\.3 s"):
            _load(stub.url + "/v2/models/m", Serving(read_timeout=0.3, retries=3))
        assert time.monotonic() - started < 2.5
        assert len(stub.requests) == 1


def test_the_rate_limit_spaces_the_requests(data: tuple[Path, Path, Any]) -> None:
    with stub_server(open_inference(data[2])) as stub:
        model = _load(stub.url + "/v2/models/m", Serving(rate=20))
        for _ in range(6):
            model.predict(np.zeros((2, 3)))
        times = [r.at for r in stub.requests]
    assert len(times) >= 8
    # The client spaces the starts of its requests by 1/20 s; the server sees them arrive
    # with the delays of a loaded machine, which can shorten one gap (measured: 0.038 s
    # under a full test run) but not the span of all of them by more than one interval.
    # Unpaced, these requests to a server on loopback take a few milliseconds each.
    span = times[-1] - times[0]
    assert span >= (len(times) - 1) * 0.05 - 0.05, np.diff(times)


def test_a_redirect_is_not_followed(data: tuple[Path, Path, Any]) -> None:
    def redirect(method: str, path: str, body: Any) -> Answer:
        return 302, b"", {"Location": "http://elsewhere.example:9/v2/models/m?key=k3y"}, 0

    with stub_server(redirect) as stub:
        with pytest.raises(InvalidInputError) as error:
            _load(stub.url + "/v2/models/m")
        assert len(stub.requests) == 1
    assert "HTTP 302" in str(error.value)
    assert "elsewhere.example" in str(error.value)
    assert "k3y" not in str(error.value)


def test_the_proxy_of_the_environment_is_used(
    data: tuple[Path, Path, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy named by HTTP_PROXY receives the requests for a host outside NO_PROXY."""
    with stub_server(open_inference(data[2])) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("NO_PROXY")
        monkeypatch.delenv("no_proxy")
        model = _load("http://served.invalid:8000/v2/models/m")
        model.predict(np.zeros((2, 3)))
    assert model.served.model_name == "m"
    assert proxy.requests[0].path.startswith("http://served.invalid:8000/v2/models/m")


# --- what the command line says -------------------------------------------------------------


def _one_line(code: int, err: str, *wanted: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith("epsstar audit: error: "), err
    assert "Traceback" not in err
    for text in wanted:
        assert text in lines[0], lines[0]


def _answering(answer: Any, status: int = 200) -> Callable[..., Answer]:
    def script(method: str, path: str, body: Any) -> Answer:
        if method == "GET":
            return 200, {"name": "m", "inputs": [], "outputs": []}, {}, 0
        return status, answer, {}, 0

    return script


@pytest.mark.parametrize(
    ("answer", "status", "wanted"),
    [
        (b"Internal error: model crashed\nTraceback ...", 500, ["HTTP 500", "model crashed"]),
        (b"{not json", 200, ["/v2/models/m/infer: the answer: must be JSON"]),
        ({"outputs": []}, 200, ["must hold one output", "--served-output"]),
        (
            {"outputs": [{"name": "p", "shape": [7, 2], "datatype": "FP64", "data": [0.5] * 14}]},
            200,
            ["one prediction per record", "[7, 2]"],
        ),
        (
            {"outputs": [{"name": "p", "shape": [49, 2], "datatype": "FP64", "data": [0.5] * 3}]},
            200,
            ["as many values as its shape", "Found 3"],
        ),
        (
            {
                "outputs": [
                    {"name": "predict", "shape": [49], "datatype": "INT64", "data": [1] * 49}
                ]
            },
            200,
            ["class probabilities or logits", "--served-output predict_proba", "'INT64'"],
        ),
    ],
    ids=["http-error", "malformed-json", "no-output", "wrong-rows", "wrong-size", "labels"],
)
def test_a_bad_answer_is_one_line_and_no_output_file(
    answer: Any,
    status: int,
    wanted: list[str],
    data: tuple[Path, Path, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "audit.json"
    with stub_server(_answering(answer, status)) as stub:
        code = main(
            [*_cli(stub.url + "/v2/models/m", data), "--json", str(out), "--batch-size", "49"]
        )
    _one_line(code, capsys.readouterr().err, *wanted)
    assert not out.exists()


def test_mlflow_labels_are_refused_with_how_to_serve_probabilities(
    data: tuple[Path, Path, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def labels(method: str, path: str, body: Any) -> Answer:
        if method == "GET":
            return 200, "3.17.2" if path == "/version" else {}, {}, 0
        return 200, {"predictions": [1] * len(body["dataframe_split"]["data"])}, {}, 0

    with stub_server(labels) as stub:
        code = main([*_cli(stub.url, data), "--json", str(tmp_path / "a.json")])
        sent = stub.requests[-1].body["dataframe_split"]
    _one_line(code, capsys.readouterr().err, "/invocations", 'pyfunc_predict_fn="predict_proba"')
    assert sent["columns"] == FEATURES
    assert len(sent["data"][0]) == 3
    assert not (tmp_path / "a.json").exists()


def test_an_unreachable_host_on_the_command_line_is_one_line(
    data: tuple[Path, Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    code = main(_cli(f"http://127.0.0.1:{port}/v2/models/m", data))
    _one_line(code, capsys.readouterr().err, "must be reachable", "after 3 attempts")


@pytest.mark.parametrize(
    ("extra", "wanted"),
    [
        (["--rate-limit", "0"], "--rate-limit must be a finite number above 0. Found 0.0."),
        (["--retries", "99"], "--retries must be between 0 and 10. Found 99."),
        (["--read-timeout", "nan"], "--read-timeout must be a finite number above 0."),
        (["--trust-model"], "--base-model, --device and --trust-model do not apply"),
    ],
)
def test_serving_options_are_checked(
    extra: list[str], wanted: str, data: tuple[Path, Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    with stub_server(open_inference(data[2])) as stub:
        code = main([*_cli(stub.url + "/v2/models/m", data), *extra])
    _one_line(code, capsys.readouterr().err, wanted)


def test_serving_options_are_refused_with_a_model_file(
    data: tuple[Path, Path, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "model.onnx"
    code = main([*_cli(str(model), data)])
    _one_line(code, capsys.readouterr().err, "--retries applies to a served model")


def test_shown_urls_carry_no_credentials() -> None:
    assert shown_url("HTTPS://u:p@Host.example:8443/v2/models/m?token=x#f") == (
        "https://host.example:8443/v2/models/m"
    )
    assert shown_url("http://[::1]:8080/x") == "http://[::1]:8080/x"
    assert ModelFile.of("http://u:p@h:1/v2/models/clf").shown == "'http://h:1/v2/models/clf'"


def test_a_served_model_is_refused_where_only_files_are_read(
    data: tuple[Path, Path, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """audit-many's manifests and the audit of text records read model files only."""
    url = "http://ann:s3cret@127.0.0.1:1/v2/models/m"
    manifest = tmp_path / "many.csv"
    manifest.write_text(f"model,train,population,label_column\n{url},{data[0]},{data[1]},label\n")
    code = main(["audit-many", str(manifest), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.endswith(
        "audit-many audits model files; a served model is audited one at a time (epsstar "
        "audit URL). Found the URL 'http://127.0.0.1:1/v2/models/m'."
    )
    texts = [tmp_path / "a.txt", tmp_path / "b.txt"]
    for path, line in zip(texts, ("one record", "another record"), strict=True):
        path.write_text(line + "\n")
    code = main(["audit", url, "--train", str(texts[0]), "--population", str(texts[1]), "--quiet"])
    _one_line(code, capsys.readouterr().err, "text records need a model file or folder")


def test_the_notebook_call_audits_a_url_as_the_command_line_does(
    data: tuple[Path, Path, Any],
) -> None:
    """``epsstar.audit(URL, ...)`` keeps the URL whole (a path would fold its ``//``)."""
    import epsstar

    frames = [pd.read_csv(path) for path in data[:2]]
    with stub_server(open_inference(data[2])) as stub:
        url = stub.url + "/v2/models/m"
        notebook = epsstar.audit(url, *frames, label="label", features=FEATURES, serving=FAST)
        direct = audit(url, _tables(data))
    assert notebook.epsilon_star == direct.epsilon_star
    assert notebook.provenance.served is not None
    assert notebook.provenance.served.model_name == "m"
