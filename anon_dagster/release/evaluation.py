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
  it to metadata. It describes classes by their sizes, never by their values.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..criteria import criterion_for_check
from ..io import plain_json


@dataclass(frozen=True)
class EvidenceTable:
    """A small table of evidence in plain values: ``columns`` as ``(name, type)`` pairs, the type
    ``string``, ``int`` or ``float``; ``rows`` as dicts by column name."""

    columns: list[tuple[str, str]]
    rows: list[dict[str, Any]]

    @classmethod
    def from_frame(cls, df: pd.DataFrame, limit: int = 50) -> EvidenceTable:
        """The first ``limit`` rows of ``df``: numeric columns as floats (None for a missing or
        not-a-number value), the others as text (empty when missing)."""
        from .gate import as_float

        df = df.head(limit)
        numeric = {c: pd.api.types.is_numeric_dtype(df[c]) for c in df.columns}
        rows = [{str(c): as_float(v) if numeric[c] else ("" if pd.isna(v) else str(v))
                 for c, v in zip(df.columns, row, strict=True)} for row in df.itertuples(index=False)]
        return cls([(str(c), "float" if numeric[c] else "string") for c in df.columns], rows)


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
        """What a reviewer needs beside this verdict, by name: tables and JSON, never the values of a class.

        A risk threshold shows the classes (``class_size_histogram``; ``small_classes``, the
        classes below the target k counted by size; ``qi_contributions``, per QI the rows below k
        once it is left out), a utility query its ``per_group`` table, the data contract its
        ``failed_expectations`` (counts only), the composition and the ε budget their ``composition``.
        """
        out: dict[str, EvidenceTable | Any] = {}
        if criterion_for_check(self.name) is not None:
            out["class_size_histogram"] = evaluation.class_size_table()
            if evaluation.small_classes is not None:
                out["small_classes"] = EvidenceTable.from_frame(pd.DataFrame(
                    evaluation.small_classes["by_size"], columns=["size", "classes", "rows"]))
                out["qi_contributions"] = EvidenceTable.from_frame(pd.DataFrame(
                    evaluation.small_classes["contributions"], columns=["qi", "rows_below_k_without", "contribution"]))
        table = self.details.get("table")
        if isinstance(table, pd.DataFrame):
            out["per_group"] = EvidenceTable.from_frame(table)
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

    def class_size_table(self) -> EvidenceTable:
        """The class-size histogram of the measures: classes and rows per size band."""
        from .gate import class_size_histogram

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


__all__ = ["CheckResult", "Evaluation", "EvidenceTable"]
