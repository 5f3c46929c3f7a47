"""The privacy–utility landscape of many audited models (Figures 1-2 of the Epsilon* paper).

One point per strategy at the mean Epsilon* and mean utility over its repeats,
with min–max bars on both axes; the Pareto frontier (lower Epsilon*, higher
utility); and marginal densities of Epsilon* and utility per category: DP
(the strategy's hyper-parameters name a ``target_epsilon`` or ``private`` is
true) or baseline.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from epsstar.exceptions import InputFileError

from .svg import Chart

__all__ = ["UTILITIES", "category", "landscape_context", "load_results", "pareto_front"]

UTILITIES: tuple[str, ...] = ("auroc", "accuracy")
_TRUE = {"true", "1", "yes", "y", "on"}


def category(params: Mapping[str, Any]) -> str:
    """``"DP"`` when the strategy trains with differential privacy, else ``"baseline"``."""
    target = params.get("target_epsilon")
    if target not in (None, "", [], ()):
        return "DP"
    private = params.get("private")
    if isinstance(private, str):
        return "DP" if private.strip().lower() in _TRUE else "baseline"
    return "DP" if private is True or (isinstance(private, int | float) and private) else "baseline"


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


# --- reading result files --------------------------------------------------------------------


def _is_audit(document: Any) -> bool:
    return isinstance(document, dict) and isinstance(document.get("epsilon_star"), int | float)


def load_results(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Records from ``audit-many --json`` files and single ``audit --json`` files.

    A single audit becomes one record whose strategy is the file's stem. Report
    paths recorded relative to a results file are made absolute.
    """
    records: list[dict[str, Any]] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise InputFileError(f"results: no such file. Found {str(path)!r}.")
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            raise InputFileError(f"{path}: not a JSON file ({error}).") from None
        folder = path.resolve().parent
        if _is_audit(document):
            records.append(
                {
                    "entry": {"strategy": path.stem, "repeat": 0, "params": {}},
                    "result": document,
                }
            )
            continue
        models = document.get("models") if isinstance(document, dict) else None
        if not isinstance(models, list) or not all(
            isinstance(m, dict) and isinstance(m.get("entry"), dict) for m in models
        ):
            raise InputFileError(
                f"{path}: not an epsstar results file (expected the JSON of 'epsstar audit' "
                "or 'epsstar audit-many'). Found neither."
            )
        for model in models:
            record = dict(model)
            entry = dict(record["entry"])
            entry.setdefault("params", {})
            entry.setdefault("repeat", 0)
            entry.setdefault("strategy", Path(str(entry.get("model", "model"))).stem)
            record["entry"] = entry
            report = record.get("report")
            if report:
                record["report"] = str(folder / report)  # absolute paths stay as they are
            records.append(record)
    if not records:
        raise InputFileError("results: the files hold no audited models. Found 0.")
    return records


# --- the page --------------------------------------------------------------------------------


def _range(values: Sequence[float], *, floor: float | None = None) -> tuple[float, float]:
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or max(abs(high) * 0.1, 0.05)
    low, high = low - pad, high + pad
    if floor is not None:
        low = max(low, floor)
    return low, high


def _density(values: Sequence[float], grid: np.ndarray) -> np.ndarray | None:
    """Gaussian KDE of ``values`` on ``grid``; None when it cannot be estimated."""
    from scipy.stats import gaussian_kde

    if len(set(values)) < 2:
        return None
    try:
        return np.asarray(gaussian_kde(np.asarray(values, dtype=np.float64))(grid))
    except (np.linalg.LinAlgError, ValueError):
        return None


def _link(report: str | None, out_dir: Path) -> str | None:
    if not report:
        return None
    relative = os.path.relpath(Path(report).resolve(), out_dir.resolve())
    return quote(Path(relative).as_posix())


def _describe(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in params.items()) or "no hyper-parameters recorded"


def landscape_context(
    records: list[Mapping[str, Any]], target: Path, *, utility: str
) -> dict[str, Any]:
    from epsstar.audit.many import summarise

    if utility not in UTILITIES:
        raise InputFileError(f"utility must be one of {', '.join(UTILITIES)}. Found {utility!r}.")
    normalised = [
        {**record, "entry": {"params": {}, "repeat": 0, **record["entry"]}} for record in records
    ]
    summaries = {s.strategy: s for s in summarise(normalised)}
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for record in normalised:
        groups.setdefault(record["entry"]["strategy"], []).append(record)

    strategies: list[dict[str, Any]] = []
    for name, members in groups.items():
        audited = [m for m in members if m.get("result")]
        eps = [float(m["result"]["epsilon_star"]) for m in audited]
        util = [
            float(u)
            for m in audited
            if (u := m["result"].get("utility", {}).get("population", {}).get(utility)) is not None
        ]
        params = dict(members[0]["entry"].get("params") or {})
        first = sorted(members, key=lambda m: m["entry"].get("repeat", 0))
        report = next((m.get("report") for m in first if m.get("report")), None)
        summary = summaries[name]
        strategies.append(
            {
                "name": name,
                "category": category(params),
                "params": params,
                "describe": _describe({k: v for k, v in params.items() if k != "seed"}),
                "n_models": len(members),
                "n_failed": summary.n_failed,
                "eps": eps,
                "util": util,
                "eps_mean": float(np.mean(eps)) if eps else None,
                "eps_min": min(eps) if eps else None,
                "eps_max": max(eps) if eps else None,
                "mechanism": summary.mechanism_epsilon,
                "util_mean": float(np.mean(util)) if util else None,
                "util_min": min(util) if util else None,
                "util_max": max(util) if util else None,
                "link": _link(report, target.parent),
                "pareto": False,
            }
        )
    plotted = [s for s in strategies if s["eps_mean"] is not None and s["util_mean"] is not None]
    for index in pareto_front([(float(s["eps_mean"]), float(s["util_mean"])) for s in plotted]):
        plotted[index]["pareto"] = True
    charts = _charts(plotted, utility) if plotted else None
    return {
        "utility": utility,
        "utility_label": "AUROC" if utility == "auroc" else "accuracy",
        "strategies": strategies,
        "n_plotted": len(plotted),
        "n_models": len(records),
        "charts": charts,
    }


def _charts(plotted: list[dict[str, Any]], utility: str) -> dict[str, Any]:
    label = "AUROC" if utility == "auroc" else "accuracy"
    all_eps = [v for s in plotted for v in s["eps"]]
    all_util = [v for s in plotted for v in s["util"]]
    x_range = _range(all_eps, floor=0.0 if min(all_eps) >= 0 else None)
    y_range = _range(all_util)
    size, side, gap = 520, 150, (16, 20, 48, 64)
    main = Chart(
        "Privacy-utility landscape",
        x_range,
        y_range,
        "Epsilon* (lower = more private)",
        f"{label} on population data (higher = more useful)",
        width=size + 40,
        height=size,
        margin=gap,
    )
    front = sorted((s for s in plotted if s["pareto"]), key=lambda s: s["eps_mean"])
    xs: list[float] = []
    ys: list[float] = []
    for s in front:
        if xs:
            xs.append(s["eps_mean"])
            ys.append(ys[-1])
        xs.append(s["eps_mean"])
        ys.append(s["util_mean"])
    if len(front) == 1:
        xs, ys = [front[0]["eps_mean"], x_range[1]], [front[0]["util_mean"]] * 2
    main.line(xs, ys, css="pareto-line", label="Pareto frontier")
    for s in plotted:
        main.segment(s["eps_min"], s["util_mean"], s["eps_max"], s["util_mean"], css="errorbar")
        main.segment(s["eps_mean"], s["util_min"], s["eps_mean"], s["util_max"], css="errorbar")
    seen: set[str] = set()
    for s in plotted:
        css = "point-dp" if s["category"] == "DP" else "point-baseline"
        legend = None
        if s["category"] not in seen:
            seen.add(s["category"])
            legend = "DP strategy" if s["category"] == "DP" else "baseline (non-private) strategy"
        tooltip = (
            f"{s['name']} ({s['category']}, {len(s['eps'])} models): Epsilon* "
            f"{s['eps_mean']:.3f} [{s['eps_min']:.3f}, {s['eps_max']:.3f}], {label} "
            f"{s['util_mean']:.4f} [{s['util_min']:.4f}, {s['util_max']:.4f}]; {s['describe']}"
            + ("; on the Pareto frontier" if s["pareto"] else "")
            + ("; click for its report" if s["link"] else "")
        )
        main.point(
            s["eps_mean"],
            s["util_mean"],
            css=css + (" pareto" if s["pareto"] else ""),
            radius=6.5 if s["pareto"] else 5.5,
            label=legend,
            tooltip=tooltip,
            href=s["link"],
        )

    top = Chart(
        "Epsilon* density by category",
        x_range,
        (0.0, 1.0),
        "",
        "density",
        width=size + 40,
        height=side,
        margin=(8, 20, 22, 64),
    )
    right = Chart(
        f"{label} density by category",
        (0.0, 1.0),
        y_range,
        "density",
        "",
        width=side,
        height=size,
        margin=(gap[0], 8, gap[2], 8),
        tick_labels=(True, False),
    )
    x_grid = np.linspace(*x_range, 200)
    y_grid = np.linspace(*y_range, 200)
    densities = {}
    for name in ("baseline", "DP"):
        eps = [v for s in plotted if s["category"] == name for v in s["eps"]]
        util = [v for s in plotted if s["category"] == name for v in s["util"]]
        if eps:
            densities[name] = (eps, _density(eps, x_grid), util, _density(util, y_grid))
    top_max = max([float(d[1].max()) for d in densities.values() if d[1] is not None] or [1.0])
    right_max = max([float(d[3].max()) for d in densities.values() if d[3] is not None] or [1.0])
    top.y_range = (0.0, top_max * 1.1)
    right.x_range = (0.0, right_max * 1.1)
    for name, (eps, eps_density, util, util_density) in densities.items():
        css = "kde-dp" if name == "DP" else "kde-baseline"
        rug = "rug-dp" if name == "DP" else "rug-baseline"
        if eps_density is not None:
            top.line(x_grid, eps_density, css=css)
        for value in eps:
            top.segment(value, 0.0, value, top_max * 0.12, css=rug)
        if util_density is not None:
            right.line(util_density, y_grid, css=css)
        for value in util:
            right.segment(0.0, value, right_max * 0.12, value, css=rug)
    return {
        "main": main.render(),
        "top": top.render(legend=False),
        "right": right.render(legend=False),
        "kde": {name: d[1] is not None for name, d in densities.items()},
    }
