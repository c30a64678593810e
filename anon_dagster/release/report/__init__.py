"""The risk report: a reproducible artifact of one release evaluation, in JSON, Markdown, HTML.

A report is built in two steps so it can be rebuilt byte-identically later:

1. :func:`report_inputs` gathers everything the report states into one canonical,
   JSON-serializable dict (spec content, hashes, code version, measures, checks, date...). The
   ledger stores this dict with the publication entry.
2. :func:`build_report` is a pure function of those inputs: the same inputs give the same
   report, so ``build_report(entry.report_inputs)`` rebuilds it (the date inside is the
   evaluation's date, never "now").

The report has four sections: ``identification`` (dataset and spec hashes, package version,
git revision, seed, partition, date), ``hypotheses`` (what is published, quasi-identifiers,
sensitive attributes, population and sampling fraction, adversary, declared thresholds,
severity, what the method cannot see), ``measures`` (every risk metric, class-size and risk
distributions, population-uniqueness estimates, utility, suppression, composition, DP error)
and ``verdict`` (publishable or not, failed checks, mitigations, review date).

Modules: :mod:`.inputs` (the inputs and the fallback checks), :mod:`.content` (the report),
:mod:`.markdown`, :mod:`.html_page` and :mod:`.svg` (its renderings), :mod:`.values`
(canonical values, the text of a figure).

Canonical JSON: keys sorted, two-space indentation, floats rounded to 12 significant digits,
NaN and infinities written as null, a final newline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import UserError
from .content import (
    FRONTIER_ROWS_SHOWN,
    VERDICT_FAILED,
    VERDICT_OK,
    build_report,
    risk_utility_frontier,
)
from .html_page import render_html
from .inputs import (
    REPORT_FORMAT,
    RISK_BINS,
    class_size_distribution,
    git_revision,
    package_version,
    report_inputs,
    risk_distribution,
    threshold_checks,
)
from .markdown import render_markdown
from .svg import svg_bars, svg_frontier
from .values import canonical, format_value, render_json

RENDERERS = {"json": render_json, "md": render_markdown, "html": render_html}


def render(report: Mapping[str, Any], fmt: str) -> str:
    """Render in ``json``, ``md`` or ``html``."""
    try:
        return RENDERERS[fmt](report)
    except KeyError:
        raise UserError(f"unknown report format {fmt!r} (use json, md or html)") from None


__all__ = [
    "FRONTIER_ROWS_SHOWN", "RENDERERS", "REPORT_FORMAT", "RISK_BINS", "VERDICT_FAILED", "VERDICT_OK",
    "build_report", "canonical", "class_size_distribution", "format_value", "git_revision",
    "package_version", "render", "render_html", "render_json", "render_markdown", "report_inputs",
    "risk_distribution", "risk_utility_frontier", "svg_bars", "svg_frontier", "threshold_checks",
]
