"""Every recipe of docs/architecture.md ("Where to add things"), followed literally in a copy of
the tree, leaves a tree that passes tests/test_layers.py.

A recipe is a paragraph that opens with ``**A new ….**``; the section's first paragraph says
how its words are followed (the patterns of :data:`STEP` below): a folder gets a new module, a
file a function, a name or the import of the newest new module, ``pyproject.toml`` an entry
point. The copy lives in ``tmp_path``; the checkout is never written.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
SECTION = "## Where to add things"
#: What a recipe's copy holds: the library, the contracts and the structure tests.
COPIED = ("epsstar", "loaders", "reports", "pyproject.toml", "tests/test_layers.py")

#: The steps a recipe's words name, in the order the recipe names them.
STEP = re.compile(
    r"one line in the `(?P<group>[\w.]+)` entry points of `(?P<toml>pyproject\.toml)`"
    r"|names? (?:and descriptions )?in `(?P<names>\w+)` of `(?P<listing>[^`]+\.py)`"
    r"|function in `(?P<host>[^`]+\.py)`"
    r"|(?:one line in|the branch in|listed in) (?:`\w+` of )?`(?P<importer>[^`]+\.py)`"
    r"|\bin `(?P<folder>[^`]+/)`"
)
#: A backticked path of the repository (a folder, a Python file or pyproject.toml).
PATH = re.compile(r"`([\w.-]+(?:/[\w.-]+)*/?)`")


@dataclass(frozen=True)
class Step:
    """One thing a recipe adds: ``kind`` at ``path`` (from the repository root), with the
    listing's name or the entry-point group in ``detail``."""

    kind: str
    path: str
    detail: str = ""


def recipes(text: str) -> dict[str, str]:
    """The recipes of the section, by title (``A new attack``), each text on one line."""
    section = text.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    found = {}
    for paragraph in section.split("\n\n"):
        opening = re.match(r"\*\*(A new [^*]+?)\.\*\*", paragraph.strip())
        if opening:
            found[opening.group(1)] = " ".join(paragraph.split())
    return found


def steps(recipe: str) -> list[Step]:
    found = []
    for match in STEP.finditer(recipe):
        if match["group"]:
            found.append(Step("entry point", match["toml"], match["group"]))
        elif match["names"]:
            found.append(Step("name", match["listing"], match["names"]))
        elif match["host"]:
            found.append(Step("function", match["host"]))
        elif match["importer"]:
            found.append(Step("import", match["importer"]))
        else:
            found.append(Step("module", match["folder"]))
    return found


RECIPES = recipes(ARCHITECTURE.read_text(encoding="utf-8"))


def _dotted(path: Path, tree: Path) -> str:
    """The module name of a file of the tree (``loaders/`` and ``reports/`` are installed under
    ``epsstar``)."""
    parts = path.relative_to(tree).with_suffix("").parts
    return ".".join(parts if parts[0] == "epsstar" else ("epsstar", *parts))


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + text, "utf-8")


def _add_entry_point(pyproject: Path, group: str, name: str, target: str) -> None:
    header = f'[project.entry-points."{group}"]\n'
    text = pyproject.read_text(encoding="utf-8")
    assert header in text, f"pyproject.toml has no {group} entry points"
    pyproject.write_text(text.replace(header, f'{header}{name} = "{target}"\n'), "utf-8")


def apply(title: str, recipe: str, tree: Path) -> list[str]:
    """Follow ``recipe`` in ``tree``; the names of the modules it added."""
    stem = re.sub(r"\W+", "_", title.lower()).removeprefix("a_")
    added: list[str] = []
    for step in steps(recipe):
        where = tree / step.path
        if step.kind == "module":
            assert where.is_dir(), f"{title}: no folder {step.path}"
            module = where / f"{stem}_{len(added) + 1}.py"
            assert not module.exists()
            imports = f"import {added[-1]}\n\n" if added else ""
            module.write_text(
                f'"""{title}, as docs/architecture.md adds it."""\n\n{imports}\n'
                f"def {stem}() -> None:\n"
                f'    """What the recipe puts here."""\n',
                encoding="utf-8",
            )
            added.append(_dotted(module, tree))
        elif step.kind == "function":
            _append(
                where, f"def _{stem}(value: object, path: object) -> None:\n    del value, path\n"
            )
        elif step.kind == "name":
            text = where.read_text(encoding="utf-8")
            assert re.search(rf"^{step.detail}\b.*=", text, re.M), f"{step.path}: no {step.detail}"
            _append(where, f'_{stem.upper()}: str = "{stem}"  # an entry of {step.detail}\n')
        elif step.kind == "import" and added:
            _append(where, f"import {added[-1]}  # the line that registers it\n")
        elif step.kind == "entry point":
            assert added, f"{title}: an entry point before any module"
            _add_entry_point(where, step.detail, stem, f"{added[-1]}:{stem}")
    return added


def _copy(tree: Path) -> None:
    for name in COPIED:
        source, target = ROOT / name, tree / name
        if source.is_dir():
            shutil.copytree(
                source, target, symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def structure_tests(tree: Path) -> subprocess.CompletedProcess[str]:
    """tests/test_layers.py run on ``tree``, with ``tree``'s epsstar the one imported."""
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, "tests/test_layers.py"],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_section_holds_the_recipes_the_tests_follow() -> None:
    assert {"A new attack", "A new loader", "A new engine", "A new subcommand"} <= set(RECIPES)


@pytest.mark.parametrize("title", sorted(RECIPES))
def test_a_recipe_names_places_that_exist_and_steps_to_follow(title: str) -> None:
    recipe = RECIPES[title]
    missing = [p for p in PATH.findall(recipe) if "/" in p and not (ROOT / p).exists()]
    assert not missing, f"{title}: no such path from the repository root: {missing}"
    kinds = {step.kind for step in steps(recipe)}
    assert kinds & {"module", "function"}, f"{title}: names no folder or file for its code"


@pytest.mark.slow
@pytest.mark.parametrize("title", sorted(RECIPES))
def test_a_recipe_followed_literally_keeps_the_structure(title: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _copy(tree)
    added = apply(title, RECIPES[title], tree)
    run = structure_tests(tree)
    assert run.returncode == 0, f"{title} (added {added}):\n{run.stdout[-4000:]}"


def test_steps_follow_the_words_of_a_recipe() -> None:
    recipe = (
        "A pure function in `a/b/`; its name in `NAMES` of `a/names.py`; a module in `a/c/`;"
        " one line in `a/c/registry.py`; one line in the `epsstar.x` entry points of"
        " `pyproject.toml`; a writer function in `a/w.py`; listed in `a/main.py`."
    )
    assert steps(recipe) == [
        Step("module", "a/b/"),
        Step("name", "a/names.py", "NAMES"),
        Step("module", "a/c/"),
        Step("import", "a/c/registry.py"),
        Step("entry point", "pyproject.toml", "epsstar.x"),
        Step("function", "a/w.py"),
        Step("import", "a/main.py"),
    ]


@pytest.mark.slow
def test_a_recipe_that_breaks_the_structure_fails(tmp_path: Path) -> None:
    """A module put straight into the audit layer is a room outside its layers contract, and
    one in the statistics that imports the audit an upward import: the copy fails both."""
    tree = tmp_path / "tree"
    _copy(tree)
    apply("A new room", "A module in `epsstar/audit/`.", tree)
    apply(
        "A new shortcut",
        "A module in `epsstar/audit/data/`; a module in `epsstar/statistics/`.",
        tree,
    )
    output = structure_tests(tree).stdout
    assert "outside the layers contract: ['new_room_1']" in output
    assert "epsstar.statistics.new_shortcut_2 -> epsstar.audit.data.new_shortcut_1" in output
