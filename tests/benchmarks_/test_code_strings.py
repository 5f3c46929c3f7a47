"""The Python code that benchmarks run in fresh processes (as strings) still names epsstar's
modules and names as they are: such code is no import of the script, so neither mypy nor
import-linter reads it, and a rename would otherwise break the benchmark unseen."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _code_strings(script: Path) -> list[str]:
    """Every module-level string constant of ``script`` that parses as Python with an import
    (the string is taken whole, concatenations and ``PEAK + (...)`` parts alike)."""
    found = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if "import " not in text or "\n" not in text:
                continue
            try:
                ast.parse(text)
            except SyntaxError:
                continue
            found.append(text)
    return found


def _epsstar_imports(code: str) -> list[tuple[str, str | None]]:
    """(module, name) for each ``from epsstar... import name`` and ``import epsstar...``."""
    imports: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("epsstar"):
            imports += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            imports += [(a.name, None) for a in node.names if a.name.startswith("epsstar")]
    return imports


CASES = [
    pytest.param(script, module, name, id=f"{script.name}:{module}.{name or ''}")
    for script in sorted(BENCHMARKS.glob("*.py"))
    for code in _code_strings(script)
    for module, name in _epsstar_imports(code)
]


def test_some_benchmark_runs_code_in_a_fresh_process() -> None:
    assert CASES, "the scan found no code string: it no longer reads the benchmarks"


@pytest.mark.parametrize(("script", "module", "name"), CASES)
def test_code_strings_name_what_exists(script: Path, module: str, name: str | None) -> None:
    imported = importlib.import_module(module)
    if name is not None:
        assert hasattr(imported, name), f"{script.name}: {module} has no {name}"
