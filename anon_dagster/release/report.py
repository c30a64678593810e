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

Canonical JSON: keys sorted, two-space indentation, floats rounded to 12 significant digits,
NaN and infinities written as null, a final newline.
"""

from __future__ import annotations

import html
import json
import subprocess
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ..io import plain_json

REPORT_FORMAT = 1
VERDICT_OK = "publishable"
VERDICT_FAILED = "not publishable"

# prosecutor-risk bins of the risk distribution (upper bounds, as ARX shows them)
RISK_BINS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.334, 0.5, 1.0)

# threshold key -> comparison (the measure must be >= or <= the declared value)
_THRESHOLD_SENSE = {
    "k": ">=", "l_distinct": ">=", "l_entropy": ">=",
    "prosecutor_avg": "<=", "prosecutor_max": "<=", "journalist_avg": "<=", "journalist_max": "<=",
    "marketer": "<=", "uniques_fraction": "<=", "population_uniqueness": "<=", "t_closeness": "<=",
}


# ----- canonical values -----------------------------------------------------------------------


def canonical(value: Any) -> Any:
    """``value`` as plain JSON types (:func:`anon_dagster.io.plain_json`), floats rounded to 12
    significant digits so a rebuilt report is byte-identical."""
    return plain_json(value, digits=12)


def render_json(report: Mapping[str, Any]) -> str:
    """Canonical JSON text of a report (see the module docstring)."""
    return json.dumps(canonical(report), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# ----- traceability ---------------------------------------------------------------------------


def package_version() -> str | None:
    try:
        return metadata.version("anon_dagster")
    except metadata.PackageNotFoundError:
        return None


def git_revision(start: Path | None = None) -> str | None:
    """``git rev-parse HEAD`` of the checkout holding this package, or None when unavailable."""
    where = start or Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    rev = out.stdout.strip()
    return rev if out.returncode == 0 and len(rev) >= 7 else None


# ----- distributions --------------------------------------------------------------------------


def class_size_distribution(class_sizes: Sequence[int] | np.ndarray) -> list[dict[str, int]]:
    """Frequencies of frequencies: for each class size, how many classes and rows have it."""
    sizes = np.asarray(class_sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    if sizes.size == 0:
        return []
    values, counts = np.unique(sizes, return_counts=True)
    return [{"size": int(s), "classes": int(c), "rows": int(s * c)} for s, c in zip(values, counts, strict=True)]


def risk_distribution(class_sizes: Sequence[int] | np.ndarray) -> list[dict[str, Any]]:
    """Share of rows per prosecutor-risk bin (a row's risk is 1/|its class|)."""
    sizes = np.asarray(class_sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    n = int(sizes.sum())
    out, lower = [], 0.0
    risk = 1.0 / sizes if n else np.zeros(0)
    for upper in RISK_BINS:
        rows = int(sizes[(risk > lower) & (risk <= upper)].sum()) if n else 0
        out.append({"from": lower, "to": upper, "rows": rows, "share": rows / n if n else 0.0})
        lower = upper
    return out


# ----- inputs ---------------------------------------------------------------------------------


def _spec_payload(spec: Any) -> dict[str, Any]:
    return spec.model_dump(mode="json", exclude={"spec_path"})


def _check_dict(check: Any) -> dict[str, Any]:
    d = canonical(check)
    if not isinstance(d, dict) or "name" not in d or "passed" not in d:
        raise TypeError(f"a check must have a name and passed (got {check!r})")
    d.setdefault("severity", "error")
    return d


def threshold_checks(thresholds: Mapping[str, Any], measures: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One check per declared threshold against ``measures`` (RiskMeasures.to_dict() keys).

    Used when the caller has not computed its own checks. A threshold whose measure is absent
    fails: a risk that cannot be measured must not pass silently.
    """
    out = []
    for key, declared in sorted(thresholds.items()):
        if declared is None or key not in _THRESHOLD_SENSE:
            continue
        sense = _THRESHOLD_SENSE[key]
        value = measures.get(key)
        if value is None:
            passed, summary = False, f"{key} was not measured"
        else:
            passed = value >= declared if sense == ">=" else value <= declared
            summary = f"{key} = {canonical(value)} ({sense} {declared} required)"
        out.append({"name": key, "passed": bool(passed), "severity": "error", "value": value,
                    "threshold": declared, "comparison": sense, "summary": summary})
    return out


def report_inputs(
    spec: Any,
    *,
    partition: str | None,
    data_hash: str,
    measures: Mapping[str, Any] | None = None,
    class_sizes: Sequence[int] | np.ndarray | None = None,
    population_uniqueness: Any = None,
    utility: Mapping[str, Any] | None = None,
    anonymization_record: Mapping[str, Any] | None = None,
    suppression: Mapping[str, Any] | None = None,
    composition: Any = None,
    dp: Any = None,
    checks: Sequence[Any] | None = None,
    mitigations: Sequence[str] | None = None,
    evaluated_at: str | datetime | None = None,
    seed: int | None = None,
    published_path: str | None = None,
    report_path: str | None = None,
) -> dict[str, Any]:
    """Everything a report states, as one canonical dict (stored in the ledger entry).

    ``measures`` is ``RiskMeasures.to_dict()``; ``class_sizes`` the published classes' sizes
    (for the distributions); ``population_uniqueness`` the estimator result (``to_dict()``);
    ``utility`` ``{"generic": {...}, "queries": [{name, error_points, max_error_points,
    passed, ...}]}``; ``suppression`` ``{"rows", "share", "by_group": {...}}`` (taken from the
    anonymization record's ``suppression`` entry when not given); ``composition`` a
    :class:`~anon_dagster.release.composition.CompositionResult` or its dict; ``dp`` the DP
    aggregates' ``to_dict()`` (with ``budget``); ``checks`` the gate's outcomes (objects or
    dicts with name, passed, severity, value, threshold, summary), computed from the declared
    thresholds when omitted. ``evaluated_at`` defaults to now (UTC).
    """
    if evaluated_at is None:
        evaluated_at = datetime.now(UTC)
    if isinstance(evaluated_at, datetime):
        evaluated_at = evaluated_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    measures = dict(measures or {})
    record = dict(anonymization_record or {})
    if suppression is None and isinstance(record.get("suppression"), Mapping):
        suppression = record["suppression"]
    if checks is None:
        checks = threshold_checks(spec.policy.thresholds.model_dump(), measures)
    if composition is not None:
        comp = canonical(composition)
        if not any(_check_dict(c)["name"] == "composition" for c in checks):
            checks = [*checks, {
                "name": "composition", "passed": bool(comp.get("passed")), "severity": "error",
                "value": comp.get("effective_k"), "threshold": comp.get("min_k"), "comparison": ">=",
                "summary": f"effective k after composition = {comp.get('effective_k')} "
                           f"(min_k {comp.get('min_k')}), {comp.get('exposed_persons')} persons exposed",
            }]
    budget = canonical(dp).get("budget") if isinstance(canonical(dp), dict) else None
    if budget and not any(_check_dict(c)["name"] == "epsilon_budget" for c in checks):
        checks = [*checks, {
            "name": "epsilon_budget", "passed": bool(budget.get("allowed")), "severity": "error",
            "value": budget.get("epsilon_after"), "threshold": budget.get("total_epsilon"), "comparison": "<=",
            "summary": f"epsilon after this release {budget.get('epsilon_after')} of "
                       f"{budget.get('total_epsilon')} ({budget.get('composition')} composition)",
        }]
    inputs = {
        "report_format": REPORT_FORMAT,
        "release": spec.release,
        "partition": partition or "",
        "data_hash": data_hash,
        "spec_hash": spec.spec_hash(),
        "spec": _spec_payload(spec),
        "package_version": package_version(),
        "git_revision": git_revision(),
        "seed": seed if seed is not None else spec.anonymization.seed,
        "evaluated_at": evaluated_at,
        "published_path": published_path,
        "report_path": report_path,
        "measures": measures,
        "class_sizes": class_size_distribution(class_sizes) if class_sizes is not None else None,
        "population_uniqueness": population_uniqueness,
        "utility": utility,
        "anonymization": {k: v for k, v in record.items() if k != "suppression"} or None,
        "suppression": suppression,
        "composition": composition,
        "dp": dp,
        "checks": [_check_dict(c) for c in checks],
        "mitigations": list(mitigations or []),
    }
    return canonical(inputs)


# ----- the report -----------------------------------------------------------------------------


def _hierarchy_text(col: Mapping[str, Any]) -> str:
    h = col.get("hierarchy")
    if col.get("partition_key"):
        return "partition key: published exactly, never generalized"
    if not h:
        return "value or * (suppressed)"
    if h["type"] == "interval":
        return "intervals of widths " + ", ".join(f"{w:g}" for w in h["widths"]) + ", then *"
    if h["type"] == "mask":
        return "keep first " + ", ".join(str(k) for k in h["keep"]) + " characters, then *"
    if h["type"] == "date":
        return "dates to " + ", ".join(h["levels"]) + ", then *"
    return f"table hierarchy {Path(h['path']).name}"


def _hypotheses(spec: Mapping[str, Any]) -> dict[str, Any]:
    cols: Mapping[str, Mapping[str, Any]] = spec["columns"]
    policy, pub = spec["policy"], spec["publication"]
    qis = {n: _hierarchy_text(c) for n, c in cols.items() if c["role"] == "quasi"}
    sensitive = [n for n, c in cols.items() if c["role"] == "sensitive"]
    insensitive = [n for n, c in cols.items() if c["role"] == "insensitive"]
    pseudonymized = [n for n, c in cols.items() if c["role"] == "identifier" and c.get("pseudonymize")]
    dropped = [n for n, c in cols.items() if c["role"] == "identifier" and not c.get("pseudonymize")]
    declared_f = policy.get("sampling_fraction")
    population = policy.get("population")
    blind = [
        "Only the declared quasi-identifiers are modelled: an attribute an adversary can know "
        "but which is declared insensitive or sensitive is not"
        + (f" (insensitive here: {', '.join(insensitive)})." if insensitive else "."),
        "External knowledge beyond the quasi-identifiers (e.g. that a person was admitted, "
        "rare combinations of sensitive values, free text) is not modelled.",
        "Releases made later, and releases of this population not recorded in the ledger, are "
        "not composed with this one: the composition check only sees earlier ledger entries.",
        "Journalist and marketer risks assume the published rows are a random sample of the "
        "declared population; they are not honest otherwise.",
    ]
    if pseudonymized:
        blind.append(
            "Pseudonymized identifiers (" + ", ".join(pseudonymized) + ") are still personal data: "
            "a stable pseudonym links a person's rows within and across releases."
        )
    if population is None and declared_f is None:
        blind.append("No population and no sampling fraction were declared: the sampling fraction is assumed to be 1.")
    return {
        "published": {
            "mode": pub.get("mode", "rows"),
            "target": pub.get("path"),
            "columns": [n for n, c in cols.items() if c["role"] != "identifier" or c.get("pseudonymize")],
            "pseudonymized_identifiers": pseudonymized,
            "dropped_identifiers": dropped,
            "anonymization": spec.get("anonymization"),
        },
        "quasi_identifiers": qis,
        "sensitive_attributes": sensitive,
        "population": {
            "source": population.get("path") if population else None,
            "sampling_fraction": declared_f if declared_f is not None else 1.0,
            "sampling_fraction_declared": declared_f is not None,
        },
        "adversary": policy["adversary"],
        "thresholds": {k: v for k, v in policy["thresholds"].items() if v is not None},
        "severity": policy["severity"],
        "utility_queries": spec.get("utility_queries", []),
        "composition": spec.get("composition"),
        "what_the_method_cannot_see": blind,
    }


FRONTIER_ROWS_SHOWN = 40


def risk_utility_frontier(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The risk-utility frontier of a global-recoding search, from its transformation record.

    Definition: the frontier is the set of *minimal* lattice nodes satisfying the monotone part
    of the policy (no node one level lower on a single QI does), each with its loss under the
    spec's utility, the rows it would suppress and their share of the input rows, and whether it
    meets the whole policy. ``complete`` says whether every minimal node is listed or only those
    the search settled (``anonymization.frontier: partial``). The chosen node is marked; when it
    is not minimal (with suppression a generalization can lose less by suppressing less) it is
    appended with ``minimal: false`` so it can be compared with the frontier.

    Returns None without a record; for a method without a lattice (Mondrian, microaggregation,
    none) a dict with ``available: false`` and a one-line ``note``.
    """
    if not record:
        return None
    method = record.get("method")
    search = record.get("search")
    if method != "global" or not isinstance(search, Mapping):
        what = {"mondrian": "Mondrian partitions the table recursively",
                "microaggregation": "microaggregation groups records",
                "none": "nothing was generalized"}.get(str(method), f"method {method!r} has no lattice")
        return {"available": False, "method": method,
                "note": f"No risk-utility frontier: {what}; there is no generalization lattice to trace one on."}
    gen = list(record.get("quasi_identifiers") or [])
    rows_in = int(record.get("rows_in") or 0)
    chosen = {c: v for c, v in (record.get("levels") or {}).items() if c in gen}

    def node(entry: Mapping[str, Any], minimal: bool) -> dict[str, Any]:
        levels = {c: v for c, v in (entry.get("levels") or {}).items() if c in gen}
        sup = int(entry.get("suppressed_rows") or 0)
        return {"levels": levels, "loss": entry.get("loss"), "suppressed_rows": sup,
                "suppression_share": sup / rows_in if rows_in else 0.0,
                "classes": entry.get("classes"), "satisfied": bool(entry.get("satisfied")),
                "missing": list(entry.get("missing") or []), "minimal": minimal,
                "chosen": bool(chosen) and levels == chosen}

    nodes = [node(e, True) for e in search.get("frontier") or []]
    best = search.get("best")
    if chosen and isinstance(best, Mapping) and not any(n["chosen"] for n in nodes):
        nodes.append(node(best, False))
    return {
        "available": True, "method": method, "metric": search.get("metric"),
        "quasi_identifiers": gen, "complete": bool(search.get("frontier_complete", False)),
        "nodes_checked": search.get("nodes_checked"), "lattice_size": search.get("lattice_size"),
        "chosen": chosen or None, "nodes": nodes,
    }


def _frontier_note(fr: Mapping[str, Any]) -> str:
    """One line: how many minimal nodes, whether that is all of them, the lattice searched."""
    n_min = sum(1 for n in fr["nodes"] if n["minimal"])
    complete = ("complete: every minimal node" if fr["complete"] else
                "partial: only the minimal nodes the search settled "
                "(anonymization.frontier: complete lists all)")
    return (f"Frontier {complete}; {n_min} minimal node(s), utility {fr['metric']}, "
            f"{format_value(fr.get('nodes_checked'))} of {format_value(fr.get('lattice_size'))} nodes checked.")


def _frontier_rows(fr: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """Header and rows of the frontier table (at most FRONTIER_ROWS_SHOWN rows, chosen kept)."""
    qis = list(fr["quasi_identifiers"])
    header = [*qis, f"loss ({fr['metric']})", "suppressed rows", "suppression share", "meets policy", "chosen"]
    nodes = list(fr["nodes"])
    if len(nodes) > FRONTIER_ROWS_SHOWN:
        keep = nodes[:FRONTIER_ROWS_SHOWN]
        keep += [n for n in nodes[FRONTIER_ROWS_SHOWN:] if n["chosen"]]
        nodes = keep
    rows = [[*(n["levels"].get(q) for q in qis), n["loss"], n["suppressed_rows"], n["suppression_share"],
             "yes" if n["satisfied"] else "no: " + "; ".join(n["missing"]),
             ("◀ chosen" if n["minimal"] else "◀ chosen (not minimal)") if n["chosen"] else ""]
            for n in nodes]
    return header, rows


def _review_date(evaluated_at: str, days: int) -> str:
    day = date.fromisoformat(evaluated_at[:10])
    return (day + timedelta(days=int(days))).isoformat()


def build_report(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The four-section report of one evaluation: a pure function of :func:`report_inputs`."""
    spec = inputs["spec"]
    checks = list(inputs.get("checks") or [])
    failed = [c for c in checks if not c["passed"] and c.get("severity", "error") == "error"]
    warnings = [c for c in checks if not c["passed"] and c.get("severity", "error") != "error"]
    publishable = not failed
    class_sizes = inputs.get("class_sizes")
    sizes_flat = (
        np.repeat([c["size"] for c in class_sizes], [c["classes"] for c in class_sizes])
        if class_sizes else None
    )
    report = {
        "report_format": inputs["report_format"],
        "title": f"Risk report: {inputs['release']}" + (f" / {inputs['partition']}" if inputs["partition"] else ""),
        "identification": {
            "release": inputs["release"],
            "description": spec.get("description", ""),
            "partition": inputs["partition"],
            "dataset_hash": inputs["data_hash"],
            "spec_hash": inputs["spec_hash"],
            "package_version": inputs.get("package_version"),
            "git_revision": inputs.get("git_revision"),
            "seed": inputs.get("seed"),
            "date": inputs["evaluated_at"],
            "published_path": inputs.get("published_path"),
            "report_path": inputs.get("report_path"),
        },
        "hypotheses": _hypotheses(spec),
        "measures": {
            "metrics": inputs.get("measures") or {},
            "class_size_distribution": class_sizes,
            "risk_distribution": risk_distribution(sizes_flat) if sizes_flat is not None else None,
            "population_uniqueness": inputs.get("population_uniqueness"),
            "utility": inputs.get("utility"),
            "anonymization": inputs.get("anonymization"),
            "frontier": risk_utility_frontier(inputs.get("anonymization")),
            "suppression": inputs.get("suppression"),
            "composition": inputs.get("composition"),
            "dp": inputs.get("dp"),
        },
        "verdict": {
            "publishable": publishable,
            "verdict": VERDICT_OK if publishable else VERDICT_FAILED,
            "checks": checks,
            "failed_checks": [c["name"] for c in failed],
            "warnings": [c["name"] for c in warnings],
            "mitigations": inputs.get("mitigations") or [],
            "review_date": _review_date(inputs["evaluated_at"], spec["policy"]["review_after_days"]),
            "review_after_days": spec["policy"]["review_after_days"],
        },
    }
    return canonical(report)


# ----- Markdown ---------------------------------------------------------------------------------


def format_value(value: Any, missing: str = "—") -> str:
    """A figure as text: floats to 4 significant digits, lists and dicts as JSON, None as ``missing``."""
    if value is None:
        return missing
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | dict):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    esc = lambda s: format_value(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown (Dagster shows it as the anonymized asset's metadata)."""
    ident, hyp, meas, verdict = (report[s] for s in ("identification", "hypotheses", "measures", "verdict"))
    mark = "✅" if verdict["publishable"] else "❌"
    out = [f"# {report['title']}", "", f"**Verdict: {mark} {verdict['verdict']}** — review by {verdict['review_date']}", ""]
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
        out += ["**Population uniqueness**", "", f"```json\n{json.dumps(pu, sort_keys=True, indent=1)[:3000]}\n```", ""]
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
    out += ["## 4. Verdict and expiry", ""]
    out += _md_table(["check", "passed", "severity", "value", "threshold"],
                     [[c["name"], "yes" if c["passed"] else "NO", c.get("severity"), c.get("value"), c.get("threshold")] for c in verdict["checks"]])
    out += ["", f"- **Verdict**: {verdict['verdict']}",
            f"- **Failed checks**: {', '.join(verdict['failed_checks']) or 'none'}",
            f"- **Mitigations applied**: {'; '.join(verdict['mitigations']) or 'none'}",
            f"- **Review date**: {verdict['review_date']} ({verdict['review_after_days']} days after the evaluation)", ""]
    return "\n".join(out)


# ----- HTML -----------------------------------------------------------------------------------


def svg_bars(labels: Sequence[str], values: Sequence[float], title: str, *, width: int = 560, height: int = 220, fmt: str = "{:g}") -> str:
    """An inline SVG bar chart (no script, no external asset)."""
    n = max(len(values), 1)
    top = max([float(v) for v in values] + [1e-12])
    pad_l, pad_b, pad_t = 40, 42, 36
    bw = (width - pad_l - 10) / n
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{html.escape(title)}" viewBox="0 0 {width} {height}">',
        f'<text x="{width / 2:.1f}" y="16" text-anchor="middle" font-size="13" font-weight="bold">{html.escape(title)}</text>',
        f'<line x1="{pad_l}" y1="{height - pad_b}" x2="{width - 10}" y2="{height - pad_b}" stroke="#444"/>',
    ]
    plot_h = height - pad_b - pad_t
    for i, (label, v) in enumerate(zip(labels, values, strict=True)):
        h = plot_h * float(v) / top
        x = pad_l + i * bw
        parts.append(f'<rect x="{x + 2:.1f}" y="{height - pad_b - h:.1f}" width="{max(bw - 4, 1):.1f}" '
                     f'height="{h:.1f}" fill="#3b6ea5"><title>{html.escape(str(label))}: {html.escape(fmt.format(v))}</title></rect>')
        parts.append(f'<text x="{x + bw / 2:.1f}" y="{height - pad_b - h - 3:.1f}" text-anchor="middle" font-size="10">{html.escape(fmt.format(v))}</text>')
        parts.append(f'<text x="{x + bw / 2:.1f}" y="{height - pad_b + 14:.1f}" text-anchor="middle" font-size="10">{html.escape(str(label))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def svg_frontier(fr: Mapping[str, Any], *, width: int = 560, height: int = 300) -> str:
    """An inline SVG scatter of the frontier: x the loss, y the share of rows suppressed.

    Each node meeting the whole policy is a dot (the chosen one larger, in red, labelled); nodes
    missing a non-monotone criterion have no loss and are not plotted (the table lists them).
    """
    pts = [n for n in fr["nodes"] if n["loss"] is not None]
    title = f"Risk-utility frontier: loss ({fr['metric']}) vs rows suppressed"
    pad_l, pad_r, pad_t, pad_b = 56, 16, 30, 44
    pw, ph = width - pad_l - pad_r, height - pad_t - pad_b
    xs = [float(n["loss"]) for n in pts]
    ys = [float(n["suppression_share"]) for n in pts]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if x1 - x0 < 1e-12:
        x0, x1 = x0 - 0.5 * (abs(x0) or 1.0), x1 + 0.5 * (abs(x1) or 1.0)
    y1 = max(ys + [1e-12])
    # points are kept 8 px inside the axes so none is clipped at an edge
    sx = lambda v: pad_l + 8 + (pw - 16) * (v - x0) / (x1 - x0)  # noqa: E731
    sy = lambda v: pad_t + 8 + (ph - 16) * (1 - v / y1)  # noqa: E731
    e = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{e(title)}" viewBox="0 0 {width} {height}">',
        f'<text x="{width / 2:.1f}" y="16" text-anchor="middle" font-size="13" font-weight="bold">{e(title)}</text>',
        f'<line x1="{pad_l}" y1="{pad_t + ph}" x2="{pad_l + pw}" y2="{pad_t + ph}" stroke="#444"/>',
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{pad_t + ph}" stroke="#444"/>',
        f'<text x="{pad_l + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" font-size="11">loss ({e(str(fr["metric"]))})</text>',
        f'<text x="12" y="{pad_t + ph / 2:.1f}" text-anchor="middle" font-size="11" '
        f'transform="rotate(-90 12 {pad_t + ph / 2:.1f})">share of rows suppressed</text>',
        f'<text x="{sx(x0):.1f}" y="{pad_t + ph + 14}" text-anchor="middle" font-size="10">{e(format_value(x0))}</text>',
        f'<text x="{sx(x1):.1f}" y="{pad_t + ph + 14}" text-anchor="middle" font-size="10">{e(format_value(x1))}</text>',
        f'<text x="{pad_l - 4}" y="{sy(0.0) + 4:.1f}" text-anchor="end" font-size="10">0%</text>',
        f'<text x="{pad_l - 4}" y="{sy(y1) + 4:.1f}" text-anchor="end" font-size="10">{y1:.1%}</text>',
    ]
    # the chosen node last, so it is drawn on top
    for n, x, y in sorted(zip(pts, xs, ys, strict=True), key=lambda t: t[0]["chosen"]):
        levels = ", ".join(f"{c}={v}" for c, v in n["levels"].items())
        tip = f"{levels}: loss {format_value(x)}, {n['suppressed_rows']} rows suppressed"
        if n["chosen"]:
            parts.append(f'<circle class="chosen" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="7" fill="#b42318" '
                         f'stroke="#222"><title>chosen: {e(tip)}</title></circle>')
            parts.append(f'<text x="{sx(x) + 9:.1f}" y="{sy(y) - 8:.1f}" font-size="10">chosen</text>')
        else:
            parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="4" fill="#3b6ea5" '
                         f'fill-opacity="0.75"><title>{e(tip)}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


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
        ests = pu.get("estimates") if isinstance(pu, dict) else None
        if isinstance(ests, list) and ests and isinstance(ests[0], dict):
            keys = sorted({k for est in ests for k in est})
            parts.append(_html_table(keys, [[est.get(k) for k in keys] for est in ests]))
        parts.append(f"<pre>{e(json.dumps(pu, sort_keys=True, indent=1))}</pre>")
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
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


RENDERERS = {"json": render_json, "md": render_markdown, "html": render_html}


def render(report: Mapping[str, Any], fmt: str) -> str:
    """Render in ``json``, ``md`` or ``html``."""
    try:
        return RENDERERS[fmt](report)
    except KeyError:
        from ..errors import UserError

        raise UserError(f"unknown report format {fmt!r} (use json, md or html)") from None
