"""The built distribution installs only the ``epsstar`` import name."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
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
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("epsstar-*.whl")
    return built


def test_wheel_has_no_generic_top_level_names(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {"epsstar", next(n for n in top_level if n.endswith(".dist-info"))}
    assert "epsstar/loaders/__init__.py" in names
    assert "epsstar/reports/__init__.py" in names
    assert "epsstar/py.typed" in names
    assert "epsstar/schemas/audit.schema.json" in names  # the JSON contract ships as data


def test_wheel_declares_the_console_script(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    (entry_points,) = [n for n in archive.namelist() if n.endswith("entry_points.txt")]
    assert "epsstar = epsstar.cli:main" in archive.read(entry_points).decode()


def test_installed_namespace_resolves_to_the_mapped_folders() -> None:
    import epsstar.loaders
    import epsstar.reports

    assert Path(epsstar.loaders.__file__).parent.name == "loaders"
    assert Path(epsstar.reports.__file__).parent.name == "reports"
