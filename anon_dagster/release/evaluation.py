"""The outcome of a release's gate: one typed :class:`Evaluation` of every declared check.

An evaluation is what :func:`anon_dagster.release.pipeline.evaluate` returns and what every
consumer reads: the Dagster checks yield its results, ``anon-dagster check`` prints them, the
publication step refuses unless it passes, and the risk report states its figures. Nothing
downstream measures again.

Definitions:

- a *check result* is the verdict of one declared check (a threshold of ``policy.thresholds``,
  a utility query, the composition with earlier publications, the ε budget or the data
  contract): passed or not, its severity, the measured value and the declared threshold;
- a check *blocks* when it failed with severity ``error`` (``warn`` only reports);
- the evaluation's *verdict* is ``pass`` when no check blocks, else ``fail``;
- its *id* is a digest of the spec hash, the data hash and every check's outcome, so a
  decision bound to it (an approval) is void once data, spec or any figure changes;
- a check's *evidence* (:meth:`CheckResult.evidence`) is what a reviewer reads beside its
  verdict, as named plain data (:class:`EvidenceTable` or JSON): the Dagster layer only converts
  it to metadata. It describes classes by their sizes and their sensitive distributions, never by
  their QI values, and lists what decides the verdict first: a table longer than a reviewer
  reads (:data:`EVIDENCE_ROWS`) is cut there, its ``note`` saying how many rows it had.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..criteria import criterion_for_check
from ..io import plain_json

# rows of an evidence table shown (the rows that decide the verdict first)
EVIDENCE_ROWS = 20
L_DIVERSITY_CHECKS = ("l_diversity_distinct", "l_diversity_entropy", "l_diversity_recursive_cl")


def as_float(value: Any) -> float | None:
    """A JSON/metadata-friendly float (None for missing or not-a-number)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def class_size_histogram(measures: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rows ``{"sizes": label, "classes": n, "rows": n}`` of the measures' class-size histogram
    (``measure_risk(...).to_dict()["class_size_histogram"]``; empty when it was not measured)."""
    return [{"sizes": str(r["sizes"]), "classes": int(r["classes"]), "rows": int(r["rows"])}
            for r in measures.get("class_size_histogram") or []]


def _kind(series: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(series):
        return "bool"
    if pd.api.types.is_integer_dtype(series):
        return "int"
    return "float" if pd.api.types.is_numeric_dtype(series) else "string"


def _cell(value: Any, kind: str) -> Any:
    if kind == "string":
        return "" if pd.isna(value) else str(value)
    if pd.isna(value):
        return None
    return bool(value) if kind == "bool" else int(value) if kind == "int" else as_float(value)


@dataclass(frozen=True)
class EvidenceTable:
    """A small table of evidence in plain values: ``columns`` as ``(name, type)`` pairs, the type
    ``string``, ``int``, ``float`` or ``bool``; ``rows`` as dicts by column name; ``note`` what the
    table leaves out (empty when it is whole)."""

    columns: list[tuple[str, str]]
    rows: list[dict[str, Any]]
    note: str = ""

    @classmethod
    def from_frame(cls, df: pd.DataFrame, limit: int = EVIDENCE_ROWS, what: str = "rows",
                   order: str = "") -> EvidenceTable:
        """The first ``limit`` rows of ``df``: integer, boolean and float columns as such (None for
        a missing or not-a-number value), the others as text (empty when missing). When ``df`` is
        longer, the note says ``"<limit> of <n> <what> shown<order>"``."""
        kinds = {c: _kind(df[c]) for c in df.columns}
        head = df.head(limit)
        rows = [{str(c): _cell(v, kinds[c]) for c, v in zip(head.columns, row, strict=True)}
                for row in head.itertuples(index=False)]
        note = f"{len(head)} of {len(df)} {what} shown{order}" if len(df) > len(head) else ""
        return cls([(str(c), kinds[c]) for c in df.columns], rows, note)


@dataclass
class CheckResult:
    """The verdict of one declared check on one table: passed or not, with what was measured
    (``value``) against what (``threshold``), and the spec key that declares it."""

    name: str
    passed: bool
    severity: str = "error"  # "error" blocks the publication, "warn" only reports
    value: Any = None
    threshold: Any = None
    comparison: str = ""
    summary: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    spec_key: str = ""

    @property
    def measured(self) -> Any:
        """The measured figure (``value``), as the contract names it."""
        return self.value

    @property
    def blocks(self) -> bool:
        """Failed with severity error: the publication must not happen."""
        return not self.passed and self.severity == "error"

    @property
    def threshold_text(self) -> str:
        """The declared threshold with its comparison (``>= 5``), ``none`` when there is none."""
        thr = self.threshold
        if thr is None:
            return "none"
        return f"{self.comparison} {json.dumps(thr) if isinstance(thr, dict) else thr}"

    def evidence(self, evaluation: Evaluation) -> dict[str, EvidenceTable | Any]:
        """What a reviewer needs beside this verdict, by name: tables and JSON, never the QI values of a class.

        A risk threshold shows the classes (``class_size_histogram``; ``small_classes``, the
        classes below the target k counted by size; ``qi_contributions``, per QI the rows below k
        once it is left out); t-closeness adds ``most_distant_classes`` (the classes farthest
        from the table's sensitive distribution, farthest first, each with its size and its
        distribution beside the table's: :meth:`Evaluation.most_distant_table`), an l-diversity
        check ``least_diverse_classes`` (:meth:`Evaluation.least_diverse_table`), one per
        sensitive attribute (``<name>:<attribute>`` when there are several). A utility query
        shows its ``per_group`` table (largest error first), the data contract its
        ``failed_expectations`` (counts only), the composition and the ε budget their ``composition``.
        """
        out: dict[str, EvidenceTable | Any] = {}
        if criterion_for_check(self.name) is not None:
            out["class_size_histogram"] = evaluation.class_size_table()
            if evaluation.small_classes is not None:
                out["small_classes"] = EvidenceTable.from_frame(pd.DataFrame(
                    evaluation.small_classes["by_size"], columns=["size", "classes", "rows"]), what="sizes")
                out["qi_contributions"] = EvidenceTable.from_frame(pd.DataFrame(
                    evaluation.small_classes["contributions"], columns=["qi", "rows_below_k_without", "contribution"]),
                    what="quasi-identifiers")
            attributes = evaluation.sensitive_classes()
            for attribute in attributes:
                suffix = f":{attribute['attribute']}" if len(attributes) > 1 else ""
                if self.name == "t_closeness":
                    out[f"most_distant_classes{suffix}"] = evaluation.most_distant_table(attribute, self)
                elif self.name in L_DIVERSITY_CHECKS:
                    out[f"least_diverse_classes{suffix}"] = evaluation.least_diverse_table(
                        attribute, self, by_entropy=self.name == "l_diversity_entropy")
        table = self.details.get("table")
        if isinstance(table, pd.DataFrame):
            ranked = "error_points" in table.columns
            if ranked:  # the groups that decide the verdict first
                order = table["error_points"].abs().fillna(-1).sort_values(ascending=False, kind="stable").index
                table = table.loc[order]
            out["per_group"] = EvidenceTable.from_frame(table, what="groups",
                                                        order=", largest error first" if ranked else "")
        for name, key in (("failed_expectations", "failed"), ("composition", "composition")):
            if key in self.details:
                out[name] = self.details[key]
        return out

    def to_json(self) -> dict[str, Any]:
        """The contract form (``anon-dagster check --json``): name, spec key, verdict, figures."""
        return {"name": self.name, "spec_key": self.spec_key, "passed": bool(self.passed),
                "severity": self.severity, "measured": plain_json(self.measured),
                "threshold": plain_json(self.threshold)}

    def report_entry(self) -> dict[str, Any]:
        """The form the risk report and the ledger store."""
        return {"name": self.name, "passed": bool(self.passed), "severity": self.severity,
                "value": plain_json(self.measured), "threshold": plain_json(self.threshold),
                "comparison": self.comparison, "summary": self.summary}


@dataclass
class Evaluation:
    """Every check of one release partition, with the figures they were judged on.

    ``measures`` is ``RiskMeasures.to_dict()`` of the published view (``{"rows": 0, "classes": 0}``
    for an empty release, ``{}`` when nothing could be measured); ``record`` the transformation
    record of the anonymization; ``composition`` the composition result (``to_dict()``) when
    composed; ``class_sizes`` and ``small_classes`` (the classes below the target k counted by size,
    and each QI's contribution to them: never their values) come from the one class build of the table.
    """

    release: str
    partition: str | None
    spec_hash: str
    data_hash: str
    checks: list[CheckResult]
    measures: dict[str, Any] = field(default_factory=dict)
    record: dict[str, Any] | None = None
    composition: dict[str, Any] | None = None
    class_sizes: list[int] = field(default_factory=list)
    small_classes: dict[str, Any] | None = None
    mitigations: list[str] = field(default_factory=list)
    rows: int = 0
    # the composition's class assignment (linkage pseudonyms → classes), recorded in the
    # ledger with the publication; never serialized
    assignment: Any = field(default=None, repr=False)

    @property
    def passed(self) -> bool:
        """No check blocks."""
        return not any(c.blocks for c in self.checks)

    @property
    def verdict(self) -> str:
        return "pass" if self.passed else "fail"

    @property
    def refusals(self) -> list[str]:
        """``"<check>: <summary>"`` of every blocking check (empty when the release may go out)."""
        return [f"{c.name}: {c.summary}" for c in self.checks if c.blocks]

    def sensitive_classes(self) -> list[dict[str, Any]]:
        """Each sensitive attribute's deciding classes (:class:`~anon_dagster.risk.exposure.SensitiveClasses`
        as dicts), the worst t-closeness first; empty when they were not measured."""
        found = list((self.small_classes or {}).get("sensitive") or [])
        return sorted(found, key=lambda a: -float(a.get("t_closeness") or 0.0))

    def _person_note(self, check: CheckResult | None, key: str) -> str:
        """A note when ``check`` judges the per-person figure, which the listed row classes do not show."""
        person = (self.measures.get("person") or {}).get(key)
        row = self.measures.get(key)
        if check is None or person is None or row is None or check.measured is None or check.measured == row:
            return ""
        return (f"; these are equivalence classes of rows, whose figure is {row:.4g}: the check judges "
                f"the per-person figure {person:.4g}, over classes of persons (the rows of each person linked)")

    def most_distant_table(self, attribute: dict[str, Any], check: CheckResult | None = None) -> EvidenceTable:
        """One sensitive attribute's most distant classes: a ``whole table`` row (its distribution),
        then one row per class, farthest first (``distance`` as measured, ``size``, the share of
        each value shown). Never the QI values of a class."""
        fixed = ("class", "distance", "size")
        names = {v: (f"{v} (value)" if v in fixed else v) for v in attribute["values"]}
        columns = [("class", "string"), ("distance", "float"), ("size", "int")] + [(names[v], "float") for v in names]
        rows = [{"class": "whole table", "distance": None, "size": int(self.measures.get("rows") or self.rows),
                 **{names[v]: attribute["table_shares"].get(v) for v in names}}]
        rows += [{"class": f"#{i}", "distance": c["distance"], "size": c["size"],
                  **{names[v]: c["shares"].get(v) for v in names}} for i, c in enumerate(attribute["most_distant"], 1)]
        shown = len(attribute["most_distant"])
        values = ("" if attribute["n_values"] <= len(names) else
                  f"; the {len(names) - 1} values where they differ most of {attribute['n_values']}, the others summed")
        note = (f"{shown} of {attribute['classes']} classes, largest {attribute['distance']} distance to the "
                f"table's {attribute['attribute']} distribution first, shares per value{values}"
                + self._person_note(check, "t_closeness"))
        return EvidenceTable(columns, rows, note)

    def least_diverse_table(self, attribute: dict[str, Any], check: CheckResult | None = None, *,
                            by_entropy: bool = False) -> EvidenceTable:
        """One sensitive attribute's least diverse classes: fewest distinct values first (lowest
        entropy first with ``by_entropy``), each with its size, its entropy l and the share of its
        most frequent value. Never the QI values of a class, nor which value it holds."""
        listed = attribute["lowest_entropy"] if by_entropy else attribute["least_diverse"]
        columns = [("class", "string"), ("distinct_values", "int"), ("l_entropy", "float"),
                   ("largest_share", "float"), ("size", "int")]
        rows = [{"class": f"#{i}", **{name: c[name] for name, _ in columns[1:]}} for i, c in enumerate(listed, 1)]
        order = "lowest entropy" if by_entropy else "fewest distinct values"
        note = (f"{len(rows)} of {attribute['classes']} classes, {order} first"
                + self._person_note(check, "l_entropy" if by_entropy else "l_distinct"))
        return EvidenceTable(columns, rows, note)

    def class_size_table(self) -> EvidenceTable:
        """The class-size histogram of the measures: classes and rows per size band."""

        return EvidenceTable([("class_size", "string"), ("classes", "int"), ("rows", "int")],
                             [{"class_size": r["sizes"], "classes": r["classes"], "rows": r["rows"]}
                              for r in class_size_histogram(self.measures)])

    def check(self, name: str) -> CheckResult | None:
        """The result of the check called ``name``, if it was evaluated."""
        return next((c for c in self.checks if c.name == name), None)

    @property
    def id(self) -> str:
        """A digest binding spec, data and every check outcome (16 hex characters)."""
        body = json.dumps({"spec": self.spec_hash, "data": self.data_hash, "partition": self.partition,
                           "checks": [c.to_json() for c in self.checks]}, sort_keys=True, default=str)
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def render_text(self) -> str:
        """A verdict line, then one line per check (what ``anon-dagster check`` prints)."""
        where = f"{self.release} {self.partition}" if self.partition else self.release
        blocking = [c for c in self.checks if c.blocks]
        head = (f"{where}: PASSED, every blocking check holds ({len(self.checks)} checks)" if not blocking else
                f"{where}: REFUSED by {', '.join(c.name for c in blocking)} ({len(blocking)} of {len(self.checks)} checks)")
        lines = [f"{head}; evaluation {self.id}"]
        width = max((len(c.name) for c in self.checks), default=0)
        for c in self.checks:
            state = "pass" if c.passed else ("FAIL" if c.severity == "error" else "warn")
            summary = c.summary.replace("\n", "\n" + " " * (width + 10))
            lines.append(f"  {state:<4}  {c.name:<{width}}  {summary}  [{c.spec_key}]")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The contract form printed by ``anon-dagster check --json``."""
        return {"release": self.release, "partition": self.partition, "verdict": self.verdict,
                "checks": [c.to_json() for c in self.checks], "evaluation": self.id}


__all__ = ["EVIDENCE_ROWS", "CheckResult", "Evaluation", "EvidenceTable"]
