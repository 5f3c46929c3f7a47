"""``epsstar epsilon``: Epsilon* from two files of per-record losses."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from epsstar.cli.common.options import (
    OUTPUT_FILES,
    add_estimator_options,
    add_family_option,
    add_json_option,
    add_seed_option,
    bootstrap_option,
    describe_choices,
    emit,
    estimator_config,
    json_path,
)
from epsstar.cli.common.text_table import extrapolation_note, interval_lines, rate_text
from epsstar.cli.exit_codes import EXIT_OK
from epsstar.statistics.estimators.methods import DEFAULT_LEVEL
from epsstar.statistics.names import SEARCHES

if TYPE_CHECKING:
    from epsstar.statistics.results import EpsilonStarResult

SUMMARY = "Epsilon* from per-record training and population losses"


def _window(text: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        low, high = (float(part) for part in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected LOW,HIGH (e.g. 0.001,0.999). Found {text!r}"
        ) from None
    return low, high


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "epsilon", help=SUMMARY, description=f"{SUMMARY}. {OUTPUT_FILES}"
    )
    parser.add_argument(
        "--train-losses",
        required=True,
        metavar="FILE",
        help="losses of the model on its training records (.npy, .csv, .parquet)",
    )
    parser.add_argument(
        "--population-losses",
        required=True,
        metavar="FILE",
        help="losses on non-training records from the same distribution",
    )
    parser.add_argument(
        "--delta",
        type=float,
        default=None,
        metavar="D",
        help="delta of the (epsilon, delta) statement; default 1/(n ln n), "
        "n = number of training losses",
    )
    add_estimator_options(parser)
    add_family_option(parser)
    parser.add_argument(
        "--search",
        choices=SEARCHES.names,
        default="refine",
        help="--method parametric: how the supremum is located. "
        f"{describe_choices(SEARCHES)} (default: refine)",
    )
    parser.add_argument(
        "--rate-window",
        type=_window,
        default=None,
        metavar="LOW,HIGH",
        help="empirical method: admissible interval of each ratio's denominator rate instead "
        "of (delta, 1-delta), e.g. 0.001,0.999 as in the paper",
    )
    add_seed_option(parser, "seed of fits and goodness-of-fit tests")
    add_json_option(parser)
    parser.set_defaults(handler=run)


def _format(result: EpsilonStarResult) -> str:
    family = f", {result.family}" if result.family else ""
    lines = [
        f"Epsilon* = {result.epsilon:.4f}  (delta = {result.delta:.3g}, {result.method}{family})",
    ]
    if math.isfinite(result.fpr):
        lines.append(
            f"  attained by {result.attained_by} at loss threshold {result.threshold:.6g}: "
            f"FPR = {rate_text(result.fpr)}, FNR = {rate_text(result.fnr)}"
        )
        if result.tail_extrapolated:
            lines.append(extrapolation_note(result.unsupported_rates))
    else:
        lines.append("  no admissible threshold beats random guessing")
    leak = result.leak_test
    if leak is not None and result.epsilon > 0:
        lines.append(
            f"  held-out leak test p = {leak.p_value:.3g}: a leak found at level "
            f"{DEFAULT_LEVEL:g}, so the cross-fitted estimate stands (where nothing leaks, a "
            f"share {DEFAULT_LEVEL:g} of tests find one by chance)"
        )
    if result.note:
        lines.append(f"  note: {result.note}")
    lines.extend(interval_lines(result))
    lines.append(f"  records: {result.n_train:,} training, {result.n_population:,} population")
    for side, report in result.fits.items():
        gof = report.goodness_of_fit
        verdict = "POOR FIT" if gof.poor_fit else "fit ok"
        lines.append(
            f"  {side} fit: {report.fit.family}, hold-out KS p = {gof.ks.pvalue:.3g}, "
            f"Lilliefors p = {gof.lilliefors_pvalue:.3g} -> {verdict}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from epsstar.audit.data.files import read_loss_file
    from epsstar.audit.output.result import EpsilonDocument
    from epsstar.cli.common.writers import JSON, RunFiles
    from epsstar.statistics.estimators.estimator import estimate

    config = estimator_config(args)
    interval = bootstrap_option(args)
    inputs = [
        ("--train-losses", args.train_losses),
        ("--population-losses", args.population_losses),
    ]
    with RunFiles(inputs) as files:
        json_file = files.plan("--json", json_path(args.json), JSON)
        train = read_loss_file(args.train_losses, name="--train-losses")
        population = read_loss_file(args.population_losses, name="--population-losses")
        result = estimate(
            train, population, config, delta=args.delta, seed=args.seed, interval=interval
        )
        payload = EpsilonDocument(result).to_dict()
        files.write(json_file, payload)
        files.commit()
    emit(payload, args.json, _format(result))
    return EXIT_OK
