"""The report as Markdown (Dagster shows it as the anonymized asset's metadata)."""

from __future__ import annotations

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
from .values import format_value

# characters Markdown reads as emphasis, code, links or HTML: ``k1*k2/N`` must not turn italic
_MARKUP = str.maketrans({c: "\\" + c for c in "\\`*<>"})


def md_text(text: Any) -> str:
    """``text`` as literal Markdown: markup characters escaped, each line break kept (a hard break).

    For prose written by the core (check summaries, reasons), which must read in Dagster's UI
    and in the report exactly as written.
    """
    lines = str(text).translate(_MARKUP).splitlines()
    return "  \n".join(line.rstrip() for line in lines)


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    esc = lambda s: md_text(format_value(s)).replace("|", "\\|").replace("  \n", "<br>")  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return lines


def _population_uniqueness(pu: Mapping[str, Any]) -> list[str]:
    summary, header, rows, facts = population_uniqueness_table(pu)
    out = [md_text(summary), ""] if summary else []
    if rows:
        out += _md_table(header, rows) + [""]
    return out + (["; ".join(f"{k} {format_value(v)}" for k, v in facts), ""] if facts else [])


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown (Dagster shows it as the anonymized asset's metadata)."""
    ident, hyp, meas, verdict = (report[s] for s in ("identification", "hypotheses", "measures", "verdict"))
    mark = "✅" if verdict["publishable"] else "❌"
    out = [f"# {report['title']}", "", f"**Verdict: {mark} {verdict['verdict']}** — review by {verdict['review_date']}", ""]
    if verdict.get("reasons"):  # why it was refused, before anything else
        out += ["**Refused because**", ""]
        out += [f"- **{r['name']}**: {md_text(r['summary'])}" for r in verdict["reasons"]] + [""]
    headline = meas.get("headline_risk")
    if headline:
        out += [f"**Headline risk ({headline['adversary']} adversary)**: {headline_text(headline)}", ""]
    out += ["## 1. Identification and traceability", ""]
    out += _md_table(["item", "value"], [[k, ident[k]] for k in sorted(ident)])
    out += ["", "## 2. Declared hypotheses", ""]
    out += [f"- **Published**: {hyp['published']['mode']} — columns {', '.join(hyp['published']['columns'])}",
            "- **Quasi-identifiers**: " + "; ".join(f"{k} ({v})" for k, v in hyp["quasi_identifiers"].items()),
            f"- **Sensitive attributes**: {', '.join(hyp['sensitive_attributes']) or 'none'}",
            f"- **Population**: {hyp['population']['source'] or 'not declared'}; sampling fraction "
            f"{hyp['population']['sampling_fraction']}"
            + ("" if hyp["population"]["sampling_fraction_declared"] else " (assumed)"),
            f"- **Adversary model**: {hyp['adversary']}; **severity**: {hyp['severity']}",
            "- **Thresholds (declared before measuring)**: "
            + (", ".join(f"{k} {format_value(v)}" for k, v in sorted(hyp["thresholds"].items())) or "none"),
            "", "**What the method cannot see**", ""]
    out += [f"- {b}" for b in hyp["what_the_method_cannot_see"]]
    out += ["", "## 3. Measures", ""]
    metrics = meas.get("metrics") or {}
    scalar = [[k, v] for k, v in sorted(metrics.items()) if not isinstance(v, dict | list)]
    if scalar:
        out += _md_table(["metric", "value"], scalar) + [""]
    if meas.get("class_size_distribution"):
        out += ["**Class sizes**", ""]
        out += _md_table(["size", "classes", "rows"], [[c["size"], c["classes"], c["rows"]] for c in meas["class_size_distribution"][:20]])
        out += [""]
    if meas.get("risk_distribution"):
        out += ["**Prosecutor risk distribution**", ""]
        out += _md_table(["risk", "rows", "share"], [[f"({r['from']:g}, {r['to']:g}]", r["rows"], r["share"]] for r in meas["risk_distribution"]])
        out += [""]
    pu = meas.get("population_uniqueness")
    if pu:
        out += ["**Population uniqueness**", ""] + _population_uniqueness(pu)
    util = meas.get("utility")
    if util:
        if util.get("generic"):
            out += ["**Utility (generic)**", ""] + _md_table(["measure", "value"], sorted(util["generic"].items())) + [""]
        if util.get("queries"):
            out += ["**Utility (queries)**", ""]
            out += _md_table(["query", "error (points)", "allowed", "passed"],
                             [[q.get("name"), q.get("error_points"), q.get("max_error_points"), q.get("passed")] for q in util["queries"]])
            out += [""]
    fr = meas.get("frontier")
    if fr:
        out += ["**Risk-utility frontier**", ""]
        if not fr["available"]:
            out += [fr["note"], ""]
        else:
            header, rows = _frontier_rows(fr)
            out += [_frontier_note(fr), ""] + _md_table(header, rows) + [""]
            if len(fr["nodes"]) > len(rows):
                out += [f"({len(fr['nodes']) - len(rows)} more nodes in the JSON report)", ""]
    sup = meas.get("suppression")
    if sup:
        out += [f"**Suppression**: {format_value(sup.get('rows'))} rows ({format_value(sup.get('share'))})", ""]
        if sup.get("by_group"):
            out += _md_table(["group", "suppressed"], sorted(sup["by_group"].items())) + [""]
    comp = meas.get("composition")
    if comp:
        out += ["**Composition with earlier publications**", "", "```", comp.get("text", ""), "```", ""]
    dp = meas.get("dp")
    if dp:
        out += [f"**Differential privacy**: ε = {format_value(dp.get('epsilon'))} ({dp.get('mechanism', '')})", ""]
        rows = [[m, v.get("sensitivity"), v.get("std"), v.get("interval_95")] for m, v in sorted((dp.get("measures") or {}).items())]
        if rows:
            out += _md_table(["measure", "sensitivity", "std per cell", "95% half-width"], rows) + [""]
    attacks = meas.get("attacks")
    if attacks:
        out += ["**Attacks**", "", md_text(attacks["cost"]), ""]
        out += _md_table(ATTACK_HEADER, attack_rows(attacks)) + [""]
        out += [md_text(attacks["note"]), ""]
        out += [f"- **{c['name']}** ({'passed' if c['passed'] else 'FAILED'}): {md_text(c['summary'])}"
                for c in attacks["checks"]] + ([""] if attacks["checks"] else [])
    synthetic = meas.get("synthetic")
    if synthetic:
        out += ["**Synthetic data**", "", md_text(synthetic["note"]), ""]
        out += _md_table(SYNTHETIC_HEADER, synthetic_rows(synthetic)) + [""]
        out += [f"- **{c['name']}** ({'passed' if c['passed'] else 'FAILED'}): {md_text(c['summary'])}"
                for c in synthetic["checks"]] + ([""] if synthetic["checks"] else [])
    out += ["## 4. Verdict and expiry", ""]
    out += _md_table(["check", "passed", "severity", "value", "threshold"],
                     [[c["name"], "yes" if c["passed"] else "NO", c.get("severity"), c.get("value"), c.get("threshold")] for c in verdict["checks"]])
    out += ["", f"- **Verdict**: {verdict['verdict']}",
            f"- **Failed checks**: {', '.join(verdict['failed_checks']) or 'none'}",
            f"- **Mitigations applied**: {'; '.join(verdict['mitigations']) or 'none'}",
            f"- **Review date**: {verdict['review_date']} ({verdict['review_after_days']} days after the evaluation)", ""]
    approval = verdict.get("approval")
    if approval:
        out += [f"**Approval** ({approval['min_approvals']} required; evaluation run by "
                f"{md_text(approval['runner'])}, code version {md_text(approval['code_version'])})", ""]
        out += _md_table(["approver", "approved at", "reason"],
                         [[a["approver"], a["at"], a["reason"] or "-"] for a in approval["approvals"]])
        out += [""]
    return "\n".join(out)
