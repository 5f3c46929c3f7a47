"""Write the golden outputs again: ``python -m tests.golden.make [CASE ...]``.

Run it only when a change of the outputs is intended, and read the diff of
``tests/golden/expected/`` before committing it. Each case is run three times: once for its
outputs, twice with its float32 models' losses shifted for its tolerances
(``tests/golden/sensitivity.py``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.golden.cases import CASES, run_case, write_expected, write_tolerances
from tests.golden.sensitivity import tolerances


def main(names: list[str]) -> int:
    chosen = [case for case in CASES if not names or case.name in names]
    unknown = set(names) - {case.name for case in CASES}
    if unknown:
        print(f"unknown cases: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    for case in chosen:
        with tempfile.TemporaryDirectory(prefix="epsstar-golden-") as folder:
            out = Path(folder) / "run"
            out.mkdir()
            outputs = run_case(case, out)
            write_expected(case, outputs)
            write_tolerances(case, tolerances(case, outputs, Path(folder)))
        print(f"wrote {case.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
