"""Write the golden outputs again: ``python -m tests.golden.make [CASE ...]``.

Run it only when a change of the outputs is intended, and read the diff of
``tests/golden/expected/`` before committing it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.golden.cases import CASES, run_case, write_expected


def main(names: list[str]) -> int:
    chosen = [case for case in CASES if not names or case.name in names]
    unknown = set(names) - {case.name for case in CASES}
    if unknown:
        print(f"unknown cases: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    for case in chosen:
        with tempfile.TemporaryDirectory(prefix="epsstar-golden-") as folder:
            write_expected(case, run_case(case, Path(folder)))
        print(f"wrote {case.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
