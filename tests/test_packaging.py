"""The built distribution installs only the ``epsstar`` import name.

Builds run on a copy of the source tree in a temporary folder, so that the checkout gets no
``build/`` or ``*.egg-info`` folders.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What a source checkout holds besides the sources: never copied into the build tree.
NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".*_cache",
    ".hypothesis",
    ".benchmarks",
    "test-artifacts",
)


@pytest.fixture(scope="module")
def source_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout (links kept as links), to build from."""
    copy = tmp_path_factory.mktemp("source") / "epsstar"
    shutil.copytree(ROOT, copy, symlinks=True, ignore=NOT_SOURCES)
    return copy


@pytest.fixture(scope="module")
def wheel(source_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source_tree),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("epsstar-*.whl")
    return built


@pytest.mark.slow
def test_wheel_has_no_generic_top_level_names(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {"epsstar", next(n for n in top_level if n.endswith(".dist-info"))}
    assert "epsstar/loaders/__init__.py" in names
    assert "epsstar/reports/__init__.py" in names
    assert "epsstar/py.typed" in names
    assert "epsstar/schemas/audit.schema.json" in names  # the JSON contract ships as data


@pytest.mark.slow
def test_wheel_holds_every_subpackage(wheel: Path) -> None:
    """Every folder with an ``__init__.py`` is in the wheel (the package list is explicit)."""
    folders = {
        init.parent.relative_to(ROOT).as_posix()
        for init in (ROOT / "epsstar").glob("**/__init__.py")
        if not any(part in {"loaders", "reports"} for part in init.parts)
    }
    folders |= {"epsstar/loaders", "epsstar/reports"}
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(folder for folder in folders if f"{folder}/__init__.py" not in names)
    assert not missing, f"packages missing from pyproject's [tool.setuptools] packages: {missing}"


@pytest.mark.slow
def test_wheel_declares_the_console_script(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    (entry_points,) = [n for n in archive.namelist() if n.endswith("entry_points.txt")]
    assert "epsstar = epsstar.cli:main" in archive.read(entry_points).decode()


def test_installed_namespace_resolves_to_the_mapped_folders() -> None:
    import epsstar.loaders
    import epsstar.reports

    assert Path(epsstar.loaders.__file__).parent.name == "loaders"
    assert Path(epsstar.reports.__file__).parent.name == "reports"


def readme_audit_example() -> str:
    """The README's Python example of ``audit(...)`` on the fixture model."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    # the first one; the skl2onnx recipe further down builds its own model
    example = next(block for block in blocks if "from epsstar.audit import" in block)
    return str(example)


def venv_site_packages(venv: Path) -> Path:
    python = venv / "bin" / "python"
    done = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(done.stdout.strip())


@pytest.fixture(scope="module")
def installed(source_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with a regular (non-editable) install of the source tree.

    The environment sees this interpreter's packages (the dependencies) but gets its own
    ``epsstar``; returns the environment's folder.
    """
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
    )
    if sys.prefix != sys.base_prefix:  # run from a virtual environment: expose its packages
        paths = [p for p in sys.path if p.endswith("site-packages")]
        (venv_site_packages(venv) / "outer.pth").write_text("\n".join(paths) + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            str(source_tree),
        ],
        check=True,
        capture_output=True,
    )
    return venv


def run_in(venv: Path, code: str, cwd: Path) -> list[str]:
    """Run ``code`` with the environment's Python in ``cwd``; its printed lines."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [venv / "bin" / "python", "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def assert_three_values(lines: list[str]) -> None:
    """``epsilon_star lower_bound passed``: two non-negative numbers and the gate's verdict."""
    (line,) = lines
    epsilon_star, lower_bound, passed = line.split()
    assert float(epsilon_star) >= 0.0
    assert float(lower_bound) >= 0.0
    assert passed == str(float(epsilon_star) <= 2.0)


@pytest.mark.slow
def test_readme_example_runs_in_the_checkout_after_a_regular_install(installed: Path) -> None:
    where = "import epsstar; print(epsstar.__file__)"
    assert run_in(installed, where, cwd=ROOT) == [str(ROOT / "epsstar" / "__init__.py")]
    assert_three_values(run_in(installed, readme_audit_example(), cwd=ROOT))


@pytest.mark.slow
def test_installed_package_finds_its_loaders_and_templates(installed: Path, tmp_path: Path) -> None:
    """Away from the checkout the installed copy runs: plugins resolve, templates are there."""
    site_packages = venv_site_packages(installed)
    code = (
        "import pathlib, epsstar, epsstar.reports\n"
        "from epsstar.audit.model.plugins import get_loader\n"
        "print(epsstar.__file__)\n"
        "print(type(get_loader('sklearn')[0]).__module__)\n"
        "templates = pathlib.Path(epsstar.reports.__file__).parent / 'templates'\n"
        "print(','.join(sorted(path.name for path in templates.iterdir())))\n"
    )
    templates = ",".join(sorted(path.name for path in (ROOT / "reports" / "templates").iterdir()))
    assert run_in(installed, code, cwd=tmp_path) == [
        str(site_packages / "epsstar" / "__init__.py"),
        "epsstar.loaders.sklearn",
        templates,
    ]


@pytest.mark.slow
def test_regular_install_holds_the_linked_folders(installed: Path) -> None:
    site_packages = venv_site_packages(installed)
    package = site_packages / "epsstar"
    assert not (package / "loaders").is_symlink()
    assert {
        str(p.relative_to(package / "loaders")) for p in (package / "loaders").rglob("*.py")
    } >= {
        "__init__.py",
        "onnx/__init__.py",
        "sklearn/__init__.py",
        "torchscript/__init__.py",
    }
    templates = {p.name for p in (package / "reports" / "templates").iterdir()}
    assert {p.name for p in (ROOT / "reports" / "templates").iterdir()} <= templates
    assert not (site_packages / "loaders").exists()
    assert not (site_packages / "reports").exists()
    (record,) = site_packages.glob("epsstar-*.dist-info/RECORD")
    files = [line.split(",")[0] for line in record.read_text().splitlines()]
    top_level = {name.split("/")[0] for name in files if not name.startswith("../")}
    assert {name for name in top_level if not name.endswith(".dist-info")} == {"epsstar"}


@pytest.mark.parametrize("module", ["epsstar", "epsstar.cli"])
def test_python_m_runs_the_command(module: str) -> None:
    from epsstar import __version__

    done = subprocess.run(
        [sys.executable, "-m", module, "--version"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"epsstar {__version__}"
