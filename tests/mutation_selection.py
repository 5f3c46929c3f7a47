"""Per-module test selection for mutation testing (``mutmut run``; docs/mutation.md).

mutmut runs, for each mutant, the tests that called the mutated function while it
collected its statistics — for a helper that every audit calls, that is nearly every
test. This plugin (loaded by ``[tool.mutmut] pytest_add_cli_args``) keeps only the
tests that mirror the mutated module, so a mutant counts as killed only by the tests
written for its own module:

* ``epsstar/statistics/<room>/<module>.py``: ``tests/statistics/<room>/``;
* a module at the root of ``epsstar/statistics/``: ``tests/statistics/test_<module>.py``
  when it exists, else every test under ``tests/statistics/`` (the shared helpers);
* the modules listed in :data:`TESTS`: the tests named there.

It does nothing outside a mutant's run (``MUTANT_UNDER_TEST`` unset, or mutmut's own
``stats``/``fail`` runs), so it never changes an ordinary test run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Modules outside the statistics layer in the mutation scope, and their tests.
TESTS: dict[str, tuple[str, ...]] = {
    "epsstar.training.clipping": ("tests/training/test_clipping.py",),
    "epsstar.training.trainer": (
        "tests/training/test_clipping.py",
        "tests/training/test_trainer_noise.py",
        "tests/training/test_trainer.py",
    ),
    "epsstar.audit.data.column_match": (
        "tests/audit/data/test_column_match.py",
        "tests/loaders/test_onnx_kinds.py",
    ),
}


def tests_of(module: str) -> tuple[str, ...]:
    """Path prefixes (relative to the project root) of the tests that mirror ``module``."""
    if module in TESTS:
        return TESTS[module]
    parts = module.split(".")
    if parts[:2] != ["epsstar", "statistics"]:
        return ()
    if len(parts) > 3:
        return ("tests/statistics/" + "/".join(parts[2:-1]) + "/",)
    own = f"tests/statistics/test_{parts[-1].lstrip('_')}.py"
    return (own,) if (ROOT / own).is_file() else ("tests/statistics/",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    module = mutant.rpartition(".")[0]
    if not module.startswith("epsstar."):
        return
    prefixes = tests_of(module)
    kept = [item for item in items if item.nodeid.startswith(prefixes)]
    dropped = [item for item in items if not item.nodeid.startswith(prefixes)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
