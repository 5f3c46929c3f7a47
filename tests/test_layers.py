"""The architecture holds: layers (import-linter), pure statistics, short functions.

docs/architecture.md describes the layers; pyproject.toml's ``[tool.importlinter]``
states them. These tests fail when a module imports upwards, when a folder escapes
the contract, when the statistics touch files or print, or when a library function
grows past 80 lines.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = (ROOT / "epsstar", ROOT / "loaders", ROOT / "reports")
MAX_FUNCTION_LINES = 80


def _library_files() -> Iterator[Path]:
    for folder in LIBRARY:
        for path in sorted(folder.rglob("*.py")):
            # epsstar/loaders and epsstar/reports link to the top-level folders.
            if folder.name == "epsstar" and path.relative_to(folder).parts[0] in (
                "loaders",
                "reports",
            ):
                continue
            yield path


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def test_import_linter_contracts_are_kept() -> None:
    from importlinter.cli import lint_imports

    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    assert code == 0, output.getvalue()


@pytest.mark.parametrize(
    "contract",
    [c for c in _contracts() if c["type"] == "layers"],
    ids=lambda c: str(c["name"]),
)
def test_every_room_of_a_layered_package_is_in_a_layer(contract: dict[str, object]) -> None:
    layers, (container,) = contract["layers"], contract["containers"]
    assert isinstance(layers, list)
    assert isinstance(container, str)
    named = {name.strip() for layer in layers for name in layer.split("|")}
    folder = ROOT.joinpath(*container.split("."))
    modules = {
        path.stem
        for path in folder.iterdir()
        if (path / "__init__.py").is_file()
        or (path.suffix == ".py" and not path.name.startswith("__"))
    }
    assert modules == named, f"outside the layers contract: {sorted(modules - named)}"


#: The room of the ground floor the statistics may import (pyproject.toml forbids the rest).
_PLUMBING_OF_THE_STATISTICS = "records"


def test_every_room_of_the_plumbing_is_allowed_or_forbidden_to_the_statistics() -> None:
    """A new room of ``epsstar/plumbing`` is placed on one side: the records the statistics
    read, or the contract that forbids them the others by name; and every module of the
    plumbing stands in one of its rooms."""
    (contract,) = [
        c for c in _contracts() if c["name"] == "statistics: of the plumbing, the records only"
    ]
    forbidden_modules = contract["forbidden_modules"]
    assert isinstance(forbidden_modules, list)
    forbidden = {str(name).removeprefix("epsstar.plumbing.") for name in forbidden_modules}
    plumbing = ROOT / "epsstar" / "plumbing"
    rooms = {path.name for path in plumbing.iterdir() if (path / "__init__.py").is_file()}
    assert _PLUMBING_OF_THE_STATISTICS not in forbidden
    assert rooms == forbidden | {_PLUMBING_OF_THE_STATISTICS}
    assert [path.name for path in plumbing.glob("*.py")] == ["__init__.py"]


def test_the_contracts_can_fail(tmp_path: Path) -> None:
    """An upward import breaks the layers contract (the check is not vacuous)."""
    from importlinter.cli import lint_imports

    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    # A contract that forbids what the statistics really import must break.
    broken = config + (
        '\n[[tool.importlinter.contracts]]\nname = "must break"\ntype = "forbidden"\n'
        'source_modules = ["epsstar.statistics.estimators.estimator"]\n'
        'forbidden_modules = ["epsstar.statistics.estimators.empirical"]\n'
    )
    path = tmp_path / "pyproject.toml"
    path.write_text(broken, encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()):
        code = lint_imports(config_filename=str(path), no_cache=True)
    assert code != 0


_IO_CALLS = {"open", "print", "input"}
_IO_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes", "mkdir", "unlink"}


@pytest.mark.parametrize(
    "path",
    sorted((ROOT / "epsstar" / "statistics").rglob("*.py")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_statistics_do_no_io(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = node.func
        if isinstance(function, ast.Name):
            assert function.id not in _IO_CALLS, f"{path.name}:{node.lineno} calls {function.id}"
        if isinstance(function, ast.Attribute):
            assert function.attr not in _IO_METHODS, (
                f"{path.name}:{node.lineno} calls .{function.attr}"
            )


@pytest.mark.parametrize("path", list(_library_files()), ids=lambda p: str(p.relative_to(ROOT)))
def test_library_functions_are_short(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [
        f"{node.name} (line {node.lineno}): {node.end_lineno - node.lineno + 1} lines"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


# --- the numbers the structure keeps -------------------------------------------------------------

#: Most modules a folder of the library may hold (its ``__init__.py`` aside).
MAX_MODULES_PER_FOLDER = 12
#: Most parameters a public function or method may take (``self``/``cls`` aside).
MAX_PUBLIC_PARAMETERS = 10
#: Most ``dict[str, Any]``-like annotations the library may hold.
MAX_UNTYPED_DICTS = 30
#: Most ``# type: ignore`` comments the library may hold, each with its reason.
MAX_TYPE_IGNORES = 5
#: Most test files at the root of ``tests/``.
MAX_ROOT_TEST_FILES = 10

_UNTYPED_DICT = re.compile(r"\b(?:dict|Mapping|MutableMapping)\[str, (?:Any|object)\]")


def _strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of a directed graph, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, []))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(component)
    return found


def test_the_cycle_check_finds_a_cycle() -> None:
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert sorted(sorted(c) for c in _strongly_connected(edges) if len(c) > 1) == [["a", "b", "c"]]


def test_no_folder_holds_more_than_a_dozen_modules() -> None:
    crowded = {}
    for folder in {path.parent for path in _library_files()}:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES_PER_FOLDER:
            crowded[str(folder.relative_to(ROOT))] = len(modules)
    assert not crowded, f"folders over {MAX_MODULES_PER_FOLDER} modules: {crowded}"


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    arguments = node.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    count = len(names) + (arguments.vararg is not None) + (arguments.kwarg is not None)
    return count - (1 if names and names[0] in ("self", "cls") else 0)


def test_the_tests_mirror_the_packages() -> None:
    root_files = sorted(p.name for p in (ROOT / "tests").glob("test_*.py"))
    assert len(root_files) <= MAX_ROOT_TEST_FILES, root_files


def test_no_import_cycle_anywhere() -> None:
    """No module imports, at any depth and from anywhere in it (inside functions too), a
    module that imports it back: every strongly connected component of the import graph
    of ``epsstar`` (with ``epsstar.loaders`` and ``epsstar.reports``) is one module, the
    imports made for the type checker only (``if TYPE_CHECKING:``) counted too."""
    import grimp

    graph = grimp.build_graph("epsstar", cache_dir=None)
    modules = sorted(m for m in graph.modules if m.startswith("epsstar"))
    assert any(m.startswith("epsstar.loaders.") for m in modules)
    assert any(m.startswith("epsstar.reports.") for m in modules)
    edges = {
        m: sorted(n for n in graph.find_modules_directly_imported_by(m) if n.startswith("epsstar"))
        for m in modules
    }
    cycles = [sorted(c) for c in _strongly_connected(edges) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_public_functions_take_at_most_ten_parameters() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({_parameters(node)})"
        for path in _library_files()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("_")
        and _parameters(node) > MAX_PUBLIC_PARAMETERS
    ]
    assert not found, f"public functions over {MAX_PUBLIC_PARAMETERS} parameters: {found}"


def test_untyped_dict_annotations_stay_few() -> None:
    count = sum(
        len(_UNTYPED_DICT.findall(path.read_text(encoding="utf-8"))) for path in _library_files()
    )
    assert count <= MAX_UNTYPED_DICTS, f"{count} dict[str, Any]-like annotations"


def test_type_ignores_are_few_and_each_says_why() -> None:
    found = [
        (f"{path.relative_to(ROOT)}:{number}", line.strip())
        for path in _library_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "type: ignore" in line
    ]
    assert len(found) <= MAX_TYPE_IGNORES, f"{len(found)} type: ignore comments: {found}"
    unexplained = [where for where, line in found if not re.search(r"ignore\[[^\]]+\]\s+#", line)]
    assert not unexplained, f"type: ignore without a reason on its line: {unexplained}"


def test_reports_render_typed_records_without_to_dict() -> None:
    folder = ROOT / "reports"
    found = [
        str(path.relative_to(ROOT))
        for path in folder.rglob("*")
        if path.is_file() and "to_dict" in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert not found, f"to_dict() under reports/: {found}"


def test_the_only_reference_to_a_layer_above_by_name_is_the_callable_audit_package() -> None:
    """import-linter sees imports, not names handed to importlib. Below the Python API,
    ``epsstar.audit``'s call (a callable package: only the package object can answer
    ``epsstar.audit(...)`` in every import order) is the one place that names a module of a
    layer above it; anything else would be a way around the layers."""
    root = Path(__file__).resolve().parents[1]
    above = re.compile(r"import_module\(\s*[\"'](epsstar\.(?:api|cli)[\w.]*)[\"']")
    found = sorted(
        (str(path.relative_to(root)), name)
        for folder in ("epsstar", "loaders", "reports")
        for path in (root / folder).rglob("*.py")
        if not path.is_relative_to(root / "epsstar" / "api")
        and not path.is_relative_to(root / "epsstar" / "cli")
        for name in above.findall(path.read_text(encoding="utf-8"))
    )
    assert found == [("epsstar/audit/__init__.py", "epsstar.api")]
