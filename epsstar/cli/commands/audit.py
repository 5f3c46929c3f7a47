"""``epsstar audit``: audit one saved model, optionally as a release gate."""

from __future__ import annotations

import argparse
import math
import shlex
from typing import TYPE_CHECKING, Any

from epsstar.cli.common.attack_options import (
    add_attack_options,
    attack_inputs,
    attack_lines,
    attack_options,
    slice_lines,
)
from epsstar.cli.common.options import (
    OUTPUT_FILES,
    add_engine_options,
    add_estimator_options,
    add_family_option,
    add_features_option,
    add_json_option,
    add_seed_option,
    column_names,
    describe_choices,
    emit,
    engine_option,
    json_path,
)
from epsstar.cli.common.pipeline import (
    STEP_SUMMARY_VARIABLE,
    GatedModel,
    GatedRun,
    StepSummary,
    add_pipeline_options,
    annotate,
    read_step_summary,
    step_summary_markdown,
    step_summary_path,
)
from epsstar.cli.common.premise_options import (
    add_premise_options,
    premise_blocks_gate,
    premise_lines,
    premise_settings,
)
from epsstar.cli.common.serving_options import add_serving_options, serving_option
from epsstar.cli.common.text_options import (
    add_text_options,
    extraction_failed,
    text_attack,
    text_inputs,
    text_lines,
    text_tables,
)
from epsstar.cli.common.text_table import extrapolation_note, interval_lines
from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK, EXIT_PREMISE_FAILED
from epsstar.statistics.names import DEFAULT_GATE, GATES, LOSSES, OUTPUT_KINDS

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.data.configs.limits import Limits
    from epsstar.audit.engines.dask_engine import Engine
    from epsstar.audit.many import FleetSettings
    from epsstar.audit.model.loading import ModelFile
    from epsstar.audit.options import AuditOptions
    from epsstar.audit.output.provenance import Provenance
    from epsstar.audit.output.result import AuditResult
    from epsstar.plumbing.records.json_types import JsonObject
    from epsstar.statistics.results import EpsilonStarResult

SUMMARY = "audit a saved model against its training and population data"


def _shape(text: str) -> tuple[int, ...]:
    try:
        shape = tuple(int(part) for part in text.replace("x", ",").split(","))
    except ValueError:
        shape = ()
    if not shape or any(n < 1 for n in shape):
        raise argparse.ArgumentTypeError(
            f"expected positive whole numbers separated by commas, e.g. 1,8,8. Found {text!r}"
        )
    return shape


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``audit`` and ``audit-many``."""
    add_separator_option(parser)
    parser.add_argument(
        "--delta",
        type=float,
        default=None,
        metavar="D",
        help="delta of the (epsilon, delta) statement; default 1/(n ln n), n = training rows",
    )
    parser.add_argument(
        "--max-epsilon",
        type=float,
        default=None,
        metavar="X",
        help="release gate: exit 1 when the --gate statistic exceeds X",
    )
    parser.add_argument(
        "--gate",
        choices=GATES.names,
        default=DEFAULT_GATE,
        help=f"what --max-epsilon is compared with. {describe_choices(GATES)} "
        f"(default: {DEFAULT_GATE})",
    )
    add_estimator_options(parser)
    add_family_option(parser)
    parser.add_argument(
        "--loss",
        choices=LOSSES.names,
        default="logit",
        help=f"per-record loss. {describe_choices(LOSSES)} (default: logit)",
    )
    parser.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="confidence of the Clopper-Pearson lower bound; 1 - confidence is the level of "
        "the gate's leak test (default 0.95)",
    )
    parser.add_argument(
        "--match-columns-by-position",
        action="store_true",
        help="the data's columns, in file order, are the model's inputs when it (or the data "
        "file) records no column names (without it a release gate refuses such a model "
        "unless --features states the order)",
    )
    parser.add_argument(
        "--trust-model",
        action="store_true",
        help="allow model files that can run code when loaded (pickle/joblib, "
        "untrusted skops types)",
    )
    add_seed_option(parser, "seed of fits, goodness-of-fit tests and the lower-bound split")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=16_384,
        metavar="ROWS",
        help="rows per model call while streaming the data (default 16384)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def audit_options(args: argparse.Namespace) -> AuditOptions:
    """The statistical options that :func:`add_model_options` declares."""
    from epsstar.audit.options import AuditOptions

    return AuditOptions(
        delta=args.delta,
        method=args.method,
        family=args.family,
        interval=args.interval,
        n_bootstrap=args.n_bootstrap,
        max_epsilon=args.max_epsilon,
        confidence=args.confidence,
        seed=args.seed,
        gate=args.gate,
    )


def fleet_settings(args: argparse.Namespace) -> FleetSettings:
    """What every model of ``audit-many`` is audited with (:func:`add_model_options`)."""
    from epsstar.audit.many import FleetSettings

    return FleetSettings(
        audit_options(args),
        args.loss,
        args.batch_size,
        args.trust_model,
        columns_by_position=args.match_columns_by_position,
        csv_separator=args.csv_separator,
        command=shlex.join(args.command_line) if "command_line" in args else None,
    )


def _storage_options(text: str) -> JsonObject:
    """A ``--storage-options`` value: a JSON object."""
    from epsstar.exceptions import InputFileError
    from epsstar.plumbing.files.schema import Where, parse_json_object

    try:
        return parse_json_object(text, Where("--storage-options"))
    except InputFileError as error:  # argparse names the option
        raise argparse.ArgumentTypeError(str(error).removeprefix("--storage-options: ")) from None


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "audit",
        help=SUMMARY,
        description=SUMMARY + ". " + OUTPUT_FILES + " Exit code: "
        "0 audited and within the gate (or no gate), 1 Epsilon* above "
        "--max-epsilon, a text audit's extraction above --max-extraction-rate, or an audit "
        "whose inputs drew a warning that can hide a leak (with --max-epsilon), 2 usage or "
        "input error, 4 a gate whose premise fails (train and population differ without the "
        "model; --accept-premise-failure reads the gate anyway).",
    )
    parser.add_argument(
        "model",
        metavar="MODEL",
        help="saved model (.onnx, .pt, .skops, ..., or a Hugging Face model folder), or the "
        "URL of a served model (http://host:8080/v2/models/NAME for the Open Inference "
        "Protocol, http://host:5000 for mlflow models serve)",
    )
    parser.add_argument(
        "--train",
        required=True,
        metavar="PATH",
        help="training data (.csv, .parquet, .npz, .npy); with --engine dask also a directory "
        "of .parquet files, a glob or an fsspec URL (s3://...)",
    )
    parser.add_argument(
        "--population",
        required=True,
        metavar="PATH",
        help="non-training data from the same distribution",
    )
    parser.add_argument(
        "--label-column", default=None, metavar="NAME", help="label column (tables)"
    )
    add_features_option(
        parser, "by the names the model records, else all but the label, by position"
    )
    parser.add_argument(
        "--input-shape",
        type=_shape,
        default=None,
        metavar="D1,D2,...",
        help="reshape each record into this shape for models taking tensors (e.g. 1,8,8 for "
        "64 pixel columns)",
    )
    _add_reading_options(parser)
    _add_compute_options(parser)
    add_serving_options(parser)
    add_model_options(parser)
    add_engine_options(parser, "data partition, or 1,024 text records")
    _add_storage_option(parser)
    add_attack_options(parser)
    add_premise_options(parser)
    add_text_options(parser)
    add_json_option(parser)
    parser.add_argument(
        "--report",
        metavar="OUT.html",
        default=None,
        help="write a self-contained HTML report to OUT.html",
    )
    add_pipeline_options(parser)
    parser.set_defaults(handler=run)


def _add_reading_options(parser: argparse.ArgumentParser) -> None:
    """How the model file is read: its loader, its outputs and the classes they stand for."""
    parser.add_argument(
        "--loader",
        default=None,
        metavar="NAME",
        help="loader plugin (default: chosen by the model file's suffix)",
    )
    parser.add_argument(
        "--outputs",
        choices=OUTPUT_KINDS.names,
        default=None,
        help=f"what the model outputs. {describe_choices(OUTPUT_KINDS)} (default: detected)",
    )
    parser.add_argument(
        "--class-labels",
        type=column_names,
        default=None,
        metavar="A,B,...",
        help="the class labels of the model's outputs, in order, for a model file that "
        "records none (a LightGBM booster); default: those the file records, else 0,1,...",
    )


def _add_compute_options(parser: argparse.ArgumentParser) -> None:
    """``--device`` and ``--threads``: where and on how many threads the model runs."""
    parser.add_argument(
        "--device",
        default="cpu",
        metavar="DEVICE",
        help="torch device the TorchScript, torch.export and Hugging Face loaders run the "
        "model on: cpu (default), cuda, cuda:N or mps, where this machine's torch has it",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="intra-op threads of torch and onnxruntime (default: $EPSSTAR_THREADS, else the "
        "cores this process may use that are not busy; never more than the cores)",
    )


def _separator(text: str) -> str:
    """``--csv-separator``: one character; ``\\t`` and ``tab`` stand for a tab."""
    return "\t" if text in ("\\t", "tab") else text


def add_separator_option(parser: argparse.ArgumentParser) -> None:
    """``--csv-separator`` (``audit`` and ``audit-many``)."""
    parser.add_argument(
        "--csv-separator",
        type=_separator,
        default=",",
        metavar="CHAR",
        help="the character separating the fields of CSV files (default ','; ';' for what "
        "spreadsheets write where the decimal mark is a comma; '\\t' or tab for tabs)",
    )


def _add_storage_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--storage-options",
        type=_storage_options,
        default=None,
        metavar="JSON",
        help="--engine dask: fsspec storage options of the data sets' URLs, as a JSON object "
        "(e.g. '{\"anon\": true}')",
    )


def estimator_name(result: EpsilonStarResult) -> str:
    """``method`` or ``method, family`` of a result, as the summaries print it."""
    return result.method + (f", {result.family}" if result.family else "")


def _with_reason(text: str, reason: str) -> str:
    """``text`` with why it disagrees with the number beside it, where it does."""
    return f"{text} ({reason})" if reason else text


def _reading_lines(result: AuditResult) -> list[str]:
    from epsstar.audit.side_by_side import advantage_reason, tpr_reason
    from epsstar.statistics.readings.noise import reading_noise

    readings = result.readings
    noise = reading_noise(
        readings,
        result.epsilon.n_train,
        result.epsilon.n_population,
        result.lower_bound.confidence,
        epsilon=result.epsilon_star,
        delta=result.delta,
    )
    reason = advantage_reason(noise)
    allowed = f"allowed {readings.advantage_bound:.4f}" + (f": {reason}" if reason else "")
    lines = [
        f"  at (Epsilon*, delta) an attacker's posterior belief in membership can reach "
        f"{readings.posterior_belief_bound:.1%}; membership advantage observed "
        f"{readings.advantage_observed:.4f} ({allowed})"
    ]
    for index, reading in enumerate(readings.tpr_at_fpr):
        fitted = reading.tpr_fitted
        lines.append(
            _with_reason(
                f"  TPR at {reading.fpr:.1%} FPR: observed {reading.tpr_observed:.4f}"
                + (f", fitted {fitted:.4f}" if fitted is not None and math.isfinite(fitted) else "")
                + f", allowed {reading.tpr_bound:.4f}",
                tpr_reason(noise, index),
            )
        )
    return lines


def _note_lines(result: AuditResult) -> list[str]:
    from epsstar.audit.side_by_side import gate_level_reason

    estimate = result.epsilon
    lines = []
    if estimate.poor_fit:
        lines.append("  warning: a goodness-of-fit test rejected a fitted distribution")
    if estimate.note:
        level = gate_level_reason(result) if estimate.leak_test is not None else ""
        lines.append(f"  note: {estimate.note}" + (f"; {level}" if level else ""))
    if estimate.tail_extrapolated:
        lines.append(extrapolation_note(estimate.unsupported_rates))
    return lines


def _declared_lines(result: AuditResult) -> list[str]:
    """The DP guarantee the model file declares, beside Epsilon*."""
    declared = result.declared_privacy
    if declared is None:
        return []
    if not declared.private or declared.epsilon is None:
        return ["  trained without differential privacy (as the model file declares)"]
    stated = f"DP-SGD at epsilon = {declared.epsilon:.4g}, delta = {declared.delta:.3g}"
    if result.above_declared_epsilon:
        return [
            f"  declared: {stated}; Epsilon* is above it, which an (epsilon, delta)-DP model's "
            "true Epsilon* cannot be: the excess is estimation error, not a finding"
        ]
    if declared.delta is not None and result.delta < declared.delta:
        return [f"  declared: {stated}; it does not bound Epsilon* at the smaller audit delta"]
    return [f"  declared: {stated}; Epsilon* is within it"]


def _profile_lines(result: AuditResult) -> list[str]:
    """Epsilon* from a well-supported δ down to the chosen one; * marks extrapolation."""
    points = result.delta_profile
    if len(points) < 2:
        return []
    shown = " | ".join(
        f"{p.delta:.2g}: {p.epsilon:.3f}{'' if p.supported else '*'}" for p in points
    )
    marked = any(not p.supported for p in points)
    return [f"  by delta {shown}{'  (* extrapolated tail)' if marked else ''}"]


def _gate_lines(result: AuditResult) -> list[str]:
    """What the gate compared with its limit, under which rule."""
    statistic = result.gate
    if statistic is None:
        return []
    test = f"held-out leak test p = {statistic.leak_p_value:.3g}"
    if statistic.test is not None:
        test = (
            f"{test} (the {statistic.test} attack's, the largest statistic of "
            f"{statistic.n_tests} attacks, each at level {statistic.level:.3g})"
        )
    if statistic.raised_to_lower_bound:
        return [
            f"  gate ({statistic.rule}): compared the lower bound {statistic.value:.4f} with the "
            f"limit: {UNDERSTATES}; {test}"
        ]
    found = "finds a leak" if statistic.leak_found else "finds no leak"
    decided = f"{found} at level {statistic.level:.3g}{_untested_headline(result)}"
    if statistic.rule == "significant":
        compared = (
            f"Epsilon* {statistic.value:.4f}" if statistic.leak_found else "0 (no leak found)"
        )
        return [
            f"  gate ({statistic.rule}): compared {compared} with the limit; the {test} {decided}"
        ]
    named = "Epsilon*" if statistic.rule == "estimate" else "the lower bound"
    return [
        f"  gate ({statistic.rule}): compared {named} {statistic.value:.4f} with the limit; "
        f"{test} {decided}"
    ]


def _untested_headline(result: AuditResult) -> str:
    """``; why`` a headline above 0 stands beside a leak test that finds no leak, if it does."""
    from epsstar.audit.side_by_side import untested_headline_reason

    reason = untested_headline_reason(result)
    return f"; {reason}" if reason else ""


def _empirical_text(result: AuditResult) -> str:
    """The empirical Epsilon*, with why it differs from the headline where it does."""
    from epsstar.audit.side_by_side import empirical_reason

    return _with_reason(
        f"empirical Epsilon* {result.empirical.epsilon:.4f}", empirical_reason(result)
    )


def _summarised_lines(result: AuditResult) -> list[str]:
    """Which sides were summarised (docs/scale.md), if any."""
    sides = [
        f"{'training' if side == 'train' else side} ({result.summaries[side].n:,} rows)"
        for side in ("train", "population")
        if side in result.summaries
    ]
    if not sides:
        return []
    return [
        f"  losses summarised: {' and '.join(sides)}, as exact tails and a fine histogram; "
        "the charts and the AUROC from a random sample (docs/scale.md)"
    ]


def _matching_lines(result: AuditResult) -> list[str]:
    """How the columns reached the model, when by position: before the result it shapes."""
    provenance = result.provenance
    if provenance is None or not provenance.columns.guessed:
        return []
    count = len(provenance.columns.file_columns)
    unnamed = (
        "the data file records no names, so the model's inputs get"
        if provenance.columns.unnamed == "data"
        else "the model records no names, so its inputs get"
    )
    return [
        f"columns matched by position: {unnamed} the data's {count} columns in file order "
        f"(--features states the order)"
    ]


def format_summary(result: AuditResult) -> str:
    """A few lines a person reads first."""
    gate = ""
    if result.max_epsilon is not None:
        verdict = "PASS" if result.passed else "FAIL"
        why = ""
        if result.premise_holds is False:
            why = "; the premise fails: exit 4 unless --accept-premise-failure"
        why += "; warnings about the inputs" if result.gate_blocked else ""
        gate = f"  [{verdict}: limit {result.max_epsilon:g}{why}]"
        gate_lines = _gate_lines(result)
    else:
        gate_lines = []
    utility = result.utility["population"]
    auroc = utility.auroc
    shown_auroc = f", AUROC {auroc:.4f}" if auroc is not None and math.isfinite(auroc) else ""
    provenance = result.provenance
    assert provenance is not None  # an audit of a model file records where it came from
    loader = provenance.loader
    return "\n".join(
        [
            *_matching_lines(result),
            f"Epsilon* = {result.epsilon_star:.4f}  (delta = {result.delta:.3g}, "
            f"{estimator_name(result.epsilon)}){gate}",
            *interval_lines(result.epsilon),
            *gate_lines,
            *_profile_lines(result),
            *_declared_lines(result),
            f"  lower bound {result.lower_bound.epsilon:.4f} at "
            f"{result.lower_bound.confidence:.0%} confidence (Clopper-Pearson, held-out split"
            f"{_above_estimate(result)}); {_empirical_text(result)}",
            *_reading_lines(result),
            *attack_lines(result),
            *slice_lines(result),
            *premise_lines(result),
            *text_lines(result),
            f"  utility on population data: accuracy {utility.accuracy:.4f}{shown_auroc} "
            f"({utility.n:,} rows); training rows {result.epsilon.n_train:,}",
            *_summarised_lines(result),
            *_note_lines(result),
            f"  {_model_text(provenance)}, loader {loader.name} "
            f"({loader.distribution} {loader.version})",
        ]
    )


#: Why a lower bound above its own estimate is printed beside it (the gate then compares the bound).
UNDERSTATES = "the estimate lies below its own lower bound, so it understates the leak"


def _above_estimate(result: AuditResult) -> str:
    """Said beside a lower bound that lies above the headline, so the two do not read as one
    contradicting the other (unless the gate's line above says it already)."""
    gate = result.gate
    said = result.max_epsilon is not None and gate is not None and gate.raised_to_lower_bound
    above = result.lower_bound.epsilon > result.epsilon_star
    return f"; {UNDERSTATES}" if above and not said else ""


def _model_text(provenance: Provenance) -> str:
    """The model's digest, or for a served model where and how it was reached."""
    served = provenance.served
    if served is None:
        return f"model sha256 {(provenance.model_sha256 or '')[:16]}..."
    named = " ".join(part for part in (served.model_name, served.model_version) if part)
    reported = ", ".join(part for part in (named, served.server) if part)
    return f"model served at {served.url} ({served.protocol}{', ' if reported else ''}{reported})"


def _model_file(args: argparse.Namespace) -> ModelFile:
    """The model file of the command line: its loader, outputs, trust, classes, base and
    device."""
    from epsstar.audit.inputs.served import is_url
    from epsstar.audit.run import ModelFile

    url = args.model if is_url(args.model) else None
    return ModelFile(
        args.model,
        args.loader,
        args.outputs,
        args.trust_model,
        classes=args.class_labels,
        base_model=args.base_model,
        device=args.device,
        url=url,
        serving=serving_option(args),
    )


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from epsstar.audit.inputs.served import without_credentials
    from epsstar.audit.run import Tables, audit
    from epsstar.cli.common.pipeline import limits_option
    from epsstar.cli.common.writers import JSON, JUNIT, REPORT, STEP_SUMMARY, RunFiles
    from epsstar.plumbing.runtime.threads import choose_threads, use_threads

    inputs = [("MODEL", args.model), ("--train", args.train), ("--population", args.population)]
    use_threads(choose_threads(1, args.threads))
    engine = engine_option(args)
    if not engine.on_dask and args.storage_options is not None:
        from epsstar.exceptions import InvalidInputError

        raise InvalidInputError(
            f"--storage-options needs --engine dask. Found engine {engine.name!r}."
        )
    inputs += attack_inputs(args) + text_inputs(args)
    text = text_tables(args)
    limits = limits_option(args)
    shown_model = without_credentials(args.model)
    limit = limits.for_model(shown_model, args.attack)
    options = dataclasses.replace(audit_options(args), max_epsilon=limit)
    summary_path = step_summary_path()
    with RunFiles(inputs) as files:
        json_file = files.plan("--json", json_path(args.json), JSON)
        report_file = files.plan("--report", args.report, REPORT)
        junit_file = files.plan("--junit-xml", args.junit_xml, JUNIT)
        summary_file = files.plan(f"${STEP_SUMMARY_VARIABLE}", summary_path, STEP_SUMMARY)
        model = _model_file(args)
        tables = text or Tables(
            args.train,
            args.population,
            args.label_column,
            features=args.features,
            input_shape=args.input_shape,
            batch_size=args.batch_size,
            loss=args.loss,
            storage_options=args.storage_options,
            columns_by_position=args.match_columns_by_position,
            csv_separator=args.csv_separator,
        )
        attack, slice_by = attack_options(args)
        attack = attack if text is None else text_attack(args, attack)
        with _progress(engine, args.quiet) as progress:
            result = audit(
                model,
                tables,
                options,
                attack=attack,
                slice_by=slice_by,
                engine=engine,
                progress=progress,
                command=shlex.join(args.command_line),
                premise=premise_settings(args),
            )
        files.add_inputs(result.files_read)
        gated = gated_run(result, limits, shown_model, args.report)
        payload = result.to_dict()
        files.write(json_file, payload)
        files.write(report_file, result)
        files.write(junit_file, gated)
        if summary_path is not None:
            section = step_summary_markdown(gated)
            files.write(summary_file, StepSummary(read_step_summary(summary_path), section))
        files.commit()
    written = [] if args.report is None else [("report", args.report)]
    written += [] if args.junit_xml is None else [("JUnit XML", args.junit_xml)]
    emit(payload, args.json, format_summary(result), files=written, verdict=_check_lines(gated))
    annotate(gated, json_on_stdout=args.json == "-")
    # limits from a file: its checks decide; else the audit's own gate (the same verdict)
    failed = gated.failed if limits.source is not None else result.passed is False
    failed = failed or extraction_failed(result)
    if premise_blocks_gate(result, args.accept_premise_failure) and not gated.warn_only:
        return EXIT_PREMISE_FAILED
    return EXIT_GATE_FAILED if failed and not gated.warn_only else EXIT_OK


def gated_run(result: AuditResult, limits: Limits, model: str, report: str | None) -> GatedRun:
    """The gate's checks of one audit, as the pipeline outputs render them."""
    from epsstar.audit.output.gate_checks import gate_checks, model_figures

    provenance = result.provenance
    gated = GatedModel(
        model,
        gate_checks(result, limits, model),
        result.warnings,
        report,
        None if provenance is None else provenance.columns.source,
        figures=model_figures(result),
    )
    return GatedRun((gated,), limits.warn_only, limits.source)


def _check_lines(run: GatedRun) -> list[str]:
    """The checks beyond the headline gate (limits per attack or slice), and warn-only (the
    extraction test's check has its own line, :func:`text_lines`)."""
    from epsstar.audit.side_by_side import count_of

    lines = []
    checks = [check for check in run.checks if not check.extraction]
    failed = [check for check in checks if not check.passed]
    if (len(checks) > 1 and failed) or (checks and run.limits_source is not None):
        source = run.limits_source or "--max-epsilon"
        lines.append(f"  limits ({source}): {count_of(len(checks), 'check')}, {len(failed)} failed")
        lines += [f"    {check.explanation()}" for check in failed]
    if run.warn_only and run.failed:
        lines.append("  warn-only: the gate failed; the exit code is 0")
    return lines


class _PartitionLines:
    """``--engine dask``'s progress: a line on standard error per finished partition."""

    def partition_done(self, role: str, done: int, total: int, rows: int, seconds: float) -> None:
        import sys

        rate = rows / seconds if seconds > 0 else 0.0
        print(
            f"{role}: {done}/{total} partitions, {rows:,} rows, {rate:,.0f} rows/s",
            file=sys.stderr,
            flush=True,
        )


def _progress(engine: Engine, quiet: bool) -> Any:
    """The progress bar of the single engine, or the partition lines of the dask engine."""
    import contextlib

    from epsstar.cli.common.progress import audit_progress

    if engine.on_dask:
        return contextlib.nullcontext(None if quiet else _PartitionLines())
    return audit_progress(enabled=not quiet)
