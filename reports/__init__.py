"""Reports, installed as ``epsstar.reports``: self-contained HTML renderings of audit results.

* :func:`render` writes the report of one audit (verdict, readings, loss
  histograms, fitted densities, goodness of fit, trade-off curve, utility,
  provenance);
* :func:`render_landscape` writes the privacy–utility landscape of many audits
  (Figures 1-2 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models").

Both files open offline from disk: styles are inline, charts are inline SVG drawn
in Python, and nothing is fetched. Every number is also in a plain HTML table.
Their size does not grow with the number of records (see
:data:`~epsstar.reports.MAX_REPORT_BYTES`).

The reports compute nothing: they draw frozen records of the audit layer.
:func:`render` draws an :class:`~epsstar.audit.output.result.AuditResult` with its
:class:`~epsstar.audit.output.figures.AuditFigures` (histograms, fitted densities,
trade-off curves, axis ranges, the goodness-of-fit grid); given only the result,
it builds them first with :func:`epsstar.audit.output.figures.audit_figures`.
:func:`render_landscape` draws a :class:`~epsstar.audit.output.landscape_data.Landscape`;
given audit records, it builds one first with
:func:`epsstar.audit.output.landscape_data.landscape`. Either way the same file results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

    from epsstar.audit.output.figures import AuditFigures
    from epsstar.audit.output.landscape_data import Landscape
    from epsstar.audit.output.result import AuditResult

__all__ = ["MAX_REPORT_BYTES", "render", "render_landscape"]

#: Size budget of one report, whatever the number of records.
MAX_REPORT_BYTES = 250_000


def _safe(value: object) -> object:
    """Every text a template writes, without the characters XML forbids (a file name or a
    slice value from the inputs may hold them; :mod:`epsstar.audit.output.xml_text`)."""
    from epsstar.audit.output.xml_text import xml_text

    return xml_text(value) if isinstance(value, str) else value


def environment() -> jinja2.Environment:
    """The Jinja2 environment of the templates shipped in this package (autoescaping on,
    every written text through :func:`_safe`)."""
    import jinja2

    from epsstar.reports import numbers

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("epsstar.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_safe,
    )
    env.filters["num"] = numbers.number
    env.filters["pct"] = numbers.percent
    env.filters["int_"] = numbers.count
    env.filters["counted"] = numbers.counted
    env.filters["rate"] = numbers.rate
    return env


def _write(html: str, path: str | Path) -> Path:
    from epsstar.plumbing.files.staging import atomic_write_bytes

    target = Path(path)
    atomic_write_bytes(target, html.encode("utf-8"))
    return target


def render(
    result: AuditResult,
    path: str | Path,
    *,
    figures: AuditFigures | None = None,
    ks_components: Sequence[int] | None = None,
    ks_sample_sizes: Sequence[int] | None = None,
    ks_max_values: int | None = None,
) -> Path:
    """Write the HTML report of one audit to ``path`` (atomically); returns the path.

    The report draws ``result``'s fields and its ``figures``
    (:func:`epsstar.audit.output.figures.audit_figures` of the same result). Without
    ``figures`` they are built here: the goodness-of-fit grid of Appendix 8.2
    uses mixtures of 1-10 components and 100-1,000 held-out values on a seeded
    subsample of at most 2,000 transformed losses per side; the ``ks_*``
    arguments change that (an empty ``ks_components`` leaves the grid out). With
    ``figures``, nothing is computed and the ``ks_*`` arguments must be left out.
    """
    from epsstar.reports import audit_report

    options: dict[str, Any] = {
        name: value
        for name, value in (
            ("ks_components", ks_components),
            ("ks_sample_sizes", ks_sample_sizes),
            ("ks_max_values", ks_max_values),
        )
        if value is not None
    }
    if figures is None:
        from epsstar.audit.output.figures import audit_figures

        figures = audit_figures(result, **options)
    elif options:
        from epsstar.exceptions import InvalidInputError

        raise InvalidInputError(
            "render: the ks_* options shape figures that are built here; with figures= given, "
            f"pass them to audit_figures() instead. Found {', '.join(options)}."
        )
    context = audit_report.audit_context(result, figures)
    html = environment().get_template("audit.html.j2").render(ctx=context)
    return _write(html, path)


def render_landscape(
    records: Iterable[Mapping[str, Any]] | Landscape,
    path: str | Path,
    *,
    utility: str = "auroc",
) -> Path:
    """Write the privacy–utility landscape of audit records to ``path``; returns the path.

    ``records`` have the form of ``epsstar audit-many --json``'s ``models``:
    ``{"entry": {"strategy", "repeat", "params"}, "result": {...}, "report": path?}``;
    they go through :func:`epsstar.audit.output.landscape_data.landscape` first (a
    malformed record, or none with both an Epsilon* and the utility, is an
    :class:`~epsstar.exceptions.InputFileError`). A
    :class:`~epsstar.audit.output.landscape_data.Landscape` is drawn as it is
    (``utility`` is then its own). ``utility`` is ``"auroc"`` or ``"accuracy"``
    on the population data. Report paths are linked relative to the landscape's
    folder.
    """
    from epsstar.audit.output.landscape_data import Landscape, landscape
    from epsstar.reports.landscape import landscape_context

    data = records if isinstance(records, Landscape) else landscape(records, utility=utility)
    target = Path(path)
    context = landscape_context(data, target)
    html = environment().get_template("landscape.html.j2").render(ctx=context)
    return _write(html, target)
