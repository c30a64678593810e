"""What one run of a release partition did, from the check results and materializations it recorded.

``outcome`` is ``published``, ``refused`` (a check or the publication itself refused it:
``failed_checks`` and ``reasons`` say why), ``awaiting_approval`` (every check passed, nothing
published until approved: ``approve_command`` says how) or ``failed`` (a step failed before the release was
judged: ``failed_steps``). A refused run is not a successful one (``success`` is False).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class PartitionOutcome:
    """What one run of a release partition did (see the module docstring)."""

    release: str
    partition: str | None
    success: bool
    rows_in: int | None = None
    rows_published: int | None = None
    failed_checks: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    failed_steps: list[str] = field(default_factory=list)
    # every check evaluation in its contract form (as `anon-dagster check --json`), by check name
    checks: dict[str, dict] = field(default_factory=dict)
    published: Path | None = None
    report: Path | None = None
    outcome: str = "failed"
    evaluation: str | None = None  # the id of the evaluation the publication step judged
    approve_command: str | None = None  # awaiting approval: the command an approver runs

    @property
    def refused(self) -> bool:
        return self.outcome == "refused"

    @property
    def awaiting_approval(self) -> bool:
        return self.outcome == "awaiting_approval"

    def add_check(self, name: str, passed: bool, description: str | None, contract: dict | None) -> None:
        """One check of the anonymized asset: its contract form, and its reason when it failed."""
        if contract is not None:
            self.checks[name] = contract
        if not passed:
            self.failed_checks.append(name)
            if description:
                self.reasons.append(f"{name}: {description}")

    def add_refusal(self, publication_check: str, listed: list[str], lines: list[str]) -> None:
        """The publication's refusal: the re-verification's failed checks (``listed``) and its
        reason ``lines``, each reason once (a failed check's own reason is not repeated); a line
        of no listed check is the ``publication_check``'s."""
        known = {r.split(":", 1)[0] for r in self.reasons}
        self.failed_checks += [c for c in listed if c not in self.failed_checks] or (
            [] if self.failed_checks else [publication_check])
        for line in lines:
            name = line.split(":", 1)[0]
            if name in listed and name in known:
                continue
            self.reasons.append(line if name in listed else f"{publication_check}: {line}")

    def finish(self, kept_report: Path | None) -> PartitionOutcome:
        """A run with failed checks and no publication is refused; a report not published is
        the evaluation's ``kept_report``."""
        if self.outcome == "failed" and self.failed_checks:
            self.outcome = "refused"
        if self.report is None:
            self.report = kept_report
        return self


__all__ = ["PartitionOutcome"]
