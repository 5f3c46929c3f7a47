"""``--device`` reaches the reference models of a LiRA/RMIA audit whose loader takes one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from epsstar.audit.engines.references import load_references
from epsstar.audit.model import plugins

torch = pytest.importorskip("torch")

MODELS = Path(__file__).resolve().parents[3] / "fixtures" / "models"


class _Recording:
    """A loader that takes a device and records the one it was given (none: ``None``)."""

    name = "recording"
    suffixes = (".rec",)
    takes_device = True

    def __init__(self) -> None:
        self.given: list[str | None] = []

    def load(
        self, path: Path, *, outputs: Any = None, trust: bool = False, device: str | None = None
    ) -> Any:
        self.given.append(device)
        return plugins.get_loader("torchscript")[0].load(MODELS / "binary_mlp.pt")


@pytest.fixture
def recording() -> Any:
    plugins._reset()
    loader = _Recording()
    plugins.register_loader("recording", loader)
    yield loader
    plugins._reset()


def test_the_device_reaches_reference_loaders_that_take_one(
    recording: _Recording, tmp_path: Path
) -> None:
    paths = [tmp_path / "a.rec", tmp_path / "b.rec"]
    for path in paths:
        path.write_bytes(b"")
    load_references(paths, device="cuda:0")  # the name only: nothing runs on it
    assert recording.given == ["cuda:0", "cuda:0"]
    load_references(paths)
    assert recording.given[2:] == [None, None]


def test_a_cpu_only_reference_loader_runs_on_the_cpu_whatever_the_device() -> None:
    loaded, models = load_references([MODELS / "binary_mlp.onnx"], device="cuda:0")
    assert models[0].loader == "onnx"
    assert loaded[0][0].output_kind in ("logits", "probabilities")
