"""The report itself: a pure function of its inputs, in four sections (identification,
hypotheses, measures, verdict), the risk-utility frontier of a global-recoding search, and the
attacks of ``policy.attacks`` when the spec declares them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from ...criteria import ATTACK_CRITERIA, EVIDENCE_MARGIN, SYNTHETIC_CRITERIA
from .inputs import risk_distribution
from .values import canonical, format_value

VERDICT_OK = "publishable"
VERDICT_FAILED = "not publishable"


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
        # a search restricted by anonymization.min_levels (absent otherwise: reports unchanged)
        **({"min_levels": {c: v for c, v in search["min_levels"].items() if c in gen}}
           if isinstance(search.get("min_levels"), Mapping) else {}),
    }


def _frontier_note(fr: Mapping[str, Any]) -> str:
    """One line: how many minimal nodes, whether that is all of them, the lattice searched."""
    n_min = sum(1 for n in fr["nodes"] if n["minimal"])
    complete = ("complete: every minimal node" if fr["complete"] else
                "partial: only the minimal nodes the search settled "
                "(anonymization.frontier: complete lists all)")
    restricted = ""
    if fr.get("min_levels"):
        floor = ", ".join(f"{c}={v}" for c, v in fr["min_levels"].items())
        restricted = f" The search was restricted to the sub-lattice above anonymization.min_levels ({floor})."
    return (f"Frontier {complete}; {n_min} minimal node(s), utility {fr['metric']}, "
            f"{format_value(fr.get('nodes_checked'))} of {format_value(fr.get('lattice_size'))} nodes checked."
            + restricted)


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


PU_HEADER = ["model", "population uniques (share)", "population uniques", "sample uniques", "interval", "note"]
PU_FACTS = ("records", "classes", "sample_uniques", "sampling_fraction", "population_size", "bootstrap", "seed")


def population_uniqueness_table(pu: Mapping[str, Any]) -> tuple[str | None, list[str], list[list[Any]],
                                                                 list[tuple[str, Any]]]:
    """The population-uniqueness estimates as the report shows them: the summary line, a table
    with one row per model (the estimate Dankar's rule chose first), and the facts they rest on."""
    rows: list[tuple[str, Mapping[str, Any]]] = []
    chosen = pu.get("dankar")
    if isinstance(chosen, Mapping):
        rows.append((f"Dankar's rule ({pu.get('dankar_model') or chosen.get('model')})", chosen))
    rows += [(name, est) for name, est in sorted((pu.get("estimates") or {}).items()) if isinstance(est, Mapping)]

    def interval(e: Mapping[str, Any]) -> Any:
        iv = e.get("interval")
        if not iv:
            return None
        return f"[{format_value(iv[0])}, {format_value(iv[1])}] ({e.get('interval_method')})"

    table = [[name, e.get("fraction"), e.get("population_count"), e.get("sample_count"), interval(e), e.get("note")]
             for name, e in rows]
    facts = [(k, pu[k]) for k in PU_FACTS if pu.get(k) is not None]
    return pu.get("summary"), PU_HEADER, table, facts


def headline_text(headline: Mapping[str, Any]) -> str:
    """``prosecutor_max 0.2, prosecutor_avg 0.05``: the declared adversary's figures in one line."""
    return ", ".join(f"{k} {format_value(v, missing='not measured')}" for k, v in headline["figures"].items())


ATTACK_LABELS = {
    "singling_out_univariate": "singling out (one column at a time)",
    "singling_out_multivariate": "singling out (every column together)",
    "linkability": "linkability",
    "inference": "inference",
}
ATTACK_HEADER = ["attack", "secret", "main", "control", "baseline", "residual risk", "95% interval",
                 "targets (main / control)", "complete"]


def attacks_section(attacks: Mapping[str, Any], checks: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The report's Attacks section from the attacks' figures (``AttackRun.to_dict()``) and the
    checks: the control records and what they cost the release, one row per attack and secret
    (main, control and baseline rates, residual risk and its interval, targets), and each attack
    check's verdict. Rates, counts and column names only: never a predicate, a matched row or a
    guessed value."""
    control = dict(attacks.get("control") or {})
    before = int(control.get("rows_before") or 0)
    withheld = int(control.get("rows_withheld") or 0)
    if control.get("source") == "population":
        cost = (f"The control records are the declared population's {control.get('control_rows')} records not "
                "in the sample: nothing was withheld from the release.")
    else:
        share = withheld / before if before else 0.0
        cost = (f"{withheld} of the partition's {before} rows ({share:.1%}; {control.get('persons_withheld')} "
                "persons) were withheld before anonymization as control records: they are not in the release, "
                "which costs that share of it.")
    rows = []
    for r in attacks.get("results") or []:
        residual = r.get("residual") or {}
        rows.append({
            "attack": r.get("attack"), "label": ATTACK_LABELS.get(str(r.get("attack")), r.get("attack")),
            "secret": r.get("secret"), "main": (r.get("main") or {}).get("rate"),
            "control": (r.get("control") or {}).get("rate"), "baseline": (r.get("baseline") or {}).get("rate"),
            "residual": residual.get("risk"), "low": residual.get("low"), "high": residual.get("high"),
            "targets_main": (r.get("targets") or {}).get("main"),
            "targets_control": (r.get("targets") or {}).get("control"),
            "complete": bool(r.get("complete")), "cut": r.get("cut"),
        })
    names = {c.check_name for c in ATTACK_CRITERIA.values()}
    verdicts = [{"name": c["name"], "passed": bool(c["passed"]), "severity": c.get("severity", "error"),
                 "value": c.get("value"), "threshold": c.get("threshold"), "summary": c.get("summary")}
                for c in checks if c["name"] in names]
    return {
        "control": control, "cost": cost, "columns": list(attacks.get("columns") or []),
        "secrets": list(attacks.get("secrets") or []), "released_rows": attacks.get("released_rows"),
        "budget_seconds": attacks.get("budget_seconds"), "results": rows, "checks": verdicts,
        "note": ("Residual risk = (main - control) / (1 - control): what the release gives an attacker about "
                 "the people in it beyond what the population's regularities give (main targets are people "
                 "of the release, control targets people not in it, the baseline guesses without the "
                 "target's record); 95% interval. An attack check passes when the residual risk is at most "
                 f"its threshold and the interval's upper end at most the threshold + {EVIDENCE_MARGIN:g}."),
    }


def attack_rows(section: Mapping[str, Any]) -> list[list[Any]]:
    """The rows of the Attacks table, as :data:`ATTACK_HEADER` names them."""
    return [[r["label"], r["secret"] or "", r["main"], r["control"], r["baseline"], r["residual"],
             f"[{format_value(r['low'])}, {format_value(r['high'])}]",
             f"{format_value(r['targets_main'])} / {format_value(r['targets_control'])}",
             "yes" if r["complete"] else f"no: {r['cut']}"] for r in section["results"]]


SYNTHETIC_HEADER = ["figure", "train", "control", "value", "definition"]


def synthetic_section(figures: Mapping[str, Any], checks: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The report's Synthetic data section from the audit's figures (``SyntheticRun.to_dict()``)
    and the checks: one row per criterion of ``policy.synthetic`` (train and control sides, the
    judged figure, its definition), the sizes compared and each check's verdict. Rates and counts
    only: never a synthetic or a real row."""
    sides = {"copy_rate_gap": (figures.get("copy_rate_train"), figures.get("copy_rate_control")),
             "closer_to_train_gap": (figures.get("closer_to_train"),
                                     None if figures.get("closer_to_train") is None
                                     else 1.0 - float(figures["closer_to_train"])),
             "mia_auc": (None, None)}
    rows = [{"key": c.key, "label": c.label, "train": sides.get(c.key, (None, None))[0],
             "control": sides.get(c.key, (None, None))[1], "value": figures.get(c.measured_key),
             "definition": c.definition} for c in SYNTHETIC_CRITERIA.values()]
    names = {c.check_name for c in SYNTHETIC_CRITERIA.values()}
    verdicts = [{"name": c["name"], "passed": bool(c["passed"]), "severity": c.get("severity", "error"),
                 "value": c.get("value"), "threshold": c.get("threshold"), "summary": c.get("summary")}
                for c in checks if c["name"] in names]
    sizes = dict(figures.get("rows") or {})
    control = dict(figures.get("control") or {})
    return {
        "rows": rows, "sizes": sizes, "columns": list(figures.get("columns") or []), "checks": verdicts,
        "note": (f"{sizes.get('synthetic')} synthetic rows made from {sizes.get('train')} records (train); "
                 f"{control.get('rows_withheld', sizes.get('control'))} records were withheld before the synthesis "
                 f"as control records, which it never saw. The closest records were measured for "
                 f"{sizes.get('synthetic_compared')} synthetic rows against {sizes.get('compared')} train and as "
                 "many control records, the membership attacker scored that many of each. Every figure compares "
                 "what the synthetic table keeps of its train records with what it shows of people it never "
                 "saw: a gap near 0 and an AUC near 0.5 say it learnt the population, not its people."),
    }


def synthetic_rows(section: Mapping[str, Any]) -> list[list[Any]]:
    """The rows of the Synthetic data table, as :data:`SYNTHETIC_HEADER` names them."""
    return [[r["label"], r["train"], r["control"], r["value"], r["definition"]] for r in section["rows"]]


def _public_name(location: str | None) -> str | None:
    """What a report may say of where a file is: an object-storage URI as is (the public
    location), a local path only by its file name (the publisher's folders are not the reader's)."""
    if not location:
        return None
    return location if "://" in location else Path(location).name


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
            # the file's name, never the folder it sits in on the publishing machine
            "published_file": _public_name(inputs.get("published_path")),
            "report_file": _public_name(inputs.get("report_path")),
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
            # the refusal's reasons, each failed blocking check's own summary, stated first
            "reasons": [{"name": c["name"], "summary": c.get("summary") or "failed"} for c in failed],
            "warnings": [c["name"] for c in warnings],
            "mitigations": inputs.get("mitigations") or [],
            "review_date": _review_date(inputs["evaluated_at"], spec["policy"]["review_after_days"]),
            "review_after_days": spec["policy"]["review_after_days"],
        },
    }
    if inputs.get("attacks"):
        # only with policy.attacks: reports evaluated without them rebuild as they were
        report["measures"]["attacks"] = attacks_section(inputs["attacks"], checks)
    synthetic = (inputs.get("measures") or {}).get("synthetic")
    if isinstance(synthetic, Mapping):
        # only for a synthetic release: other reports rebuild as they were
        report["measures"]["synthetic"] = synthetic_section(synthetic, checks)
    if inputs.get("approval"):
        # only with approval.required: reports of releases without it rebuild as they were
        report["verdict"]["approval"] = inputs["approval"]
    if inputs.get("headline_risk"):
        # absent from reports evaluated before the adversary named a headline: they rebuild as they were
        report["measures"]["headline_risk"] = inputs["headline_risk"]
    return canonical(report)
