"""``epsstar train``: train one reference model (DP-SGD or non-private) into a directory."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from epsstar.cli.common.options import add_features_option, describe_choices
from epsstar.cli.exit_codes import EXIT_OK
from epsstar.statistics.names import ACCOUNTANTS, ATTRIBUTE_RECORDS, STANDARDISATIONS

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.training.results import TrainingResult

#: The most models one ``train --models`` run may train.
MAX_MODELS = 1_000

SUMMARY = "Train a reference model with DP-SGD (or without privacy) on a feature table"


def _microbatches(text: str) -> int | None:
    if text.strip().lower() in {"per-example", "none"}:
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer or 'per-example'. Found {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer. Found {text!r}")
    return value


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    """``--threads``: torch's intra-op threads (the choice is explained in its help)."""
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="torch threads per training process (default: $EPSSTAR_THREADS, else the cores "
        "this process may use that are not busy, shared among the worker processes; never "
        "more than the cores)",
    )


def add_device_argument(parser: argparse.ArgumentParser) -> None:
    """``--device``: where torch trains (checked before any work by
    :func:`epsstar.plumbing.runtime.device.checked_device`)."""
    parser.add_argument(
        "--device",
        default="cpu",
        metavar="DEVICE",
        help="torch device to train on: cpu (default), cuda, cuda:N or mps, where this "
        "machine's torch has it; the batches and noise are drawn on the CPU, so a run draws "
        "the same numbers on every device",
    )


def _add_standardise_on_argument(parser: argparse.ArgumentParser) -> None:
    """``--standardise-on``: the table of the standardisation
    (:mod:`epsstar.training.standardisation`)."""
    parser.add_argument(
        "--standardise-on",
        choices=STANDARDISATIONS.names,
        default=None,
        help="the table the features' mean and std are fitted on: "
        f"{describe_choices(STANDARDISATIONS)} (default: population when --population is "
        "given, else data without DP; DP training needs one or the other)",
    )


def add_training_arguments(
    parser: argparse.ArgumentParser, *, epochs_required: bool = True
) -> None:
    """Options shared by ``train`` and ``audit-training``: optimisation and privacy settings."""
    parser.add_argument(
        "--epochs",
        type=int,
        required=epochs_required,
        metavar="E",
        help="passes over the data (round(n/B) Poisson-sampled steps each)",
    )
    parser.add_argument(
        "--target-epsilon",
        type=float,
        default=None,
        metavar="EPS",
        help="train with DP-SGD and choose the noise so that epsilon <= EPS; "
        "without this (and --noise-multiplier) the model is not private",
    )
    parser.add_argument(
        "--noise-multiplier",
        type=float,
        default=None,
        metavar="SIGMA",
        help="train with DP-SGD at this fixed noise multiplier instead of a target",
    )
    parser.add_argument(
        "--delta",
        type=float,
        default=None,
        metavar="D",
        help="delta of the DP guarantee; default 1/(n ln n), n = training records",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=64,
        metavar="B",
        help="expected batch size; sampling rate q = B/n (default 64)",
    )
    parser.add_argument(
        "--clip",
        type=float,
        default=1.0,
        metavar="C",
        help="L2 clipping norm per example or microbatch (default 1)",
    )
    parser.add_argument(
        "--microbatches",
        type=_microbatches,
        default=None,
        metavar="M",
        help="clip the mean gradient of M random groups per batch instead of each "
        "example (default: per-example); doubles the sensitivity to 2C",
    )
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate (default 0.01)")
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    parser.add_argument(
        "--hidden",
        default="",
        metavar="W1,W2,...",
        help="hidden layer widths, e.g. 100,100,100; empty (default) trains logistic regression",
    )
    parser.add_argument(
        "--accountant",
        choices=ACCOUNTANTS.names,
        default=ACCOUNTANTS.names[0],
        help=f"privacy accountant (dp_accounting): {describe_choices(ACCOUNTANTS)}",
    )
    parser.add_argument(
        "--max-noise-multiplier",
        type=float,
        default=1000.0,
        metavar="SIGMA",
        help="largest noise multiplier the target-epsilon search tries (default 1000)",
    )
    _add_standardise_on_argument(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
    add_device_argument(parser)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("train", help=SUMMARY, description=SUMMARY + ".")
    parser.add_argument(
        "--data", required=True, metavar="PATH", help="training table (.csv, .parquet or .npz)"
    )
    parser.add_argument(
        "--label-column",
        required=True,
        metavar="NAME",
        help="name of the label column; every other column is a feature",
    )
    parser.add_argument(
        "--population",
        default=None,
        metavar="PATH",
        help="held-out table from the same distribution, public (no training record): the "
        "standardisation's mean and std, and the utility",
    )
    add_features_option(parser, "all but the label")
    add_training_arguments(parser)
    parser.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="directory for model.onnx, model.pt and training.json",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a non-empty output directory (model.onnx, model.pt and "
        "training.json are replaced; other files are left alone)",
    )
    parser.add_argument(
        "--models",
        type=int,
        default=1,
        metavar="K",
        help="train K independent models (seeds SEED, SEED+1, ...) as one batched "
        "computation into DIR/model-1 ... DIR/model-K; each is the model its own run "
        "would give (default 1: one model into DIR)",
    )
    parser.add_argument(
        "--attribute",
        default=None,
        metavar="COLUMN",
        help="track, at every DP-SGD step, how far each sampled record's clipped gradient "
        "moves when this feature takes its other values, and record in training.json the "
        "bound on attribute inference it gives (Cherubin et al. 2024, Corollary 10); "
        "epsstar audit --attribute COLUMN shows it",
    )
    parser.add_argument(
        "--attribute-records",
        choices=ATTRIBUTE_RECORDS.names,
        default=ATTRIBUTE_RECORDS.names[0],
        help=f"records R_t is the largest distance over: {describe_choices(ATTRIBUTE_RECORDS)}",
    )
    add_threads_argument(parser)
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress (a bar on a terminal, a line per epoch otherwise) or summary",
    )
    parser.set_defaults(handler=run)


def config_from_args(args: argparse.Namespace) -> Any:
    """A :class:`~epsstar.training.trainer.TrainingConfig` from parsed options."""
    from epsstar.plumbing.runtime.device import checked_device
    from epsstar.training.models import parse_hidden
    from epsstar.training.trainer import TrainingConfig

    return TrainingConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        hidden=parse_hidden(args.hidden),
        lr=args.lr,
        momentum=args.momentum,
        clip=args.clip,
        target_epsilon=args.target_epsilon,
        noise_multiplier=args.noise_multiplier,
        delta=args.delta,
        microbatches=args.microbatches,
        accountant=args.accountant,
        max_noise_multiplier=args.max_noise_multiplier,
        standardise_on=args.standardise_on,
        seed=args.seed,
        device=checked_device(args.device),
    )


def _finite(value: float | None) -> float | None:
    """``value``, or None when it is missing or not finite (as ``training.json`` holds it)."""
    return value if value is not None and math.isfinite(value) else None


def summarise(result: TrainingResult, out: str) -> str:
    """A few lines describing a finished run (what its ``training.json`` records)."""
    hidden = result.model.hidden
    architecture = (
        "logistic regression" if not hidden else "MLP " + "x".join(str(width) for width in hidden)
    )
    lines = []
    privacy = result.privacy
    if privacy is None:
        lines.append(
            f"Trained a non-private {architecture} model ({result.hyperparameters.epochs} epochs)."
        )
    else:
        target = _finite(privacy.target_epsilon)
        epsilon = _finite(privacy.epsilon)
        lines.append(
            f"Trained {'an' if hidden else 'a'} {architecture} with DP-SGD: epsilon = "
            f"{'inf' if epsilon is None else f'{epsilon:.5g}'}"
            f"{'' if target is None else f' (target {target:g})'}, "
            f"delta = {privacy.delta:.3g}, {privacy.accountant['name']} accountant; "
            f"sigma = {privacy.noise_multiplier:.4g}, q = {privacy.sampling_rate:.4g}, "
            f"{privacy.steps} steps."
        )
    if result.model.standardisation.covered_by_guarantee is False:
        lines.append("  the standardisation is fitted on the training data, outside the guarantee")
    for name, utility in (
        ("train", result.utility_train),
        ("population", result.utility_population),
    ):
        if utility is None:
            continue
        auroc = _finite(utility.auroc)
        shown = "" if auroc is None else f", AUROC {auroc:.4f}"
        lines.append(f"  {name}: accuracy {utility.accuracy:.4f}{shown}")
    tracked = result.attribute_inference
    if tracked is not None:
        lines.append(
            f"  attribute {tracked.column.column!r}: advantage of attribute inference at most "
            f"{tracked.bound.advantage:.4g} (tracked gradients, Corollary 10; "
            f"{tracked.data_independent.advantage:.4g} without tracking)"
        )
    seconds = result.wall_time_seconds
    lines.append(
        f"  wrote model.onnx, model.pt, training.json to {out} ({seconds:.1f} s of training)"
        if math.isfinite(seconds)
        else f"  wrote {out}"
    )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from epsstar.plumbing.runtime.device import checked_device
    from epsstar.plumbing.runtime.threads import apply_threads, choose_threads
    from epsstar.training.runs.pipeline import load_inputs, train_to_directory

    checked_device(args.device)
    threads = choose_threads(1, args.threads)

    data, population = load_inputs(args.data, args.label_column, args.population, args.features)
    apply_threads(threads)
    if args.attribute is not None:
        return _run_tracked(args, data, population)
    if args.models != 1:
        return _run_many(args, data, population)
    result = train_to_directory(
        data,
        config_from_args(args),
        args.out,
        population=population,
        overwrite=args.overwrite,
        progress=False if args.quiet else None,
        description="train",
    )
    if not args.quiet:
        print(summarise(result, args.out))
    return EXIT_OK


def _run_tracked(args: argparse.Namespace, data: Any, population: Any) -> int:
    """``--attribute``: one model, with the attribute's gradient sensitivity tracked."""
    from epsstar.exceptions import InvalidInputError
    from epsstar.training.runs.pipeline import train_tracking_attribute

    if args.models != 1:
        raise InvalidInputError(
            "--attribute tracks one model's training; train it alone. "
            f"Found --models {args.models}."
        )
    result = train_tracking_attribute(
        data,
        config_from_args(args),
        args.out,
        args.attribute,
        population=population,
        records=args.attribute_records,
        overwrite=args.overwrite,
        progress=False if args.quiet else None,
    )
    if not args.quiet:
        print(summarise(result, args.out))
    return EXIT_OK


def _run_many(args: argparse.Namespace, data: Any, population: Any) -> int:
    """``--models K``: K models with seeds SEED … SEED+K−1, trained together."""
    import dataclasses

    from epsstar.exceptions import InvalidInputError
    from epsstar.training.runs.many import model_folders, train_to_directories

    count = args.models
    if not 1 <= count <= MAX_MODELS:
        raise InvalidInputError(f"--models must be from 1 to {MAX_MODELS:,}. Found {count}.")
    config = config_from_args(args)
    configs = [dataclasses.replace(config, seed=config.seed + k) for k in range(count)]
    folders = model_folders(args.out, count)
    results = train_to_directories(
        data,
        configs,
        folders,
        population=population,
        overwrite=args.overwrite,
        progress=False if args.quiet else None,
        description="train",
    )
    if not args.quiet:
        for folder, result in zip(folders, results, strict=True):
            print(summarise(result, str(folder)))
    return EXIT_OK
