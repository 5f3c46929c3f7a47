"""``--no-blind-baseline``, ``--accept-premise-failure``, ``--group-by``, ``--attribute`` and
``--top-records`` of ``epsstar audit``, and the summary lines of what they read."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.output.result import AuditResult
    from epsstar.audit.premise.settings import PremiseSettings

__all__ = [
    "add_accept_premise_option",
    "add_premise_options",
    "premise_blocks_gate",
    "premise_lines",
    "premise_settings",
]


def _reason(text: str) -> str:
    """The reason for ``--no-blind-baseline``: required, so the option never takes the
    model's path by accident, and not blank, because it is what the JSON records."""
    reason = text.strip()
    if not reason:
        raise argparse.ArgumentTypeError(f"expected a reason for skipping it. Found {text!r}.")
    return reason


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 0. Found {text!r}.")
    return value


def add_accept_premise_option(parser: argparse.ArgumentParser) -> None:
    """``--accept-premise-failure``, of ``epsstar audit`` and ``epsstar audit-many``."""
    parser.add_argument(
        "--accept-premise-failure",
        action="store_true",
        help="with --max-epsilon: read the gate as usual (exit 0 or 1) even when the blind "
        "baseline finds that train and population differ without the model; otherwise such "
        "an audit exits 4",
    )


def add_premise_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-blind-baseline",
        type=_reason,
        default=None,
        metavar="REASON",
        help="skip the blind baseline (a classifier that sees only the records, never the "
        "model, telling --train rows from --population rows); REASON, required, is recorded "
        "in the JSON, e.g. --no-blind-baseline 'population is a random hold-out' "
        "(docs/premise.md)",
    )
    add_accept_premise_option(parser)
    parser.add_argument(
        "--group-by",
        metavar="COLUMN",
        help="user-level Epsilon*: COLUMN names the user of each record; a user's records "
        "must all be in --train or all in --population",
    )
    parser.add_argument(
        "--attribute",
        metavar="COLUMN",
        help="attribute inference (Yeom et al. 2018): guess COLUMN, one of the model's "
        "inputs, from the model; its accuracy on members against non-members",
    )
    parser.add_argument(
        "--top-records",
        type=_count,
        default=20,
        metavar="K",
        help="list the K training records with the strongest membership evidence in the "
        "JSON and the report (default 20; 0: none)",
    )


def premise_settings(args: argparse.Namespace) -> PremiseSettings:
    from epsstar.audit.premise.settings import PremiseSettings

    return PremiseSettings(
        skip_blind_baseline=args.no_blind_baseline,
        group_by=args.group_by,
        attribute=args.attribute,
        top_records=args.top_records,
    )


def premise_blocks_gate(result: AuditResult, accepted: bool) -> bool:
    """A gate was asked for, the premise fails and ``--accept-premise-failure`` was not
    given: the gate's verdict cannot be read as one about memorisation."""
    return result.max_epsilon is not None and result.premise_holds is False and not accepted


def _blind_lines(result: AuditResult) -> list[str]:
    from epsstar.audit.output.premise_result import PREMISE_WARNING
    from epsstar.audit.side_by_side import premise_reason

    baseline = result.blind_baseline
    if baseline is None:
        return []
    if baseline.epsilon is None or baseline.lower_bound is None:
        return [f"  blind baseline: not run ({baseline.skipped})"]
    lines = [
        f"  blind baseline (records only, no model): Epsilon* {baseline.epsilon.epsilon:.4f}, "
        f"lower bound {baseline.lower_bound.epsilon:.4f}, AUC {baseline.auc:.4f}; premise "
        + ("holds" if baseline.premise_holds else "FAILS")
        + f": {premise_reason(baseline)}"
    ]
    if not baseline.premise_holds:
        lines.append(f"  warning: {PREMISE_WARNING}")
    return lines


def _user_lines(result: AuditResult) -> list[str]:
    users = result.user_level
    if users is None:
        return []
    fewest, median, most = users.records_per_user
    lines = [
        f"  users of {users.column!r} ({users.attack} attack): {users.users[0]:,} member and "
        f"{users.users[1]:,} non-member users, {fewest}-{most} records each (median "
        f"{median:g}); record level: Epsilon* {result.epsilon_star:.4f}, lower bound "
        f"{result.lower_bound.epsilon:.4f}"
    ]
    for aggregate in users.aggregates:
        lines.append(
            f"    user level, {aggregate.aggregate}: Epsilon* {aggregate.epsilon.epsilon:.4f}, "
            f"lower bound {aggregate.lower_bound.epsilon:.4f}, AUC {aggregate.auc:.4f}"
        )
    return lines


def _attribute_lines(result: AuditResult) -> list[str]:
    inferred = result.attribute_inference
    if inferred is None:
        return []
    r = inferred.reading
    lines = [
        f"  attribute {inferred.column!r} ({len(inferred.values)} values) guessed right on "
        f"{r.accuracy_members:.4f} of members, {r.accuracy_nonmembers:.4f} of non-members: "
        f"advantage {r.advantage:.4f}, epsilon {r.epsilon:.4f}, lower bound "
        f"{r.lower_bound.epsilon:.4f}"
    ]
    if inferred.bound is not None:
        lines.append(
            f"    training bound, from the {inferred.bound.source}: advantage at most "
            f"{inferred.bound.advantage:.4f} (Bayes security {inferred.bound.beta:.4f})"
        )
        if inferred.bound.error_order is not None:
            lines.append(
                "    (the leading term of the closed form; the term it drops is of order "
                f"sqrt(pT)/sigma = {inferred.bound.error_order:.3g}: a bound only when that term "
                "is small)"
            )
    return lines


def _exposed_lines(result: AuditResult) -> list[str]:
    exposed = result.exposed_records
    if exposed is None or not exposed.rows:
        return []
    first = exposed.rows[0]
    return [
        f"  most exposed training record: row {first.row} (score {first.score:.4g}, log "
        f"likelihood ratio {first.log_likelihood_ratio:.3f}); {len(exposed.rows)} listed in "
        "the JSON and the report"
    ]


def premise_lines(result: AuditResult) -> list[str]:
    """The blind baseline and the premise, the most exposed record, user level, attribute."""
    return [
        *_blind_lines(result),
        *_exposed_lines(result),
        *_user_lines(result),
        *_attribute_lines(result),
    ]
