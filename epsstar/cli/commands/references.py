"""``epsstar references``: train K reference models for the LiRA and RMIA attacks."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from epsstar.cli.commands.train import add_device_argument, add_threads_argument
from epsstar.cli.exit_codes import EXIT_OK

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.training.runs.references import ReferencesResult

SUMMARY = "train reference models for --attack lira/rmia on a reference split of the data"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "references",
        help=SUMMARY,
        description=SUMMARY + ". Model k is trained without privacy on a random half of "
        "--data (the reference split, which must hold no record of the audit's population "
        "data), with the target's recipe from --recipe (its training.json) or else a default "
        "MLP (64 hidden units, 20 epochs) that stands in for it as a proxy. Writes "
        "DIR/ref-01 ... (model.onnx, model.pt, training.json each) and DIR/references.json.",
    )
    parser.add_argument(
        "--data",
        required=True,
        metavar="PATH",
        help="the reference split: records from the population's distribution that are "
        "neither the target's training records nor the audit's population records",
    )
    parser.add_argument("--label-column", required=True, metavar="NAME", help="label column")
    parser.add_argument(
        "--count", type=int, default=4, metavar="K", help="reference models to train (default 4)"
    )
    parser.add_argument(
        "--recipe",
        default=None,
        metavar="TRAINING.json",
        help="the target's training.json (epsstar train): its architecture, epochs, batch "
        "size, learning rate, momentum, feature columns and classes (default: a stated proxy)",
    )
    parser.add_argument(
        "--population",
        default=None,
        metavar="PATH",
        help="the audit's population data: refused if a reference row is also one of its rows",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory")
    parser.add_argument(
        "--overwrite", action="store_true", help="write into a non-empty output directory"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of halves and training (default 0)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress or summary")
    add_threads_argument(parser)
    add_device_argument(parser)
    parser.set_defaults(handler=run)


def summarise(result: ReferencesResult) -> str:
    """Two lines describing the reference models trained, and how to audit with them."""
    recipe = result.recipe
    hidden = "x".join(str(width) for width in recipe.config.hidden) or "no hidden layer"
    where = (
        "a default recipe: the reference models are a proxy for the target's training"
        if recipe.proxy
        else f"the recipe of {recipe.source}"
    )
    models = [model.model for model in result.models]
    return "\n".join(
        [
            f"Trained {len(models)} reference models (MLP {hidden}, {recipe.config.epochs} "
            f"epochs, no privacy) on random halves of {result.n_reference_rows:,} rows, with "
            f"{where}.",
            "  audit with: --attack loss lira rmia --reference-models " + " ".join(models),
        ]
    )


def run(args: argparse.Namespace) -> int:
    from epsstar.plumbing.runtime.device import checked_device
    from epsstar.plumbing.runtime.threads import apply_threads, choose_threads
    from epsstar.training.data.tables import load_table
    from epsstar.training.runs.references import (
        check_count,
        check_recipe_columns,
        read_recipe,
        train_references,
    )

    device = checked_device(args.device)
    threads = choose_threads(1, args.threads)
    check_count(args.count)
    recipe = read_recipe(args.recipe)
    recipe = dataclasses.replace(recipe, config=dataclasses.replace(recipe.config, device=device))
    check_recipe_columns(recipe, args.data)
    data = load_table(
        args.data, args.label_column, features=recipe.feature_names, classes=recipe.classes
    )
    population = None
    if args.population is not None:
        population = load_table(
            args.population, args.label_column, features=data.feature_names, classes=data.classes
        )
    apply_threads(threads)
    result = train_references(
        data,
        recipe,
        args.out,
        count=args.count,
        seed=args.seed,
        population=population,
        overwrite=args.overwrite,
        progress=False if args.quiet else None,
        inputs=[("--data", args.data)]
        + ([] if args.population is None else [("--population", args.population)]),
    )
    if not args.quiet:
        print(summarise(result))
    return EXIT_OK
