"""``--device``: the names accepted, the one-line refusals, and which loaders take one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from epsstar.audit.model import plugins
from epsstar.audit.model.loading import ModelFile
from epsstar.cli import main
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.runtime.device import checked_device

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "fixtures" / "models"
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")

#: float32 forward passes of the fixture MLP on a GPU against the CPU: the same weights,
#: products summed in another order (about 1e-7 for outputs in [0, 1]).
GPU_ATOL = 1e-5


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch as on a machine with two CUDA devices (nothing is run on them)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


@pytest.mark.parametrize("text", [None, "cpu", " CPU ", "cpu:0"])
def test_the_cpu_in_any_spelling(text: str | None) -> None:
    assert checked_device(text) == "cpu"


@pytest.mark.usefixtures("two_gpus")
@pytest.mark.parametrize(("text", "name"), [("cuda", "cuda:0"), ("cuda:1", "cuda:1")])
def test_cuda_devices_are_numbered(text: str, name: str) -> None:
    assert checked_device(text) == name


@pytest.mark.parametrize(
    ("text", "why", "gpus"),
    [
        ("gpu", "not a device name (cpu, cuda, cuda:N or mps)", False),
        ("meta", "not supported; use cpu, cuda, cuda:N or mps", False),
        ("cuda:2", "this machine has 2 CUDA device(s), from cuda:0", True),
    ],
)
def test_other_names_are_refused_in_one_line(
    text: str, why: str, gpus: bool, request: pytest.FixtureRequest
) -> None:
    if gpus:
        request.getfixturevalue("two_gpus")
    with pytest.raises(InvalidInputError) as caught:
        checked_device(text)
    assert str(caught.value) == f"--device {text}: {why}. Found {text!r}."


@no_cuda
def test_cuda_without_cuda_is_refused() -> None:
    with pytest.raises(InvalidInputError) as caught:
        checked_device("cuda", option="device")
    assert str(caught.value) == "device cuda: torch has no CUDA on this machine. Found 'cuda'."


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="this machine has MPS")
def test_mps_without_mps_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"^--device mps: torch has no MPS"):
        checked_device("mps")


class _Recording:
    """A loader that takes a device and records the one it was given."""

    name = "recording"
    suffixes = (".rec",)
    takes_device = True

    def __init__(self) -> None:
        self.given: list[str] = []

    def load(self, path: Path, *, outputs: Any = None, trust: bool = False, device: str) -> Any:
        self.given.append(device)
        return plugins.get_loader("torchscript")[0].load(MODELS / "binary_mlp.pt")


@pytest.fixture
def recording() -> Any:
    plugins._reset()
    loader = _Recording()
    plugins.register_loader("recording", loader)
    yield loader
    plugins._reset()


@pytest.mark.usefixtures("two_gpus")
def test_a_loader_that_takes_a_device_is_given_it(recording: _Recording) -> None:
    loaded = ModelFile(MODELS / "binary_mlp.pt", loader="recording", device="cuda").load()
    assert recording.given == ["cuda:0"]
    assert loaded.device == "cuda:0"


@pytest.mark.usefixtures("two_gpus")
def test_a_cpu_only_loader_refuses_another_device() -> None:
    file = ModelFile(MODELS / "binary_mlp.onnx", device="cuda:1")
    with pytest.raises(InvalidInputError) as caught:
        file.load()
    assert str(caught.value) == (
        "--device cuda:1: the onnx loader runs models on the CPU only (the torch-based "
        "loaders take a device). Found 'cuda:1'."
    )


def test_on_the_cpu_the_torch_loaders_name_their_device() -> None:
    assert ModelFile(MODELS / "binary_mlp.pt").load().device == "cpu"
    assert ModelFile(MODELS / "binary_mlp.onnx").load().device is None


@no_cuda
def test_audit_on_cuda_without_cuda_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["audit", str(MODELS / "binary_mlp.pt"), "--train", str(MODELS / "binary_train.csv")]
    argv += ["--population", str(MODELS / "binary_population.csv"), "--label-column", "label"]
    argv += ["--json", str(tmp_path / "result.json"), "--device", "cuda", "--quiet"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "epsstar audit: error: --device cuda: torch has no CUDA on this machine. Found 'cuda'.\n"
    )
    assert not (tmp_path / "result.json").exists()


@needs_cuda
@pytest.mark.parametrize("name", ["binary_mlp.pt", "multiclass_mlp.pt"])
def test_a_torchscript_model_predicts_the_same_on_a_gpu(name: str) -> None:
    rows = np.random.default_rng(0).normal(size=(1000, 8))
    on_cpu = ModelFile(MODELS / name).load().model.predict(rows)
    loaded = ModelFile(MODELS / name, device="cuda").load()
    assert loaded.device == "cuda:0"
    np.testing.assert_allclose(loaded.model.predict(rows), on_cpu, rtol=0, atol=GPU_ATOL)
