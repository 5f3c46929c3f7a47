"""The loader registry: entry-point discovery, lookup, protocol checks, suffixes."""

from __future__ import annotations

import importlib.metadata
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import epsstar
from epsstar.audit.model import plugins
from epsstar.audit.model.plugins import (
    LoaderInfo,
    ModelLoader,
    available_loaders,
    get_loader,
    loader_for_path,
    register_loader,
)
from epsstar.exceptions import InvalidInputError

ROOT = Path(__file__).resolve().parents[2]
BUILT_IN = {
    "onnx": "epsstar.loaders.onnx:OnnxLoader",
    "sklearn": "epsstar.loaders.sklearn:SklearnLoader",
    "torchscript": "epsstar.loaders.torchscript:TorchScriptLoader",
}


@pytest.fixture(autouse=True)
def fresh_registry() -> Iterator[None]:
    """Every test starts from, and leaves behind, a registry read from the entry points."""
    plugins._reset()
    yield
    plugins._reset()


class DummyLoader:
    name = "dummy"
    suffixes = (".dummy", ".onnx")

    def load(self, path: Path, *, outputs: Any = None, trust: bool = False) -> Any:
        raise NotImplementedError


class NoLoad:
    name = "noload"
    suffixes = (".x",)


def fake_entry_points(
    monkeypatch: pytest.MonkeyPatch, *extra: importlib.metadata.EntryPoint
) -> None:
    real = importlib.metadata.entry_points(group=plugins.ENTRY_POINT_GROUP)

    def entry_points(*, group: str) -> list[importlib.metadata.EntryPoint]:
        assert group == plugins.ENTRY_POINT_GROUP
        return [*real, *extra]

    monkeypatch.setattr(plugins, "entry_points", entry_points)


def test_built_in_loaders_are_discovered_through_entry_points() -> None:
    found = available_loaders()
    assert set(BUILT_IN) <= set(found)
    for name, value in BUILT_IN.items():
        info = found[name]
        assert info == LoaderInfo(name, value, "epsstar", importlib.metadata.version("epsstar"))
        assert info.version == epsstar.__version__
        assert info.to_dict() == {
            "name": name,
            "value": value,
            "distribution": "epsstar",
            "version": epsstar.__version__,
        }
        assert str(info) == f"{name} (epsstar {epsstar.__version__})"


def test_every_declared_entry_point_names_its_loader_in_the_source_tree() -> None:
    """pyproject.toml's entry points resolve in this source tree, each to the loader of its
    name (a moved module fails here, not at the next install), and the installed metadata
    declares the same values, which the JSON records as ``loader.value``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = config["project"]["entry-points"][plugins.ENTRY_POINT_GROUP]
    for name, value in declared.items():
        target = importlib.metadata.EntryPoint(name, value, plugins.ENTRY_POINT_GROUP).load()
        assert (target() if isinstance(target, type) else target).name == name, value
    installed = {
        entry.name: entry.value
        for entry in importlib.metadata.entry_points(group=plugins.ENTRY_POINT_GROUP)
        if entry.dist is not None and entry.dist.name == "epsstar"
    }
    assert installed == declared, "the installed metadata is stale: pip install -e . again"


def test_discovery_imports_no_plugin_and_runs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = plugins.entry_points

    def counting(*, group: str) -> Any:
        calls.append(group)
        return real(group=group)

    monkeypatch.setattr(plugins, "entry_points", counting)
    available_loaders()
    available_loaders()
    get_loader("onnx")
    assert calls == [plugins.ENTRY_POINT_GROUP]


def test_view_is_read_only() -> None:
    view = available_loaders()
    with pytest.raises(TypeError):
        view["mine"] = LoaderInfo("mine", "x:y", None, None)  # type: ignore[index]
    with pytest.raises(TypeError):
        del view["onnx"]  # type: ignore[attr-defined]


def test_get_loader_returns_instances_meeting_the_protocol() -> None:
    for name in BUILT_IN:
        loader, info = get_loader(name)
        assert isinstance(loader, ModelLoader)
        assert loader.name == name == info.name
        assert get_loader(name)[0] is loader  # imported once


def test_unknown_loader_lists_the_available_names() -> None:
    with pytest.raises(
        InvalidInputError,
        match=r"lightgbm, onnx, served, sklearn, .*torchscript, xgboost\. Found 'tflite'\.",
    ):
        get_loader("tflite")


def test_register_loader_and_force_guard() -> None:
    info = register_loader("dummy", DummyLoader())
    assert info == LoaderInfo("dummy", f"{__name__}:DummyLoader", None, None)
    assert available_loaders()["dummy"] == info
    loader, got = get_loader("dummy")
    assert isinstance(loader, DummyLoader)
    assert got == info
    with pytest.raises(InvalidInputError, match=r"'dummy' is already registered.*force=True"):
        register_loader("dummy", DummyLoader())
    register_loader("dummy", DummyLoader, force=True)  # a class is instantiated
    assert isinstance(get_loader("dummy")[0], DummyLoader)
    with pytest.raises(InvalidInputError, match=r"'onnx' is already registered \(onnx \(epsstar"):
        register_loader("onnx", DummyLoader())


def test_register_loader_refuses_an_object_without_load() -> None:
    with pytest.raises(InvalidInputError) as caught:
        register_loader("noload", NoLoad())
    message = str(caught.value)
    assert message.startswith(f"loader plugin 'noload' ({__name__}:NoLoad) must have")
    assert "callable 'load(" in message
    assert "noload" not in available_loaders()


@pytest.mark.parametrize(
    ("loader", "fragment"),
    [
        (type("L", (), {"name": "other", "suffixes": (".x",), "load": print})(), "found name"),
        (type("L", (), {"name": "bad", "suffixes": ["x"], "load": print})(), "'suffixes'"),
        (type("L", (), {"suffixes": (".x",), "load": print})(), "'name'"),
    ],
)
def test_register_loader_names_what_is_wrong(loader: Any, fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=r"loader plugin 'bad'") as caught:
        register_loader("bad", loader)
    assert fragment in str(caught.value)


def test_fake_entry_point_without_load_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    value = f"{__name__}:NoLoad"
    fake_entry_points(
        monkeypatch,
        importlib.metadata.EntryPoint("noload", value, plugins.ENTRY_POINT_GROUP),
    )
    assert available_loaders()["noload"] == LoaderInfo("noload", value, None, None)
    with pytest.raises(InvalidInputError, match=rf"loader plugin 'noload' \({value}\) must have"):
        get_loader("noload")
    # the other loaders keep working and suffix lookup names the broken plugin
    assert get_loader("onnx")[1].name == "onnx"
    with pytest.raises(InvalidInputError, match=r"not importable: noload"):
        loader_for_path(Path("model.unknown"))


def test_entry_point_with_missing_dependency_gives_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    fake_entry_points(
        monkeypatch,
        importlib.metadata.EntryPoint("ghost", "no_such_module_xyz:Loader", "epsstar.loaders"),
        importlib.metadata.EntryPoint("needsort", "onnxruntime:Loader", "epsstar.loaders"),
    )
    with pytest.raises(InvalidInputError, match=r"'ghost' .* could not be imported\. Found Modu"):
        get_loader("ghost")
    with pytest.raises(
        InvalidInputError,
        match=r"'needsort' \(onnxruntime:Loader\) could not be imported\. Install it with: "
        r'pip install "epsstar\[onnx\]"\.',
    ):
        get_loader("needsort")


def test_import_optional_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(
        InvalidInputError,
        match=r"the onnx loader needs the onnxruntime package\. Install it with: "
        r'pip install "epsstar\[onnx\]"\.',
    ):
        plugins.import_optional("onnxruntime", loader="onnx")
    loader, _ = get_loader("onnx")
    with pytest.raises(InvalidInputError, match=r"epsstar\[onnx\]"):
        loader.load(Path("model.onnx"))


@pytest.mark.parametrize(
    ("file_name", "expected"),
    [
        ("model.onnx", "onnx"),
        ("dir/MODEL.ONNX", "onnx"),
        ("net.pt", "torchscript"),
        ("net.pth", "torchscript"),
        ("clf.skops", "sklearn"),
        ("clf.pkl", "sklearn"),
        ("clf.joblib", "sklearn"),
    ],
)
def test_loader_for_path_by_suffix(file_name: str, expected: str) -> None:
    loader, info = loader_for_path(Path(file_name))
    assert loader.name == info.name == expected


def test_unknown_suffix_lists_loaders_and_suffixes() -> None:
    with pytest.raises(InvalidInputError) as caught:
        loader_for_path(Path("model.bin"))
    message = str(caught.value)
    assert "onnx (.onnx)" in message
    assert "sklearn (.skops, .pkl, .pickle, .joblib)" in message
    assert "keras (.keras, .h5, .hdf5)" in message
    assert message.endswith("Found 'model.bin'.")


def test_ambiguous_suffix_names_the_claimants() -> None:
    register_loader("dummy", DummyLoader())
    assert loader_for_path(Path("a.dummy"))[1].name == "dummy"
    with pytest.raises(InvalidInputError, match=r"claimed by dummy, onnx"):
        loader_for_path(Path("a.onnx"))


def test_longest_suffix_wins() -> None:
    long = type("L", (), {"name": "long", "suffixes": (".tar.onnx",), "load": print})()
    register_loader("long", long)
    assert loader_for_path(Path("m.tar.onnx"))[1].name == "long"
    assert loader_for_path(Path("m.onnx"))[1].name == "onnx"


def test_same_name_from_two_distributions_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_entry_points(
        monkeypatch,
        importlib.metadata.EntryPoint("onnx", "other.module:Loader", "epsstar.loaders"),
    )
    assert available_loaders()["onnx"].distribution == "epsstar"
    with pytest.raises(InvalidInputError, match=r"supplied by one installed distribution"):
        get_loader("onnx")


def test_import_of_plugins_module_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, epsstar.audit.model.plugins as p; p.available_loaders(); "
        "print(','.join(m for m in ('torch', 'onnxruntime', 'skops', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
