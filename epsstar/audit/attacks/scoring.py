"""Epsilon* of each membership test: the loss attack, offline LiRA, offline RMIA.

Every attack turns the target's (and the reference models') outputs into one score per
record, oriented like a loss, and :func:`epsstar.audit.attacks.from_losses.audit_losses` turns
the members' and non-members' scores into the same estimates as for the loss: the
headline Epsilon* (same estimator, interval and gate rule), the empirical Epsilon*, the
held-out lower bound and the TPR at 0.1 % and 1 % FPR; :func:`attack_auc` adds the AUC.

The data split. Members are the training table's records. Non-members are population
records, which must be OUT for every reference model (the user asserts it). The loss
attack and LiRA score every population record. RMIA compares each record with population
records ``z``: a random subset of the population (:func:`z_split`, fixed by the seed) is
set aside as ``z``, and RMIA scores only the other population records, so that no scored
record is compared with itself. The record of each attack states how many records of each
kind it used.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from math import inf
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.attacks.from_losses import AuditOptions, audit_losses
from epsstar.audit.attacks.prefixed_warnings import prefixed_warnings
from epsstar.audit.attacks.references import ReferenceConfidences, check_reference_paths
from epsstar.audit.output.attack_result import AttackResult
from epsstar.audit.output.result import AuditResult
from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray, check_in_range
from epsstar.statistics.attacks.defaults import DEFAULT_A, DEFAULT_GAMMA
from epsstar.statistics.attacks.lira import lira_offline
from epsstar.statistics.attacks.power import attack_auc
from epsstar.statistics.attacks.rmia import rmia_offline
from epsstar.statistics.names import ATTACKS, DEFAULT_ATTACK, AttackName
from epsstar.statistics.summaries.loss_sketch import pooled_parts, sketch_auc

__all__ = [
    "LOSS_ONLY",
    "Z_FRACTION",
    "Z_MAX",
    "AttackSettings",
    "attack_results",
    "check_attacks",
    "headline_from",
    "loss_attack",
    "z_split",
]

#: The share of the population set aside as RMIA's ``z`` records, and their largest number.
Z_FRACTION: Final[float] = 0.25
Z_MAX: Final[int] = 5_000

#: Attacks that need reference models.
NEEDS_REFERENCES: Final[frozenset[str]] = frozenset({"lira", "rmia"})


@dataclass(frozen=True, slots=True)
class AttackSettings:
    """The attacks asked for, in order, their reference model files, and RMIA's ``a`` and
    ``γ``; checked when built (known names, each once, existing reference model files, and
    reference models for the attacks that need them), so before any work starts."""

    attacks: tuple[AttackName, ...] = (DEFAULT_ATTACK,)
    reference_models: tuple[Path, ...] = ()
    rmia_a: float = DEFAULT_A
    rmia_gamma: float = DEFAULT_GAMMA

    def __post_init__(self) -> None:
        references = check_reference_paths(self.reference_models)
        object.__setattr__(self, "reference_models", references)
        object.__setattr__(self, "attacks", check_attacks(self.attacks, len(references)))
        a = check_in_range("rmia_a", self.rmia_a, 0.0, 1.0, low_inclusive=True, high_inclusive=True)
        object.__setattr__(self, "rmia_a", a)
        object.__setattr__(
            self, "rmia_gamma", check_in_range("rmia_gamma", self.rmia_gamma, 0, inf)
        )


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
    needing = [name for name in names if name in NEEDS_REFERENCES]
    if needing and n_references == 0:
        raise InvalidInputError(
            f"the {needing[0]} attack needs reference models (--reference-models): models "
            f"trained like the target on data without the population records. Found none."
        )
    if n_references and not needing:
        raise InvalidInputError(
            "reference models are used only by the lira and rmia attacks (--attack lira rmia). "
            f"Found {n_references} reference model(s) and the attacks {', '.join(names)}."
        )
    return names


#: The default: the loss attack alone.
LOSS_ONLY: Final[AttackSettings] = AttackSettings()


def z_split(n_population: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(scored, z) population indices: ``z`` a random ``Z_FRACTION`` (at most ``Z_MAX``,
    at least 1) of the population, the rest scored; both sorted."""
    n_z = min(Z_MAX, max(1, int(n_population * Z_FRACTION)))
    chosen = np.random.default_rng([seed, 0x2A]).permutation(n_population)
    return np.sort(chosen[n_z:]), np.sort(chosen[:n_z])


def _result(
    name: AttackName,
    audited: AuditResult,
    settings: dict[str, Any],
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
        settings=settings,
        member_scores=members,
        nonmember_scores=others,
        delta_profile=audited.delta_profile,
    )


def loss_attack(base: AuditResult) -> AttackResult:
    """The loss attack's record, from the audit of the losses themselves."""
    loss = base.provenance.get("loss", "logit")
    return _result("loss", base, {"score": f"the {loss} loss"})


def _scores(
    name: AttackName,
    target: tuple[FloatArray, FloatArray],
    references: ReferenceConfidences,
    settings: AttackSettings,
    seed: int,
) -> tuple[FloatArray, FloatArray, dict[str, Any], NDArray[np.int64] | None]:
    """(member scores, non-member scores, settings, the population rows scored: ``None``
    for all) of a reference-model attack."""
    on_train, on_population = target
    common: dict[str, Any] = {"reference_models": references.count}
    if name == "lira":
        both = np.concatenate([on_train, on_population])
        refs = np.hstack([references.train, references.population])
        lira = lira_offline(both, refs)
        n = on_train.size
        return (
            lira.scores[:n],
            lira.scores[n:],
            {**common, "score": "(mu_out - phi) / sigma_out", "variance": lira.variance},
            None,
        )
    scored, z = z_split(on_population.size, seed)
    both = np.concatenate([on_train, on_population[scored]])
    refs = np.hstack([references.train, references.population[:, scored]])
    rmia = rmia_offline(
        both,
        refs,
        on_population[z],
        references.population[:, z],
        a=settings.rmia_a,
        gamma=settings.rmia_gamma,
    )
    n = on_train.size
    split = {
        "z_records": int(z.size),
        "scored_population_records": int(scored.size),
        "z_selection": f"random {Z_FRACTION:.0%} of the population (at most {Z_MAX}), "
        f"seed {seed}; not scored",
    }
    return (
        rmia.scores[:n],
        rmia.scores[n:],
        {
            **common,
            "score": "1 - Pr_z(LR(x, z) >= gamma)",
            "a": rmia.a,
            "gamma": rmia.gamma,
            **split,
        },
        scored,
    )


def attack_results(
    settings: AttackSettings,
    base: AuditResult,
    target: tuple[FloatArray, FloatArray] | None,
    references: ReferenceConfidences | None,
    options: AuditOptions,
) -> tuple[AttackResult, ...]:
    """One :class:`AttackResult` per attack of ``settings``, in order.

    ``base`` is the audit of the losses (the loss attack); ``target`` the target model's
    log-odds of the true label on the training and population records, and
    ``references`` the reference models', both needed only by LiRA and RMIA.
    """
    results = []
    for name in settings.attacks:
        if name == "loss":
            results.append(loss_attack(base))
            continue
        if target is None or references is None:
            raise InvalidInputError(f"the {name} attack needs reference models. Found none.")
        members, others, recorded, rows = _scores(name, target, references, settings, options.seed)
        with prefixed_warnings(f"the {name} attack's scores: "):
            audited = audit_losses(members, others, utility=base.utility, options=options)
        results.append(dataclasses.replace(_result(name, audited, recorded), nonmember_rows=rows))
    return tuple(results)


def headline_from(base: AuditResult, results: Sequence[AttackResult]) -> AuditResult:
    """``base`` with the first attack's figures as its headline when the loss attack was
    not asked for (otherwise ``base`` itself), and the attacks' records."""
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
