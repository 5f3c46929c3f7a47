"""``--attack``, ``--reference-models`` and ``--slice-by`` of ``epsstar audit``, and the
summary lines of the attacks and of the slices."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from epsstar.cli.common.options import describe_choices
from epsstar.statistics.attacks.defaults import DEFAULT_A, DEFAULT_GAMMA
from epsstar.statistics.names import ATTACKS, DEFAULT_ATTACK

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.attacks.scoring import AttackSettings
    from epsstar.audit.output.result import AuditResult

__all__ = [
    "add_attack_options",
    "attack_inputs",
    "attack_lines",
    "attack_options",
    "slice_lines",
]


def add_attack_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--attack",
        nargs="+",
        choices=ATTACKS.names,
        default=[DEFAULT_ATTACK],
        metavar="NAME",
        help=f"membership tests to audit, each with its Epsilon*; the headline is the loss "
        f"attack's when asked for, else the first one's. {describe_choices(ATTACKS)} "
        f"(default: {DEFAULT_ATTACK})",
    )
    parser.add_argument(
        "--reference-models",
        nargs="+",
        default=[],
        metavar="FILE",
        help="models trained the way the target was, on data that contain no record of "
        "--population (you assert this: otherwise LiRA and RMIA are not valid tests); any "
        "format a loader reads, with the target's classes in the same order",
    )
    parser.add_argument(
        "--rmia-a",
        type=float,
        default=DEFAULT_A,
        metavar="A",
        help=f"RMIA's offline scaling Pr(x) = ((1+A) Pr_OUT(x) + 1 - A) / 2, A in [0, 1] "
        f"(default {DEFAULT_A:g})",
    )
    parser.add_argument(
        "--rmia-gamma",
        type=float,
        default=DEFAULT_GAMMA,
        metavar="G",
        help=f"RMIA's ratio a record must beat a population record by (default {DEFAULT_GAMMA:g})",
    )
    parser.add_argument(
        "--slice-by",
        metavar="COLUMN",
        help="a column of both tables (the label column or any other, at most 50 distinct "
        "values): Epsilon* within each of its values, with record counts, interval and lower "
        "bounds that hold together; slices too small for the estimator say so",
    )


def attack_options(args: argparse.Namespace) -> tuple[AttackSettings, str | None]:
    """The attacks and the slice column of :func:`add_attack_options`."""
    from epsstar.audit.attacks.scoring import AttackSettings

    chosen = AttackSettings(
        tuple(args.attack),
        tuple(args.reference_models),
        rmia_a=args.rmia_a,
        rmia_gamma=args.rmia_gamma,
    )
    return chosen, args.slice_by


def attack_inputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The reference model files among the command's inputs (no output may replace one)."""
    return [("--reference-models", path) for path in args.reference_models]


def attack_lines(result: AuditResult) -> list[str]:
    """One line per attack (when more than the loss attack ran; an uninformative one says
    why) and the strongest one."""
    attacks = result.attacks
    if len(attacks) < 2 and all(attack.name == "loss" for attack in attacks):
        return []
    lines = []
    for attack in attacks:
        if not attack.informative:
            lines.append(f"  attack {attack.name}: uninformative — {attack.uninformative_reason}")
            continue
        lines.append(
            f"  attack {attack.name}: Epsilon* {attack.epsilon.epsilon:.4f}, lower bound "
            f"{attack.lower_bound.epsilon:.4f}, TPR at 0.1% FPR {attack.tpr_at(0.001):.4f}, "
            f"at 1% FPR {attack.tpr_at(0.01):.4f}, AUC {attack.auc:.4f} "
            f"({attack.n_members:,} members, {attack.n_nonmembers:,} non-members)"
        )
    headline = result.headline_attack
    if headline is not None and headline.name != "loss":
        lines.append(f"  the headline is the {headline.name} attack's (no loss attack asked for)")
    strongest = result.strongest_attack
    if strongest is not None:
        lines.append(
            f"  strongest attack: {strongest.name} (largest lower bound "
            f"{strongest.lower_bound.epsilon:.4f}, Epsilon* {strongest.epsilon.epsilon:.4f})"
        )
    return lines


def slice_lines(result: AuditResult) -> list[str]:
    """A heading, one line per estimated slice of ``--slice-by``, and one line naming the
    slices too small to estimate (none without ``--slice-by``)."""
    sliced = result.slices
    if sliced is None:
        return []
    lines = [
        f"  slices of {sliced.column!r} ({sliced.attack} attack, delta {sliced.delta:.3g}; the "
        f"lower bounds hold together at {sliced.confidence:.0%}):"
    ]
    small = sliced.too_small
    small_values = {row.value for row in small}
    shown = [row for row in sliced.rows if row.value not in small_values]
    width = max((len(row.shown()) for row in shown), default=0)
    for row in shown:
        estimate = row.estimate
        name = row.shown()
        counts = f"{estimate.n_members:,} members, {estimate.n_nonmembers:,} non-members"
        if estimate.epsilon is None or estimate.lower_bound is None:
            why = estimate.unavailable
            lines.append(f"    {name:<{width}}  no estimate: {why} ({counts})")
            continue
        interval = estimate.epsilon.interval
        spread = "" if interval is None else f" [{interval.low:.3g}, {interval.high:.3g}]"
        lines.append(
            f"    {name:<{width}}  Epsilon* {estimate.epsilon.epsilon:.4f}{spread}, lower "
            f"bound {estimate.lower_bound.epsilon:.4f} ({counts})"
        )
    if small:
        listed = ", ".join(row.shown() for row in small[:8])
        named = listed + (f" and {len(small) - 8} more" if len(small) > 8 else "")
        lines.append(
            f"    no estimate for {len(small)} slice(s) with fewer than {sliced.minimum} "
            f"records on a side: {named}"
        )
    return lines
