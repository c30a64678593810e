"""A synthetic release in the release gate: its audit, its attacks and the checks of ``policy.synthetic``.

A synthetic release (``anonymization.method: synthetic``) goes through the pipeline as any
other, with these differences:

1. **the control records are set aside before the synthesis** (always a keyed slice of whole
   persons withheld from it, :func:`~.attacks.control_split`, sized by ``policy.synthetic.
   control`` or ``policy.attacks.control``): the synthesizer never sees them, and the record's
   ``attack_control`` says what was withheld (counts only). No row of the synthetic table is
   any person's, so no row carries a source position;
2. **the evaluation re-derives the same slice** from the pseudonymized partition and checks it
   against the record (:func:`~.attacks.verified_split`): the *train* records are the rows the
   synthesis was given, the *control* records the slice;
3. **the audit** (:func:`synthetic_figures`) computes the figures of :mod:`anon_dagster.risk.
   synthetic_audit` (exact-copy rate gap, closer-to-train gap, membership-inference AUC) and
   runs the three attacks of :mod:`anon_dagster.risk.attacks` on the synthetic table (singling
   out, linkability, inference of each secret), the train records as the main targets: on a
   synthetic release a main target succeeds as a control target does (nobody in the table is
   the target). Cached in this process by the spec, output and partition hashes, so the
   publication's re-verification judges the very figures the checks judged;
4. **the checks**: one per bound of ``policy.synthetic`` (:data:`~anon_dagster.criteria.
   SYNTHETIC_CRITERIA`, :func:`synthetic_outcomes`), and the attack checks of
   ``policy.attacks`` when declared, judged on the audit's attacks.

The figures are rates, counts and column names: never a synthetic or a real row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..anonymize.record import TransformationRecord, table_hash
from ..criteria import SYNTHETIC_CRITERIA, declared_synthetic
from ..errors import DataError
from ..risk.attacks import ATTACKS, AttackConfig, Budget, run_attacks, seed_of
from ..risk.synthetic_audit import audit
from ..spec import ReleaseSpec
from ..spec.policy import attack_secrets
from ..spec.synthetic import synthetic_columns
from . import gate
from .attacks import AttackRun, attack_outcomes, verified_split
from .evaluation import CheckResult
from .recent import Recent
from .report import format_value as _fmt

SYNTHETIC_CHECKS = tuple(c.check_name for c in SYNTHETIC_CRITERIA.values())
CACHE_SIZE = 16


def declares_synthetic(spec: ReleaseSpec) -> bool:
    """Whether the release publishes a synthetic table (``anonymization.method: synthetic``)."""
    return spec.anonymization.method == "synthetic"


@dataclass(frozen=True)
class SyntheticRun:
    """The audit of one evaluation of a synthetic release: its figures and its attacks."""

    figures: dict[str, Any]
    attacks: AttackRun

    def to_dict(self) -> dict[str, Any]:
        """Plain values for the evaluation's ``measures["synthetic"]`` (no value of any row)."""
        return {**self.figures, "control": dict(self.attacks.control)}


_CACHE: Recent[SyntheticRun] = Recent(CACHE_SIZE)


def clear_cache() -> None:
    """Forget every cached evaluation's figures."""
    _CACHE.clear()


def synthetic_figures(spec: ReleaseSpec, anonymized: pd.DataFrame, record: TransformationRecord | None,
                      original: pd.DataFrame | None, *, secrets: list[str] | None = None,
                      config: AttackConfig | None = None, attacks: list[str] | None = None,
                      cache: bool = True) -> SyntheticRun:
    """The audit of the synthetic table ``anonymized`` (module docstring): ``record`` the record
    that made it, ``original`` the pseudonymized partition it was made from. ``secrets``,
    ``config`` and ``attacks`` override the spec's for the attacks; the cache serves only the
    spec's own. Raises DataError when the table, its record and the partition do not belong
    together."""
    if original is None:
        raise DataError("the synthetic audit needs the partition the synthetic table was made from")
    if record is None or record.synthetic is None:
        raise DataError("no synthetic transformation record for this table: materialize the anonymized asset again")
    if record.output_hash != gate.anonymization_hash(anonymized):
        raise DataError("the transformation record does not describe this synthetic table (output hash differs): "
                        "materialize the anonymized asset again")
    base = gate.publishable_view(original).reset_index(drop=True)
    key = (spec.spec_hash(), record.output_hash, table_hash(base))
    own = secrets is None and config is None and attacks is None and cache
    if own and (kept := _CACHE.get(key)) is not None:
        return kept
    split = verified_split(spec, record, original)
    train = base[np.asarray(split.released, dtype=bool)].reset_index(drop=True)
    control = split.control.reset_index(drop=True)
    table = gate.publishable_view(anonymized).reset_index(drop=True)
    figures = audit(table, train, control, columns=[c for c in synthetic_columns(spec) if c in table.columns]).figures()
    columns = [q for q in spec.quasi_identifiers if q in table.columns]
    chosen = [s for s in (secrets if secrets is not None else attack_secrets(spec)) if s in table.columns]
    names = [a for a in (attacks if attacks is not None else ATTACKS) if a != "inference" or chosen]
    declared = spec.policy.attacks
    budget = declared.budget_seconds if declared is not None else None
    if config is None:  # the budget shared equally by the attacks run (inference once per secret)
        runs = len(names) + (len(chosen) - 1 if "inference" in names else 0)
        config = AttackConfig(budget=Budget(max_seconds=budget / max(runs, 1) if budget else None))
    results = (run_attacks(table, train, control, columns=columns, secrets=chosen, config=config,
                           seed=seed_of(record), attacks=names, synthetic=True) if columns else [])
    run = SyntheticRun(figures, AttackRun(control=record.attack_control.to_json(), columns=columns, secrets=chosen,
                                          released_rows=len(table), results=results, budget_seconds=budget))
    if own:
        _CACHE.put(key, run)
    return run


def synthetic_outcomes(spec: ReleaseSpec, run: SyntheticRun, names: set[str] | None = None) -> list[CheckResult]:
    """One check result per bound of ``policy.synthetic`` (those named in ``names``)."""
    out = []
    for criterion, threshold in declared_synthetic(getattr(spec.policy, "synthetic", None)):
        if names is not None and criterion.check_name not in names:
            continue
        judged = criterion.judge(run.figures, threshold, _fmt)
        out.append(CheckResult(name=criterion.check_name, passed=bool(judged.passed), severity="error",
                               value=judged.value, threshold=threshold, comparison=criterion.comparison,
                               summary=judged.summary, spec_key=criterion.spec_key))
    return out


def audit_outcomes(spec: ReleaseSpec, run: SyntheticRun) -> list[CheckResult]:
    """Every verdict of the audit ``run``: one per bound of ``policy.synthetic``
    (:func:`synthetic_outcomes`), then one per attack of ``policy.attacks`` when declared, judged
    on the audit's attacks (:func:`~.attacks.attack_outcomes`), as the evaluation judges them."""
    out = synthetic_outcomes(spec, run)
    if spec.policy.attacks is not None:
        out += attack_outcomes(spec, run.attacks)
    return out


__all__ = ["SYNTHETIC_CHECKS", "SyntheticRun", "audit_outcomes", "clear_cache", "declares_synthetic",
           "synthetic_figures", "synthetic_outcomes"]
