"""A benchmark script (or a module one writes) imported from its file, for its tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def imported(path: Path, name: str) -> ModuleType:
    """The module at ``path`` under ``name`` (registered, so that its dataclasses resolve)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
