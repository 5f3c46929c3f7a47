"""Privacy accounting for DP-SGD with Poisson sampling, and σ for a target ε.

Each training step is a Poisson-subsampled Gaussian mechanism (sampling rate q,
noise multiplier σ = noise standard deviation / sensitivity); ``steps`` of them
compose. The ε for a given δ comes from a maintained library,
``dp_accounting`` (Google):

* ``"pld"`` (default): privacy loss distributions (``dp_accounting.pld.PLDAccountant``)
  with a pessimistic discretisation, so the reported ε is an upper bound;
* ``"rdp"``: Rényi DP (``dp_accounting.rdp.RdpAccountant``), typically 5–20 % larger.

Both use the add/remove-one neighbouring relation. The discretisation step of
the PLD accountant (``value_discretization_interval``) sets a floor of roughly
its own size times a small factor on the ε it can certify; for small targets a
finer step is chosen (:func:`make_accountant`), and the step is recorded with
every ε so the number can be reproduced.

δ defaults to 1/(n ln n) for n training records, as in §4.1 of
Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models".

The same privacy loss distribution also gives the largest membership advantage
of any attack, δ(ε = 0) (:func:`membership_advantage`); a composed distribution
is built once and shared by both questions.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics._validation import check_delta, check_in_range, check_positive_int
from epsstar.statistics.names import ACCOUNTANTS
from epsstar.statistics.readings.conversions import NEIGHBOURING_RELATIONS

__all__ = [
    "DEFAULT_MAX_NOISE_MULTIPLIER",
    "Accountant",
    "MembershipAdvantage",
    "advantage_interval",
    "default_delta",
    "find_noise_multiplier",
    "make_accountant",
    "membership_advantage",
]


#: Upper end of the σ search; a target ε that needs more noise is reported as unreachable.
DEFAULT_MAX_NOISE_MULTIPLIER = 1000.0

#: Below this σ the search stops and returns the smallest σ it tried (the target is huge).
_MIN_NOISE_MULTIPLIER = 1e-2

_DEFAULT_PLD_INTERVAL = 1e-3
_FINEST_PLD_INTERVAL = 1e-4

#: Floor of the discretisation step used for the advantage (see :func:`membership_advantage`).
_FINEST_ADVANTAGE_INTERVAL = 1e-6


def default_delta(n_records: int) -> float:
    """δ = 1/(n ln n), the paper's choice (§4.1 of Negoescu et al.)."""
    n = check_positive_int("number of training records", n_records, minimum=3)
    return 1.0 / (n * math.log(n))


def _library_version() -> str:
    try:
        return metadata.version("dp-accounting")
    except metadata.PackageNotFoundError:  # pragma: no cover - installed under another name
        return "unknown"


@dataclass(frozen=True, slots=True)
class Accountant:
    """An ε(σ, q, steps, δ) oracle from ``dp_accounting``; see the module docstring."""

    name: str
    value_discretization_interval: float = _DEFAULT_PLD_INTERVAL

    def __post_init__(self) -> None:
        if self.name not in ACCOUNTANTS:
            allowed = ", ".join(repr(a) for a in ACCOUNTANTS)
            raise InvalidInputError(f"accountant must be one of {allowed}. Found {self.name!r}.")
        check_in_range("value_discretization_interval", self.value_discretization_interval, 0, 1)

    def epsilon(
        self, noise_multiplier: float, sampling_rate: float, steps: int, delta: float
    ) -> float:
        """ε after ``steps`` Poisson-sampled Gaussian steps (``inf`` for σ = 0)."""
        sigma = check_in_range(
            "noise_multiplier", noise_multiplier, 0, math.inf, low_inclusive=True
        )
        q = check_in_range("sampling_rate", sampling_rate, 0, 1, high_inclusive=True)
        count = check_positive_int("steps", steps)
        d = check_delta(delta)
        if sigma == 0.0:
            return math.inf
        if self.name == "pld":
            pld = _composed_pld(sigma, q, count, self.value_discretization_interval, "add_remove")
            return float(pld.get_epsilon(d))
        import dp_accounting
        from dp_accounting.rdp import RdpAccountant

        event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
        absl_logger = logging.getLogger("absl")
        level = absl_logger.level
        absl_logger.setLevel(logging.ERROR)  # RDP warns about orders it skips
        try:
            accountant = RdpAccountant()
            accountant.compose(event, count)
            return float(accountant.get_epsilon(d))
        finally:
            absl_logger.setLevel(level)

    def describe(self) -> JsonObject:
        """Name, library, version and settings, for ``training.json``."""
        settings: JsonObject = {"neighbouring": "add_remove"}
        if self.name == "pld":
            settings["value_discretization_interval"] = self.value_discretization_interval
            settings["pessimistic_estimate"] = True
            label = "privacy loss distribution (dp_accounting.pld.PLDAccountant)"
        else:
            settings["orders"] = "dp_accounting default"
            label = "Renyi DP (dp_accounting.rdp.RdpAccountant)"
        return {
            "name": self.name,
            "description": label,
            "library": "dp-accounting",
            "version": _library_version(),
            "settings": settings,
        }


def make_accountant(name: str = "pld", target_epsilon: float | None = None) -> Accountant:
    """The accountant ``name``; for PLD the step is target ε/100, clamped to [1e-4, 1e-3]."""
    if name == "pld" and target_epsilon is not None and math.isfinite(target_epsilon):
        interval = min(_DEFAULT_PLD_INTERVAL, max(target_epsilon / 100.0, _FINEST_PLD_INTERVAL))
        return Accountant(name, value_discretization_interval=interval)
    return Accountant(name)


@functools.lru_cache(maxsize=4)
def _composed_pld(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    value_discretization_interval: float,
    neighbouring: str,
) -> Any:
    """``dp_accounting``'s PLD accountant after ``steps`` Poisson-sampled Gaussian steps (σ > 0).

    Cached: the trainer asks for ε after the last epoch and then for δ(0) of
    the same run, and one composition serves both. Callers only query it.
    """
    import dp_accounting
    from dp_accounting.pld import PLDAccountant

    relation = (
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
        if neighbouring == "add_remove"
        else dp_accounting.NeighboringRelation.REPLACE_ONE
    )
    accountant = PLDAccountant(
        neighboring_relation=relation,
        value_discretization_interval=value_discretization_interval,
    )
    event = dp_accounting.PoissonSampledDpEvent(
        sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier)
    )
    accountant.compose(event, steps)
    return accountant


@dataclass(frozen=True, slots=True)
class MembershipAdvantage:
    """The largest advantage of any membership test against DP-SGD, from its PLD.

    ``advantage`` is δ(ε = 0) of the composed mechanism (``dp_accounting``'s
    pessimistic privacy loss distribution), an upper bound on
    sup over tests of (TPR − FPR); ``value_discretization_interval`` is the
    grid step of that distribution, so the number can be reproduced.
    """

    advantage: float
    neighbouring: str
    noise_multiplier: float
    sampling_rate: float
    steps: int
    value_discretization_interval: float


def advantage_interval(
    noise_multiplier: float, sampling_rate: float, coarsest: float = _DEFAULT_PLD_INTERVAL
) -> float:
    """Grid step for δ(0): q/(4σ), clamped to [1e-6, ``coarsest``].

    One step's privacy loss is of order q/σ; the pessimistic rounding of each
    step to the grid adds up over the steps, so the grid must be finer than
    that scale. At small σ (where a PLD is slow) this is ``coarsest``, the
    accountant's own step, and its composition is reused.
    """
    scale = sampling_rate / (4.0 * noise_multiplier)
    return max(_FINEST_ADVANTAGE_INTERVAL, min(coarsest, scale))


def membership_advantage(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    neighbouring: str = "add_remove",
    *,
    coarsest_interval: float = _DEFAULT_PLD_INTERVAL,
) -> MembershipAdvantage:
    """Adv* = sup over tests (TPR − FPR) of DP-SGD, as δ(ε = 0) of its privacy loss distribution.

    For the two output distributions P, Q of neighbouring data sets, the best
    test's TPR − FPR is their total variation distance, which is the hockey-stick
    divergence at ε = 0, i.e. δ(0) of the privacy profile; the Bayes security
    is β* = 1 − Adv* (Proposition 8 of Cherubin et al. 2024, "Closed-Form Bounds for DP-SGD
    against Record-level Inference"). ``dp_accounting`` composes ``steps`` Poisson-subsampled
    Gaussian steps (sampling rate q, noise multiplier σ; sensitivity 1 in units of the clip
    norm) and returns the larger δ(0) of the add and the remove direction for
    ``"add_remove"``; ``"substitution"`` replaces one clipping unit by another
    (its ``REPLACE_ONE`` relation, the pair q·N(−1) + (1−q)·N(0) against
    q·N(1) + (1−q)·N(0) per step).

    The distribution is discretised pessimistically, on the grid of
    :func:`advantage_interval`, so δ(0) is an upper bound on Adv* (and 1 − δ(0)
    a lower bound on β*) that approaches it as the grid gets finer; it is
    clamped to [0, 1]. σ = 0 gives Adv* = 1.
    """
    sigma = check_in_range("noise_multiplier", noise_multiplier, 0, math.inf, low_inclusive=True)
    q = check_in_range("sampling_rate", sampling_rate, 0, 1, high_inclusive=True)
    count = check_positive_int("steps", steps)
    coarsest = check_in_range("coarsest_interval", coarsest_interval, 0, 1)
    if neighbouring not in NEIGHBOURING_RELATIONS:
        allowed = ", ".join(repr(name) for name in NEIGHBOURING_RELATIONS)
        raise InvalidInputError(f"neighbouring must be one of {allowed}. Found {neighbouring!r}.")
    if sigma == 0.0:
        return MembershipAdvantage(1.0, neighbouring, sigma, q, count, 0.0)
    interval = advantage_interval(sigma, q, coarsest)
    delta_at_zero = float(_composed_pld(sigma, q, count, interval, neighbouring).get_delta(0.0))
    return MembershipAdvantage(
        advantage=min(1.0, max(0.0, delta_at_zero)),
        neighbouring=neighbouring,
        noise_multiplier=sigma,
        sampling_rate=q,
        steps=count,
        value_discretization_interval=interval,
    )


def find_noise_multiplier(
    accountant: Accountant,
    target_epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    *,
    max_noise_multiplier: float = DEFAULT_MAX_NOISE_MULTIPLIER,
    rtol: float = 1e-3,
) -> float:
    """The smallest σ (to relative tolerance ``rtol``) with ε(σ) ≤ ``target_epsilon``.

    ε decreases in σ. After checking that ``max_noise_multiplier`` reaches the
    target, the search starts from σ = 1 (or, for PLD, from the cheap RDP
    answer), steps by factors of 1.25 until the target is bracketed, then
    bisects geometrically. The returned σ always satisfies
    ε(σ) ≤ target according to ``accountant``; the σ just below it (by a factor
    1 + rtol) does not, unless σ hit the lower search limit 0.01.
    Raises :class:`InvalidInputError` if even ``max_noise_multiplier`` misses the target.
    """
    target = check_in_range("target_epsilon", target_epsilon, 0, math.inf)
    limit = check_in_range("max_noise_multiplier", max_noise_multiplier, 0, math.inf)
    tolerance = check_in_range("rtol", rtol, 0, 1)
    cache: dict[float, float] = {}

    def eps(sigma: float) -> float:
        if sigma not in cache:
            cache[sigma] = accountant.epsilon(sigma, sampling_rate, steps, delta)
        return cache[sigma]

    if eps(limit) > target:
        raise InvalidInputError(
            f"target epsilon {target:g} cannot be reached with a noise multiplier of at most "
            f"{limit:g} (epsilon there is {eps(limit):.4g} with delta={delta:.3g}, sampling rate "
            f"{sampling_rate:.4g}, {steps} steps, {accountant.name} accountant); raise the "
            "target or train for fewer steps."
        )
    # The accountant is slowest at small σ; start from the (cheap, looser) RDP answer,
    # which needs at least as much noise as PLD, and bracket from there.
    if accountant.name == "pld":
        guide = Accountant("rdp")
        start = _bisect(
            lambda s: guide.epsilon(s, sampling_rate, steps, delta), target, limit, 0.05
        )
    else:
        start = min(1.0, limit)
    return _bisect(eps, target, limit, tolerance, start=start)


def _bisect(
    eps: Callable[[float], float],
    target: float,
    limit: float,
    tolerance: float,
    start: float = 1.0,
) -> float:
    """Smallest σ in [0.01, limit] with eps(σ) ≤ target, to ``tolerance``; eps(limit) ≤ target."""
    high = min(start, limit)
    if eps(high) > target:
        low = high
        while eps(high) > target:
            low = high
            high = min(1.25 * high, limit)
    else:
        low = high / 1.25
        while eps(low) <= target:
            high = low
            if low <= _MIN_NOISE_MULTIPLIER:
                return high
            low /= 1.25
    while high / low - 1.0 > tolerance:
        middle = math.sqrt(low * high)
        if eps(middle) <= target:
            high = middle
        else:
            low = middle
    return high
