"""``anon-dagster attack`` on a synthetic release: the gate's audit and attacks, without publishing.

:func:`attack_synthetic` takes the partition through the steps the gate takes (ingest,
pseudonymize, the pipeline's synthesis with its control records withheld) and evaluates it with
the gate's own functions: :func:`~.synthetic.synthetic_figures` (the audit's figures and the three
attacks on the synthetic table, the train records as main targets scored like control targets),
:func:`~.synthetic.audit_outcomes` (one verdict per bound of ``policy.synthetic`` and per attack
of ``policy.attacks``) and the report's :func:`~.report.content.synthetic_section`. The figures
are therefore those of the gate's checks and of the risk report of the same release: with the
spec's own secrets and budget they are the very cached figures. Nothing is written; no row is
shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..risk.attacks.engine import AttackConfig
from ..spec import ReleaseSpec
from . import pipeline
from . import synthetic as gate_synthetic
from .evaluation import CheckResult
from .report.content import synthetic_rows, synthetic_section
from .report.values import canonical, format_value


@dataclass
class SyntheticAttack:
    """A synthetic release's audit and attacks on one partition, and their verdicts."""

    release: str
    partition: str | None
    rows: int
    run: gate_synthetic.SyntheticRun
    checks: list[CheckResult]

    @property
    def failed(self) -> list[CheckResult]:
        """The declared bounds and attacks that failed (whatever their severity)."""
        return [c for c in self.checks if not c.passed]

    def section(self) -> dict[str, Any]:
        """The report's Synthetic data section of these figures (:func:`synthetic_section`), its
        values as the report states them (:func:`~.report.values.canonical`)."""
        return canonical(synthetic_section(self.run.to_dict(), [c.report_entry() for c in self.checks]))

    def to_json(self) -> dict[str, Any]:
        control = self.run.attacks.control
        return {"release": self.release, "partition": self.partition, "method": "synthetic", "rows": self.rows,
                "released_rows": self.run.attacks.released_rows,
                "control": {"source": control.get("source"), "rows": control.get("control_rows"),
                            "note": control.get("note")},
                "policy_unreachable": None, "attacks": self.run.attacks.results_json(),
                "synthetic": self.section(), "checks": [c.to_json() for c in self.checks],
                "passed": not self.failed}

    def render_text(self) -> str:
        from ..risk.attacks.partition import PartitionAttack

        control = self.run.attacks.control
        attacks = PartitionAttack(self.release, self.partition, "synthetic", self.rows,
                                  self.run.attacks.released_rows, str(control.get("source")),
                                  int(control.get("control_rows") or 0), str(control.get("note")),
                                  self.run.attacks.results)
        section = self.section()
        header = f"{'synthetic audit':<40}{'train':>10}{'control':>10}{'value':>10}"
        lines = [attacks.render_text(), "", "main targets: the train records, scored like control targets "
                 "(no synthetic row is anyone's)", "", header, "-" * len(header)]
        for label, train, ctrl, value, _ in synthetic_rows(section):
            lines.append(f"{label:<40}{format_value(train):>10}{format_value(ctrl):>10}{format_value(value):>10}")
        lines += ["", section["note"], ""]
        for c in self.checks:
            lines.append(f"{'PASS' if c.passed else 'FAIL'}  {c.name}: {c.summary}")
        return "\n".join(lines)


def attack_synthetic(spec: ReleaseSpec, *, partition: str | None = None, input_path: str | None = None,
                     keystore: Any | None = None, secrets: Sequence[str] | None = None,
                     config: AttackConfig | None = None) -> SyntheticAttack:
    """The audit, the attacks and the verdicts of the synthetic release ``spec`` on one partition
    (module docstring). ``secrets`` and ``config`` override the spec's for the attacks (None: the
    gate's own, so the figures are the gate's cached ones)."""
    ingested = pipeline.ingest(spec, partition, input_path)
    pseudo = pipeline.pseudonymize(spec, ingested.data, keystore, partition=partition)
    anonymized = pipeline.anonymize(spec, pseudo.data)
    run = gate_synthetic.synthetic_figures(spec, anonymized.data, anonymized.record, pseudo.data,
                                           secrets=list(secrets) if secrets is not None else None, config=config)
    return SyntheticAttack(spec.release, partition, len(pseudo.data), run, gate_synthetic.audit_outcomes(spec, run))


__all__ = ["SyntheticAttack", "attack_synthetic"]
