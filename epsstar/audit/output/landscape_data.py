"""The numbers of the privacy–utility landscape (Figures 1-2 of the Epsilon* paper).

:func:`read_results` reads ``epsstar audit-many --json`` and ``epsstar audit
--json`` files into audit records; :func:`landscape` turns records into one
frozen :class:`Landscape` that ``epsstar.reports`` draws without computing
anything:

* per strategy, the Epsilon* and utility of every audited repeat, their mean
  with min–max bars, the mechanism-level ε̄ = log mean exp(Epsilon*)
  (Theorem 2 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models") and
  whether it was trained with differential privacy (:class:`TrainingPrivacy`, read from the
  strategy's hyper-parameters: ``epsstar sweep`` writes ``private`` and ``target_epsilon``, with the
  accountant's ``epsilon``, ``delta`` and ``accountant``, into its manifest, and ``audit-many``
  carries them into each record's ``entry.params``);
* the Pareto frontier (lower Epsilon*, higher utility) and its step line;
* Gaussian kernel densities of every model's Epsilon* and utility per category
  (DP or baseline) with at least :data:`MIN_DENSITY_VALUES` models, and the
  ranges of all axes;
* every model's place in the margins' dot strips: models whose values fall in
  the same :data:`STACK_BINS`-th of an axis stack (baseline first, then DP), so
  that 23 models at Epsilon* 0 show as 23 marks, not one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeGuard

import numpy as np

from epsstar.audit.data.configs.manifest import CELL, PARAMS, HyperParameters
from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.schema import Anything, Integer, Table, Text, Where, read_json
from epsstar.plumbing.records.json_types import JsonObject, JsonValue
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.bounds.from_counts import mechanism_epsilon
from epsstar.statistics.names import UTILITIES

__all__ = [
    "EDGE",
    "MIN_DENSITY_VALUES",
    "STACK_BINS",
    "Landscape",
    "Marginal",
    "ModelOutcome",
    "Spread",
    "StrategyPoint",
    "TrainingPrivacy",
    "landscape",
    "model_outcome",
    "pareto_front",
    "read_results",
    "stack_levels",
    "training_privacy",
]

#: Points of each density curve.
DENSITY_POINTS = 200
#: Fewest values (two of them distinct) a kernel density is drawn for; fewer get ticks only.
MIN_DENSITY_VALUES = 5
#: Share of the Epsilon* axis left below 0 when no value is negative (models at 0 drawn whole).
EDGE = 0.015
#: The margins' dot strips stack the models whose values share one of this many bins of an axis.
STACK_BINS = 120
_TRUE = frozenset({"true", "1", "yes", "y", "on"})
_FALSE = frozenset({"false", "0", "no", "n", "off"})


# --- records -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TrainingPrivacy:
    """How a strategy's models were trained, as far as its hyper-parameters say.

    ``dp`` is true when ``target_epsilon`` is given or ``private`` is true;
    ``epsilon`` and ``delta`` are the privacy accountant's (``epsstar sweep``
    records them for DP-SGD runs).
    """

    private: bool | None
    target_epsilon: float | None
    dp: bool
    epsilon: float | None = None
    delta: float | None = None


@dataclass(frozen=True, slots=True)
class ModelOutcome:
    """One audited (or failed) model of an audit record, read by type."""

    strategy: str
    repeat: int
    params: HyperParameters
    #: None when the model could not be audited (``failed``).
    epsilon_star: float | None
    #: The chosen utility on the population data; None when it was not measured.
    utility: float | None
    failed: bool
    report: Path | None


@dataclass(frozen=True, slots=True)
class Spread:
    """Mean, smallest and largest of a strategy's values over its repeats."""

    mean: float
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class StrategyPoint:
    """One strategy: its repeats' Epsilon* and utility, summaries and frontier membership."""

    name: str
    privacy: TrainingPrivacy
    #: The hyper-parameters every one of its models was given the same value of: what a
    #: repeat sets for itself (a seed, its files, its own accuracy) is not the strategy's.
    params: HyperParameters
    n_models: int
    n_failed: int
    epsilons: tuple[float, ...]
    utilities: tuple[float, ...]
    epsilon: Spread | None
    utility: Spread | None
    mechanism_epsilon: float | None
    #: The report of its first repeat that has one.
    report: Path | None
    pareto: bool

    @property
    def plotted(self) -> bool:
        """Drawn on the chart: it has both an Epsilon* and a utility."""
        return self.epsilon is not None and self.utility is not None


@dataclass(frozen=True, slots=True)
class Marginal:
    """Every plotted model's values of one category, with their densities (None: too few)."""

    dp: bool
    epsilons: tuple[float, ...]
    utilities: tuple[float, ...]
    epsilon_density: FloatArray | None
    utility_density: FloatArray | None
    #: Each model's level in its stack of the dot strip (0 on the axis), aligned with
    #: ``epsilons`` and ``utilities``; a stack holds the models of one bin of the axis.
    epsilon_levels: tuple[int, ...] = ()
    utility_levels: tuple[int, ...] = ()

    @property
    def point_mass(self) -> float | None:
        """The one Epsilon* of a category whose models all share it (no density to draw)."""
        return self.epsilons[0] if len(set(self.epsilons)) == 1 else None


@dataclass(frozen=True, slots=True)
class Landscape:
    """Everything the landscape draws; strategies in first-seen order."""

    utility: str
    n_models: int
    strategies: tuple[StrategyPoint, ...]
    epsilon_range: tuple[float, float]
    utility_range: tuple[float, float]
    #: The Pareto frontier as a step line (Epsilon*, utility).
    frontier_x: tuple[float, ...]
    frontier_y: tuple[float, ...]
    #: Where the densities are evaluated: across ``epsilon_range`` and ``utility_range``.
    epsilon_grid: FloatArray
    utility_grid: FloatArray
    #: Baseline first, then DP; only categories with plotted models.
    marginals: tuple[Marginal, ...]
    #: Density axes of the marginal charts, and the length of a model's tick on them.
    epsilon_density_range: tuple[float, float]
    utility_density_range: tuple[float, float]
    epsilon_tick: float
    utility_tick: float
    #: The most models in one stack of each dot strip.
    epsilon_stack: int = 1
    utility_stack: int = 1

    @property
    def plotted(self) -> tuple[StrategyPoint, ...]:
        return tuple(s for s in self.strategies if s.plotted)


# --- reading -------------------------------------------------------------------------------------

#: Largest results file read, in bytes.
MAX_RESULTS_BYTES = 256 * 2**20
_STRATEGY = Text(max_length=1024)
_REPEAT = Integer(0, 10**9)
#: The ``entry`` of an audit record (a ``ManifestEntry``'s JSON): the strategy, repeat
#: and hyper-parameters the landscape reads are declared; the paths are let through.
ENTRY = Table(
    {
        "strategy": _STRATEGY,
        "repeat": _REPEAT,
        "params": PARAMS,
        **dict.fromkeys(("model", "train", "population", "label_column"), Anything()),
    },
    required=("strategy",),
)


def _flag(name: str, value: object) -> bool | None:
    """A yes/no hyper-parameter: a bool, a number, or its CSV spelling ("True", "0", ...)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise InputFileError(f"hyper-parameter {name} must be true or false. Found {value!r}.")


def _number(name: str, value: object) -> float | None:
    """A numeric hyper-parameter: a number or its text; None when empty."""
    if value is None or value == "" or value == [] or value == ():
        return None
    if not isinstance(value, bool) and isinstance(value, int | float | str):
        try:
            return float(value)
        except ValueError:
            pass
    raise InputFileError(f"hyper-parameter {name} must be a number. Found {value!r}.")


def _reported(value: object) -> float | None:
    """A number that is only shown (the accountant's ε or δ): None unless finite and numeric."""
    try:
        number = _number("", value)
    except InputFileError:
        return None
    return number if number is not None and math.isfinite(number) else None


def training_privacy(params: HyperParameters) -> TrainingPrivacy:
    """The privacy of a strategy's training from its hyper-parameters (see the module doc)."""
    private = _flag("private", params.get("private"))
    target = _number("target_epsilon", params.get("target_epsilon"))
    return TrainingPrivacy(
        private,
        target,
        dp=target is not None or private is True,
        epsilon=_reported(params.get("epsilon")),
        delta=_reported(params.get("delta")),
    )


def _is_audit(document: JsonValue) -> TypeGuard[JsonObject]:
    return isinstance(document, dict) and isinstance(document.get("epsilon_star"), int | float)


def _listed(document: JsonValue) -> list[tuple[JsonObject, JsonObject]] | None:
    """Each of the ``models`` of an ``audit-many --json`` document with its ``entry``; None
    unless the document lists such records."""
    models = document.get("models") if isinstance(document, dict) else None
    if not isinstance(models, list):
        return None
    listed = []
    for model in models:
        entry = model.get("entry") if isinstance(model, dict) else None
        if not isinstance(model, dict) or not isinstance(entry, dict):
            return None
        listed.append((model, entry))
    return listed


def _models(path: Path, document: JsonValue, utility: str) -> list[JsonObject]:
    """The records of one results document (a single audit becomes one record), each checked."""
    if _is_audit(document):
        record: JsonObject = {
            "entry": {"strategy": path.stem, "repeat": 0, "params": {}},
            "result": document,
        }
        model_outcome(record, utility, source=str(path))
        return [record]
    listed = _listed(document)
    if listed is None:
        raise InputFileError(
            f"{path}: not an epsstar results file (expected the JSON of 'epsstar audit' "
            "or 'epsstar audit-many'). Found neither."
        )
    folder = path.resolve().parent
    records = []
    for model, model_entry in listed:
        record = dict(model)
        entry = dict(model_entry)
        if entry.get("model") and "strategy" not in entry:  # a model is its own strategy
            entry["strategy"] = Path(str(entry["model"])).stem
        record["entry"] = entry
        model_outcome(record, utility, source=str(path))
        entry.setdefault("params", {})
        entry.setdefault("repeat", 0)
        report = record.get("report")
        if isinstance(report, str) and report:  # model_outcome refuses any other report
            record["report"] = str(folder / report)  # absolute paths stay as they are
        records.append(record)
    return records


def read_results(paths: Sequence[str | Path], *, utility: str = "auroc") -> list[JsonObject]:
    """Records from ``audit-many --json`` files and single ``audit --json`` files.

    A single audit becomes one record whose strategy is the file's stem. Report
    paths recorded relative to a results file are made absolute. Each record is
    checked as :func:`model_outcome` reads it for ``utility``; a record that lacks
    what the landscape needs is refused with a message naming its file.
    """
    records: list[JsonObject] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_file() and not path.is_dir():
            raise InputFileError(f"results: no such file. Found {str(path)!r}.")
        document = read_json(path, "results", max_bytes=MAX_RESULTS_BYTES)
        records.extend(_models(path, document, utility))
    if not records:
        raise InputFileError("results: the files hold no audited models. Found 0.")
    return records


def _keys(value: object) -> str:
    return f"keys {sorted(value)}" if isinstance(value, Mapping) else repr(value)


def _audited(source: str, name: str, result: JsonValue, utility: str) -> tuple[float, float | None]:
    """Epsilon* and the chosen population utility (None when recorded as null) of one result."""
    epsilon = result.get("epsilon_star") if isinstance(result, Mapping) else None
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float):
        raise InputFileError(f"{source}: model {name} has no epsilon_star. Found {_keys(result)}.")
    if not math.isfinite(epsilon) or epsilon < 0:
        raise InputFileError(
            f"{source}: result.epsilon_star of model {name} must be a finite number ≥ 0. "
            f"Found {epsilon}."
        )
    value: JsonValue = result
    for key in ("utility", "population", utility):
        if not isinstance(value, Mapping) or key not in value:
            raise InputFileError(
                f"{source}: model {name} has no utility.population.{utility}. Found {_keys(value)}."
            )
        value = value[key]
    if value is None:  # not measured (an AUROC beyond its budget): listed, not plotted
        return float(epsilon), None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InputFileError(
            f"{source}: utility.population.{utility} of model {name} must be a number in "
            f"[0, 1] or null. Found {value!r}."
        )
    return float(epsilon), float(value)


def model_outcome(
    record: Mapping[str, JsonValue], utility: str, *, source: str = "results"
) -> ModelOutcome:
    """One audit record read by type; a record without a result or an error is refused.

    ``source`` (the results file, say) begins the messages.
    """
    entry = record.get("entry") if isinstance(record, Mapping) else None
    if not isinstance(entry, Mapping) or not isinstance(entry.get("strategy"), str):
        found = f"entry {_keys(entry)}" if isinstance(entry, Mapping) else _keys(record)
        raise InputFileError(f"{source}: a record needs an entry with a strategy. Found {found}.")
    checked = ENTRY.check(entry, Where(source, "entry"))
    repeat: int = checked.get("repeat", _REPEAT) or 0
    name = f"{checked.need('strategy', _STRATEGY)!r} #{repeat}"
    result = record.get("result")
    if result is None and not record.get("error"):
        raise InputFileError(
            f"{source}: model {name} has neither a result nor an error. Found {_keys(record)}."
        )
    epsilon, value = (None, None) if result is None else _audited(source, name, result, utility)
    params = checked.get("params", PARAMS)
    report = record.get("report")
    if report is not None and not isinstance(report, str):
        raise Where(source, "report").error("a path", report)
    return ModelOutcome(
        strategy=checked.need("strategy", _STRATEGY),
        repeat=repeat,
        params={} if params is None else params.extras(CELL),
        epsilon_star=epsilon,
        utility=value,
        failed=result is None,
        report=Path(report) if report else None,
    )


# --- numbers -------------------------------------------------------------------------------------


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats: lower-or-equal x with higher-or-equal y."""
    front = []
    for i, (x, y) in enumerate(points):
        dominated = any(
            (ox <= x and oy >= y) and (ox < x or oy > y)
            for j, (ox, oy) in enumerate(points)
            if j != i
        )
        if not dominated:
            front.append(i)
    return front


def _spread(values: Sequence[float]) -> Spread | None:
    if not values:
        return None
    return Spread(float(np.mean(values)), min(values), max(values))


def _strategy(name: str, members: Sequence[ModelOutcome]) -> StrategyPoint:
    """One strategy from its models (``pareto`` is set once all strategies are known)."""
    audited = [m for m in members if not m.failed]
    epsilons = tuple(m.epsilon_star for m in audited if m.epsilon_star is not None)
    utilities = tuple(m.utility for m in audited if m.utility is not None)
    first = sorted(members, key=lambda m: m.repeat)
    params = members[0].params
    shared = {k: v for k, v in params.items() if all(m.params.get(k) == v for m in members)}
    return StrategyPoint(
        name=name,
        privacy=training_privacy(params),
        params=shared,
        n_models=len(members),
        n_failed=sum(1 for m in members if m.failed),
        epsilons=epsilons,
        utilities=utilities,
        epsilon=_spread(epsilons),
        utility=_spread(utilities),
        mechanism_epsilon=mechanism_epsilon(epsilons) if epsilons else None,
        report=next((m.report for m in first if m.report), None),
        pareto=False,
    )


def _range(values: Sequence[float], *, floor: float | None = None) -> tuple[float, float]:
    """The values' span padded by 8 % (or a little when they are all equal), cut at ``floor``."""
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or max(abs(high) * 0.1, 0.05)
    low, high = low - pad, high + pad
    if floor is not None:
        low = max(low, floor)
    return low, high


def _density(values: Sequence[float], grid: FloatArray) -> FloatArray | None:
    """Gaussian KDE of ``values`` on ``grid``; None for fewer than MIN_DENSITY_VALUES values.

    A density of two or three models is a bandwidth choice, not an estimate.
    """
    from scipy.stats import gaussian_kde

    if len(values) < MIN_DENSITY_VALUES or len(set(values)) < 2:
        return None
    try:
        return np.asarray(gaussian_kde(np.asarray(values, dtype=np.float64))(grid))
    except (np.linalg.LinAlgError, ValueError):
        return None


def _frontier(
    plotted: Sequence[StrategyPoint], right: float
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The frontier's step line, left to right; one point extends to the right edge."""
    front = sorted(
        (s.epsilon.mean, s.utility.mean) for s in plotted if s.pareto and s.epsilon and s.utility
    )
    xs: list[float] = []
    ys: list[float] = []
    for x, y in front:
        if xs:
            xs.append(x)
            ys.append(ys[-1])
        xs.append(x)
        ys.append(y)
    if len(front) == 1:
        xs, ys = [xs[0], right], [ys[0]] * 2
    return tuple(xs), tuple(ys)


def _marginals(
    plotted: Sequence[StrategyPoint], epsilon_grid: FloatArray, utility_grid: FloatArray
) -> tuple[Marginal, ...]:
    marginals = []
    for dp in (False, True):
        members = [s for s in plotted if s.privacy.dp is dp]
        epsilons = tuple(v for s in members for v in s.epsilons)
        utilities = tuple(v for s in members for v in s.utilities)
        if epsilons:
            marginals.append(
                Marginal(
                    dp=dp,
                    epsilons=epsilons,
                    utilities=utilities,
                    epsilon_density=_density(epsilons, epsilon_grid),
                    utility_density=_density(utilities, utility_grid),
                )
            )
    return tuple(marginals)


def stack_levels(
    values: Sequence[float], span: tuple[float, float], bins: int = STACK_BINS
) -> tuple[int, ...]:
    """Each value's level in a dot strip: how many earlier values share its bin of ``span``.

    The span is cut into ``bins`` equal bins (values outside it go to the end bins); a
    value's level is its rank among the values of its bin, in the given order.
    """
    low, high = span
    width = (high - low) / bins if high > low else 1.0
    seen: dict[int, int] = {}
    levels = []
    for value in values:
        key = min(max(math.floor((value - low) / width), 0), bins - 1)
        levels.append(seen.get(key, 0))
        seen[key] = levels[-1] + 1
    return tuple(levels)


def _stacked(
    marginals: Sequence[Marginal],
    epsilon_range: tuple[float, float],
    utility_range: tuple[float, float],
) -> tuple[tuple[Marginal, ...], int, int]:
    """The marginals with their dot-strip levels (baseline first), and the tallest stacks."""
    epsilons = stack_levels([v for m in marginals for v in m.epsilons], epsilon_range)
    utilities = stack_levels([v for m in marginals for v in m.utilities], utility_range)
    out, e, u = [], 0, 0
    for m in marginals:
        out.append(
            replace(
                m,
                epsilon_levels=epsilons[e : e + len(m.epsilons)],
                utility_levels=utilities[u : u + len(m.utilities)],
            )
        )
        e, u = e + len(m.epsilons), u + len(m.utilities)
    return tuple(out), max(epsilons, default=0) + 1, max(utilities, default=0) + 1


def _tallest(densities: Iterable[FloatArray | None]) -> float:
    return max([float(d.max()) for d in densities if d is not None] or [1.0])


def _with_frontier(strategies: list[StrategyPoint]) -> list[StrategyPoint]:
    """The strategies with ``pareto`` set on the plotted ones that no other beats."""
    plotted = [i for i, s in enumerate(strategies) if s.plotted]
    points = [(s.epsilon.mean, s.utility.mean) for s in strategies if s.epsilon and s.utility]
    for index in pareto_front(points):
        strategies[plotted[index]] = replace(strategies[plotted[index]], pareto=True)
    return strategies


def landscape(records: Iterable[Mapping[str, JsonValue]], *, utility: str = "auroc") -> Landscape:
    """The landscape of audit records (the form of ``audit-many --json``'s ``models``).

    Refused with an :class:`~epsstar.exceptions.InputFileError` when a record is
    malformed or no model has both an Epsilon* and the ``utility`` to plot.
    """
    UTILITIES.check(utility)
    outcomes = [model_outcome(record, utility) for record in records]
    groups: dict[str, list[ModelOutcome]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.strategy, []).append(outcome)
    strategies = _with_frontier([_strategy(name, members) for name, members in groups.items()])
    plotted = [s for s in strategies if s.plotted]
    if not plotted:
        raise InputFileError(
            f"results: no audited model has both an Epsilon* and a population {utility} to "
            f"plot. Found {len(outcomes)} model(s), {sum(o.failed for o in outcomes)} failed."
        )
    all_eps = [v for s in plotted for v in s.epsilons]
    epsilon_range = _range(all_eps)
    if min(all_eps) >= 0:  # no room for negative values, but whole dots for models at 0
        epsilon_range = (max(epsilon_range[0], -EDGE * epsilon_range[1]), epsilon_range[1])
    utility_range = _range([v for s in plotted for v in s.utilities])
    epsilon_grid = np.linspace(*epsilon_range, DENSITY_POINTS)
    utility_grid = np.linspace(*utility_range, DENSITY_POINTS)
    marginals, epsilon_stack, utility_stack = _stacked(
        _marginals(plotted, epsilon_grid, utility_grid), epsilon_range, utility_range
    )
    top = _tallest(m.epsilon_density for m in marginals)
    right = _tallest(m.utility_density for m in marginals)
    frontier_x, frontier_y = _frontier(plotted, epsilon_range[1])
    return Landscape(
        utility=utility,
        n_models=len(outcomes),
        strategies=tuple(strategies),
        epsilon_range=epsilon_range,
        utility_range=utility_range,
        frontier_x=frontier_x,
        frontier_y=frontier_y,
        epsilon_grid=epsilon_grid,
        utility_grid=utility_grid,
        marginals=marginals,
        epsilon_density_range=(0.0, top * 1.1),
        utility_density_range=(0.0, right * 1.1),
        epsilon_tick=top * 0.12,
        utility_tick=right * 0.12,
        epsilon_stack=epsilon_stack,
        utility_stack=utility_stack,
    )
