"""Every command's exit code, printed lines and written files match the golden outputs.

The outputs of ``tests/golden/cases.py`` are run again and compared with
``tests/golden/expected/`` (numbers within the module's tolerance and, downstream of a
float32 model, within the case's propagated tolerances; or bit for bit with
``EPSSTAR_GOLDEN=exact``), each JSON object's keys in the written order. A failure names
the first difference; when the change is intended, ``python -m tests.golden.make CASE``
writes the outputs again.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from tests.golden.cases import (
    CASES,
    Case,
    differences,
    read_expected,
    read_tolerances,
    run_case,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning"),
    pytest.mark.kernels,
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_outputs_match_the_golden_files(case: Case, tmp_path: Path) -> None:
    expected = read_expected(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = run_case(case, tmp_path)
    found_differences = list(differences(expected, found, case.name, read_tolerances(case)))
    assert not found_differences, "\n".join(found_differences[:5])
