"""Without trust, a TorchScript archive that can touch files or the process is refused
before any of its code runs; with trust it loads and runs as it is."""

from __future__ import annotations

import re
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
import torch

from epsstar.cli import main
from epsstar.exceptions import InvalidInputError
from epsstar.loaders.torchscript import TorchScriptLoader
from epsstar.loaders.torchscript.scan import refused_operators

ROOT = Path(__file__).resolve().parents[2]
KINDS = ROOT / "fixtures" / "models" / "kinds"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def save(module: torch.nn.Module, path: Path) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.save(torch.jit.script(module), str(path))
    return path


def refusal(path: Path, operator: str) -> str:
    return (
        rf"^the TorchScript model {path} must not touch files or the process to be loaded "
        rf"without --trust-model; it calls {operator} \(in [\w.]+\)\. Load it with "
        rf"--trust-model only if you trust its source\. Found {operator}\.$"
    )


def test_a_module_writing_a_file_is_refused_and_writes_nothing(
    tmp_path: Path, fixture_builder: Callable[[str], ModuleType]
) -> None:
    target = tmp_path / "written.bin"
    path = save(fixture_builder("sklearn_models").FileWriter(str(target)), tmp_path / "writer.pt")
    assert not target.exists()
    with pytest.raises(InvalidInputError, match=refusal(path, "aten::from_file")):
        TorchScriptLoader().load(path)
    assert not target.exists()
    # With trust it runs, and writes: the refusal above is what kept the file away.
    model = TorchScriptLoader().load(path, trust=True)
    assert not target.exists()  # loading does not run forward
    assert model.predict(np.ones((2, 3))).shape == (2,)
    assert target.read_bytes() == np.ones(16, dtype=np.float32).tobytes()


def test_the_committed_file_writer_is_refused(fixture_builder: Callable[[str], ModuleType]) -> None:
    target = Path(fixture_builder("sklearn_models").FILEWRITER_TARGET)
    before = target.stat().st_mtime_ns if target.exists() else None
    path = KINDS / "filewriter.pt"
    with pytest.raises(InvalidInputError, match=refusal(path, "aten::from_file")):
        TorchScriptLoader().load(path)
    assert (target.stat().st_mtime_ns if target.exists() else None) == before


def test_the_command_line_exits_2_with_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fixture_builder: Callable[[str], ModuleType]
) -> None:
    target = tmp_path / "written.bin"
    path = save(fixture_builder("sklearn_models").FileWriter(str(target)), tmp_path / "writer.pt")
    values = np.random.default_rng(0).normal(size=(400, 3))
    rows = pd.DataFrame({"a": values[:, 0], "b": values[:, 1], "c": values[:, 2]})
    rows["y"] = np.arange(400) % 2
    rows.iloc[:200].to_csv(tmp_path / "train.csv", index=False)
    rows.iloc[200:].to_csv(tmp_path / "population.csv", index=False)
    code = main(
        [
            "audit", str(path), "--train", str(tmp_path / "train.csv"),
            "--population", str(tmp_path / "population.csv"), "--label-column", "y",
        ]
    )  # fmt: skip
    error = capsys.readouterr().err.strip()
    assert code == 2
    assert len(error.splitlines()) == 1
    assert "it calls aten::from_file" in error
    assert str(path) in error
    assert not target.exists()


class _Helper(torch.nn.Module):
    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    @torch.jit.export
    def side(self) -> torch.Tensor:
        return torch.from_file(self.target, shared=True, size=4)


class _OtherMethod(torch.nn.Module):
    """``forward`` is harmless; another method of a submodule writes."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.helper = _Helper(target)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.helper(x).sum(dim=1)


def _open(target: str) -> torch.Tensor:
    return torch.from_file(target, shared=True, size=4)


class _ThroughFunction(torch.nn.Module):
    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1) + _open(self.target).sum()


class _Forked(torch.nn.Module):
    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        future = torch.jit.fork(_open, self.target)
        return x.sum(dim=1) + torch.jit.wait(future).sum()


class _Reseeds(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        torch.manual_seed(0)
        return x.sum(dim=1)


@pytest.mark.parametrize(
    ("module", "operator"),
    [
        (_OtherMethod, "aten::from_file"),
        (_ThroughFunction, "aten::from_file"),
        (_Forked, "aten::from_file"),
        (_Reseeds, "aten::manual_seed"),
    ],
)
def test_every_method_call_and_subgraph_is_checked(
    tmp_path: Path, module: type[torch.nn.Module], operator: str
) -> None:
    target = tmp_path / "written.bin"
    built = module(str(target)) if module is not _Reseeds else module()  # type: ignore[call-arg]
    path = save(built, tmp_path / "model.pt")
    with pytest.raises(InvalidInputError, match=refusal(path, operator)):
        TorchScriptLoader().load(path)
    assert not target.exists()


class _SetState(torch.nn.Module):
    """Runs ``__setstate__`` inside ``torch.jit.load``, before any check could see it."""

    def __init__(self, target: str) -> None:
        super().__init__()
        self.target = target
        self.buffer = torch.zeros(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1)

    @torch.jit.export
    def __getstate__(self) -> tuple[str, bool]:
        return (self.target, self.training)

    @torch.jit.export
    def __setstate__(self, state: tuple[str, bool]) -> None:
        self.target = state[0]
        self.training = state[1]
        self.buffer = torch.from_file(self.target, shared=True, size=4).fill_(1.0)


def test_setstate_is_refused_before_torch_loads_the_archive(tmp_path: Path) -> None:
    target = tmp_path / "written.bin"
    path = save(_SetState(str(target)), tmp_path / "setstate.pt")
    target.unlink(missing_ok=True)  # saving does not run it; make sure
    with pytest.raises(
        InvalidInputError,
        match=r"it defines __setstate__, which torch\.jit\.load runs before the model can be "
        r"checked\. Load it with --trust-model only if you trust its source\. Found "
        r"__setstate__ in setstate/code/.+\.py\.$",
    ):
        TorchScriptLoader().load(path)
    assert not target.exists()
    TorchScriptLoader().load(path, trust=True)
    assert target.exists()  # torch.jit.load ran it: the refusal is real


def _rewritten(source: Path, path: Path, hide: str) -> Path:
    """``source`` with its ``__setstate__`` code hidden from a scan by name: behind a clean
    duplicate entry read last by Python's zipfile (torch reads the first), or under a name
    in other case (torch's reader ignores case)."""
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(path, "w") as out:
        for entry in archive.infolist():
            data = archive.read(entry)
            if entry.filename.endswith(".py") and b"__setstate__" in data:
                if hide == "duplicate":
                    out.writestr(entry.filename, data)
                    clean = re.sub(rb"(?s)  def __setstate__.*?(?=\n  def |\Z)", b"", data)
                    assert b"__setstate__" not in clean
                    out.writestr(entry.filename, clean)
                    continue
                out.writestr(entry.filename.replace("/code/", "/CODE/").upper(), data)
                continue
            out.writestr(entry.filename, data)
    return path


@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")
@pytest.mark.parametrize("hide", ["duplicate", "case"])
def test_setstate_hidden_from_a_scan_by_name_is_refused_before_it_runs(
    tmp_path: Path, hide: str
) -> None:
    target = tmp_path / "written.bin"
    saved = save(_SetState(str(target)), tmp_path / "setstate.pt")
    path = _rewritten(saved, tmp_path / f"{hide}.pt", hide)
    target.unlink(missing_ok=True)
    expected = "two zip entries of the same name" if hide == "duplicate" else "__setstate__ in"
    with pytest.raises(InvalidInputError, match=expected):
        TorchScriptLoader().load(path)
    assert not target.exists()
    TorchScriptLoader().load(path, trust=True)
    assert target.exists()  # torch.jit.load ran the hidden code: the refusal is real


def test_names_equal_up_to_case_are_refused(tmp_path: Path) -> None:
    saved = save(torch.nn.Linear(3, 1), tmp_path / "plain.pt")
    path = tmp_path / "cased.pt"
    with zipfile.ZipFile(saved) as archive, zipfile.ZipFile(path, "w") as out:
        for entry in archive.infolist():
            out.writestr(entry.filename, archive.read(entry))
        out.writestr(archive.infolist()[0].filename.upper(), b"")
    with pytest.raises(InvalidInputError, match=r"the same name \(up to case\)"):
        TorchScriptLoader().load(path)


class _Printing(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] < 0:
            print("never")
        return torch.softmax(x, dim=1)


@pytest.mark.parametrize(
    "module",
    [
        torch.nn.Sequential(
            torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Dropout(), torch.nn.Linear(16, 3),
        ),
        torch.nn.LSTM(3, 4, batch_first=True),
        torch.nn.TransformerEncoderLayer(8, 2, batch_first=True),
        _Printing(),
    ],
    ids=["cnn", "lstm", "transformer", "print"],
)  # fmt: skip
def test_tensor_math_loads_without_trust(tmp_path: Path, module: torch.nn.Module) -> None:
    path = save(module.eval(), tmp_path / "model.pt")
    assert TorchScriptLoader().load(path, outputs="logits").n_features is None


def test_the_shipped_models_load_without_trust() -> None:
    for path in [*sorted((ROOT / "fixtures" / "models").glob("*.pt")), KINDS / "digits_cnn.pt"]:
        TorchScriptLoader().load(path)


def test_the_rule_refuses_the_operators_that_take_a_file_name() -> None:
    refused = refused_operators(torch)
    assert {"aten::from_file", "aten::save", "aten::manual_seed", "prim::PythonOp"} <= refused
    assert not any(name.startswith("aten::linear") or name == "prim::Print" for name in refused)
