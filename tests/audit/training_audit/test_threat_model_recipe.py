"""The recipe "a new threat model of a training audit" of docs/architecture.md, followed as
written in a copy of the package under tmp_path: its module and its test written where their
first lines say, its name added to the two lists the recipe names; the command line then offers
it, and the registry's tests, the schema's and the docs' pass with it in the copy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
RECIPE = "**A new threat model of a training audit.**"
COPIED = ("epsstar", "loaders", "reports", "tests", "docs", "pyproject.toml")
CACHES = shutil.ignore_patterns("__pycache__", ".mypy_cache", ".pytest_cache", ".hypothesis")


def recipe_blocks() -> list[tuple[str, str]]:
    """``(path, text)`` of each Python block of the recipe, by the path its first line names."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index(RECIPE)
    end = min(
        index
        for index in (text.find("\n**", start + len(RECIPE)), text.find("\n## ", start))
        if index > 0
    )
    blocks = re.findall(r"```python\n# (\S+)\n(.*?)```", text[start:end], flags=re.DOTALL)
    assert len(blocks) == 2, "the recipe shows one module and one test"
    return [(path, body) for path, body in blocks]


def _run(copy: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=copy,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def _add_row(page: Path, name: str) -> None:
    """A row for ``name`` at the end of the page's table of threat models."""
    lines = page.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| name | canaries |"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    row = f"| `{name}` | population records | the final model's predictions | its loss | any |"
    page.write_text("\n".join([*lines[:end], row, *lines[end:]]) + "\n", encoding="utf-8")


@pytest.mark.slow
def test_the_recipe_adds_a_threat_model_in_one_module_and_one_test(tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, copy / name, symlinks=True, ignore=CACHES)
        else:
            shutil.copy2(source, copy / name)
    (module_path, module), (test_path, test) = recipe_blocks()
    assert module_path.startswith("epsstar/audit/training_audit/threats/")
    assert not (ROOT / module_path).exists()
    (copy / module_path).write_text(module, encoding="utf-8")
    (copy / test_path).write_text(test, encoding="utf-8")
    module_name = module_path.removesuffix(".py").replace("/", ".")
    named = _run(copy, "-c", f"import {module_name} as m; print(m.THREAT_MODEL.name)")
    assert named.returncode == 0, named.stderr
    name = named.stdout.strip()

    schema_path = copy / "epsstar" / "schemas" / "audit-training.schema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    schema["$defs"]["threat_model_name"]["enum"].append(name)
    schema_path.write_text(json.dumps(schema, indent=2, ensure_ascii=False), encoding="utf-8")
    _add_row(copy / "docs" / "training-audit.md", name)

    shown = _run(copy, "-m", "epsstar", "audit-training", "--help")
    assert shown.returncode == 0, shown.stderr
    assert name in "".join(shown.stdout.split())

    tests = _run(
        copy,
        "-m",
        "pytest",
        "-q",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
        "-rA",
        "tests/contracts/test_registries.py",
        "tests/audit/training_audit/test_threat_model_registry.py",
        test_path,
    )
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    passed = tests.stdout
    assert f"test_an_audit_under_it_refutes_a_procedure_that_remembers[{name}]" in passed
    assert f"test_a_procedure_that_does_not_serve_it_is_refused_in_one_line[{name}]" in passed
    assert f"test_the_command_line_and_the_schema_offer_it[{name}]" in passed
    assert Path(test_path).name in passed
