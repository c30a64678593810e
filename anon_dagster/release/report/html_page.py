"""The report as one self-contained HTML page (inline CSS and SVG plots)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from .content import (
    ATTACK_HEADER,
    SYNTHETIC_HEADER,
    _frontier_note,
    _frontier_rows,
    attack_rows,
    headline_text,
    population_uniqueness_table,
    synthetic_rows,
)
from .svg import svg_bars, svg_frontier
from .values import format_value

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:60em;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f2f2f2}.ok{color:#1a7f37;font-weight:bold}.bad{color:#b42318;font-weight:bold}
.verdict{font-size:1.3em;padding:.5em 1em;border-radius:6px;display:inline-block}
.verdict.ok{background:#e6f4ea}.verdict.bad{background:#fdecea}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;font-size:.85em}code{font-size:.9em}
.charts{display:flex;flex-wrap:wrap;gap:1em}
"""


def _html_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(format_value(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_html(report: Mapping[str, Any]) -> str:
    """A self-contained HTML page (inline CSS and SVG plots; no script, no external asset)."""
    ident, hyp, meas, verdict = (report[s] for s in ("identification", "hypotheses", "measures", "verdict"))
    ok = verdict["publishable"]
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(report['title'])}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(report['title'])}</h1>",
        f'<p class="verdict {"ok" if ok else "bad"}">Verdict: {e(verdict["verdict"])} — review by {e(verdict["review_date"])}</p>',
        *(["<p><b>Refused because</b></p><ul>",
           *[f"<li><b>{e(r['name'])}</b>: {'<br>'.join(e(x) for x in r['summary'].splitlines())}</li>"
             for r in verdict["reasons"]], "</ul>"] if verdict.get("reasons") else []),
        *([f'<p class="headline"><b>Headline risk ({e(meas["headline_risk"]["adversary"])} adversary):</b> '
           f'{e(headline_text(meas["headline_risk"]))}</p>'] if meas.get("headline_risk") else []),
        "<h2>1. Identification and traceability</h2>",
        _html_table(["item", "value"], [[k, ident[k]] for k in sorted(ident)]),
        "<h2>2. Declared hypotheses</h2>",
        _html_table(["", ""], [
            ["published", f"{hyp['published']['mode']}: {', '.join(hyp['published']['columns'])}"],
            ["dropped identifiers", ", ".join(hyp["published"]["dropped_identifiers"]) or "none"],
            ["pseudonymized identifiers", ", ".join(hyp["published"]["pseudonymized_identifiers"]) or "none"],
            ["sensitive attributes", ", ".join(hyp["sensitive_attributes"]) or "none"],
            ["population", hyp["population"]["source"] or "not declared"],
            ["sampling fraction", f"{hyp['population']['sampling_fraction']}"
             + ("" if hyp["population"]["sampling_fraction_declared"] else " (assumed)")],
            ["adversary model", hyp["adversary"]],
            ["severity", hyp["severity"]],
        ]),
        "<h3>Quasi-identifiers</h3>",
        _html_table(["column", "generalization"], list(hyp["quasi_identifiers"].items())),
        "<h3>Thresholds (declared before measuring)</h3>",
        _html_table(["threshold", "value"], sorted(hyp["thresholds"].items())),
        "<h3>What the method cannot see</h3><ul>",
        *[f"<li>{e(b)}</li>" for b in hyp["what_the_method_cannot_see"]],
        "</ul>",
        "<h2>3. Measures</h2>",
    ]
    metrics = meas.get("metrics") or {}
    scalar = [[k, v] for k, v in sorted(metrics.items()) if not isinstance(v, dict | list)]
    if scalar:
        parts.append(_html_table(["metric", "value"], scalar))
    charts = []
    csd = meas.get("class_size_distribution")
    if csd:
        shown = csd[:15]
        charts.append(svg_bars([str(c["size"]) for c in shown], [c["classes"] for c in shown],
                               "Classes by size (rows sharing their QI values)"))
    rd = meas.get("risk_distribution")
    if rd:
        charts.append(svg_bars([f"≤{r['to']:.0%}" for r in rd], [r["share"] for r in rd],
                               "Share of rows by prosecutor risk", fmt="{:.1%}"))
    if charts:
        parts.append('<div class="charts">' + "".join(charts) + "</div>")
    pu = meas.get("population_uniqueness")
    if pu:
        parts.append("<h3>Population uniqueness</h3>")
        summary, header, rows, facts = population_uniqueness_table(pu)
        if summary:
            parts.append(f"<p>{e(summary)}</p>")
        if rows:
            parts.append(_html_table(header, rows))
        if facts:
            parts.append(f"<p>{e('; '.join(f'{k} {format_value(v)}' for k, v in facts))}</p>")
    util = meas.get("utility")
    if util:
        parts.append("<h3>Utility</h3>")
        if util.get("generic"):
            parts.append(_html_table(["measure", "value"], sorted(util["generic"].items())))
        if util.get("queries"):
            parts.append(_html_table(["query", "error (points)", "allowed", "passed"],
                                     [[q.get("name"), q.get("error_points"), q.get("max_error_points"), q.get("passed")] for q in util["queries"]]))
    fr = meas.get("frontier")
    if fr:
        parts.append("<h3>Risk-utility frontier</h3>")
        if not fr["available"]:
            parts.append(f"<p>{e(fr['note'])}</p>")
        else:
            header, rows = _frontier_rows(fr)
            parts.append(f"<p>{e(_frontier_note(fr))}</p>")
            parts.append(svg_frontier(fr))
            parts.append(_html_table(header, rows))
            if len(fr["nodes"]) > len(rows):
                parts.append(f"<p>({len(fr['nodes']) - len(rows)} more nodes in the JSON report)</p>")
    sup = meas.get("suppression")
    if sup:
        parts.append(f"<h3>Suppression</h3><p>{e(format_value(sup.get('rows')))} rows suppressed ({e(format_value(sup.get('share')))})</p>")
        if sup.get("by_group"):
            parts.append(_html_table(["group", "suppressed"], sorted(sup["by_group"].items())))
    comp = meas.get("composition")
    if comp:
        parts.append(f"<h3>Composition with earlier publications</h3><pre>{e(comp.get('text', ''))}</pre>")
    dp = meas.get("dp")
    if dp:
        parts.append(f"<h3>Differential privacy</h3><p>ε = {e(format_value(dp.get('epsilon')))} — {e(dp.get('mechanism', ''))}</p>")
        parts.append(_html_table(["measure", "sensitivity", "std per cell", "95% half-width"],
                                 [[m, v.get("sensitivity"), v.get("std"), v.get("interval_95")] for m, v in sorted((dp.get("measures") or {}).items())]))
    attacks = meas.get("attacks")
    if attacks:
        parts.append(f"<h3>Attacks</h3><p>{e(attacks['cost'])}</p>")
        parts.append(_html_table(ATTACK_HEADER, attack_rows(attacks)))
        parts.append(f"<p>{e(attacks['note'])}</p>")
        if attacks["checks"]:
            parts.append("<ul>" + "".join(
                f'<li><b>{e(c["name"])}</b> (<span class="{"ok" if c["passed"] else "bad"}">'
                f'{"passed" if c["passed"] else "FAILED"}</span>): {e(format_value(c["summary"]))}</li>'
                for c in attacks["checks"]) + "</ul>")
    synthetic = meas.get("synthetic")
    if synthetic:
        parts.append(f"<h3>Synthetic data</h3><p>{e(synthetic['note'])}</p>")
        parts.append(_html_table(SYNTHETIC_HEADER, synthetic_rows(synthetic)))
        if synthetic["checks"]:
            parts.append("<ul>" + "".join(
                f'<li><b>{e(c["name"])}</b> (<span class="{"ok" if c["passed"] else "bad"}">'
                f'{"passed" if c["passed"] else "FAILED"}</span>): {e(format_value(c["summary"]))}</li>'
                for c in synthetic["checks"]) + "</ul>")
    parts += [
        "<h2>4. Verdict and expiry</h2>",
        "<table><tr><th>check</th><th>passed</th><th>severity</th><th>value</th><th>threshold</th><th>summary</th></tr>",
        *[
            f'<tr><td>{e(c["name"])}</td><td class="{"ok" if c["passed"] else "bad"}">{"yes" if c["passed"] else "NO"}</td>'
            f'<td>{e(format_value(c.get("severity")))}</td><td>{e(format_value(c.get("value")))}</td><td>{e(format_value(c.get("threshold")))}</td>'
            f'<td>{e(format_value(c.get("summary")))}</td></tr>'
            for c in verdict["checks"]
        ],
        "</table>",
        f"<p><b>Failed checks:</b> {e(', '.join(verdict['failed_checks']) or 'none')}</p>",
        f"<p><b>Mitigations applied:</b> {e('; '.join(verdict['mitigations']) or 'none')}</p>",
        f"<p><b>Review date:</b> {e(verdict['review_date'])} ({verdict['review_after_days']} days after the evaluation)</p>",
    ]
    approval = verdict.get("approval")
    if approval:
        parts.append(f"<h3>Approval</h3><p>{approval['min_approvals']} required; evaluation run by "
                     f"{e(approval['runner'])}, code version {e(approval['code_version'])}</p>")
        parts.append(_html_table(["approver", "approved at", "reason"],
                                 [[a["approver"], a["at"], a["reason"] or "-"] for a in approval["approvals"]]))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
