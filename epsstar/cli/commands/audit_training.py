"""``epsstar audit-training``: can a training procedure keep the (ε, δ)-DP it claims?

The procedure is a ``--command`` template, or epsstar's own DP-SGD trainer (the options of
``epsstar train``). Exit code 1 when a lower bound refutes the claim, 0 when none does, 2 on
bad input (nothing written). The audit is :func:`epsstar.audit.training_audit.audit.
audit_training`; ``docs/training-audit.md`` says what each threat model and bound means.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from epsstar.audit.training_audit.threat_models import (
    registered_threat_models,
    text_names,
    threat_model_names,
)
from epsstar.cli.common.options import (
    add_engine_options,
    add_features_option,
    add_json_option,
    describe_choices,
    emit,
    json_path,
)
from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK
from epsstar.statistics.names import CANARY_DESIGNS, GUESS_RULES, TRAINING_BOUNDS

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.training_audit.audit import TrainingAuditSetup
    from epsstar.audit.training_audit.external.initial_model import InitialModel
    from epsstar.audit.training_audit.procedure import Procedure
    from epsstar.audit.training_audit.result import TrainingAuditResult
    from epsstar.audit.training_audit.runs import RunProgress
    from epsstar.audit.training_audit.text.designs import TextCanaries

SUMMARY = (
    "audit a training procedure that claims (epsilon, delta)-DP with canaries: refute the "
    "claim, or measure how close to it the procedure comes"
)
#: Seconds a command may run for one training run, unless --timeout says otherwise.
DEFAULT_TIMEOUT = 3600.0
#: Runs of epsstar's own trainer trained together, unless --stack says otherwise.
DEFAULT_STACK = 8
#: ``--init``'s word for epsstar's own trainer: start from its network pretrained on the
#: population without the canaries.
PRETRAINED = "pretrained"


def _add_procedure_options(parser: argparse.ArgumentParser) -> None:
    from epsstar.cli.commands.train import add_threads_argument, add_training_arguments

    parser.add_argument(
        "--command",
        dest="training_command",  # "command" is the subcommand's name
        metavar="TEMPLATE",
        default=None,
        help="the training command, run without a shell: {train} becomes the path of the "
        "run's training table (--train's rows and the canaries included, same columns and "
        "format), {out} an empty folder to save one model in (any format epsstar audit "
        "reads), {seed} (optional) the run's seed. Without it epsstar's own trainer is "
        "audited with the training options below",
    )
    parser.add_argument(
        "--function",
        dest="training_function",
        metavar="MODULE:NAME",
        default=None,
        help="instead of --command, a Python function called as NAME(train_path, out_dir, "
        "seed) that trains on the run's table and saves one model in out_dir; imported once "
        "in each worker process (--jobs), so many runs cost their training only. The working "
        "folder is on the import path",
    )
    parser.add_argument(
        "--init",
        metavar="PATH",
        default=None,
        help="a model file every run of --command or --function starts from (any format the "
        "trainer reads, copied unchanged into each run's folder), or a model folder (a Hugging "
        "Face model: handed to each run as it is, not copied, and refused if a run changes "
        "it): {init} in the command becomes its path, a function is called with init=path. "
        "For epsstar's own "
        f"trainer, {PRETRAINED}: every run starts from its network pretrained once, without "
        "DP, on --population without the canaries",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"stop a --command run after this long (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--loader",
        default=None,
        metavar="NAME",
        help="the loader of the models the command saves (default: by the file's suffix)",
    )
    parser.add_argument(
        "--trust-model",
        action="store_true",
        help="allow model files that can run code when loaded (pickle/joblib, untrusted "
        "skops types)",
    )
    add_training_arguments(parser, epochs_required=False)
    add_threads_argument(parser)
    parser.add_argument(
        "--stack",
        type=int,
        default=DEFAULT_STACK,
        metavar="K",
        help="epsstar's own trainer: train up to K runs together as one batched computation "
        "when the threat models are black-box (input, crafted) and the trainer is not broken "
        f"(default {DEFAULT_STACK}; 1: one run at a time). A stack is one task of --jobs or "
        "--engine dask, and its runs are kept in --work when it finishes",
    )


def _add_guess_options(parser: argparse.ArgumentParser) -> None:
    """How one run's canaries are guessed: the rule and, when fixed in advance, its k."""
    parser.add_argument(
        "--guesses",
        choices=GUESS_RULES.names,
        default=GUESS_RULES.names[0],
        help=f"one run: how the canaries are guessed. {describe_choices(GUESS_RULES)}; each "
        "rule's k comes from the canary count and the claim alone, unless --k fixes it",
    )
    parser.add_argument(
        "--k",
        type=int,
        default=None,
        metavar="K",
        help="one run: fix every guessing rule's k in advance (K 'in' and K 'out' guesses, or K "
        "on one side; at most half the canaries) instead of choosing it from the canary count "
        "and the claim, which aims at a trainer near its claim: a large K (such as M/2) lets "
        "an audit of a trainer that memorises refute a claim far above its claim's reach",
    )


def _add_audit_options(parser: argparse.ArgumentParser) -> None:
    """The claim, the canaries, the runs, the threat models and the bound."""
    parser.add_argument(
        "--claimed-epsilon",
        type=float,
        default=None,
        metavar="EPS",
        help="the epsilon to audit (default: the one the training states: the accountant's "
        "for epsstar's trainer, training.json's for a model of epsstar train)",
    )
    parser.add_argument(
        "--canaries",
        type=int,
        default=1000,
        metavar="M",
        help="canaries of each kind in one run, each included with probability 1/2 (default 1000)",
    )
    parser.add_argument(
        "--canary-repeats",
        type=int,
        default=1,
        metavar="N",
        help="copies of each included canary in a run's training table (default 1). The "
        "claim is per record, so the audit tests what it implies for a group of N records: "
        "(N*epsilon, delta_N)-DP by group privacy, N*mu for mu-GDP (input, crafted)",
    )
    parser.add_argument(
        "--train-records",
        type=int,
        default=None,
        metavar="N",
        help="each run trains on N rows of --train (one sample, drawn once from --seed) and "
        "the canaries it includes, so that every update carries the canaries (default: all "
        "rows; 0: the canaries alone, for trainers that accept that)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=1,
        metavar="R",
        help="1 (default): one run with M canaries (Steinke et al. 2023); R >= 4: R runs "
        "with one canary and R without (Nasr et al. 2021)",
    )
    names = threat_model_names()
    white_box = [model.name for model in registered_threat_models() if model.white_box]
    parser.add_argument(
        "--threat-model",
        action="append",
        choices=names.names,
        default=None,
        help=f"what the adversary inserts and sees (repeatable; default {names.names[0]}). "
        f"{describe_choices(names)}. {', '.join(white_box)} need epsstar's own trainer",
    )
    parser.add_argument(
        "--bound",
        choices=TRAINING_BOUNDS.names,
        default=TRAINING_BOUNDS.names[0],
        help=f"the bound that decides. {describe_choices(TRAINING_BOUNDS)}",
    )
    parser.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="confidence of the lower bounds, shared by the threat models (default 0.95)",
    )


def _add_text_options(parser: argparse.ArgumentParser) -> None:
    """The text canaries of a language model's fine-tuning (docs/training-audit.md)."""
    parser.add_argument(
        "--text-column",
        metavar="NAME",
        default=None,
        help="audit the fine-tuning of a language model: --train and --population hold text "
        "records in this column (JSON Lines, CSV or Parquet), the canaries are text (a prefix "
        "and a secret) and the command saves a Hugging Face model folder in {out}",
    )
    parser.add_argument(
        "--canary-design",
        choices=CANARY_DESIGNS.names,
        default=CANARY_DESIGNS.names[0],
        help=f"with --text-column: how the canaries' secrets are made. "
        f"{describe_choices(CANARY_DESIGNS)}",
    )
    parser.add_argument(
        "--max-length",
        type=int,
        default=None,
        metavar="N",
        help="with --text-column: the most tokens of a record the fine-tuning trains on (also "
        "the tokenizer's model_max_length); a canary whose secret would be cut is refused "
        "before any run",
    )
    parser.add_argument(
        "--tokenizer",
        metavar="FOLDER",
        default=None,
        help="with --text-column: the model folder whose tokenizer the fine-tuning uses "
        "(default: --init's folder)",
    )
    parser.add_argument(
        "--reference-model",
        metavar="FOLDER",
        default=None,
        help="with --text-column: a language model folder (the base model, say) whose loss on "
        "each secret is subtracted from the trained model's (a calibrated score)",
    )


def _text_canaries(args: argparse.Namespace) -> TextCanaries | None:
    """The text canaries the options ask for (``None``: a table's canaries)."""
    from epsstar.audit.training_audit.text.designs import TextCanaries
    from epsstar.exceptions import InvalidInputError

    if args.text_column is None:
        if args.label_column is None:
            raise InvalidInputError(
                "audit-training needs --label-column (a table's label), or --text-column (a "
                "language model's text records). Found neither."
            )
        return None
    if args.label_column is not None:
        raise InvalidInputError(
            "--text-column audits text records, which have no label: leave out --label-column. "
            f"Found --label-column {args.label_column!r}."
        )
    if args.features is not None:
        raise InvalidInputError(
            "--text-column audits the text column alone: leave out --features. Found "
            f"--features {','.join(args.features)!r}."
        )
    if args.training_command is None and args.training_function is None:
        raise InvalidInputError(
            "--text-column needs the fine-tuning as --command or --function (it saves a "
            "Hugging Face model folder in {out}). Found neither."
        )
    if args.tokenizer is not None:
        tokenizer, option = Path(args.tokenizer), "--tokenizer"
    elif args.init is not None and Path(args.init).is_dir():
        tokenizer, option = Path(args.init), "--init"
    else:
        raise InvalidInputError(
            "--text-column needs the fine-tuning's tokenizer to check every canary before any "
            "run: --init FOLDER (the model every run starts from) or --tokenizer FOLDER. "
            f"Found {'--init ' + repr(args.init) if args.init else 'neither'}."
        )
    return TextCanaries(
        text_column=args.text_column,
        tokenizer=tokenizer,
        design=args.canary_design,
        max_length=args.max_length,
        reference_model=None if args.reference_model is None else Path(args.reference_model),
        tokenizer_option=option,
    )


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "audit-training",
        help=SUMMARY,
        description=SUMMARY + ". Exit code: 0 the claim is not refuted (which does not show "
        "that it holds), 1 refuted (this training procedure cannot be (epsilon, delta)-DP at "
        "the stated confidence), 2 usage or input error (nothing written).",
    )
    parser.add_argument("--train", required=True, metavar="PATH", help="training table")
    parser.add_argument(
        "--population",
        required=True,
        metavar="PATH",
        help="records of the same distribution, not in --train: the canaries are drawn here",
    )
    parser.add_argument(
        "--label-column", metavar="NAME", help="the label column (not with --text-column)"
    )
    add_features_option(parser, "every column but the label")
    _add_text_options(parser)
    _add_audit_options(parser)
    _add_guess_options(parser)
    parser.add_argument(
        "--work",
        metavar="DIR",
        default=None,
        help="keep each finished run here and resume from it after an interruption",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="training runs in parallel processes, or local Dask workers (default 1)",
    )
    add_engine_options(parser, "training run")
    add_json_option(parser)
    parser.add_argument(
        "--report",
        metavar="OUT",
        default=None,
        help="write the HTML report to OUT (trade-off curves, measured points, score histograms)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    _add_procedure_options(parser)
    parser.set_defaults(handler=run)


def _procedure(args: argparse.Namespace, text: TextCanaries | None) -> Procedure:
    """The command template, or epsstar's trainer with the training options."""
    from epsstar.exceptions import InvalidInputError

    label = args.label_column if text is None else text.text_column

    if args.training_command is not None and args.training_function is not None:
        raise InvalidInputError(
            "audit-training takes --command or --function, not both. Found "
            f"--command {args.training_command!r} and --function {args.training_function!r}."
        )
    if args.training_function is not None:
        from epsstar.audit.training_audit.procedure import FunctionProcedure, imported_function

        imported_function(args.training_function)  # one line now, not in every worker
        return FunctionProcedure(
            args.training_function,
            label,
            args.features,
            loader=args.loader,
            trust=args.trust_model,
            init=_initial_model(args),
            text=text,
        )
    if args.training_command is not None:
        from epsstar.audit.training_audit.external.command import CommandTemplate
        from epsstar.audit.training_audit.procedure import CommandProcedure

        return CommandProcedure(
            CommandTemplate.parse(args.training_command, args.timeout),
            label,
            args.features,
            loader=args.loader,
            trust=args.trust_model,
            init=_initial_model(args),
            text=text,
        )
    if args.init not in (None, PRETRAINED):
        raise InvalidInputError(
            f"--init for epsstar's own trainer must be {PRETRAINED} (its network pretrained on "
            "--population without the canaries); a model file is for --command or --function. "
            f"Found --init {args.init!r}."
        )
    if args.epochs is None:
        raise InvalidInputError(
            "audit-training needs --command or --function, or --epochs (and the other training "
            "options) to audit epsstar's own trainer. Found none of them."
        )
    from epsstar.cli.commands.train import config_from_args
    from epsstar.training.data.tables import load_table
    from epsstar.training.threat_models.own_trainer import OwnTrainer, parameter_count

    if not 1 <= args.stack <= 1_000:
        raise InvalidInputError(f"--stack must be from 1 to 1,000. Found {args.stack}.")
    config = config_from_args(args)
    data = load_table(args.train, args.label_column, features=args.features)
    parameters = parameter_count(data.n_features, data.n_classes, config.hidden)
    return OwnTrainer(
        config.standardising(has_population=True),
        args.label_column,
        parameters,
        args.features,
        population=args.population,
        stack=args.stack,
        init=None if args.init is None else "pretrained",
    )


def _initial_model(args: argparse.Namespace) -> InitialModel | None:
    from epsstar.audit.training_audit.external.initial_model import InitialModel

    return None if args.init is None else InitialModel.of(args.init)


def _setup(args: argparse.Namespace, text: TextCanaries | None) -> TrainingAuditSetup:
    from epsstar.audit.training_audit.audit import TrainingAuditSetup

    default = threat_model_names().names[:1] if text is None else text_names()
    return TrainingAuditSetup(
        train=Path(args.train),
        population=Path(args.population),
        label_column=args.label_column if text is None else text.text_column,
        features=args.features,
        canaries=args.canaries,
        runs=args.runs,
        threat_models=tuple(args.threat_model or default),
        claimed_epsilon=args.claimed_epsilon,
        delta=args.delta,
        confidence=args.confidence,
        bound=args.bound,
        guesses=args.guesses,
        k=args.k,
        canary_repeats=args.canary_repeats,
        train_records=args.train_records,
        seed=args.seed,
        work=None if args.work is None else Path(args.work),
        text=text,
    )


def progress_line(event: RunProgress) -> str:
    """``run 3 of 10 (with the canary) done in 4.2 s; about 30 s left``."""
    arms = {"one": "", "with": " (with the canary)", "without": " (without the canary)"}
    left = "" if event.left is None else f"; about {event.left:.0f} s left"
    return f"run {event.done} of {event.total}{arms[event.arm]} done in {event.seconds:.1f} s{left}"


def summary(result: TrainingAuditResult) -> str:
    """The verdict and one line per threat model."""
    from epsstar.audit.training_audit.result import BOUNDS

    lines = [result.verdict]
    for audit in result.threat_models:
        gdp = audit.epsilon_lower_gdp
        other = ""
        if not BOUNDS[result.bound].gaussian and gdp is not None:
            # the reading beside the deciding bound says that it does not decide, and why
            other = (
                f"; mu-GDP reading {gdp:.4g}, which does not decide: it holds only for "
                "trainers with a Gaussian trade-off curve (--bound gdp)"
            )
        lines.append(
            f"  {audit.threat_model.name}: epsilon >= {audit.epsilon_lower_bound:.4g} "
            f"({audit.method}, decides{other}){result.group_words(audit)}, "
            f"{audit.canaries} canaries"
        )
    lines.append(
        f"  claimed epsilon {result.claimed_epsilon:.6g} ({result.claimed_from}), delta "
        f"{result.delta:.3g} ({result.delta_from}); confidence {result.confidence:g}, "
        f"{result.runs} run{'s' if result.runs > 1 else ''}, seed {result.seed}"
    )
    text = result.text_canaries
    if text is not None:
        exposure = text.exposure
        exposed = (
            ""
            if exposure is None
            else f"; exposure of the included canaries: mean {exposure.mean:.3g}, largest "
            f"{exposure.largest:.3g} (at most {exposure.possible:.3g})"
        )
        lines.append(
            f"  text canaries: {text.design} design, {text.tokenizer} tokenizer, at most "
            f"{text.max_length} tokens{exposed}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from epsstar.audit.training_audit.audit import audit_training
    from epsstar.cli.common.options import engine_option
    from epsstar.cli.common.writers import JSON, TRAINING_AUDIT_REPORT, RunFiles
    from epsstar.exceptions import EpsstarWarning
    from epsstar.plumbing.runtime.device import checked_device
    from epsstar.plumbing.runtime.threads import apply_threads, choose_threads

    checked_device(args.device)
    text = _text_canaries(args)
    procedure = _procedure(args, text)
    setup = _setup(args, text)
    threads = choose_threads(max(1, args.jobs), args.threads)
    apply_threads(threads)
    quiet = args.quiet or args.json == "-"

    def say(text: str) -> None:
        if not quiet:
            print(f"audit-training: {text}", file=sys.stderr, flush=True)

    engine = engine_option(args, args.jobs)
    inputs = [("--train", args.train), ("--population", args.population)]
    with RunFiles(inputs) as files:
        json_file = files.plan("--json", json_path(args.json), JSON)
        report_file = files.plan("--report", args.report, TRAINING_AUDIT_REPORT)
        result = audit_training(
            procedure,
            setup,
            jobs=args.jobs,
            engine=engine if engine.on_dask else None,
            on_progress=lambda event: say(progress_line(event)),
            on_phase=say,
            initializer=functools.partial(apply_threads, threads),
        )
        document = result.to_dict()
        files.write(json_file, document)
        files.write(report_file, result)
        files.commit()
    import warnings

    for warning in result.warnings:
        warnings.warn(warning, EpsstarWarning, stacklevel=1)
    written = [("report", args.report)] if args.report else []
    shown = args.json if args.json == "-" else json_path(args.json)
    emit(document, shown, summary(result), files=written)
    return EXIT_GATE_FAILED if result.refuted else EXIT_OK


__all__ = [
    "DEFAULT_STACK",
    "DEFAULT_TIMEOUT",
    "SUMMARY",
    "progress_line",
    "register",
    "run",
    "summary",
]
