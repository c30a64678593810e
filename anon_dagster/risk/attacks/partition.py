"""The attacks on one partition of a release spec, taken through the release pipeline.

:func:`attack_partition` does what the release does, with the control records set aside first:

1. ingest and pseudonymize the partition (:mod:`anon_dagster.release.pipeline`);
2. choose the control records (:func:`~.targets.select_control`): the declared population's
   records not in the sample, else a keyed slice of whole persons withheld from the release —
   withheld *before* anonymization, so the release never saw them;
3. anonymize the rest as the spec declares (the pipeline's own step);
4. attack the published view (:func:`~anon_dagster.risk.attacks.run_attacks`): the attacker
   knows the spec's quasi-identifiers, inference guesses each secret column (default: the
   spec's sensitive columns), persons are the rows the published pseudonyms link.

The slice is keyed with the key store's ``attack-control`` key when the release has a key store,
else with the spec's hash and the partition (reproducible, not secret). Nothing is written.

A spec that declares ``policy.attacks`` is attacked exactly as its release gate attacks it: the
pipeline's own anonymization sets the control records aside (:mod:`anon_dagster.release.attacks`,
keyed by the partition's content), and the figures are the gate's (``--secret`` and the budget
options still apply).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import UserError
from ...release import gate, pipeline
from ...spec import ReleaseSpec
from . import ATTACKS, run_attacks
from .engine import AttackConfig
from .result import AttackResult
from .targets import ControlSplit, select_control

CONTROL_PURPOSE = "attack-control"


@dataclass
class PartitionAttack:
    """The attacks on one partition and what they ran on (counts and notes only)."""

    release: str
    partition: str | None
    method: str
    rows: int
    released_rows: int
    control_source: str
    control_rows: int
    control_note: str
    results: list[AttackResult]
    unreachable: str | None = None

    def worst_residual(self) -> float | None:
        values = [r.residual for r in self.results if r.residual == r.residual]
        return max(values) if values else None

    def to_json(self) -> dict[str, Any]:
        return {
            "release": self.release, "partition": self.partition, "method": self.method, "rows": self.rows,
            "released_rows": self.released_rows,
            "control": {"source": self.control_source, "rows": self.control_rows, "note": self.control_note},
            "policy_unreachable": self.unreachable, "attacks": [r.to_json() for r in self.results],
        }

    def render_text(self) -> str:
        where = f" (partition {self.partition})" if self.partition else ""
        lines = [f"attacks on release {self.release!r}{where}, method {self.method}: "
                 f"{self.released_rows:,} rows released of {self.rows:,}; {self.control_rows:,} control records "
                 f"({self.control_note})"]
        if self.unreachable:
            lines.append(f"note: {self.unreachable}")
        header = f"{'attack':<34}{'main':>7}{'control':>9}{'baseline':>10}{'residual':>10}  {'95% interval':<17}{'targets':>13}"
        lines += ["", header, "-" * len(header)]
        for r in self.results:
            interval = f"[{r.residual_low:.3f}, {r.residual_high:.3f}]"
            targets = f"{r.main.n}/{r.control.n}"
            lines.append(f"{r.name:<34}{_f(r.main.value):>7}{_f(r.control.value):>9}{_f(r.baseline.value):>10}"
                         f"{_f(r.residual):>10}  {interval:<17}{targets:>13}")
            if not r.complete:
                lines.append(f"  cut: {r.cut}")
        return "\n".join(lines)


def _f(x: float) -> str:
    return "n/a" if x != x else f"{x:.3f}"


def control_key(spec: ReleaseSpec, keystore: Any | None, partition: str | None) -> bytes:
    """The key of the control slice: the key store's ``attack-control`` key, else a hash of the
    spec and the partition."""
    if keystore is not None:
        return keystore.derive_key(CONTROL_PURPOSE)
    return hashlib.sha256(f"{spec.spec_hash()}\0{partition or ''}".encode()).digest()


def attack_partition(spec: ReleaseSpec, *, partition: str | None = None, input_path: str | None = None,
                     keystore: Any | None = None, secrets: Sequence[str] | None = None,
                     config: AttackConfig | None = None) -> PartitionAttack:
    """Take one partition through the pipeline with control records set aside and attack the
    release (module docstring). Raises UserError for a secret that is not published."""
    ingested = pipeline.ingest(spec, partition, input_path)
    pseudo = pipeline.pseudonymize(spec, ingested.data, keystore, linkage=False, partition=partition)
    table = pseudo.data.reset_index(drop=True)
    view = gate.publishable_view(table)
    columns = [q for q in spec.quasi_identifiers if q in view.columns]
    if not columns:
        raise UserError(f"{spec.label}: the release publishes no quasi-identifier: nothing to attack with")
    chosen = list(secrets) if secrets else [s for s in spec.sensitive if s in view.columns]
    published = set(spec.published_columns) & set(view.columns)
    for s in chosen:
        if s not in published:
            raise UserError(f"{spec.label}: secret column {s!r} is not a published column of the release")
    if spec.policy.attacks is not None:
        return _as_the_gate_does(spec, partition, table, secrets=list(secrets) if secrets else None, config=config)
    split: ControlSplit = select_control(
        table, key=control_key(spec, keystore, partition), persons=gate.person_link(spec, view),
        population=gate.load_population(spec), columns=list(dict.fromkeys([*columns, *chosen])))
    to_release = table[split.released].reset_index(drop=True)
    anonymized = pipeline.anonymize(spec, to_release)
    release = gate.publishable_view(anonymized.data)
    originals = to_release.iloc[to_release.index.get_indexer(anonymized.data.index)]
    control = split.control
    control_persons = (gate.person_link(spec, gate.publishable_view(control))
                       if split.source == "withheld" else None)
    results = run_attacks(release, originals, control, columns=columns, secrets=chosen,
                          record=anonymized.record, hierarchies=spec.hierarchies,
                          persons=gate.person_link(spec, release), control_persons=control_persons,
                          config=config)
    return PartitionAttack(spec.release, partition, anonymized.record.method, len(table), len(release),
                           split.source, len(control), split.note, results, anonymized.unreachable)


def _as_the_gate_does(spec: ReleaseSpec, partition: str | None, table: Any, *, secrets: list[str] | None,
                      config: AttackConfig | None) -> PartitionAttack:
    """Every attack, on the pipeline's own anonymization of a spec declaring ``policy.attacks``
    (its control records set aside as the release sets them aside); the secrets default to the
    spec's (``policy.attacks.secrets``, else the sensitive columns)."""
    from ...release import attacks as gate_attacks
    from ...spec.policy import attack_secrets

    chosen = secrets if secrets is not None else [s for s in attack_secrets(spec) if s in table.columns]
    anonymized = pipeline.anonymize(spec, table)
    run = gate_attacks.attack_figures(spec, anonymized.data, anonymized.record, table, secrets=chosen,
                                      config=config or AttackConfig(), attacks=list(ATTACKS))
    control = run.control
    return PartitionAttack(spec.release, partition, anonymized.record.method, len(table), run.released_rows,
                           str(control["source"]), int(control["control_rows"]), str(control["note"]),
                           run.results, anonymized.unreachable)


__all__ = ["CONTROL_PURPOSE", "PartitionAttack", "attack_partition", "control_key"]
