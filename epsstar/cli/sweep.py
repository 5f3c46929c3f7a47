"""``epsstar sweep``: train a resumable grid of reference models and write a manifest."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from epsstar.cli.exit_codes import EXIT_OK
from epsstar.cli.train import add_threads_argument

SUMMARY = "Train a grid of DP and non-private reference models (resumable) with a manifest"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("sweep", help=SUMMARY, description=SUMMARY + ".")
    parser.add_argument("config", metavar="CONFIG", help="sweep description (TOML)")
    parser.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="output directory (default: 'out' in the config); re-running with "
        "the same directory resumes the sweep",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="train again the finished models whose settings or data differ from the "
        "config's (or that predate fingerprints); without it such a model stops the sweep",
    )
    add_threads_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bars or log lines")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from epsstar.training.sweep import load_sweep_config, run_sweep
    from epsstar.training.threads import apply_threads, choose_threads

    threads = choose_threads(1, args.threads)
    config = load_sweep_config(args.config)
    apply_threads(threads)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    outcome = run_sweep(
        config,
        args.out,
        overwrite=args.overwrite,
        progress=False if args.quiet else None,
        log=None if args.quiet else log,
    )
    if not args.quiet:
        print(
            f"Sweep finished: {outcome.trained} model(s) trained, {outcome.skipped} already "
            f"done; manifest: {outcome.manifest}"
        )
    return EXIT_OK
