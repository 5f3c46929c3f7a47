"""Epsilon* of each membership test: the loss attack, offline LiRA, offline RMIA.

Every attack turns the target's (and the reference models') outputs into one score per
record, oriented like a loss, and :func:`epsstar.audit.attacks.from_losses.audit_losses` turns
the members' and non-members' scores into the same estimates as for the loss: the
headline Epsilon* (same estimator, interval and gate rule), the empirical Epsilon*, the
held-out lower bound and the TPR at 0.1 % and 1 % FPR; :func:`attack_auc` adds the AUC.

The attacks are those of :mod:`.registry`, each with its scorer. Members are the training
table's records; non-members are population records, which must be OUT for every reference
model (the user asserts it). An attack may score only some of the population records
(RMIA sets some aside, :mod:`.kinds.rmia`); the record of each attack states how many
records of each kind it used. An attack whose every record scores the same is recorded as
uninformative (:mod:`epsstar.statistics.attacks.uninformative`) in place of an estimate, and
an audit of nothing else is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from epsstar.audit.attacks.attack import AttackParameters, Scores
from epsstar.audit.attacks.from_losses import audit_losses
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.prefixed_warnings import prefixed_warnings
from epsstar.audit.attacks.references import check_reference_paths
from epsstar.audit.attacks.registry import attack, needs_of
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.attack_result import AttackResult
from epsstar.audit.output.result import AuditResult
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_types import JsonValue
from epsstar.statistics.attacks.power import attack_auc
from epsstar.statistics.attacks.uninformative import uninformative_reason
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.estimators.estimator import epsilon_star
from epsstar.statistics.names import ATTACKS, DEFAULT_ATTACK, AttackName
from epsstar.statistics.readings.readings import membership_readings
from epsstar.statistics.summaries.loss_sketch import pooled_parts, sketch_auc

__all__ = [
    "LOSS_ONLY",
    "AttackSettings",
    "attack_results",
    "check_attacks",
    "headline_from",
    "loss_attack",
]


@dataclass(frozen=True, slots=True)
class AttackSettings(AttackParameters):
    """The attacks asked for, in order, and their reference model files, with the attacks'
    parameters (RMIA's ``a`` and ``γ``, Min-K%'s share, keywords only); checked when built
    (known names, each once, existing reference model files, reference models for the
    attacks that need them, the parameters' ranges), so before any work starts."""

    attacks: tuple[AttackName, ...] = (DEFAULT_ATTACK,)
    reference_models: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        references = check_reference_paths(self.reference_models)
        object.__setattr__(self, "reference_models", references)
        object.__setattr__(self, "attacks", check_attacks(self.attacks, len(references)))
        AttackParameters.__post_init__(self)

    @property
    def needs_records(self) -> bool:
        """Whether an attack asked for reads the records of both tables."""
        return "records" in needs_of(self.attacks)

    @property
    def needs_blind(self) -> bool:
        """Whether an attack asked for reads the blind classifier's log-odds."""
        return "blind" in needs_of(self.attacks)

    @property
    def needs_log_odds(self) -> bool:
        """Whether an attack asked for needs the models' log-odds (read by an engine)."""
        return "log_odds" in needs_of(self.attacks)

    @property
    def needs_text(self) -> bool:
        """Whether an attack asked for scores text records (read by the text engine)."""
        return "text" in needs_of(self.attacks)


def check_attacks(attacks: Sequence[str] | str, n_references: int) -> tuple[AttackName, ...]:
    """The attack names, each known and named once, with the reference models they need."""
    if isinstance(attacks, str):
        raise InvalidInputError(
            f"attacks must be a sequence of names. Found the string {attacks!r}."
        )
    names = tuple(ATTACKS.check(name) for name in attacks)
    if not names:
        raise InvalidInputError("attacks must name at least one attack. Found none.")
    repeated = [name for name in names if names.count(name) > 1]
    if repeated:
        raise InvalidInputError(f"attacks must name each attack once. Found {repeated[0]!r} twice.")
    needing = [name for name in names if "references" in attack(name).needs]
    if needing and n_references == 0:
        raise InvalidInputError(
            f"the {needing[0]} attack needs reference models (--reference-models): models "
            f"trained like the target on data without the population records. Found none."
        )
    if n_references and not needing:
        using = [n for n in ATTACKS if "references" in attack(n).needs]
        raise InvalidInputError(
            f"reference models are used only by the {', '.join(using[:-1])} and {using[-1]} "
            f"attacks (--attack {' '.join(using)}). "
            f"Found {n_references} reference model(s) and the attacks {', '.join(names)}."
        )
    return names


#: The default: the loss attack alone.
LOSS_ONLY: Final[AttackSettings] = AttackSettings()


def _result(
    name: AttackName,
    audited: AuditResult,
    settings: Mapping[str, JsonValue],
) -> AttackResult:
    members, others = audited.train_losses, audited.population_losses
    if audited.summaries:  # from the whole sketches, not the figures' samples
        train = audited.summaries.get("train")
        population = audited.summaries.get("population")
        auc = sketch_auc(
            *pooled_parts(
                members if train is None else train.whole,
                others if population is None else population.whole,
            )
        )
    else:
        auc = attack_auc(members, others)
    return AttackResult(
        name=name,
        epsilon=audited.epsilon,
        empirical=audited.empirical,
        lower_bound=audited.lower_bound,
        gate=audited.gate,
        readings=audited.readings,
        auc=auc,
        settings=dict(settings),
        member_scores=members,
        nonmember_scores=others,
        delta_profile=audited.delta_profile,
    )


def loss_attack(base: AuditResult) -> AttackResult:
    """The loss attack's record, from the audit of the losses themselves."""
    loss = "logit" if base.provenance is None else base.provenance.loss
    return _result("loss", base, {"score": f"the {loss} loss"})


def _shaped_by(name: AttackName, settings: AttackSettings) -> str:
    """The command-line options that shaped ``name``'s scores, for a message."""
    if name != "rmia":
        return ""
    return f" (with --rmia-gamma {settings.rmia_gamma:g} and --rmia-a {settings.rmia_a:g})"


def attack_results(
    settings: AttackSettings,
    base: AuditResult,
    inputs: AttackInputs | None,
    options: AuditOptions,
) -> tuple[AttackResult, ...]:
    """One :class:`AttackResult` per attack of ``settings``, in order.

    ``base`` is the audit of the losses (the loss attack); ``inputs`` the target model's and
    the reference models' log-odds of the true label on the training and population
    records, which the attacks that need them score.
    """
    results = []
    for name in settings.attacks:
        chosen = attack(name)
        if chosen.score is None:
            results.append(loss_attack(base))
            continue
        if inputs is None:
            raise InvalidInputError(f"the {name} attack needs reference models. Found none.")
        scores = chosen.score(inputs, settings, options.seed)
        reason = uninformative_reason(scores.members, scores.nonmembers, name)
        if reason is not None:
            said = f"{reason}{_shaped_by(name, settings)}"
            results.append(_uninformative(name, scores, said, base.epsilon.delta, options))
            continue
        try:
            with prefixed_warnings(f"the {name} attack's scores: "):
                audited = audit_losses(
                    scores.members, scores.nonmembers, utility=base.utility, options=options
                )
        except InvalidInputError as error:
            # Scores that cannot be audited (all equal, too few) are the attack's doing:
            # name it and the options that shaped its scores.
            raise type(error)(
                f"the {name} attack's scores{_shaped_by(name, settings)}: {error}"
            ) from None
        recorded = _result(name, audited, scores.settings)
        results.append(dataclasses.replace(recorded, nonmember_rows=scores.nonmember_rows))
    _refuse_all_uninformative(results)
    return tuple(results)


def _uninformative(
    name: AttackName, scores: Scores, reason: str, delta: float, options: AuditOptions
) -> AttackResult:
    """The record of an attack whose scores carry no information: the figures at the
    audit's ``delta`` of a test with ``FPR = 1 - FNR`` at every threshold (the empirical
    Epsilon* 0 as its Epsilon*, the held-out lower bound 0, AUC 0.5), no gate statistic,
    and why."""
    members, others = scores.members, scores.nonmembers
    found = epsilon_star(members, others, delta=delta, method="empirical")
    found = dataclasses.replace(found, note=f"uninformative: {reason}")
    bound = split_lower_bound(
        members, others, delta=delta, confidence=options.confidence, seed=options.seed
    )
    return AttackResult(
        name=name,
        epsilon=found,
        empirical=found,
        lower_bound=bound,
        gate=None,  # no test of the gate: it could not fail whatever the model
        readings=membership_readings(members, others, found),
        auc=attack_auc(members, others),
        settings=dict(scores.settings),
        member_scores=members,
        nonmember_scores=others,
        nonmember_rows=scores.nonmember_rows,
        uninformative_reason=reason,
    )


def _refuse_all_uninformative(results: Sequence[AttackResult]) -> None:
    """Refuse an audit whose every attack is uninformative: it measured nothing."""
    if any(result.informative for result in results):
        return
    said = "; ".join(f"{r.name}: {r.uninformative_reason}" for r in results)
    raise InvalidInputError(
        f"every attack asked for is uninformative, so the audit measured nothing and gives "
        f"no Epsilon* (add --attack loss, or an attack whose scores differ between records). "
        f"Found {said}."
    )


def headline_from(base: AuditResult, results: Sequence[AttackResult]) -> AuditResult:
    """``base`` with the first informative attack's figures as its headline when the loss
    attack was not asked for (otherwise ``base`` itself), and the attacks' records."""
    attacked = dataclasses.replace(base, attacks=tuple(results))
    first = attacked.headline_attack
    if first is None or first.name == "loss":
        return attacked
    return dataclasses.replace(
        attacked,
        epsilon=first.epsilon,
        empirical=first.empirical,
        lower_bound=first.lower_bound,
        gate=first.gate,
        readings=first.readings,
        train_losses=first.member_scores,
        population_losses=first.nonmember_scores,
        delta_profile=first.delta_profile,
    )
