"""``--attack`` and ``--reference-models`` of ``epsstar audit``, and the attacks' summary."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from epsstar.cli.options import describe_choices
from epsstar.statistics.attacks.defaults import DEFAULT_A, DEFAULT_GAMMA
from epsstar.statistics.names import ATTACKS, DEFAULT_ATTACK

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.result import AuditResult

__all__ = ["add_attack_options", "attack_inputs", "attack_lines", "attack_options"]


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


def attack_options(args: argparse.Namespace) -> dict[str, Any]:
    """The :func:`epsstar.audit.audit` keywords of :func:`add_attack_options`."""
    from epsstar.audit.attacks import AttackSettings

    chosen = AttackSettings(
        tuple(args.attack), tuple(args.reference_models), args.rmia_a, args.rmia_gamma
    )
    return {"attack": chosen}


def attack_inputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The reference model files among the command's inputs (no output may replace one)."""
    return [("--reference-models", path) for path in args.reference_models]


def attack_lines(result: AuditResult) -> list[str]:
    """One line per attack (when more than the loss attack ran) and the strongest one."""
    attacks = result.attacks
    if len(attacks) < 2 and all(attack.name == "loss" for attack in attacks):
        return []
    lines = []
    for attack in attacks:
        lines.append(
            f"  attack {attack.name}: Epsilon* {attack.epsilon.epsilon:.4f}, lower bound "
            f"{attack.lower_bound.epsilon:.4f}, TPR at 0.1% FPR {attack.tpr_at(0.001):.4f}, "
            f"at 1% FPR {attack.tpr_at(0.01):.4f}, AUC {attack.auc:.4f} "
            f"({attack.n_members:,} members, {attack.n_nonmembers:,} non-members)"
        )
    if all(attack.name != "loss" for attack in attacks):
        lines.append(f"  the headline is the {attacks[0].name} attack's (no loss attack asked for)")
    strongest = result.strongest_attack
    if strongest is not None:
        lines.append(
            f"  strongest attack: {strongest.name} (Epsilon* {strongest.epsilon.epsilon:.4f})"
        )
    return lines
