"""Every network wait has a deadline: a Dask scheduler address that accepts connections and
never answers is one line and exit 2 after the connection timeout (10 s), not a hang."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from epsstar.cli import main
from epsstar.plumbing.runtime.dask_cluster import CONNECT_TIMEOUT

pytest.importorskip("distributed")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "models"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose connections the kernel accepts (into the backlog) and nobody answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield int(listener.getsockname()[1])


def test_a_scheduler_that_never_answers_is_exit_2_within_the_timeout(
    silent_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    code = main(
        [
            "audit",
            str(FIXTURES / "binary_logreg.onnx"),
            "--train",
            str(FIXTURES / "binary_train.csv"),
            "--population",
            str(FIXTURES / "binary_population.csv"),
            "--label-column",
            "label",
            "--engine",
            "dask",
            "--scheduler",
            f"tcp://127.0.0.1:{silent_port}",
            "--quiet",
        ]
    )
    seconds = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].endswith(f"Found 'tcp://127.0.0.1:{silent_port}'.")
    assert "no answer within 10 s" in lines[0]
    # The deadline, plus the model's loading and the data's reading on a busy machine; the
    # hang this protects against never ends.
    assert seconds < CONNECT_TIMEOUT + 30
