"""``.pt2`` archives that would run code while ``torch.export.load`` reads them.

Each archive is a working program with one entry replaced or added, in each layout torch
reads: the current one (records under a root folder) and the older one (flat entries), at
every place torch unpickles, evaluates or maps into the process. With ``--trust-model`` the
payload runs (the marker file appears: the case is a real attack); without it, ``audit``,
an MLflow pytorch folder and an ``audit-many`` manifest refuse it in one line naming the
file and ``--trust-model`` (``audit-many`` records the model as failed with that line), and
the marker never appears.
"""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.cli import main
from epsstar.exceptions import InvalidInputError

torch = pytest.importorskip("torch")

from epsstar.loaders.torch_export import TorchExportLoader  # noqa: E402
from epsstar.loaders.torch_export.archive import expression_is_arithmetic  # noqa: E402


class _Writes:
    """Unpickled, it creates the marker file (``open(marker, "w")``)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.marker, "w"))


def _pickle(marker: Path) -> bytes:
    return pickle.dumps(_Writes(marker))


def _saved(marker: Path) -> bytes:
    buffer = io.BytesIO()
    torch.save({"x": _Writes(marker)}, buffer)
    return buffer.getvalue()


def _expression(marker: Path) -> str:
    return f"__import__('pathlib').Path({str(marker)!r}).touch()"


class _Network(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(3, 2)

    def forward(self, x: Any) -> Any:
        return self.layer(x)


@pytest.fixture(scope="module")
def program() -> Any:
    torch.manual_seed(0)
    batch = torch.export.Dim("batch")
    return torch.export.export(_Network(), (torch.zeros(4, 3),), dynamic_shapes=({0: batch},))


def _current(program: Any, path: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    """``torch.export.save``'s archive with its records (root folder aside) changed."""
    saved = path.with_suffix(".saved.pt2")
    torch.export.save(program, saved)
    with zipfile.ZipFile(saved) as archive:
        root = archive.namelist()[0].split("/", 1)[0]
        records = {n.split("/", 1)[1]: archive.read(n) for n in archive.namelist()}
    change(records)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in records.items():
            archive.writestr(f"{root}/{name}", data)
    saved.unlink()
    return path


def _older(program: Any, path: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    """The layout torch wrote before 2.8 (flat entries), with its entries changed."""
    from torch._export.serde.schema import SCHEMA_VERSION
    from torch._export.serde.serialize import serialize

    artifact = serialize(program)
    entries = {
        "serialized_exported_program.json": artifact.exported_program,
        "serialized_state_dict.pt": artifact.state_dict,
        "serialized_constants.pt": artifact.constants,
        "serialized_example_inputs.pt": artifact.example_inputs,
        "version": ".".join(map(str, SCHEMA_VERSION)).encode(),
    }
    change(entries)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


def _first_expression(document: bytes, marker: Path) -> bytes:
    text = document.decode()
    start = text.index('"expr_str": "') + len('"expr_str": "')
    end = text.index('"', start)
    return (text[:start] + json.dumps(_expression(marker))[1:-1] + text[end:]).encode()


def _payload_config(
    records: dict[str, bytes], config: str, stored: str, data: bytes, *, use_pickle: bool
) -> None:
    meta = {"path_name": stored, "is_param": False, "use_pickle": use_pickle,
            "tensor_meta": None}  # fmt: skip
    document = json.loads(records[config])
    document["config"]["hostile"] = meta
    records[config] = json.dumps(document).encode()
    records[f"data/constants/{stored}" if "constants" in config else f"data/weights/{stored}"] = (
        data
    )


def _replace(name: str, data: Callable[[Path], bytes]) -> Callable[[Path], Callable[..., None]]:
    def change(marker: Path) -> Callable[[dict[str, bytes]], None]:
        def apply(records: dict[str, bytes]) -> None:
            records[name] = data(marker)

        return apply

    return change


def _drop(name: str, then: Callable[[Path], Callable[..., None]]) -> Callable[[Path], Any]:
    def change(marker: Path) -> Callable[[dict[str, bytes]], None]:
        def apply(records: dict[str, bytes]) -> None:
            records.pop(name)
            then(marker)(records)

        return apply

    return change


WEIGHTS_CONFIG = "data/weights/model_weights_config.json"
CONSTANTS_CONFIG = "data/constants/model_constants_config.json"

#: case -> (layout, the change that plants the payload, the refusal's words).
CASES: dict[str, tuple[Callable[..., Path], Callable[[Path], Any], str]] = {
    "current sample inputs": (
        _current, _replace("data/sample_inputs/model.pt", _saved), "weights_only loading refuses"
    ),
    "current single-file weights": (
        _current, _replace("data/weights/model.pt", _saved), "weights_only loading refuses"
    ),
    "current single-file constants": (
        _current, _replace("data/constants/model.pt", _saved), "weights_only loading refuses"
    ),
    "current pickled weight": (
        _current,
        lambda marker: lambda records: _payload_config(
            records, WEIGHTS_CONFIG, "weight_9", _saved(marker), use_pickle=True
        ),
        "weights_only loading refuses",
    ),
    "current pickled tensor constant": (
        _current,
        lambda marker: lambda records: _payload_config(
            records, CONSTANTS_CONFIG, "tensor_9", _saved(marker), use_pickle=True
        ),
        "weights_only loading refuses",
    ),
    "current opaque constant": (
        _current,
        lambda marker: lambda records: _payload_config(
            records, CONSTANTS_CONFIG, "opaque_obj_0", _pickle(marker), use_pickle=True
        ),
        "a constant that is not a tensor",
    ),
    "current expression": (
        _current,
        lambda marker: lambda records: records.update(
            {"models/model.json": _first_expression(records["models/model.json"], marker)}
        ),
        "sympy would evaluate as Python",
    ),
    "older state dict .json": (
        _older,
        _drop("serialized_state_dict.pt", _replace("serialized_state_dict.json", _pickle)),
        "weights_only loading refuses",
    ),
    "older state dict .pt": (
        _older, _replace("serialized_state_dict.pt", _pickle), "weights_only loading refuses"
    ),
    "older constants .json": (
        _older,
        _drop("serialized_constants.pt", _replace("serialized_constants.json", _pickle)),
        "weights_only loading refuses",
    ),
    "older constants .pt": (
        _older, _replace("serialized_constants.pt", _saved), "weights_only loading refuses"
    ),
    "older example inputs": (
        _older, _replace("serialized_example_inputs.pt", _pickle), "weights_only loading refuses"
    ),
    "older expression": (
        _older,
        lambda marker: lambda records: records.update(
            {
                "serialized_exported_program.json": _first_expression(
                    records["serialized_exported_program.json"], marker
                )
            }
        ),
        "sympy would evaluate as Python",
    ),
}  # fmt: skip


def _torch_reads(case: str) -> bool:
    """Whether this torch reads the entry the case plants (opaque constants: from torch 2.13)."""
    from torch.export.pt2_archive import constants

    return case != "current opaque constant" or hasattr(constants, "OPAQUE_OBJ_FILENAME_PREFIX")


def _hostile(program: Any, case: str, folder: Path) -> tuple[Path, Path, str]:
    layout, change, words = CASES[case]
    marker = folder / "marker"
    folder.mkdir(parents=True, exist_ok=True)
    return layout(program, folder / "model.pt2", change(marker)), marker, words


def _tables(folder: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    paths = []
    for name in ("train", "population"):
        frame = pd.DataFrame(rng.normal(size=(200, 3)), columns=["f0", "f1", "f2"])
        frame["label"] = (frame["f0"] > 0).astype(int)
        frame.to_csv(folder / f"{name}.csv", index=False)
        paths.append(folder / f"{name}.csv")
    return paths[0], paths[1]


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("case", list(CASES))
def test_the_payload_runs_only_with_trust(program: Any, case: str, tmp_path: Path) -> None:
    path, marker, words = _hostile(program, case, tmp_path)
    with pytest.raises(InvalidInputError, match=f"{words}.*--trust-model"):
        TorchExportLoader().load(path)
    assert not marker.exists()
    if not _torch_reads(case):
        pytest.skip(f"torch {torch.__version__} reads no opaque constants: no attack to run")
    with contextlib.suppress(Exception):  # torch may fail once the payload ran
        TorchExportLoader().load(path, trust=True)
    assert marker.exists(), "the crafted archive is no attack: its payload did not run"


@pytest.mark.parametrize("case", list(CASES))
def test_audit_refuses_it_in_one_line(
    program: Any, case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, marker, _ = _hostile(program, case, tmp_path / "model")
    train, population = _tables(tmp_path)
    report = tmp_path / "audit.json"
    command = ["audit", str(path), "--train", str(train), "--population", str(population)]
    assert main([*command, "--label-column", "label", "--json", str(report)]) == 2
    line = _one_line(capsys)
    assert str(path) in line
    assert "--trust-model" in line
    assert not marker.exists()
    assert not report.exists()


@pytest.mark.parametrize("case", ["older state dict .json", "current expression"])
def test_an_mlflow_folder_and_a_manifest_refuse_it(
    program: Any, case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mlflow"
    path, marker, _ = _hostile(program, case, folder / "data")
    (folder / "MLmodel").write_text("flavors:\n  pytorch:\n    model_data: data\n", "utf-8")
    train, population = _tables(tmp_path)
    report = tmp_path / "audit.json"
    command = ["audit", str(folder), "--train", str(train), "--population", str(population)]
    assert main([*command, "--label-column", "label", "--json", str(report)]) == 2
    line = _one_line(capsys)
    assert str(path) in line
    assert "--trust-model" in line

    manifest = tmp_path / "models.toml"
    manifest.write_text(
        f'label_column = "label"\n[[models]]\nmodel = "{path}"\n'
        f'train = "{train}"\npopulation = "{population}"\n',
        encoding="utf-8",
    )
    assert not report.exists()
    # audit-many records the model as failed (exit code 3) and goes on with the others
    assert main(["audit-many", str(manifest), "--json", str(report)]) == 3
    line = _one_line(capsys)
    assert str(path) in line
    assert "--trust-model" in line
    assert not marker.exists()


def test_a_compiled_library_is_refused_without_trust(program: Any, tmp_path: Path) -> None:
    path = _current(
        program,
        tmp_path / "model.pt2",
        lambda records: records.update({"data/aotinductor/model/model.so": b"\x7fELF"}),
    )
    with pytest.raises(InvalidInputError, match="compiled library.*--trust-model"):
        TorchExportLoader().load(path)


@pytest.mark.parametrize(
    "expression",
    [
        "Symbol('s77', positive=True, integer=True)",
        "Add(FloorDiv(Pow(Symbol('s77', positive=True, integer=True), Integer(2)), "
        "Integer(3)), Integer(1))",
        "Max(2, s0) + Mod(s1, 3)",
        "Pow(Symbol('s0', positive=True, integer=True), Integer(-1))",
        "Float('1.5', precision=53)",
        "-int_oo",
    ],
)
def test_shape_expressions_torch_writes_are_read(expression: str) -> None:
    assert expression_is_arithmetic(expression)


@pytest.mark.parametrize(
    "expression",
    [
        "Pow(Integer(9), Pow(Integer(9), Integer(99)))",  # evaluates to a number without end
        "9**9**9",
        "(s0**99)**99",
        "Rational('1e99999999')",
        "Symbol('s0').__class__",
        "Integer(" + "9" * 50 + ")",
        "preview(s0)",
        "[s0][0]",
    ],
)
def test_expressions_that_do_more_than_arithmetic_are_refused(expression: str) -> None:
    assert not expression_is_arithmetic(expression)


def test_a_plain_program_of_either_layout_loads(program: Any, tmp_path: Path) -> None:
    for layout in (_current, _older):
        path = layout(program, tmp_path / f"{layout.__name__}.pt2", lambda records: None)
        assert TorchExportLoader().load(path).predict(np.ones((5, 3))).shape == (5, 2)
