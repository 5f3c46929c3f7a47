"""Why two numbers an audit prints side by side differ: the one wording of each reason.

The command line's summary and the HTML report print a number beside another that it seems
to contradict (a headline of 0 beside an empirical Epsilon* above it, a blind baseline above
0 beside "premise holds", an observed reading above its allowed value, a leak test's level
beside the gate's); each function here returns the clause that says why, in the same line
or row, or ``""`` when the two agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from epsstar.statistics.names import FITTED_METHODS

if TYPE_CHECKING:
    from epsstar.audit.output.premise_result import BlindBaseline
    from epsstar.audit.output.result import AuditResult
    from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
    from epsstar.statistics.readings.noise import ReadingNoise
    from epsstar.statistics.results import EpsilonStarResult

__all__ = [
    "advantage_reason",
    "count_of",
    "empirical_reason",
    "fitted_headline",
    "gate_level_reason",
    "lower_bound_rule",
    "premise_reason",
    "tpr_reason",
    "untested_headline_reason",
]

#: An observed reading above its allowed value by no more than sampling noise.
_WITHIN_NOISE: Final = "above it by no more than sampling noise"

#: An observed reading above its allowed value beyond sampling noise.
_BEYOND_NOISE: Final = (
    "above it beyond sampling noise: this test shows more than (Epsilon*, delta) accounts for; "
    "read the lower bound and the leak test"
)


def count_of(n: int, noun: str) -> str:
    """``1 check``, ``2 checks``: a count with its noun in the right number."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def fitted_headline(estimate: EpsilonStarResult) -> bool:
    """Whether the headline's test was located on a fit (a distribution or tails): not for
    the empirical and atoms methods, nor for a tested method whose leak test found nothing
    (its 0 is no fitted point)."""
    if estimate.method not in FITTED_METHODS:
        return False
    return estimate.leak_test is None or estimate.epsilon > 0


def empirical_reason(result: AuditResult) -> str:
    """Why the empirical Epsilon* differs from the headline at four decimals (``""`` when it
    does not)."""
    value = result.empirical.epsilon
    if f"{value:.4f}" == f"{result.epsilon_star:.4f}":
        return ""
    if value > result.epsilon_star:
        return (
            "the plain maximum over every threshold, neither cross-fitted nor tested: it "
            "keeps the selection noise the headline removes"
        )
    return "observed rates only: no rate beyond one record's worth"


def premise_reason(baseline: BlindBaseline) -> str:
    """The rule behind the premise's verdict, with the values it read: why a blind Epsilon*
    above 0 stands beside "premise holds", or which test flags the tables."""
    bound = baseline.lower_bound
    if bound is None or baseline.epsilon is None:
        return ""
    flagged = [test.name for test in baseline.tests if test.flagged]
    if flagged:
        named = " and ".join([", ".join(flagged[:-1]), flagged[-1]] if flagged[:-1] else flagged)
        return f"flagged by the {named} test{'' if len(flagged) == 1 else 's'}"
    if not baseline.tests:
        return lower_bound_rule(baseline.epsilon.epsilon, bound)
    count = len(baseline.tests)
    read = (
        f"{count_of(count, 'test')} each at level {baseline.tests[0].level:.3g}, the blind "
        f"held-out lower bound {bound.epsilon:.4f} at {_percent(bound.confidence)} among them"
    )
    if baseline.epsilon.epsilon > 0:
        return (
            f"no test flags the tables ({read}); the premise is read from these tests, not from "
            "the blind Epsilon*, an estimate that picks its best threshold"
        )
    return f"no test flags the tables ({read})"


def _percent(confidence: float) -> str:
    """``95%``, ``99.75%``: a confidence as the summaries print it."""
    return f"{100 * confidence:.4g}%"


def lower_bound_rule(epsilon: float, bound: EpsilonLowerBound) -> str:
    """The premise read from the blind lower bound alone (a text audit's, or a record
    without tests): why it holds beside a blind Epsilon* above 0, or fails."""
    read = f"held-out lower bound {bound.epsilon:.4f} at {_percent(bound.confidence)}"
    if bound.epsilon > 0:
        return f"the records alone tell the sides apart ({read})"
    if epsilon > 0:
        return f"the premise is read from the {read}, not the blind Epsilon*"
    return f"no evidence the sides differ ({read})"


def advantage_reason(noise: ReadingNoise | None) -> str:
    """Why the observed membership advantage is above its allowed value (``""`` if not)."""
    if noise is None or not noise.advantage_above:
        return ""
    if noise.advantage_beyond_noise:
        return _BEYOND_NOISE
    return (
        f"{_WITHIN_NOISE} at {_percent(noise.confidence)}, where an advantage up to "
        f"{noise.advantage_noise:.4f} arises by chance at these sizes"
    )


def tpr_reason(noise: ReadingNoise | None, index: int) -> str:
    """Why the observed TPR at the ``index``-th FPR is above its allowed value (``""`` if
    not)."""
    if noise is None or not noise.tpr_above[index]:
        return ""
    if noise.tpr_beyond_noise[index]:
        return _BEYOND_NOISE
    return (
        f"{_WITHIN_NOISE} at {_percent(noise.confidence)}: its lower limit "
        f"{noise.tpr_lower_limits[index]:.4f} is within the "
        f"{noise.tpr_allowed_at_limit[index]:.4f} allowed at its FPR's upper limit"
    )


def _own_level(result: AuditResult) -> float:
    """The level of the headline's own leak test: 1 − the audit's confidence."""
    return 1 - result.lower_bound.confidence


def gate_level_reason(result: AuditResult) -> str:
    """The level the gate read the leak test at, where it differs from the headline's own
    (Bonferroni over several attacks): ``""`` without a gate or when they agree."""
    gate = result.gate
    if gate is None or f"{gate.level:.3g}" == f"{_own_level(result):.3g}":
        return ""
    tests = "the leak test" if gate.n_tests == 1 else f"each of {gate.n_tests} attacks' leak tests"
    return f"the gate reads {tests} at level {gate.level:.3g}"


def untested_headline_reason(result: AuditResult) -> str:
    """Why a headline above 0 stands beside a gate's leak test that finds no leak (``""``
    where it does not): a gate over several attacks reads each test at a stricter level
    (Bonferroni), or the headline's method is not held to the test (only the tested
    methods, the default among them, are)."""
    gate = result.gate
    if gate is None or gate.leak_found or not result.epsilon_star > 0:
        return ""
    own = result.epsilon.leak_test
    if own is not None:
        return (
            f"the headline's own leak test (p = {own.p_value:.3g}) finds a leak at level "
            f"{_own_level(result):.3g}, the gate's over {gate.n_tests} attacks "
            f"reads each at {gate.level:.3g}"
        )
    return (
        f"the {result.epsilon.method} estimate is not held to this test (the tested methods, "
        "the default among them, report 0 without a leak found)"
    )
