"""What one run of a release partition did, read from the results it recorded.

A run records check results (on a step, with a name, passed or not, a description and metadata)
and materializations (of a step, with metadata), as plain values. The gate's checks are on the
anonymized step; on the published step only the publication check counts (its failure is the
refusal: ``failed_checks`` in its metadata, one reason per line of its description), the
freshness check being no part of the gate. The published step's materialization says
``outcome`` ``refused``, ``awaiting_approval`` (with ``approve_command``; the publication check's
failure then is no refusal), or where the publication was written (``path``, ``report``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .partition_outcome import PartitionOutcome


@dataclass(frozen=True)
class RecordedCheck:
    """One check result a run recorded (``step`` None: on an asset of no step of this release)."""

    step: str | None
    name: str
    passed: bool
    description: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


def run_outcome(release: str, partition: str | None, success: bool, failed_steps: list[str],
                checks: Iterable[RecordedCheck], materializations: Iterable[tuple[str | None, Mapping[str, Any]]],
                publication_check: str, kept_report: Path | None) -> PartitionOutcome:
    """The run's :class:`PartitionOutcome`; ``materializations`` are ``(step, metadata)`` pairs,
    ``kept_report`` the report a refused evaluation kept (used when none was published)."""
    out = PartitionOutcome(release, partition, success, failed_steps=list(failed_steps))
    refusal: tuple[list[str], list[str]] | None = None
    for c in checks:
        if c.step == "published":
            if c.name == publication_check and not c.passed and "outcome" not in c.metadata:  # awaiting: no refusal
                refusal = (list(c.metadata.get("failed_checks") or []), (c.description or "").splitlines())
            continue
        out.add_check(c.name, c.passed, c.description, c.metadata.get("check"))
    if refusal is not None:
        out.add_refusal(publication_check, *refusal)
    for step, metadata in materializations:
        rows = int(metadata["rows"]) if "rows" in metadata else None
        if step == "raw":
            out.rows_in = rows
        elif step == "published":
            out.evaluation = str(metadata["evaluation"]) if "evaluation" in metadata else None
            if metadata.get("outcome") == "refused":
                out.outcome = "refused"
                continue
            if metadata.get("outcome") == "awaiting_approval":  # passed, nothing written until approved
                out.outcome, out.approve_command = "awaiting_approval", str(metadata.get("approve_command") or "")
                out.report = Path(metadata["report"]) if "report" in metadata else None
                continue
            out.outcome = "published"
            out.published, out.report = Path(metadata["path"]), Path(metadata["report"])
            out.rows_published = rows
    return out.finish(kept_report if out.report is None else None)


__all__ = ["RecordedCheck", "run_outcome"]
