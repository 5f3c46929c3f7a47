"""The composite action (action.yml) run step by step as GitHub runs it, offline.

Each ``run:`` step runs in bash with GitHub's options, its ``env`` with the ``${{ inputs.x }}``
expressions replaced by the inputs (their defaults where not given), in a workspace that
holds a generated scikit-learn model and its tables, with ``GITHUB_ACTION_PATH`` at this
checkout and ``GITHUB_STEP_SUMMARY``/``GITHUB_ACTIONS`` set. The only stand-in is ``python
-m pip``: a ``python`` first on ``PATH`` records pip's arguments instead of reaching a
registry, and runs everything else with this interpreter (so ``python -m epsstar`` runs
this checkout). The ``uses:`` step (actions/setup-python) is checked, not run. The workflow
example of docs/ci.md is run through the action with the inputs it gives.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
import pytest

yaml = pytest.importorskip("yaml")
skops_io = pytest.importorskip("skops.io")

ROOT = Path(__file__).resolve().parents[2]
ACTION: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXPRESSION = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")
#: The files a repository would hold, at the paths of docs/ci.md's example.
FILES = {
    "model": "models/classifier.skops",
    "train": "data/train.parquet",
    "population": "data/holdout.parquet",
    "label-column": "label",
}


def _workspace(folder: Path, *, leaks: bool) -> Path:
    """A repository's checkout: a fitted model and its tables at :data:`FILES`' paths. A
    forest fitted on 300 noisy records memorises them (it leaks); a logistic regression
    of 4 coefficients fitted on 3,000 does not."""
    import pandas as pd
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(7)
    rows = 300 if leaks else 3000

    def table(n: int) -> Any:
        frame = pd.DataFrame(rng.normal(size=(n, 4)), columns=["a", "b", "c", "d"])
        noise = rng.normal(scale=1.5, size=n)
        return frame.assign(label=(frame["a"] + frame["b"] + noise > 0).astype(int))

    train, holdout = table(rows), table(rows)
    forest = RandomForestClassifier(n_estimators=30, random_state=0)
    model = forest if leaks else LogisticRegression()
    model.fit(train.drop(columns="label"), train["label"])
    for path in FILES.values():
        if "/" in path:
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
    skops_io.dump(model, folder / FILES["model"])
    train.to_parquet(folder / FILES["train"])
    holdout.to_parquet(folder / FILES["population"])
    return folder


def _python_shim(folder: Path, pip_log: Path) -> Path:
    """A ``python`` that records ``-m pip`` calls in ``pip_log`` and runs all else here."""
    folder.mkdir()
    shim = folder / "python"
    shim.write_text(
        "#!/bin/bash\n"
        'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then\n'
        f"  printf '%s\\n' \"$@\" >> '{pip_log}'\n"
        "  exit 0\n"
        "fi\n"
        f'exec "{sys.executable}" "$@"\n',
        encoding="utf-8",
    )
    shim.chmod(0o755)
    return folder


def _inputs(given: dict[str, str]) -> dict[str, str]:
    """The action's inputs: ``given``, else each input's default; a required one missing or
    an input the action does not declare fails the test."""
    declared = ACTION["inputs"]
    assert set(given) <= set(declared), sorted(set(given) - set(declared))
    for name, spec in declared.items():
        assert name in given or not spec.get("required", False), f"{name} is required"
    return {name: str(given.get(name, spec.get("default", ""))) for name, spec in declared.items()}


def run_action(workspace: Path, given: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Every step of the action, in order, as GitHub's runner would; the first that fails
    stops the job and is returned."""
    inputs = _inputs(given)
    home = workspace.parent
    pip_log = home / "pip.log"
    shim = _python_shim(home / "bin", pip_log)
    base = {
        "PATH": f"{shim}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "PYTHONPATH": str(ROOT),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_STEP_SUMMARY": str(home / "summary.md"),
        "GITHUB_ACTIONS": "true",
    }
    done = subprocess.CompletedProcess[str]([], 0, "", "")
    for step in ACTION["runs"]["steps"]:
        if "uses" in step:
            continue
        assert step["shell"] == "bash"
        env = {key: EXPRESSION.sub(lambda m: inputs[m.group(1)], value)
               for key, value in step.get("env", {}).items()}  # fmt: skip
        assert "${{" not in step["run"] + "".join(env.values())  # every expression replaced
        script = home / "step.sh"
        script.write_text(step["run"], encoding="utf-8")
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workspace,
            env={**base, **env},
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            return done
    return done


def _cases(path: Path) -> list[ElementTree.Element]:
    return ElementTree.parse(path).getroot().findall("testsuite/testcase")


def test_python_is_set_up_at_the_version_asked_for_before_the_install() -> None:
    steps = ACTION["runs"]["steps"]
    assert steps[0]["uses"].startswith("actions/setup-python@")
    assert steps[0]["with"] == {"python-version": "${{ inputs.python-version }}"}
    assert ACTION["inputs"]["python-version"]["default"]


def test_the_action_installs_its_own_checkout_and_measures_without_a_limit(
    tmp_path: Path,
) -> None:
    workspace = _workspace(tmp_path / "workspace", leaks=True)
    workspace.joinpath("data", "holdout.parquet").stat()  # the files are where the inputs say
    done = run_action(workspace, FILES)
    assert done.returncode == 0, done.stderr

    # pip was asked for this checkout with extras pyproject.toml declares, from no registry
    pip = (tmp_path / "pip.log").read_text(encoding="utf-8").splitlines()
    extras = ACTION["inputs"]["extras"]["default"]
    assert pip == ["-m", "pip", "install", f"{ROOT}[{extras}]"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert set(extras.split(",")) <= set(project["project"]["optional-dependencies"])

    (case,) = _cases(workspace / "epsilon-star.xml")
    assert (case.get("name"), list(case)) == (
        "measure",
        [case.find("properties"), case.find("system-out")],
    )
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert float(properties["epsilon_star"]) > 1.0  # the forest memorised its records
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary.startswith("### epsstar release gate: NO GATE")
    assert f"| {FILES['model']} | {properties['epsilon_star']} |" in summary
    assert "lower bound at 95%" in summary
    assert (workspace / "epsilon-star.json").is_file()
    assert (workspace / "epsilon-star.html").is_file()


def _doc_example() -> dict[str, str]:
    """The ``with:`` of the step of docs/ci.md that uses this action."""
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    steps = [
        step
        for block in re.findall(r"```yaml\n(.*?)```", text, re.S)
        for job in (yaml.safe_load(block).get("jobs") or {}).values()
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("OWNER/epsstar@")
    ]
    (step,) = steps
    return {key: str(value) for key, value in step["with"].items()}


@pytest.mark.parametrize(("leaks", "code"), [(True, 1), (False, 0)])
def test_the_workflow_of_the_docs_runs_through_the_action_and_gates(
    tmp_path: Path, leaks: bool, code: int
) -> None:
    """docs/ci.md's example names only inputs the action declares, every required one, and
    a limit; run with a leaking model it fails the job, with one that does not it passes."""
    given = _doc_example()
    assert {key: given[key] for key in FILES} == FILES
    assert given["max-epsilon"]
    workspace = _workspace(tmp_path / "workspace", leaks=leaks)
    done = run_action(workspace, given)
    assert done.returncode == code, done.stderr
    (case,) = _cases(workspace / given.get("junit-xml", "epsilon-star.xml"))
    assert case.get("name") == "attack loss"
    assert (case.find("failure") is not None) == leaks
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    verdict = "FAIL" if leaks else "PASS"
    assert summary.startswith(f"### epsstar release gate: {verdict}\n")
    assert f"| {float(given['max-epsilon']):g} | {verdict} |" in summary
    if leaks:
        assert "\n::error file=models/classifier.skops,title=epsstar release gate::" in done.stdout


def test_a_limit_that_is_no_number_fails_the_step_in_one_line_and_writes_nothing(
    tmp_path: Path,
) -> None:
    workspace = _workspace(tmp_path / "workspace", leaks=False)
    before = sorted(workspace.rglob("*"))
    done = run_action(workspace, {**FILES, "max-epsilon": "one"})
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert "--max-epsilon" in line
    assert "'one'" in line
    assert sorted(workspace.rglob("*")) == before
    assert not (tmp_path / "summary.md").exists()
