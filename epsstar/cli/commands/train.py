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


def _add_accountant_arguments(parser: argparse.ArgumentParser) -> None:
    """``--accountant`` and the bound of the search for σ (:mod:`epsstar.training.accounting`)."""
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
    parser.add_argument(
        "--lr",
        type=float,
        default=None,
        help="learning rate (default 0.01 for SGD on tables; 0.0005 for AdamW with --text-column)",
    )
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    parser.add_argument(
        "--hidden",
        default="",
        metavar="W1,W2,...",
        help="hidden layer widths, e.g. 100,100,100; empty (default) trains logistic regression",
    )
    _add_accountant_arguments(parser)
    _add_standardise_on_argument(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the whole run (default 0)")
    add_device_argument(parser)


def _add_text_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of fine-tuning a language model (docs/training.md)."""
    parser.add_argument(
        "--text-column",
        default=None,
        metavar="NAME",
        help="fine-tune the causal language model of --init on the text of this column of "
        "--data (DP-SGD with --target-epsilon or --noise-multiplier); --out becomes a "
        "Hugging Face folder",
    )
    parser.add_argument(
        "--init",
        default=None,
        metavar="FOLDER",
        help="with --text-column: the Hugging Face model folder to start from",
    )
    parser.add_argument(
        "--max-length",
        type=int,
        default=None,
        metavar="TOKENS",
        help="with --text-column: tokens per record at most; longer records are truncated "
        "(default: the model's context)",
    )
    parser.add_argument(
        "--lora-rank",
        type=int,
        default=None,
        metavar="R",
        help="with --text-column: train a LoRA adapter of rank R (only its matrices are "
        "trained and clipped) and write it as a PEFT adapter on --init; default: every weight",
    )
    parser.add_argument(
        "--lora-alpha",
        type=float,
        default=None,
        metavar="ALPHA",
        help="with --lora-rank: the adapter's alpha; its update is (alpha/R)·BA (default 8)",
    )
    parser.add_argument(
        "--physical-batch",
        type=int,
        default=None,
        metavar="N",
        help="with --text-column: records whose per-example gradients are formed at once "
        "(default: as many as fit in 1 GiB); memory only, not the result",
    )


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("train", help=SUMMARY, description=SUMMARY + ".")
    parser.add_argument(
        "--data",
        required=True,
        metavar="PATH",
        help="training table (.csv, .parquet or .npz), or with --text-column the training "
        "records (.jsonl, .csv or .parquet)",
    )
    parser.add_argument(
        "--label-column",
        default=None,
        metavar="NAME",
        help="name of the label column; every other column is a feature (tables: required)",
    )
    _add_text_arguments(parser)
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
        **_given_lr(args),
    )


def _given_lr(args: argparse.Namespace) -> dict[str, float]:
    """``lr`` when ``--lr`` was given; else the settings record's own default."""
    return {} if args.lr is None else {"lr": args.lr}


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
    if args.text_column is not None:
        apply_threads(threads)
        return _run_text(args)
    _refuse_text_options(args)
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


#: The options of tables, each with its value when not given, refused with --text-column.
_TABLE_ONLY = {
    "--label-column": ("label_column", None),
    "--population": ("population", None),
    "--features": ("features", None),
    "--hidden": ("hidden", ""),
    "--microbatches": ("microbatches", None),
    "--standardise-on": ("standardise_on", None),
    "--attribute": ("attribute", None),
    "--models": ("models", 1),
}
#: The options of text, each with its value when not given, refused without --text-column.
_TEXT_ONLY = {
    "--init": "init",
    "--max-length": "max_length",
    "--lora-rank": "lora_rank",
    "--lora-alpha": "lora_alpha",
    "--physical-batch": "physical_batch",
}


def _refuse_text_options(args: argparse.Namespace) -> None:
    """A table's run: a label column, and none of the options of text."""
    from epsstar.exceptions import InvalidInputError

    given = [flag for flag, name in _TEXT_ONLY.items() if getattr(args, name) is not None]
    if given:
        raise InvalidInputError(
            f"{given[0]} fine-tunes a language model: give --text-column too. Found "
            f"{given[0]} {getattr(args, _TEXT_ONLY[given[0]])!r} without it."
        )
    if args.label_column is None:
        raise InvalidInputError(
            "--label-column is required to train on a table (or --text-column to fine-tune "
            f"a language model on text records). Found neither for {args.data!r}."
        )


def _run_text(args: argparse.Namespace) -> int:
    """``--text-column``: fine-tune the language model of ``--init`` into ``--out``."""
    from epsstar.exceptions import InvalidInputError
    from epsstar.plumbing.runtime.device import checked_device
    from epsstar.training.text.folder import fine_tune_to_folder
    from epsstar.training.text.settings import DEFAULT_LORA_ALPHA, TextTrainingConfig

    for flag, (name, unset) in _TABLE_ONLY.items():
        if getattr(args, name) != unset:
            raise InvalidInputError(
                f"{flag} applies to tables, not to text records (--text-column). Found "
                f"{flag} {getattr(args, name)!r}."
            )
    if args.init is None:
        raise InvalidInputError(
            "--text-column fine-tunes a model: give its Hugging Face folder with --init. "
            "Found no --init."
        )
    if args.lora_alpha is not None and args.lora_rank is None:
        raise InvalidInputError(
            f"--lora-alpha applies to a LoRA adapter: give --lora-rank too. Found --lora-alpha "
            f"{args.lora_alpha:g} without it."
        )
    config = TextTrainingConfig(
        text_column=args.text_column,
        epochs=args.epochs,
        batch_size=args.batch_size,
        clip=args.clip,
        target_epsilon=args.target_epsilon,
        noise_multiplier=args.noise_multiplier,
        delta=args.delta,
        accountant=args.accountant,
        max_noise_multiplier=args.max_noise_multiplier,
        max_length=args.max_length,
        lora_rank=args.lora_rank,
        lora_alpha=DEFAULT_LORA_ALPHA if args.lora_alpha is None else args.lora_alpha,
        physical_batch=args.physical_batch,
        seed=args.seed,
        device=checked_device(args.device),
        **_given_lr(args),
    )
    result = fine_tune_to_folder(
        config,
        args.data,
        args.init,
        args.out,
        overwrite=args.overwrite,
        progress=False if args.quiet else None,
    )
    if not args.quiet:
        print(summarise_text(result, args.out))
    return EXIT_OK


def summarise_text(result: Any, out: str) -> str:
    """A few lines describing a finished fine-tuning run (what its ``training.json`` records)."""
    model = result.model
    trained = (
        "every weight"
        if model.lora is None
        else f"a LoRA adapter of rank {model.lora.rank} ({model.trained_parameters:,} numbers)"
    )
    privacy = result.privacy
    if privacy is None:
        first = f"Fine-tuned {model.architecture} without privacy, {trained}"
    else:
        epsilon = _finite(privacy.epsilon)
        target = _finite(privacy.target_epsilon)
        first = (
            f"Fine-tuned {model.architecture} with DP-SGD, {trained}: epsilon = "
            f"{'inf' if epsilon is None else f'{epsilon:.5g}'}"
            f"{'' if target is None else f' (target {target:g})'}, delta = {privacy.delta:.3g}, "
            f"{privacy.accountant['name']} accountant; sigma = {privacy.noise_multiplier:.4g}, "
            f"q = {privacy.sampling_rate:.4g}, {privacy.steps} steps"
        )
    data = result.data
    last = result.history[-1]
    return "\n".join(
        [
            f"{first} ({result.hyperparameters.epochs} epochs).",
            f"  {data.n_train:,} records, {data.tokens:,} tokens (at most {data.max_length:,} "
            f"each, {data.truncated:,} truncated); last epoch's mean token loss {last.loss:.4f}",
            f"  wrote {', '.join(result.files)} to {out} "
            f"({result.wall_time_seconds:.1f} s of training)",
        ]
    )
