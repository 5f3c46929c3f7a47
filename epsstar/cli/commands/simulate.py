"""``epsstar simulate``: the Appendix-B simulation of the Epsilon* paper on a small grid."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from epsstar.cli.common.options import add_seed_option
from epsstar.cli.exit_codes import EXIT_OK

SUMMARY = (
    "reproduce the paper's Appendix-B simulation on a small grid (every estimator; measured "
    "timings in docs/performance.md)"
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("simulate", help=SUMMARY, description=SUMMARY + ".")
    parser.add_argument("--quick", action="store_true", help="one sample size, two repeats")
    add_seed_option(parser, "seed of the simulated losses")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from epsstar.cli.common.text_table import format_table
    from epsstar.statistics.simulation import DEMO_ESTIMATORS, run_appendix_b

    ns = (1_000,) if args.quick else (1_000, 10_000)
    repeats = 2 if args.quick else 3
    print(
        "Epsilon* of simulated losses (Appendix B of the Epsilon* paper): training losses "
        "~ Gamma(2, 5), population losses ~ Gamma(2 + d, 5); mean ± sd over "
        f"{repeats} samples of n records per side.\n",
        flush=True,
    )
    start = time.perf_counter()
    cells = run_appendix_b(
        ns=ns,
        deltas=(1e-5, 1e-3),
        repeats=repeats,
        estimators=DEMO_ESTIMATORS,
        seed=args.seed,
        on_cell=lambda cell: print(".", end="", file=sys.stderr, flush=True),
    )
    print(file=sys.stderr)
    print(format_table(cells))
    print(
        f"\n{len(cells)} cells in {time.perf_counter() - start:.1f} s. 'true eps*' comes from the "
        "known Gamma CDFs; the other columns estimate it from samples. Full benchmark: "
        "python benchmarks/appendix_b.py"
    )
    return EXIT_OK
