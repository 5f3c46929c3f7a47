"""The checks a release gate makes on one audit: one per attack, and per slice where the
limits name slices, each a statistic against its limit (:mod:`epsstar.audit.data.configs.limits`).

What each check compares is what the gate compares (:mod:`epsstar.statistics.bounds.gate`,
under the audit's ``--gate`` rule):

* an attack: with one attack, the audit's gate statistic; with several, that attack's
  statistic at the gate's per-test level (Bonferroni over the attacks), so that with one
  limit for all, some check fails exactly when the audit's gate does;
* a slice: the slice's Epsilon* (rule ``estimate``), its held-out lower bound (already at
  the per-slice confidence, Bonferroni over the slices; rule ``lower-bound``), or its
  Epsilon* counted only when its leak test rejects at ``1 − confidence_each`` (rule
  ``significant``). A slice too small to estimate is skipped, not passed.

* the extraction test of a text audit (``--max-extraction-rate``): the training records'
  greedy exact extraction rate minus the population's, as measured.

An audit whose inputs drew a warning that can hide a leak (``gate_blocked``) fails every
check of an attack or a slice, whatever the statistic. These records feed the pipeline
outputs (JUnit XML, the step summary, workflow annotations) and the exit code.
:class:`ModelFigures` holds what those outputs show of every audited model, gated or not.
"""

from __future__ import annotations

from dataclasses import dataclass

from epsstar.audit.data.configs.limits import Limits
from epsstar.audit.output.result import AuditResult
from epsstar.audit.output.slice_result import SliceResult, SliceRow
from epsstar.statistics.bounds.gate import GateStatistic
from epsstar.statistics.names import GateRule

__all__ = ["GateCheck", "ModelFigures", "gate_checks", "model_figures"]


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One statistic of one model against its limit.

    ``slice`` is ``column=value`` for a slice (``None``: the whole data); ``statistic`` is
    ``None`` for a slice too small to estimate (the check is skipped); ``blocked`` holds
    the warnings that fail the check whatever the statistic; ``extraction`` marks the
    extraction test's check (its ``attack`` is ``extraction``).
    """

    model: str
    attack: str
    slice: str | None
    rule: GateRule
    statistic: float | None
    limit: float
    blocked: tuple[str, ...] = ()
    extraction: bool = False

    @property
    def name(self) -> str:
        """``attack loss``, ``attack loss, slice group=a`` or ``extraction test``."""
        if self.extraction:
            return "extraction test"
        return f"attack {self.attack}" + ("" if self.slice is None else f", slice {self.slice}")

    @property
    def skipped(self) -> bool:
        return self.statistic is None

    @property
    def passed(self) -> bool:
        """Within its limit and not blocked (a skipped check counts as passed)."""
        if self.statistic is None:
            return True
        return not self.blocked and self.statistic <= self.limit

    @property
    def verdict(self) -> str:
        if self.skipped:
            return "SKIPPED"
        return "PASS" if self.passed else "FAIL"

    @property
    def statistic_name(self) -> str:
        """What the check compares with its limit (``Epsilon*``, ``the lower bound``, ...)."""
        return _EXTRACTION_STATISTIC if self.extraction else _STATISTIC[self.rule]

    def explanation(self) -> str:
        """One line: what was compared with what, and why it failed if it did."""
        statistic = "no estimate" if self.statistic is None else f"{self.statistic:.4f}"
        line = (
            f"{self.model}, {self.name}: {self.statistic_name} {statistic} against the "
            f"limit {self.limit:g} ({self.verdict})"
        )
        if self.blocked and self.statistic is not None:
            line += "; the inputs drew a warning that can hide a leak: " + self.blocked[0]
        return line


@dataclass(frozen=True, slots=True)
class ModelFigures:
    """What the pipeline outputs show of one audited model, with a limit or without:
    Epsilon* at its δ, the held-out lower bound at its confidence, and the premise's
    verdict (``None``: the blind baseline did not run)."""

    epsilon_star: float
    delta: float
    lower_bound: float
    confidence: float
    premise_holds: bool | None

    @property
    def delta_text(self) -> str:
        """δ to three significant digits, as the command line prints it."""
        return f"{self.delta:.3g}"

    @property
    def lower_bound_name(self) -> str:
        """``lower bound at 95%``: the bound named with the confidence it was taken at."""
        return f"lower bound at {self.confidence:.0%}"

    @property
    def premise(self) -> str:
        """The premise's verdict in words."""
        if self.premise_holds is None:
            return "not checked"
        return "holds" if self.premise_holds else "fails"

    def line(self) -> str:
        """One line naming each figure: ``Epsilon* 2.5218 at δ 0.000261, lower bound at 95%
        0.2640, premise holds``."""
        return (
            f"Epsilon* {self.epsilon_star:.4f} at δ {self.delta_text}, {self.lower_bound_name} "
            f"{self.lower_bound:.4f}, premise {self.premise}"
        )


def model_figures(result: AuditResult) -> ModelFigures:
    """The figures of ``result`` the pipeline outputs show."""
    bound = result.lower_bound
    return ModelFigures(
        result.epsilon_star, result.delta, bound.epsilon, bound.confidence, result.premise_holds
    )


_STATISTIC: dict[GateRule, str] = {
    "significant": "Epsilon* (counted when the leak test finds a leak)",
    "estimate": "Epsilon*",
    "lower-bound": "the lower bound",
}


_EXTRACTION_STATISTIC = "greedy exact extraction, training rate minus population rate"


def _extraction_check(result: AuditResult, model: str) -> list[GateCheck]:
    """The extraction test's check, when it ran with a limit."""
    extraction = None if result.text is None else result.text.extraction
    limit = None if extraction is None else extraction.settings.max_extraction_rate
    if extraction is None or limit is None:
        return []
    excess = extraction.greedy.excess
    return [GateCheck(model, "extraction", None, "estimate", excess, limit, extraction=True)]


def _attack_statistics(result: AuditResult) -> list[tuple[str, float, GateRule]]:
    """Each informative attack's name, gate statistic and rule (an uninformative attack is
    no test of the gate)."""
    gate = result.gate
    if result.attack_gates:
        names = [attack.name for attack in result.attacks if attack.informative]
        return [(n, g.value, g.rule) for n, g in zip(names, result.attack_gates, strict=True)]
    headline = result.headline_attack
    name = "loss" if headline is None else headline.name
    if gate is None:
        return [(name, result.epsilon_star, "estimate")]
    return [(name, gate.value, gate.rule)]


def _slice_statistic(row: SliceRow, slices: SliceResult, rule: GateRule) -> float | None:
    estimate = row.estimate
    if estimate.epsilon is None:
        return None
    if rule == "estimate":
        return estimate.epsilon.epsilon
    if rule == "lower-bound":
        return None if estimate.lower_bound is None else estimate.lower_bound.epsilon
    p_value = estimate.epsilon.leak_p_value
    level = 1.0 - slices.confidence_each
    return estimate.epsilon.epsilon if p_value is not None and p_value < level else 0.0


def _rule(gate: GateStatistic | None) -> GateRule:
    return "estimate" if gate is None else gate.rule


def gate_checks(result: AuditResult, limits: Limits, model: str) -> tuple[GateCheck, ...]:
    """The checks of ``model``'s audit under ``limits`` (none where no limit applies)."""
    blocked = result.warnings if result.gate_blocked else ()
    checks: list[GateCheck] = []
    for attack, statistic, rule in _attack_statistics(result):
        limit = limits.limit(model, attack)
        if limit is not None:
            checks.append(GateCheck(model, attack, None, rule, statistic, limit, blocked))
    checks += _extraction_check(result, model)
    slices = result.slices
    if slices is None or not limits.slices_checked:
        return tuple(checks)
    rule = _rule(result.gate)
    for row in slices.rows:
        limit = limits.limit(model, slices.attack, row.value)
        if limit is not None:
            value = _slice_statistic(row, slices, rule)
            name = f"{slices.column}={row.value}"
            checks.append(GateCheck(model, slices.attack, name, rule, value, limit, blocked))
    return tuple(checks)
