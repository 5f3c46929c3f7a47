"""The audit commands of docs/ci.md's GitHub and GitLab jobs, run as their CI would run
them (bash, the job's variables), on a fixture model that records its column names (the CI
systems themselves are not run); and every documented install names a source that serves
epsstar (action.yml itself: tests/cli/test_action.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
KINDS = ROOT / "fixtures" / "models" / "kinds"
#: the fixture's LightGBM model records its columns' names, as a CI job's model should
FILES = {
    "MODEL": KINDS / "adult_lightgbm.txt",
    "TRAIN": KINDS / "adult_numeric_train.csv",
    "POPULATION": KINDS / "adult_numeric_population.csv",
    "LABEL": "income",
}


def _yaml_blocks() -> list[Any]:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def _github_job() -> tuple[dict[str, str], str]:
    job = _yaml_blocks()[0]["jobs"]["epsilon-star"]
    (step,) = [step for step in job["steps"] if step.get("name") == "Audit the model"]
    return job["env"], step["run"]


def _gitlab_job() -> tuple[dict[str, str], str]:
    job = _yaml_blocks()[2]["epsilon-star"]
    (command,) = [line for line in job["script"] if line.startswith("epsstar ")]
    return job["variables"], command


def _run(script: str, variables: dict[str, str], folder: Path) -> subprocess.CompletedProcess[str]:
    epsstar = shutil.which("epsstar", path=str(Path(sys.executable).parent))
    if epsstar is None:  # pragma: no cover - the console script comes with the install
        pytest.skip("the epsstar command is not installed beside this Python")
    env = {
        **os.environ,
        **variables,
        **{key: str(value) for key, value in FILES.items()},
        "PATH": f"{Path(epsstar).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(folder / "summary.md"),
    }
    return subprocess.run(
        ["bash", "-c", script], cwd=folder, env=env, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("job", [_github_job, _gitlab_job])
def test_the_documented_audit_step_gates_and_writes_junit(job: Any, tmp_path: Path) -> None:
    variables, script = job()
    assert set(FILES) <= set(variables)  # the job names every file through its variables
    (tmp_path / "epsstar.toml").write_text("max-epsilon = 1.0\n")
    done = _run(script, variables, tmp_path)
    assert done.returncode == 0, done.stderr
    junit = tmp_path / variables.get("JUNIT", "epsilon-star.xml")
    (case,) = ElementTree.parse(junit).getroot().iter("testcase")
    assert case.get("name") == "attack loss"
    assert case.find("failure") is None
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("### epsstar release gate: PASS\n\nLimits from `epsstar.toml`.")
    assert (tmp_path / "epsilon-star.json").is_file()


#: A pip install of epsstar from its git repository (epsstar is on no registry).
GIT_INSTALL = re.compile(
    r'pip install "epsstar\[([\w,]+)\] @ git\+https://github\.com/OWNER/epsstar@TAG"'
)


DOCS = ["README.md", *sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").glob("*.md"))]
#: The docs that show a CI job, which must install epsstar from its repository.
CI_DOCS = {"docs/ci.md", "docs/release-gate.md"}


@pytest.mark.parametrize("doc", DOCS)
def test_every_documented_install_of_epsstar_names_its_git_repository(doc: str) -> None:
    """No doc installs ``epsstar[...]`` from a registry; each git install asks for extras
    pyproject.toml declares."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    assert not re.search(r'pip install "epsstar\[[\w,]+\]"', text)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = set(project["project"]["optional-dependencies"])
    for extras in GIT_INSTALL.findall(text):
        assert set(extras.split(",")) <= declared, extras
    if doc in CI_DOCS:
        assert GIT_INSTALL.search(text), doc
