"""Shared test settings, and the check that a test run leaves the checkout as it found it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", max_examples=400, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

ROOT = Path(__file__).resolve().parents[1]
# Caches that tools keep beside the sources (ignored by git); tests may leave these.
CACHES = frozenset(
    {
        "__pycache__",
        ".pytest_cache",
        ".hypothesis",
        ".mypy_cache",
        ".ruff_cache",
        ".import_linter_cache",
        ".benchmarks",
    }
)


def checkout_status() -> frozenset[str] | None:
    """The entries ``git status`` lists (ignored ones too, caches aside), or None outside git."""
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        return None
    done = subprocess.run(
        [git, "status", "--porcelain=v1", "-z", "--ignored", "--untracked-files=normal"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        return None
    entries = done.stdout.decode(errors="replace").split("\0")
    return frozenset(
        entry
        for entry in entries
        if entry and not CACHES.intersection(entry[3:].rstrip("/").split("/"))
    )


@pytest.fixture(scope="session", autouse=True)
def checkout_is_left_unchanged() -> Iterator[None]:
    """Fail the run if it added, modified or deleted files of the checkout (use tmp_path).

    Only entries that ``git status`` did not already list when the session started count,
    so a tree that was dirty before the run is no false alarm.
    """
    before = checkout_status()
    yield
    after = checkout_status()
    if before is None or after is None:
        return
    written = sorted(after - before)
    if written:
        pytest.fail(
            "the tests wrote into the checkout (use tmp_path): " + ", ".join(written),
            pytrace=False,
        )


@pytest.fixture(scope="session")
def validate_json() -> Callable[[str, Any], None]:
    """``validate_json("audit", document)`` fails unless it holds to ``audit.schema.json``.

    The schemas are read from the package (``epsstar/schemas/``); they refer to each
    other by file name.
    """
    from importlib import resources

    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    folder = resources.files("epsstar") / "schemas"
    schemas = {
        item.name: json.loads(item.read_text(encoding="utf-8"))
        for item in folder.iterdir()
        if item.name.endswith(".schema.json")
    }
    registry: Registry[Any] = Registry().with_resources(
        (name, Resource.from_contents(schema)) for name, schema in schemas.items()
    )

    def validate(name: str, document: Any) -> None:
        validator = Draft202012Validator(schemas[f"{name}.schema.json"], registry=registry)
        errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]
        assert not errors, "\n".join(errors[:10])

    return validate


def invoke(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the CLI in this process (argparse usage errors exit through SystemExit):
    the exit code, standard output and standard error."""
    from epsstar.cli.main import main

    try:
        code = main(args)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def in_process() -> Iterator[str]:
    """The address of a local cluster of two single-threaded workers in this process."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp://",
        dashboard_address=":0",
    ) as cluster:
        yield str(cluster.scheduler_address)


#: Which record of :func:`epsstar.audit.audit` each flat keyword of :func:`audit_files` fills.
_MODEL_KEYS = frozenset({"loader", "outputs", "trust", "classes"})
_TABLE_KEYS = frozenset(
    {
        "features",
        "input_shape",
        "batch_size",
        "loss",
        "storage_options",
        "columns_by_position",
        "csv_separator",
    }
)
_OPTION_KEYS = frozenset(
    {"delta", "method", "family", "interval", "n_bootstrap", "max_epsilon", "gate", "confidence"}
    | {"seed"}
)


def audit_files(
    model: str | os.PathLike[str],
    train: str | os.PathLike[str],
    population: str | os.PathLike[str],
    label_column: str,
    **keywords: Any,
) -> Any:
    """:func:`epsstar.audit.audit` of three files with flat keywords, each put in the record
    it belongs to (:class:`ModelFile`, :class:`Tables`, :class:`AuditOptions`); the others
    (``attack``, ``slice_by``, ``engine``, ``progress``, ``command``) are passed as they are."""
    from epsstar.audit import AuditOptions, ModelFile, Tables, audit

    def take(keys: frozenset[str]) -> dict[str, Any]:
        return {key: keywords.pop(key) for key in list(keywords) if key in keys}

    if "max_epsilon" in keywords:
        # the test files' columns are in their models' order (a gate refuses a guessed order)
        keywords.setdefault("columns_by_position", True)

    file = ModelFile(Path(model), **take(_MODEL_KEYS))
    tables = Tables(train, population, label_column, **take(_TABLE_KEYS))
    return audit(file, tables, AuditOptions(**take(_OPTION_KEYS)), **keywords)


def made_up_provenance(n_train: int, n_population: int, *, seed: int = 0, **changes: Any) -> Any:
    """A :class:`~epsstar.audit.output.provenance.Provenance` of a synthetic audit (made-up
    files and digests), with ``changes`` applied, for tests that build results by hand."""
    import dataclasses

    from epsstar.audit.data.column_match import ColumnMatch
    from epsstar.audit.data.files import FileDigest
    from epsstar.audit.model.plugins import LoaderInfo
    from epsstar.audit.output.provenance import Provenance, Timings

    made_up = Provenance(
        model="synthetic <model>.onnx",
        model_files=(FileDigest("synthetic <model>.onnx", "0" * 64),),
        loader=LoaderInfo("onnx", "x:Y", "epsstar", "0"),
        output_kind="probabilities",
        loss="logit",
        label_column="label",
        features=None,
        columns=ColumnMatch(("x0", "x1"), ("x0", "x1"), "model names"),
        input_shape=None,
        classes=("0", "1"),
        classes_from="model",
        train="train.csv",
        population="population.csv",
        train_sha256="1" * 64,
        population_sha256="2" * 64,
        shared_rows=0,
        n_train=n_train,
        n_population=n_population,
        seed=seed,
        confidence=0.95,
        epsstar_version="0",
        python="3",
        created="2024-01-01T00:00:00+00:00",
        command=None,
        seconds=Timings(0.1, 0.5, 0.3, 0.1, 1.0),
    )
    return dataclasses.replace(made_up, **changes)
