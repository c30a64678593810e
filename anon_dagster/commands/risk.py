"""``anon-dagster risk``: measure the re-identification risk of a table.

Two forms:

    anon-dagster risk DATA --qi a,b,c [--sensitive s] [--population POP] [--count-column n]
                           [--sampling-fraction f] [--json]
    anon-dagster risk --config SPEC.yaml [--input DATA] [--partition P] [--json]

With ``--config`` the QIs, sensitive attributes (with their kind, order and hierarchy),
population, count column and sampling fraction come from the release spec (options given on the
command line override them); the data is ``--input`` or the spec's source, and the spec's
population path resolves relative to the spec. Bad input exits with status 2 and one line.
``--config`` with ``--engine spark`` (``--spark-master``, default ``local[2]``) measures the data
on Spark: Spark counts the frequency table, the same code computes the figures (docs/scale.md).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from ..engine.base import DEFAULT_ENGINE
from ..errors import DataError, UserError
from ..io import read_table
from ..release.report import format_value
from ..risk.measures import CONTRACT_KEYS, RiskMeasures, measure_risk
from ..spec import ReleaseSpec
from ._engine import add_engine_arguments, engine_of


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "risk",
        help="measure re-identification risk, l-diversity, t-closeness and utility of a table",
        description="Measure the risk of DATA over its quasi-identifiers, or of a release spec's data.",
    )
    p.add_argument("data", nargs="?", help="table to measure (csv or parquet)")
    p.add_argument("--qi", help="quasi-identifier columns, comma-separated")
    p.add_argument("--sensitive", help="sensitive column(s), comma-separated")
    p.add_argument("--population", help="population table (microdata, or with --count-column a frequency table)")
    p.add_argument("--count-column", help="the population's column of counts")
    p.add_argument("--population-qis",
                   help="join the population on these QIs only (it lacks the others; understates journalist risk)")
    p.add_argument("--lenient-population", action="store_true",
                   help="a class with more rows than people in the population gets F = its rows (rows are events)")
    p.add_argument("--sampling-fraction", help="share of the population in the table, in (0, 1]")
    p.add_argument("--sensitive-kind", choices=("nominal", "ordinal", "numeric"),
                   help="distance for t-closeness: total variation (nominal) or ordered EMD")
    p.add_argument("--risk-threshold", help="a record is at risk above this probability (default 0.2)")
    p.add_argument("--subgroup", help="break the figures down by these columns, comma-separated")
    p.add_argument("--config", help="release spec (YAML): QIs, sensitive and population from it")
    p.add_argument("--input", help="with --config: data to measure instead of the spec's source")
    p.add_argument("--partition", help="with --config: the partition of the source to measure")
    p.add_argument("--generalized", action="store_true",
                   help="with --config: the data is already generalized, skip the hierarchy coverage check")
    p.add_argument("--json", action="store_true", help="print the measures as JSON")
    add_engine_arguments(p)
    p.set_defaults(handler=run)


def _fraction(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise DataError(f"--sampling-fraction {text!r} is not a number") from None
    if not (0.0 < value <= 1.0) or math.isnan(value):
        raise DataError(f"--sampling-fraction {text!r} is outside (0, 1]")
    return value


def _number(text: str | None, option: str) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise DataError(f"{option} {text!r} is not a number") from None


def _names(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def run(args: argparse.Namespace) -> int:
    if args.config:
        if args.data:
            raise UserError("give either DATA or --config SPEC (with --input DATA), not both")
        return _run_spec(args)
    else:
        if not args.data:
            raise UserError("missing DATA (a csv or parquet file), or use --config SPEC.yaml")
        if args.input or args.partition or args.generalized:
            raise UserError("--input, --partition and --generalized need --config")
        if args.engine != DEFAULT_ENGINE:
            raise UserError(f"--engine {args.engine} needs --config: the DATA form measures with pandas")
        qis = _names(args.qi)
        if not qis:
            raise UserError("--qi is empty: name the quasi-identifier columns, comma-separated")
        df = read_table(args.data)
        source = args.data
        for col in [*qis, *_names(args.sensitive), *_names(args.subgroup)]:
            if col not in df.columns:
                raise DataError(
                    f"{source}: no column {col!r} (columns: {', '.join(map(str, df.columns))})"
                )
        kwargs = {
            "df": df, "quasi_identifiers": qis, "sensitive": _names(args.sensitive) or None,
            "population": args.population, "count_column": args.count_column,
            "sampling_fraction": _fraction(args.sampling_fraction),
        }
        if args.sensitive_kind:
            kwargs["sensitive_kind"] = args.sensitive_kind
    if args.population_qis:
        kwargs["population_qis"] = _names(args.population_qis)
    if args.lenient_population:
        kwargs["strict_population"] = False
    if args.risk_threshold is not None:
        kwargs["risk_threshold"] = _number(args.risk_threshold, "--risk-threshold")
    if args.subgroup:
        kwargs["subgroup"] = _names(args.subgroup)
    population = kwargs.get("population")
    if isinstance(population, str | Path):
        kwargs.setdefault("population_source", str(population))
        kwargs["population"] = read_table(population)
    population = kwargs.get("population")
    if population is not None and "population_qis" not in kwargs:
        lacking = [q for q in kwargs["quasi_identifiers"] if q not in population.columns]
        if lacking:
            raise DataError(
                f"{kwargs['population_source']}: the population has no column {lacking[0]!r} "
                f"(a QI of the data); use --population-qis to join on the QIs it holds"
            )
    if kwargs.get("count_column") and kwargs.get("population") is None:
        raise UserError("--count-column needs --population")
    if len(kwargs["df"]) == 0:
        raise DataError(f"{source}: the table is empty: there are no rows to measure")
    measures = measure_risk(**kwargs)
    out = measures.to_dict()
    print(json.dumps(out, indent=2, ensure_ascii=False) if args.json else render(measures, source))
    return 0


# options of the DATA form that a spec declares itself: with --config they would make a second,
# different measurement of the release
_SPEC_DECLARES = ("qi", "sensitive", "population", "count_column", "population_qis", "lenient_population",
                  "sampling_fraction", "sensitive_kind", "risk_threshold", "subgroup")


def _run_spec(args: argparse.Namespace) -> int:
    """``risk --config``: the release gate's own measurement of the data; exit 1 when a declared
    threshold fails."""
    from ..spec import load_spec

    given = [name for name in _SPEC_DECLARES if getattr(args, name)]
    if given:
        raise UserError(f"--{given[0].replace('_', '-')} cannot be combined with --config: the spec declares it")
    spec = load_spec(args.config)
    with engine_of(args) as engine:
        measured = engine.measure_release(spec, partition=args.partition, input_path=args.input,
                                          generalized=args.generalized)
    measures, out, path = measured.measures, measured.figures, measured.source
    verdicts = policy_verdicts(out, spec)
    if verdicts:
        out["policy_thresholds"] = verdicts
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print(render(measures, str(path)))
        if verdicts:
            print(render_verdicts(verdicts))
    return 0 if all(v["passed"] for v in verdicts) else 1


def policy_verdicts(measured: dict[str, Any], spec: ReleaseSpec) -> list[dict[str, Any]]:
    """One verdict per declared threshold of the spec's policy, as the release gate judges it."""
    from ..criteria import criterion_for_check
    from ..release.gate import threshold_outcomes

    verdicts = []
    for outcome in threshold_outcomes(spec, measured):
        criterion = criterion_for_check(outcome.name)  # threshold outcomes are named by the registry
        limit, comparison = outcome.threshold, outcome.comparison
        if criterion is not None and criterion.comparison == "holds":
            # one number to print: the bound the figure is compared with, the rest in words
            limit = criterion.bound(outcome.threshold)
            comparison = f"{criterion.bound_comparison} {criterion.threshold_text(outcome.threshold, _fmt)}"
        verdicts.append({"threshold": criterion.key if criterion else outcome.name, "value": outcome.value,
                         "comparison": comparison, "limit": limit, "passed": bool(outcome.passed)})
    return verdicts


def render_verdicts(verdicts: list[dict[str, Any]]) -> str:
    lines = ["  policy thresholds (declared in the spec):"]
    for v in verdicts:
        state = "pass" if v["passed"] else ("not measured" if v["value"] is None else "FAIL")
        lines.append(f"    {v['threshold']:<22}{_fmt(v['value']):>10} {v['comparison']} {_fmt(v['limit']):<8} {state}")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    return format_value(value, missing="-")


def render(measures: RiskMeasures, source: str) -> str:
    """A readable report of the measures (the JSON has every figure)."""
    d = measures.to_dict()
    lines = [f"risk of {source}: {d['rows']} rows over {', '.join(d['quasi_identifiers'])}"]
    labels = {
        "rows": "rows", "classes": "equivalence classes", "k": "k (smallest class)",
        "uniques_fraction": "share of unique rows", "prosecutor_max": "prosecutor risk, max",
        "prosecutor_avg": "prosecutor risk, average per record",
        "journalist_max": "journalist risk, max", "journalist_avg": "journalist risk, average",
        "marketer": "marketer risk", "l_distinct": "l-diversity, distinct",
        "l_entropy": "l-diversity, entropy", "t_closeness": "t-closeness",
    }
    width = max(len(v) for v in labels.values()) + 2
    for key in CONTRACT_KEYS:
        lines.append(f"  {labels[key]:<{width}}{_fmt(d[key])}")
    extra_rows = [
        ("prosecutor risk, average per class", d.get("prosecutor_avg_per_class")),
        (f"records at risk (> {_fmt(d.get('risk_threshold'))})", d.get("records_at_risk")),
        ("t-closeness distance", d.get("t_closeness_distance")),
        ("recursive (c,l): l at c=" + _fmt(d.get("recursive_c")), d.get("l_recursive")) if "l_recursive" in d else None,
        ("k-map (smallest population class)", d.get("k_map")) if "k_map" in d else None,
        ("journalist model", d.get("journalist_model")) if "journalist_model" in d else None,
        ("population joined on", ", ".join(d["population_qis"])) if "population_qis" in d else None,
        ("QI entropy (bits)", d.get("qi_entropy_bits")),
        ("average class size", d.get("aecs")),
    ]
    for row in extra_rows:
        if row is not None and row[1] is not None:
            lines.append(f"  {row[0]:<{width}}{_fmt(row[1])}")
    lines.append("  class sizes:  " + "  ".join(
        f"{b['sizes']}: {b['classes']} ({b['rows']} rows)" for b in d["class_size_histogram"] if b["classes"]
    ))
    pu = d.get("population_uniqueness")
    if isinstance(pu, dict):
        lines.append(f"  {pu.get('summary', '')}")
    for column, groups in (d.get("subgroups") or {}).items():
        lines.append(f"  by {column} (worst first):")
        for g in groups[:20]:
            lines.append(
                f"    {_fmt(g['value']):<20} rows {g['rows']:<8} k {g['k']:<5} "
                f"unique {_fmt(g['uniques_fraction']):<8} avg risk {_fmt(g['prosecutor_avg'])}"
            )
        if len(groups) > 20:
            lines.append(f"    ... {len(groups) - 20} more groups (see --json)")
    return "\n".join(lines)
