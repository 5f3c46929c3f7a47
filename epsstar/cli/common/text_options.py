"""``--text-column``, ``--base-model``, ``--min-k``, ``--no-record-text`` and the extraction
test's options of ``epsstar audit`` (a causal language model audited on text records,
docs/text.md), and the summary lines of a text audit."""

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
    from epsstar.audit.data.extraction_settings import ExtractionSettings
    from epsstar.audit.data.text_records import TextTables
    from epsstar.audit.output.result import AuditResult

__all__ = [
    "add_text_options",
    "extraction_failed",
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
    _add_extraction_options(parser)


def _add_extraction_options(parser: argparse.ArgumentParser) -> None:
    """The extraction test's options; their defaults are :class:`ExtractionSettings`'."""
    from epsstar.audit.data.extraction_settings import DEFAULT_EXTRACTION as DEFAULT

    parser.add_argument(
        "--extraction",
        action="store_true",
        help="also test what the model repeats: the greedy and sampled continuations of each "
        "record's prefix against its suffix, on training and population records (any "
        "--extraction-* option or --max-extraction-rate implies it)",
    )
    numbers = (
        ("--extraction-prefix", int, "N", "tokens of each record given as the prefix"),
        ("--extraction-suffix", int, "N", "tokens after the prefix the model must repeat"),
        ("--extraction-records", int, "N", "records of each side tested (a seeded sample)"),
        ("--extraction-samples", int, "N", "sampled continuations of each prefix"),
        ("--extraction-temperature", float, "T", "temperature of the sampled continuations"),
        ("--extraction-top-k", int, "K", "tokens the sampled continuations draw from"),
    )
    for flag, kind, metavar, what in numbers:
        default = getattr(DEFAULT, flag.removeprefix("--").replace("-", "_"))
        parser.add_argument(
            flag, type=kind, default=None, metavar=metavar, help=f"{what} (default {default})"
        )
    parser.add_argument(
        "--max-extraction-rate",
        type=float,
        default=None,
        metavar="R",
        help="release gate: exit 1 when the training records' greedy exact extraction rate "
        "exceeds the population's by more than R (0 to 1)",
    )


#: The extraction test's options, by the names they are kept under.
_EXTRACTION_OPTIONS = (
    "extraction_prefix",
    "extraction_suffix",
    "extraction_records",
    "extraction_samples",
    "extraction_temperature",
    "extraction_top_k",
    "max_extraction_rate",
)


def _extraction(args: argparse.Namespace) -> ExtractionSettings | None:
    """The extraction test asked for (``None``: none)."""
    from epsstar.audit.data.extraction_settings import ExtractionSettings

    given = {name: getattr(args, name) for name in _EXTRACTION_OPTIONS}
    given = {name: value for name, value in given.items() if value is not None}
    if not (args.extraction or given):
        return None
    return ExtractionSettings(**given)


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
                ("--extraction", args.extraction),
                *[
                    (f"--{name.replace('_', '-')}", getattr(args, name) is not None)
                    for name in _EXTRACTION_OPTIONS
                ],
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
        extraction=_extraction(args),
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
    return lines + _extraction_lines(result)


def _extraction_lines(result: AuditResult) -> list[str]:
    """The extraction test's line (greedy exact extraction, training beside population, and
    the excess the gate reads) and, with a limit, the gate's."""
    extraction = None if result.text is None else result.text.extraction
    if extraction is None:
        return []
    greedy, settings = extraction.greedy, extraction.settings
    train, population = greedy.train, greedy.population
    lines = [
        f"  extraction ({settings.extraction_prefix}-token prefix, "
        f"{settings.extraction_suffix}-token suffix): greedy exact {train.count}/{train.records} "
        f"training records ({train.rate:.1%}) vs {population.count}/{population.records} "
        f"population ({population.rate:.1%}), excess {greedy.excess:.3f}"
    ]
    limit = settings.max_extraction_rate
    if limit is not None:
        verdict = "PASSED" if extraction.passed else "FAILED"
        relation = "within" if extraction.passed else "above"
        lines.append(
            f"  extraction gate {verdict}: excess {greedy.excess:.3f} {relation} the limit "
            f"{limit:g} (--max-extraction-rate)"
        )
    return lines


def extraction_failed(result: AuditResult) -> bool:
    """The extraction test's gate failed (``--max-extraction-rate``)."""
    return result.text is not None and result.text.extraction_passed is False


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
