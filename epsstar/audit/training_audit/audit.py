"""The audit of a training procedure, composed: canaries, runs, claim, bounds, verdict.

:func:`audit_training` draws the canaries (:mod:`.canaries`), plans the runs (:mod:`.runs`),
refuses an audit that could not refute the claim even with every guess right
(:func:`~epsstar.statistics.auditing.feasibility.check_canaries_can_refute`, before training
when the claim is known by then), runs the procedure, settles the claim — the one given, else
the one the runs state (the accountant's ε for epsstar's trainer, the saved model's
``epsstar.privacy`` for ``epsstar train``), with a warning when they differ — and bounds ε per
threat model:

* one run: k chosen from the number of canaries and the claim alone
  (:func:`~epsstar.statistics.auditing.one_run.choose_k.choose_k`), the k₊ = k₋ = k guesses, the
  (ε, δ) and μ-GDP bounds (:func:`~epsstar.statistics.auditing.one_run.bounds.audit_one_run`);
* many runs: the threshold chosen on half of the runs, its errors counted on the other half,
  the four bounds (:func:`~epsstar.statistics.auditing.many_runs.bounds.audit_many_runs`);
* the DI adversary's readings (:mod:`epsstar.statistics.auditing.identifiability`) for ``di``.

Every bound is taken at confidence 1 − (1 − c)/K for K threat models (:mod:`.result`).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from epsstar.audit.data.files import FileDigest
from epsstar.audit.data.text_records import scan_text
from epsstar.audit.training_audit.canaries import (
    CanaryRecords,
    Crafting,
    crafted_canaries,
    inclusion,
    population_canaries,
)
from epsstar.audit.training_audit.frames import check_columns, read_frame, write_frame
from epsstar.audit.training_audit.procedure import Claim, Preparing, Procedure, RunScores
from epsstar.audit.training_audit.result import (
    BOUNDS,
    BoundName,
    RunRecord,
    ThreatModelAudit,
    TrainingAuditResult,
)
from epsstar.audit.training_audit.runs import (
    RunInputs,
    RunPlan,
    RunProgress,
    derived_seed,
    execute,
)
from epsstar.audit.training_audit.store import RunStore, work_folder
from epsstar.audit.training_audit.text.designs import (
    SECRET_FROM,
    SECRET_TOKENS,
    TextCanaries,
    TextCanaryRecord,
    text_canaries,
)
from epsstar.audit.training_audit.text.tokens import CanaryTokenizer, check_canary_lengths
from epsstar.audit.training_audit.threat_models import (
    CanaryKind,
    ThreatModel,
    ThreatModelName,
    text_names,
    threat_models,
)
from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.plumbing.records.constraints import (
    ColumnNames,
    InRange,
    Maybe,
    OneOf,
    WholeNumber,
    check_fields,
    constraint,
)
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics._validation import DELTA
from epsstar.statistics.auditing.exposure import exposure_summary
from epsstar.statistics.auditing.feasibility import (
    ManyRunMethod,
    canaries_at_precision,
    check_canaries_can_refute,
    smallest_canary_count,
    smallest_run_count,
)
from epsstar.statistics.auditing.group_privacy import GroupClaim, group_claim
from epsstar.statistics.auditing.identifiability import identifiability_reading
from epsstar.statistics.auditing.many_runs.bounds import audit_many_runs
from epsstar.statistics.auditing.one_run.choose_k import ChosenK, choose_k, given_k
from epsstar.statistics.auditing.one_run.guess_rules import (
    audit_guess_rule,
    rule_confidence,
    rule_sides,
)
from epsstar.statistics.bounds.from_counts import bonferroni_confidence
from epsstar.statistics.names import GUESS_RULES, TRAINING_BOUNDS, GuessRule

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.engines.dask_engine import Engine

__all__ = ["TrainingAuditSetup", "audit_training"]


@dataclass(frozen=True, slots=True)
class TrainingAuditSetup:
    """What to audit, checked when built: the data, the canaries per kind, one run or
    ``runs`` runs with and ``runs`` without the canary, the threat models, the claim
    (``None``: the runs' own), the confidence, which bound decides, the seed, the ``work``
    folder to resume from, ``canary_repeats``: the copies of each included canary in a run's
    table, ``train_records``: the rows of ``train`` every run trains on, ``k``: the one-run
    guesses k₊ = k₋ fixed by the design (``None``: :func:`choose_k`'s rule), and ``guesses``:
    the one-run guessing rule (:mod:`~epsstar.statistics.auditing.one_run.guess_rules`);
    ``table_names``: how messages name ``train`` and ``population``. The threat models are
    checked against the procedure that serves them, when the audit starts."""

    train: Path
    population: Path
    label_column: str
    features: tuple[str, ...] | None = field(
        default=None, metadata=constraint(Maybe(ColumnNames()))
    )
    canaries: int = field(default=1000, metadata=constraint(WholeNumber()))
    runs: int = field(default=1, metadata=constraint(WholeNumber()))
    threat_models: tuple[ThreatModelName, ...] = ("input",)
    claimed_epsilon: float | None = field(
        default=None, metadata=constraint(Maybe(InRange(0.0, math.inf)))
    )
    delta: float | None = field(default=None, metadata=constraint(Maybe(DELTA)))
    confidence: float = field(default=0.95, metadata=constraint(InRange(0.0, 1.0)))
    bound: BoundName = field(
        default=TRAINING_BOUNDS.names[0], metadata=constraint(OneOf(TRAINING_BOUNDS))
    )
    seed: int = field(default=0, metadata=constraint(WholeNumber(minimum=0)))
    work: Path | None = None
    k: int | None = field(default=None, metadata=constraint(Maybe(WholeNumber())))
    guesses: GuessRule = field(
        default=GUESS_RULES.names[0], metadata=constraint(OneOf(GUESS_RULES))
    )
    #: Copies of each included canary in a run's table; the audit tests the claim's group
    #: guarantee for that many records (:mod:`~epsstar.statistics.auditing.group_privacy`).
    canary_repeats: int = field(default=1, metadata=constraint(WholeNumber(minimum=1)))
    #: Rows of ``train`` each run trains on (a sample drawn once from ``seed``); ``None``: all.
    train_records: int | None = field(
        default=None, metadata=constraint(Maybe(WholeNumber(minimum=0)))
    )
    #: How crafted canaries are made (the Python API's; the command line keeps the default).
    crafting: Crafting = field(default_factory=Crafting)
    #: How messages name the two tables (the options of the command line, or the objects of
    #: the Python API: ``the training DataFrame``).
    table_names: tuple[str, str] = ("--train", "--population")
    #: Text canaries of a language model's fine-tuning (``--text-column``; ``None``: a
    #: table's canaries). ``label_column`` is then the column of text.
    text: TextCanaries | None = None

    def __post_init__(self) -> None:
        check_fields(self)
        if self.runs in (2, 3):
            raise InvalidInputError(
                "runs must be 1 (one run with every canary) or at least 4 (runs with and "
                f"without the canary, half of them to choose the threshold). Found {self.runs}."
            )

    @property
    def many(self) -> bool:
        return self.runs > 1


@dataclass(frozen=True, slots=True)
class _Canaries:
    """The canaries of each kind the audit uses, and their tables' paths."""

    records: dict[CanaryKind, CanaryRecords]
    gradient: int
    #: What the JSON says of text canaries (``None``: none).
    text: TextCanaryRecord | None = None

    def count(self, kind: CanaryKind) -> int:
        return self.gradient if kind == "gradient" else self.records[kind].count


def _check_text(
    procedure: Procedure, setup: TrainingAuditSetup, chosen: tuple[ThreatModel, ...]
) -> None:
    """Text canaries go with the text threat models only, and with a procedure that saves
    a language model."""
    text = set(text_names())
    names = [model.name for model in chosen]
    if setup.text is None:
        wrong = [name for name in names if name in text]
        if wrong:
            raise InvalidInputError(
                f"--threat-model {wrong[0]} audits a language model with text canaries: give "
                f"--text-column. Found {wrong[0]!r} without it."
            )
        return
    wrong = [name for name in names if name not in text]
    if wrong:
        raise InvalidInputError(
            f"--text-column audits a language model through its text canaries: the threat "
            f"model is {', '.join(sorted(text))}. Found {wrong[0]!r}."
        )
    if getattr(procedure, "text", None) is None:
        raise InvalidInputError(
            "--text-column needs the fine-tuning as --command or --function (it saves a "
            "Hugging Face model folder). Found epsstar's own trainer of tables."
        )


def _check_setup(procedure: Procedure, setup: TrainingAuditSetup) -> tuple[ThreatModel, ...]:
    chosen = threat_models(list(setup.threat_models))
    _check_text(procedure, setup, chosen)
    served = procedure.serves()
    if setup.canary_repeats > 1:
        for model in chosen:
            if model.white_box:
                raise InvalidInputError(
                    "--canary-repeats copies canary records in the training table: it serves "
                    f"the threat models that see the final model only. Found {model.name!r}."
                )
    for model in chosen:
        if model.name not in served:
            raise InvalidInputError(
                f"--threat-model {model.name} sees inside the training: it needs epsstar's own "
                f"trainer (a command is audited through the model it saves: "
                f"{', '.join(served)}). Found {model.name!r}."
            )
    return chosen


def _draw_canaries(
    setup: TrainingAuditSetup,
    chosen: tuple[ThreatModel, ...],
    frames: tuple[pd.DataFrame, pd.DataFrame],
    capacity: int,
) -> _Canaries:
    train, population = frames
    kinds = {model.canaries for model in chosen}
    count = 1 if setup.many else setup.canaries
    records: dict[CanaryKind, CanaryRecords] = {}
    draw: dict[CanaryKind, Callable[..., CanaryRecords]] = {
        "population": population_canaries,
        "crafted": functools.partial(crafted_canaries, crafting=setup.crafting),
    }
    pairs: tuple[CanaryKind, ...] = ("population", "crafted")
    for kind in pairs:
        if kind in kinds:
            records[kind] = draw[kind](
                population,
                train,
                count,
                label_column=setup.label_column,
                features=setup.features,
                seed=derived_seed(setup.seed, kind),
            )
    gradient = min(count, capacity) if "gradient" in kinds else 0
    text = None
    if setup.text is not None:
        records["text"], text = _draw_text(setup, setup.text, frames, count)
    return _Canaries(records, gradient, text)


def _draw_text(
    setup: TrainingAuditSetup,
    settings: TextCanaries,
    frames: tuple[pd.DataFrame, pd.DataFrame],
    count: int,
) -> tuple[CanaryRecords, TextCanaryRecord]:
    """The text canaries, each checked to fit the fine-tuning's token limit before any run."""
    train, population = frames
    column = settings.text_column
    tokenizer = CanaryTokenizer.of(settings.tokenizer, settings.tokenizer_option)
    limit = tokenizer.limit(settings.max_length)
    records = text_canaries(
        [str(text) for text in population[column]],
        [str(text) for text in train[column]],
        count,
        settings=settings,
        tokenizer=tokenizer,
        columns=[str(name) for name in train.columns],
        seed=derived_seed(setup.seed, "text"),
    )
    longest = check_canary_lengths(
        tokenizer,
        [str(text) for text in records.frame[column]],
        [int(start) for start in records.frame[SECRET_FROM]],
        limit,
    )
    record = TextCanaryRecord(
        text_column=column,
        design=settings.design,
        tokenizer=tokenizer.name,
        tokenizer_folder=str(settings.tokenizer),
        max_length=limit,
        secret_tokens=None if settings.design == "population" else SECRET_TOKENS,
        longest_canary_tokens=longest,
        reference_model=None if settings.reference_model is None else str(settings.reference_model),
    )
    return records, record


def _plans(setup: TrainingAuditSetup, canaries: _Canaries) -> list[RunPlan]:
    kinds: list[CanaryKind] = list(canaries.records)
    if canaries.gradient:
        kinds.append("gradient")
    if not setup.many:
        included = {
            kind: tuple(
                bool(b)
                for b in inclusion(
                    canaries.count(kind), derived_seed(setup.seed, f"inclusion-{kind}")
                )
            )
            for kind in kinds
        }
        return [RunPlan(0, derived_seed(setup.seed, "runs"), "one", included)]
    arms = np.random.default_rng(derived_seed(setup.seed, "arms")).permutation(
        np.repeat([True, False], setup.runs)
    )
    return [
        RunPlan(
            index,
            derived_seed(setup.seed, "runs", index),
            "with" if bool(arm) else "without",
            {kind: (bool(arm),) * canaries.count(kind) for kind in kinds},
        )
        for index, arm in enumerate(arms)
    ]


def _settings(
    procedure: Procedure, setup: TrainingAuditSetup, digests: tuple[FileDigest, ...]
) -> JsonObject:
    """What decides the runs (the resume fingerprint of :mod:`.store`)."""
    return {
        "procedure": procedure.describe(),
        "data": [digest.sha256 for digest in digests],
        "label_column": setup.label_column,
        "features": None if setup.features is None else list(setup.features),
        "canaries": setup.canaries,
        "runs": setup.runs,
        "threat_models": list(setup.threat_models),
        "seed": setup.seed,
        # named only when set, so that a work folder of an audit without them still resumes
        **({"canary_repeats": setup.canary_repeats} if setup.canary_repeats > 1 else {}),
        **({"train_records": setup.train_records} if setup.train_records is not None else {}),
        **({"crafting": asdict(setup.crafting)} if setup.crafting != Crafting() else {}),
        **({"text": setup.text.describe()} if setup.text is not None else {}),
    }


def _training_rows(setup: TrainingAuditSetup, train: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``train`` every run trains on: all, or the ``train_records`` drawn once from
    the audit's seed (Nasr et al. 2021's small-data audits: every update carries the
    canaries)."""
    wanted = setup.train_records
    if wanted is None:
        return train
    if wanted > len(train):
        raise InvalidInputError(
            f"--train-records must be at most the {len(train)} rows of {setup.table_names[0]}. "
            f"Found {wanted}."
        )
    rng = np.random.default_rng(derived_seed(setup.seed, "train-records"))
    chosen = np.sort(rng.choice(len(train), size=wanted, replace=False))
    return train.iloc[chosen].reset_index(drop=True)


def _public_rows(population: pd.DataFrame, canaries: _Canaries) -> pd.DataFrame:
    """The population without the records any canary was drawn or crafted from."""
    used = [records.sources for records in canaries.records.values()]
    keep = np.ones(len(population), dtype=bool)
    for sources in used:
        keep[sources] = False
    return population.iloc[np.flatnonzero(keep)].reset_index(drop=True)


def _prepared(
    procedure: Preparing,
    setup: TrainingAuditSetup,
    population: pd.DataFrame,
    canaries: _Canaries,
    folder: Path,
) -> Procedure:
    """``procedure`` having read the population without the canaries' records (seeded)."""
    public = _public_rows(population, canaries)
    return procedure.prepared(
        write_frame(public, folder / f"public{setup.train.suffix.lower()}"),
        derived_seed(setup.seed, "pretrain"),
    )


def _run_inputs(
    setup: TrainingAuditSetup,
    rows: pd.DataFrame,
    canaries: _Canaries,
    chosen: tuple[ThreatModel, ...],
    folder: Path,
) -> RunInputs:
    """What every run reads, its tables written in ``folder``."""
    suffix = setup.train.suffix.lower()
    return RunInputs(
        setup.train
        if setup.train_records is None
        else write_frame(rows, folder / f"train-records{suffix}"),
        len(rows),
        _canary_tables(canaries, folder, suffix),
        tuple(model.name for model in chosen),
        setup.canary_repeats,
        tuple(str(name) for name in rows.columns),
        setup.text is not None,
    )


def _canary_tables(canaries: _Canaries, folder: Path, suffix: str) -> dict[CanaryKind, Path]:
    return {
        kind: write_frame(records.frame, folder / f"canaries-{kind}{suffix}")
        for kind, records in canaries.records.items()
    }


@dataclass(frozen=True, slots=True)
class _Claim:
    epsilon: float
    epsilon_from: str
    delta: float
    delta_from: str
    warnings: tuple[str, ...]
    #: What the claim says of the group of copies of one canary (itself with one copy).
    group: GroupClaim

    def tested(self, setup: TrainingAuditSetup) -> tuple[float, float]:
        """The (ε, δ) the deciding bound is compared with: the group's."""
        return self.group.tested_epsilon(BOUNDS[setup.bound].gaussian), self.group.group_delta


def _stated(runs: list[RunScores]) -> Claim | None:
    """The runs' own claim: the largest ε any run states, with its δ."""
    claims = [r.claim for r in runs if r.claim is not None]
    if not claims:
        return None
    if not all(c.private for c in claims):
        return next(c for c in claims if not c.private)
    return max(claims, key=lambda c: c.epsilon if c.epsilon is not None else -1.0)


def _settle_claim(setup: TrainingAuditSetup, stated: Claim | None, n_records: int) -> _Claim:
    warnings: list[str] = []
    if setup.claimed_epsilon is not None:
        epsilon, epsilon_from = float(setup.claimed_epsilon), "--claimed-epsilon"
        if stated is not None and stated.private and stated.epsilon is not None:
            said = stated.epsilon
            if not math.isclose(said, epsilon, rel_tol=1e-6):
                warnings.append(
                    f"the claim audited, epsilon = {epsilon:g} (--claimed-epsilon), differs "
                    f"from the one the training states, epsilon = {said:.6g} ({stated.source})"
                )
    elif stated is None:
        raise InvalidInputError(
            "no claim to audit: give --claimed-epsilon (the training run states no epsilon). "
            "Found none."
        )
    elif not stated.private or stated.epsilon is None:
        raise InvalidInputError(
            f"the training run states that it is not differentially private ({stated.source}): "
            "there is no claim to refute; give --claimed-epsilon to test one. Found no epsilon."
        )
    else:
        epsilon, epsilon_from = stated.epsilon, stated.source
    if setup.delta is not None:
        delta, delta_from = float(setup.delta), "--delta"
    elif stated is not None and stated.private and stated.delta:
        delta, delta_from = stated.delta, stated.source
    else:
        delta, delta_from = 1.0 / (n_records * math.log(n_records)), "1/(n ln n)"
    group = group_claim(epsilon, delta, setup.canary_repeats)
    return _Claim(epsilon, epsilon_from, delta, delta_from, tuple(warnings), group)


def _check_runs(
    runs: int, epsilon: float, delta: float, level: float, method: ManyRunMethod
) -> None:
    """Refuse --runs R whose evaluation half could not refute the claim with no error."""
    evaluation = (runs + 1) // 2
    needed = smallest_run_count(epsilon, delta, confidence=level, method=method)
    if evaluation < needed:
        raise InsufficientDataError(
            f"--runs {runs} leaves {evaluation} evaluation runs per arm (the other half "
            f"chooses the threshold), too few to refute epsilon = {epsilon:.6g} (delta = "
            f"{delta:.3g}) at {level:.3g} confidence with {method} even with no error: "
            f"use --runs {2 * needed} or more. Found {runs}."
        )


def _check_power(
    setup: TrainingAuditSetup,
    chosen: tuple[ThreatModel, ...],
    canaries: _Canaries,
    claim: _Claim,
    level: float,
) -> None:
    """Refuse an audit that cannot refute the (group) claim even with every guess right."""
    epsilon, delta = claim.tested(setup)
    one_run_method, many_method = BOUNDS[setup.bound].one_run, BOUNDS[setup.bound].many_runs
    for model in chosen:
        count = canaries.count(model.canaries)
        try:
            if setup.many:
                _check_runs(setup.runs, epsilon, delta, level, many_method)
            else:
                check_canaries_can_refute(
                    count, epsilon, delta, confidence=level, method=one_run_method
                )
        except InvalidInputError as error:
            group = (
                f" (the claim for a group of the {setup.canary_repeats} copies of each canary)"
                if setup.canary_repeats > 1
                else ""
            )
            raise type(error)(f"threat model {model.name}{group}: {error}") from None


def _guesses(scores: np.ndarray, k_plus: int, k_minus: int, direction: str) -> np.ndarray:
    """+1 for the k₊ most member-like canaries, −1 for the k₋ least, 0 for the rest (the rule
    of :func:`~epsstar.statistics.auditing.one_run.guesses.count_correct_guesses`, stable order)."""
    member_like = -scores if direction == "members_lower" else scores
    order = np.argsort(-member_like, kind="stable")
    guesses = np.zeros(scores.size, dtype=np.int8)
    guesses[order[:k_plus]] = 1
    guesses[order[scores.size - k_minus :]] = -1
    return guesses


def _one_run(
    model: ThreatModel,
    scores: np.ndarray,
    included: np.ndarray,
    claim: _Claim,
    setup: TrainingAuditSetup,
    level: float,
) -> ThreatModelAudit:
    method = BOUNDS[setup.bound].one_run
    epsilon, delta = claim.tested(setup)
    # each single rule of the guessing rule gets its k: one for k "in" and k "out", one for
    # k guesses on one side (chosen from m and the claim alone, or fixed by the design), for
    # the confidence that rule is bounded at
    each = rule_confidence(setup.guesses, level)
    by_sides: dict[int, ChosenK] = {}
    for sides in sorted(set(rule_sides(setup.guesses))):
        if setup.k is None:
            by_sides[sides] = choose_k(
                scores.size,
                epsilon,
                delta,
                confidence=each,
                method=method,
                sides=sides,
            )
        else:
            by_sides[sides] = given_k(
                scores.size,
                min(setup.k, scores.size // 2),
                epsilon,
                delta,
                confidence=each,
                method=method,
                sides=sides,
            )
    k_two = by_sides[2].k if 2 in by_sides else by_sides[1].k
    k_one = by_sides[1].k if 1 in by_sides else None
    ruled = audit_guess_rule(
        scores,
        included,
        rule=setup.guesses,
        k=min(k_two, scores.size // 2),
        k_one_sided=None if k_one is None else min(k_one, scores.size // 2),
        direction=model.direction,
        delta=delta,
        confidence=level,
        decide="gdp" if BOUNDS[setup.bound].gaussian else "epsilon",
    )
    bounds = ruled.chosen
    chosen = by_sides[2 if bounds.k_plus and bounds.k_minus else 1]
    deciding = bounds.epsilon_lower_gdp if BOUNDS[setup.bound].gaussian else bounds.epsilon_lower
    value = 0.0 if deciding is None else deciding
    guessed = bounds.k_plus + bounds.k_minus
    projection = None
    if value <= epsilon and guessed > 0:
        projection = canaries_at_precision(
            bounds.correct / guessed,
            guessed / scores.size,
            epsilon,
            delta,
            confidence=ruled.confidence_each,
            method=method,
        )
    return ThreatModelAudit(
        threat_model=model,
        canaries=scores.size,
        scores=scores,
        included=included,
        method=method,
        epsilon_lower_bound=value,
        epsilon_lower_gdp=bounds.epsilon_lower_gdp,
        refutes=value > epsilon,
        per_record_epsilon=_per_record(claim.group, value, bounds.mu_lower, setup),
        guesses=_guesses(scores, bounds.k_plus, bounds.k_minus, model.direction),
        chosen_k=chosen,
        one_run=bounds,
        guess_rule=ruled,
        canaries_to_refute=projection,
    )


def _per_record(
    group: GroupClaim, value: float, mu_lower: float, setup: TrainingAuditSetup
) -> float | None:
    """The per-record ε a bound of the group of copies implies (``None``: one copy each)."""
    if group.repeats == 1:
        return None
    return (
        group.per_record_gdp(mu_lower) if BOUNDS[setup.bound].gaussian else group.per_record(value)
    )


def _many_runs(
    model: ThreatModel,
    scores: np.ndarray,
    included: np.ndarray,
    claim: _Claim,
    setup: TrainingAuditSetup,
    level: float,
) -> ThreatModelAudit:
    method = BOUNDS[setup.bound].many_runs
    epsilon, delta = claim.tested(setup)
    bounds = audit_many_runs(
        scores[included],
        scores[~included],
        delta=delta,
        confidence=level,
        seed=derived_seed(setup.seed, "split"),
    )
    deciding = (
        bounds.epsilon_gdp if BOUNDS[setup.bound].gaussian else bounds.epsilon_clopper_pearson
    )
    value = 0.0 if deciding is None else deciding
    return ThreatModelAudit(
        threat_model=model,
        canaries=1,
        scores=scores,
        included=included,
        method=method,
        epsilon_lower_bound=value,
        epsilon_lower_gdp=bounds.epsilon_gdp,
        refutes=value > epsilon,
        per_record_epsilon=_per_record(claim.group, value, bounds.mu_lower, setup),
        many_runs=bounds,
    )


def _audited(
    model: ThreatModel,
    plans: list[RunPlan],
    runs: dict[int, RunScores],
    claim: _Claim,
    setup: TrainingAuditSetup,
    level: float,
) -> ThreatModelAudit:
    """One threat model's scores gathered over the runs, bounded."""
    if setup.many:
        scores = np.array([runs[p.index].scores[model.name][0] for p in plans], dtype=np.float64)
        included = np.array([p.arm == "with" for p in plans], dtype=bool)
        audited = _many_runs(model, scores, included, claim, setup, level)
    else:
        plan = plans[0]
        scores = np.asarray(runs[plan.index].scores[model.name], dtype=np.float64)
        included = np.asarray(plan.included[model.canaries], dtype=bool)
        if scores.size != included.size:
            raise InvalidInputError(
                f"the procedure must score every {model.canaries} canary under threat model "
                f"{model.name} ({included.size}). Found {scores.size} scores."
            )
        audited = _one_run(model, scores, included, claim, setup, level)
    if model.name != "di":
        return audited
    reading = identifiability_reading(
        scores, included, claimed_epsilon=claim.epsilon, delta=claim.delta
    )
    return replace(audited, identifiability=reading)


def _smallest(setup: TrainingAuditSetup, claim: _Claim, level: float) -> JsonObject:
    """The fewest canaries that could refute the claim with each one-run bound."""
    smallest: JsonObject = {}
    for name, bound in BOUNDS.items():
        try:
            smallest[name] = smallest_canary_count(
                claim.group.tested_epsilon(bound.gaussian),
                claim.group.group_delta,
                confidence=level,
                method=bound.one_run,
            )
        except InvalidInputError:
            smallest[name] = None
    return smallest


def _read_tables(setup: TrainingAuditSetup) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``--train`` and ``--population``, checked: the columns a table's audit reads, or the
    text records as the text audit reads them."""
    names, text = setup.table_names, setup.text is not None
    frames = (
        read_frame(setup.train, names[0], text=text),
        read_frame(setup.population, names[1], text=text),
    )
    for frame, option, path in zip(frames, names, (setup.train, setup.population), strict=True):
        if setup.text is None:
            check_columns(frame, option, setup.label_column, setup.features)
        else:
            scan_text(path, setup.text.text_column)
    return frames


def audit_training(
    procedure: Procedure,
    setup: TrainingAuditSetup,
    *,
    jobs: int = 1,
    engine: Engine | None = None,
    on_progress: Callable[[RunProgress], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    initializer: Callable[[], None] | None = None,
) -> TrainingAuditResult:
    """Audit ``procedure`` as ``setup`` says (see the module)."""
    start = time.perf_counter()
    say = on_phase or (lambda _: None)
    chosen = _check_setup(procedure, setup)
    frames = _read_tables(setup)
    digests = (FileDigest.of(setup.train), FileDigest.of(setup.population))
    say("drawing the canaries")
    canaries = _draw_canaries(setup, chosen, frames, procedure.gradient_capacity())
    plans = _plans(setup, canaries)
    level = bonferroni_confidence(setup.confidence, len(chosen))
    rows = _training_rows(setup, frames[0])
    n_first = len(rows) + setup.canary_repeats * sum(
        sum(plans[0].included.get(kind, ())) for kind in canaries.records
    )
    early = _early_claim(setup, procedure.claim(len(rows)), n_first)
    if early is not None:
        _check_power(setup, chosen, canaries, early, level)
    store = RunStore.open(setup.work, _settings(procedure, setup, digests))
    with work_folder(setup.work) as folder:
        prepares = isinstance(procedure, Preparing) and procedure.needs_public()
        if isinstance(procedure, Preparing) and prepares:
            say("preparing the procedure on the population without the canaries")
            procedure = _prepared(procedure, setup, frames[1], canaries, folder)
        inputs = _run_inputs(setup, rows, canaries, chosen, folder)
        say(f"training: {len(plans)} run{'s' if len(plans) > 1 else ''}")
        runs = execute(
            procedure,
            plans,
            inputs,
            store,
            jobs=jobs,
            engine=engine,
            on_progress=on_progress,
            initializer=initializer,
        )
    ordered = [runs[plan.index] for plan in plans]
    claim = _settle_claim(setup, _stated(ordered), n_first)
    if early is None:
        _check_power(setup, chosen, canaries, claim, level)
    say("bounding epsilon")
    audits = tuple(_audited(model, plans, runs, claim, setup, level) for model in chosen)
    text = _exposed(canaries.text, setup, audits)
    return TrainingAuditResult(
        procedure=procedure.describe(),
        design="many-runs" if setup.many else "one-run",
        claimed_epsilon=claim.epsilon,
        claimed_from=claim.epsilon_from,
        delta=claim.delta,
        delta_from=claim.delta_from,
        confidence=setup.confidence,
        confidence_each=level,
        bound=setup.bound,
        canaries=1 if setup.many else setup.canaries,
        runs=len(plans),
        threat_models=audits,
        run_records=_run_records(plans, runs),
        seed=setup.seed,
        seeds=_seeds(setup, prepares),
        data=digests,
        canaries_left_out=max((r.left_out for r in canaries.records.values()), default=0),
        smallest_canaries=_smallest(setup, claim, level),
        warnings=_warnings(claim, canaries, setup),
        seconds=time.perf_counter() - start,
        epsstar_version=_version(),
        canary_repeats=setup.canary_repeats,
        train_records=setup.train_records,
        group_claim=claim.group if setup.canary_repeats > 1 else None,
        text_canaries=text,
    )


def _exposed(
    text: TextCanaryRecord | None,
    setup: TrainingAuditSetup,
    audits: tuple[ThreatModelAudit, ...],
) -> TextCanaryRecord | None:
    """The text canaries' record with the included canaries' exposure among the left-out
    ones, when the canaries are draws of one distribution in one run."""
    if text is None or setup.text is None or setup.many or not setup.text.ranked:
        return text
    audit = next(a for a in audits if a.threat_model.canaries == "text")
    if audit.included.all() or not audit.included.any():
        return text
    exposure = exposure_summary(audit.scores, audit.included, audit.threat_model.direction)
    return replace(text, exposure=exposure)


def _run_records(plans: list[RunPlan], runs: dict[int, RunScores]) -> tuple[RunRecord, ...]:
    return tuple(
        RunRecord(
            p.index, p.seed, p.arm, runs[p.index].seconds, runs[p.index].model, runs[p.index].claim
        )
        for p in plans
    )


def _warnings(claim: _Claim, canaries: _Canaries, setup: TrainingAuditSetup) -> tuple[str, ...]:
    warnings = list(claim.warnings)
    if canaries.gradient and canaries.gradient < (1 if setup.many else setup.canaries):
        warnings.append(
            f"the model has room for {canaries.gradient} gradient canaries (one per parameter), "
            f"fewer than --canaries {setup.canaries}"
        )
    return tuple(warnings)


def _early_claim(setup: TrainingAuditSetup, stated: Claim | None, n_records: int) -> _Claim | None:
    """The claim when it is known before training (given, or the procedure's own)."""
    if setup.claimed_epsilon is None and (stated is None or not stated.private):
        return None
    return _settle_claim(setup, stated, n_records)


def _seeds(setup: TrainingAuditSetup, prepared: bool = False) -> JsonObject:
    """Every seed drawn from the audit's seed, by purpose (the runs' are in ``training_runs``)."""
    return {
        purpose: derived_seed(setup.seed, purpose)
        for purpose in (
            "population",
            "crafted",
            "inclusion-population",
            "inclusion-crafted",
            "inclusion-gradient",
            "arms",
            "split",
            *(("train-records",) if setup.train_records is not None else ()),
            *(("text", "inclusion-text") if setup.text is not None else ()),
            *(("pretrain",) if prepared else ()),
        )
    }


def _version() -> str:
    import epsstar

    return str(getattr(epsstar, "__version__", "unknown"))
