"""``--text-column``, ``--base-model``, ``--min-k`` and ``--no-record-text`` of ``epsstar
audit`` (a causal language model audited on text records, docs/text.md), and the summary
lines of a text audit."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from epsstar.statistics.attacks.text_scores import DEFAULT_MIN_K

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

    from epsstar.audit.attacks.scoring import AttackSettings
    from epsstar.audit.data.configs.manifest import ManifestEntry
    from epsstar.audit.data.text_records import TextTables
    from epsstar.audit.output.result import AuditResult

__all__ = [
    "add_text_options",
    "refuse_text_models",
    "text_attack",
    "text_inputs",
    "text_lines",
    "text_tables",
]


def add_text_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--text-column",
        default=None,
        metavar="NAME",
        help="audit a causal language model (a Hugging Face model folder, pip install "
        '"epsstar[text]") on the text in this column of --train and --population (.csv, '
        ".parquet, .jsonl); .txt files hold one record per line and need no column",
    )
    parser.add_argument(
        "--base-model",
        default=None,
        metavar="DIR",
        help="the base model folder a LoRA adapter folder (MODEL) applies to",
    )
    parser.add_argument(
        "--min-k",
        type=float,
        default=DEFAULT_MIN_K,
        metavar="K",
        help=f"the share of least likely tokens Min-K%% and Min-K%%++ average (default "
        f"{DEFAULT_MIN_K:g})",
    )
    parser.add_argument(
        "--no-record-text",
        action="store_true",
        help="keep the records' text out of the JSON and the report (sensitive corpora): the "
        "most exposed records are named by row only",
    )


def _is_text(args: argparse.Namespace) -> bool:
    """A text audit: ``--text-column``, or ``.txt`` data and no ``--label-column``."""
    if args.text_column is not None:
        return True
    paths = (Path(args.train), Path(args.population))
    return args.label_column is None and all(p.suffix.lower() == ".txt" for p in paths)


def text_tables(args: argparse.Namespace) -> TextTables | None:
    """The text records of a text audit, ``None`` for a table audit (then ``--label-column``
    is required and the text options are refused)."""
    from epsstar.audit.data.text_records import TextTables
    from epsstar.exceptions import InvalidInputError

    if not _is_text(args):
        if args.label_column is None:
            raise InvalidInputError(
                "--label-column is required (or --text-column for a language model on text "
                "records). Found neither."
            )
        used = [
            name
            for name, given in (
                ("--base-model", args.base_model is not None),
                ("--no-record-text", args.no_record_text),
            )
            if given
        ]
        if used:
            raise InvalidInputError(
                f"{used[0]} applies to text audits (--text-column). Found it with "
                f"--label-column {args.label_column!r}."
            )
        return None
    if args.label_column is not None:
        raise InvalidInputError(
            f"a text audit (--text-column) reads no labels; drop --label-column. Found "
            f"--label-column {args.label_column!r}."
        )
    return TextTables(
        args.train,
        args.population,
        args.text_column,
        args.batch_size,
        record_text=not args.no_record_text,
    )


def text_attack(args: argparse.Namespace, attack: AttackSettings) -> AttackSettings:
    """``attack`` with ``--min-k``."""
    return dataclasses.replace(attack, min_k=args.min_k)


def text_inputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The base model folder among the command's inputs (no output may replace it)."""
    return [] if args.base_model is None else [("--base-model", args.base_model)]


def text_lines(result: AuditResult) -> list[str]:
    """The model, the tokens, the windows, the blind baseline and the most exposed record
    of a text audit (none for a table audit)."""
    text = result.text
    if text is None:
        return []
    info = text.model
    train, population = text.windows
    lines = [
        f"  language model {info.architecture} ({info.parameters:,} parameters, context "
        f"{info.context} tokens{'' if info.adapter is None else ', LoRA adapter'}); tokens "
        f"scored: {text.tokens[0]:,} training, {text.tokens[1]:,} population"
    ]
    if train.records or population.records:
        lines.append(
            f"  {train.records + population.records:,} record(s) longer than the context "
            f"scored in sliding windows of {train.context} tokens, stride {train.stride}"
        )
    baseline = text.blind_baseline
    if baseline is not None:
        from epsstar.audit.side_by_side import lower_bound_rule

        verdict = "holds" if baseline.premise_holds else "FAILS"
        lines.append(
            f"  premise {verdict}: blind baseline ({baseline.classifier}) Epsilon* "
            f"{baseline.epsilon.epsilon:.4f}, lower bound {baseline.lower_bound.epsilon:.4f}, "
            f"AUC {baseline.auc:.4f}; "
            f"{lower_bound_rule(baseline.epsilon.epsilon, baseline.lower_bound)}"
        )
    if text.exposed:
        first = text.exposed[0]
        shown = "" if first.excerpt is None else f": {first.excerpt[:70]!r}"
        lines.append(
            f"  most exposed training record: row {first.row} ({first.attack} attack){shown}"
        )
    return lines


def refuse_text_models(entries: Sequence[ManifestEntry]) -> None:
    """Refuse a manifest entry that gives a language model's folder a classifier's tables
    (a ``label_column``): the model is audited on text records (a ``text_column``)."""
    from epsstar.exceptions import InvalidInputError
    from epsstar.loaders.huggingface import HuggingFaceLoader

    reader = HuggingFaceLoader()
    for entry in entries:
        if entry.text_column is None and entry.model.is_dir() and reader.reads_folder(entry.model):
            raise InvalidInputError(
                f"a language model's folder is audited on text records: give its manifest "
                f"entry the text_column of its records instead of a label_column. Found the "
                f"folder {str(entry.model)!r} with label_column {entry.label_column!r}."
            )
