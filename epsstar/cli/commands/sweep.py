"""``epsstar sweep``: train a resumable grid of reference models and write a manifest."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from epsstar.cli.commands.train import add_device_argument, add_threads_argument
from epsstar.cli.common.one_line import one_line
from epsstar.cli.common.options import add_engine_options, engine_option
from epsstar.cli.exit_codes import EXIT_OK, EXIT_PARTIAL

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
    add_device_argument(parser)
    add_engine_options(parser, "model")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="worker processes that train the runs (or stacks) side by side, each with the "
        "idle cores shared among them as torch threads; the same models as --workers 1 "
        "(default: the cores this process may use that other programs leave idle, at least "
        "1); with --engine dask and no --scheduler, the local cluster's workers",
    )
    parser.add_argument(
        "--stack",
        type=int,
        default=1,
        metavar="K",
        help="train up to K models that take the same steps (same architecture, epochs, "
        "batch size, clipping unit, lr, momentum) as one batched computation, each the "
        "model its own run would give (default 1: one model at a time; not with --engine dask)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars or log lines")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from epsstar.plumbing.runtime.device import checked_device
    from epsstar.plumbing.runtime.threads import apply_threads, choose_threads, idle_cores
    from epsstar.training.runs.sweep import SweepCompute, load_sweep_config, run_sweep
    from epsstar.training.runs.sweep_config import on_device
    from epsstar.training.runs.sweep_workers import WorkerDiedError

    device = checked_device(args.device)
    workers = idle_cores() if args.workers is None else args.workers
    engine = engine_option(args, workers, "--workers")
    on_dask = engine.on_dask
    threads = choose_threads(workers if on_dask else 1, args.threads)
    if not 1 <= args.stack <= 1_000 or (on_dask and args.stack > 1):
        from epsstar.exceptions import InvalidInputError

        raise InvalidInputError(
            f"--stack must be from 1 to 1,000 (1 with --engine dask). Found {args.stack}."
        )
    config = on_device(load_sweep_config(args.config), device)
    apply_threads(threads)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        outcome = run_sweep(
            config,
            args.out,
            overwrite=args.overwrite,
            progress=False if args.quiet else None,
            log=None if args.quiet else log,
            # a remote cluster's workers choose their own threads unless --threads says;
            # this machine's worker processes share its idle cores unless --threads says
            compute=SweepCompute(
                engine,
                threads if on_dask and args.scheduler is None else args.threads,
                stack=args.stack,
                workers=1 if on_dask else workers,
            ),
        )
    except WorkerDiedError as error:  # the finished models are kept: exit 3, as for a failed run
        print(one_line(f"epsstar sweep: error: {error}"), file=sys.stderr)
        return EXIT_PARTIAL
    for failure in outcome.failed:
        print(f"FAILED {failure}", file=sys.stderr)
    if not args.quiet:
        failed = (
            f", {len(outcome.failed)} failed (run again to retry them)" if outcome.failed else ""
        )
        print(
            f"Sweep finished: {outcome.trained} model(s) trained, {outcome.skipped} already "
            f"done{failed}; manifest: {outcome.manifest}"
        )
    return EXIT_PARTIAL if outcome.failed else EXIT_OK
