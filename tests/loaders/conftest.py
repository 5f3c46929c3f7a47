"""The model fixtures in ``fixtures/models/``, for the loader tests.

A test taking an argument ``fixture_model`` runs once per model in the manifest, or
once per model matching ``@pytest.mark.models(predicate, **attributes)``; the
``read_table`` fixture returns ``(features, labels)`` of one split.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"
BUILDERS = Path(__file__).resolve().parents[2] / "fixtures" / "kinds"
FEATURES = [f"x{i}" for i in range(8)]


@dataclass(frozen=True)
class Fixture:
    file: str
    task: str
    model: str
    format: str
    output_kind: str
    input_dtype: str
    classes: tuple[Any, ...]
    zipmap: bool | None = None
    producer: str | None = None

    @property
    def path(self) -> Path:
        return MODELS / self.file


@cache
def manifest() -> tuple[Fixture, ...]:
    entries = json.loads((MODELS / "manifest.json").read_text())["models"]
    return tuple(Fixture(**{**e, "classes": tuple(e["classes"])}) for e in entries)


@cache
def table(task: str, part: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (float64) and labels of one split, read from Parquet."""
    frame = pd.read_parquet(MODELS / f"{task}_{part}.parquet")
    return frame[FEATURES].to_numpy(dtype=np.float64), frame["label"].to_numpy()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "models(predicate, **attributes): the fixture models a test runs on"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "fixture_model" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("models")
    predicate = marker.args[0] if marker and marker.args else (lambda fixture: True)
    where = marker.kwargs if marker else {}
    selected = [
        fixture
        for fixture in manifest()
        if predicate(fixture) and all(getattr(fixture, k) == v for k, v in where.items())
    ]
    metafunc.parametrize("fixture_model", selected, ids=[f.file for f in selected])


@pytest.fixture(scope="session")
def all_models() -> tuple[Fixture, ...]:
    return manifest()


@pytest.fixture(scope="session")
def read_table() -> Callable[[str, str], tuple[np.ndarray, np.ndarray]]:
    return table


@pytest.fixture(scope="session")
def models_dir() -> Path:
    return MODELS


def _builder(name: str) -> ModuleType:
    """``fixtures/kinds/<name>.py``, imported from its file once per process.

    It is registered in ``sys.modules``: ``torch.jit.script`` reads the source of the
    classes it scripts through their module.
    """
    key = f"epsstar_fixture_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, BUILDERS / f"{name}.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


@pytest.fixture(scope="session")
def fixture_builder() -> Callable[[str], ModuleType]:
    """The builder module of the model fixtures in ``fixtures/models/kinds/``, by name
    (``"sklearn_models"``, ``"onnx_models"``, ``"gbm_models"``)."""
    return _builder
