"""The attacks in the release gate (``policy.attacks``): the control records, the figures, the checks.

When a spec declares ``policy.attacks``, the release pipeline

1. **sets the control records aside before anonymizing** (:func:`control_split`, called by
   :func:`~.pipeline.anonymize`): the declared population's records not in the sample when they
   can be matched (nothing withheld), else a keyed slice of whole persons withheld from the
   release (:func:`~anon_dagster.risk.attacks.select_control`). Persons withheld are never
   published: the slice costs that share of the release. The transformation record says what was
   done (``attack_control``: counts, never who), and each anonymized row carries its position in
   the pseudonymized partition (:data:`~.gate.SOURCE_ROW_COLUMN`, never published);
2. **re-derives the same control records when it evaluates** (:func:`attack_figures`), from the
   pseudonymized partition the evaluation is given: the selection is a pure function of that
   table and the spec (keyed with :func:`control_key`), so nothing more is stored than the
   intermediates already are (the withheld records are rows of the stored pseudonymized table,
   encrypted at rest with it). The re-derived slice must match the record's counts and hold no
   released row, or the attack checks fail saying so;
3. **runs the attacks once per evaluation**: singling out (univariate and multivariate),
   linkability and inference of each secret, against the published view with the main targets'
   records taken from the rows released, seeded from the release's output hash, within
   ``budget_seconds`` (shared equally by the attacks). The figures are cached in this process by
   the spec hash, the output hash and the pseudonymized partition's hash, so the publication
   step's re-verification judges the very figures the checks judged;
4. **judges each declared attack** with :data:`~anon_dagster.criteria.ATTACK_CRITERIA`
   (:func:`attack_outcomes`): one check per attack, its figures in the check's ``details``
   (``table``: one row per attack and secret) and in the evaluation's ``measures["attacks"]``
   (the risk report's Attacks section).

The key of the slice is a hash of the release's name and of the pseudonymized partition's
content: reproducible from the data alone, so the evaluation re-derives it without the key
store, and unpredictable without the data (the pseudonyms it orders persons by are keyed by the
key store). Without pseudonyms the slice is ordered by row position under that key.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..anonymize.record import AttackControl, TransformationRecord, table_hash
from ..criteria import ATTACK_CRITERIA, declared_attacks
from ..errors import DataError
from ..risk.attacks import (
    AttackConfig,
    AttackResult,
    Budget,
    ControlSplit,
    run_attacks,
    select_control,
)
from ..risk.person import person_codes
from ..spec import ReleaseSpec
from ..spec.policy import attack_secrets
from . import gate
from .evaluation import CheckResult
from .recent import Recent
from .report import format_value as _fmt

CONTROL_PURPOSE = "anon_dagster/attack-control/1"
ATTACK_CHECKS = tuple(c.check_name for c in ATTACK_CRITERIA.values())
# evaluations whose figures are kept in this process (the checks' and the re-verification's)
CACHE_SIZE = 16


def control_settings(spec: ReleaseSpec) -> Any:
    """The size of the control slice (``fraction``, ``min_rows``): ``policy.attacks.control``,
    else ``policy.synthetic.control`` (a synthetic release's audit), else None (no control set)."""
    declared = spec.policy.attacks or getattr(spec.policy, "synthetic", None)
    return declared.control if declared is not None else None


def declares_attacks(spec: ReleaseSpec) -> bool:
    """Whether the spec declares ``policy.attacks``."""
    return spec.policy.attacks is not None


def attack_columns(spec: ReleaseSpec, view: pd.DataFrame, secrets: list[str] | None = None) -> tuple[list[str], list[str]]:
    """What the attacker knows (the QIs the view holds) and the secrets inference guesses (none
    unless ``policy.attacks.inference`` is declared, or ``secrets`` are given)."""
    columns = [q for q in spec.quasi_identifiers if q in view.columns]
    if secrets is None:
        attacks = spec.policy.attacks
        secrets = attack_secrets(spec) if attacks is not None and attacks.inference is not None else []
    return columns, [s for s in secrets if s in view.columns]


def control_key(spec: ReleaseSpec, table: pd.DataFrame) -> bytes:
    """The key of the control slice: SHA-256 of the release's name and the table's content hash
    (``table`` the publishable view of the pseudonymized partition)."""
    return hashlib.sha256(f"{CONTROL_PURPOSE}\0{spec.release}\0{table_hash(table)}".encode()).digest()


def control_split(spec: ReleaseSpec, pseudonymized: pd.DataFrame, secrets: list[str] | None = None) -> ControlSplit | None:
    """The control records of the partition ``pseudonymized`` (None without ``policy.attacks``
    or ``policy.synthetic``): ``released`` marks its rows by position. A pure function of the
    table and the spec. A synthetic release always withholds its control slice: its audit
    compares synthetic rows with real records in every published column, which a population
    file need not hold."""
    settings = control_settings(spec)
    if settings is None:
        return None
    table = gate.publishable_view(pseudonymized).reset_index(drop=True)
    columns, chosen = attack_columns(spec, table, secrets)
    pop = spec.policy.population
    population = (gate.load_population(spec) if pop is not None and pop.count_column is None
                  and spec.anonymization.method != "synthetic" else None)
    return select_control(table, key=control_key(spec, table), persons=gate.person_link(spec, table),
                          population=population, columns=list(dict.fromkeys([*columns, *chosen])),
                          fraction=settings.fraction, minimum=settings.min_rows)


def control_section(spec: ReleaseSpec, pseudonymized: pd.DataFrame, split: ControlSplit) -> AttackControl:
    """The record's ``attack_control`` section of ``split`` (counts only)."""
    settings = control_settings(spec)
    withheld = ~np.asarray(split.released, dtype=bool)
    persons = 0
    if withheld.any():
        link = gate.person_link(spec, gate.publishable_view(pseudonymized).reset_index(drop=True))
        persons = (int(len(np.unique(person_codes(link)[withheld]))) if link is not None
                   else int(withheld.sum()))
    return AttackControl(source=split.source, rows_before=len(pseudonymized), rows_withheld=int(withheld.sum()),
                         persons_withheld=persons, control_rows=len(split.control),
                         fraction=float(settings.fraction), min_rows=int(settings.min_rows),
                         note=split.note, selection=selection_digest(split))


def selection_digest(split: ControlSplit) -> str:
    """SHA-256 of the positions of the rows ``split`` withholds (int64, ascending)."""
    withheld = np.flatnonzero(~np.asarray(split.released, dtype=bool)).astype("<i8")
    return hashlib.sha256(withheld.tobytes()).hexdigest()


def mark_released(anonymized: pd.DataFrame, record: TransformationRecord, positions: np.ndarray,
                  section: AttackControl) -> tuple[pd.DataFrame, TransformationRecord]:
    """``anonymized`` (rows labelled by their position in the pseudonymized partition, as the
    anonymizer keeps its input's labels) with :data:`~.gate.SOURCE_ROW_COLUMN`, and ``record``
    with ``section``. The record's ``output_hash`` stays the anonymization's own table's
    (:func:`~.gate.anonymization_hash`): the published file hashes to it."""
    labels = np.asarray(anonymized.index, dtype=np.int64)
    if len(labels) and not np.isin(labels, positions).all():
        raise DataError("the anonymization did not keep the rows' labels: its rows cannot be traced to "
                        "the partition's records, which the attacks need")
    data = anonymized.copy(deep=False)
    data[gate.SOURCE_ROW_COLUMN] = labels
    return data, replace(record, attack_control=section)


# ----- the figures ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttackRun:
    """The attacks of one evaluation: what they ran on (counts, column names) and their results."""

    control: dict[str, Any]
    columns: list[str]
    secrets: list[str]
    released_rows: int
    results: list[AttackResult]
    budget_seconds: float | None = None

    def results_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.results]

    def to_dict(self) -> dict[str, Any]:
        """Plain values for the evaluation's ``measures["attacks"]`` (no value of any person)."""
        return {"control": dict(self.control), "columns": list(self.columns), "secrets": list(self.secrets),
                "released_rows": int(self.released_rows), "budget_seconds": self.budget_seconds,
                "results": self.results_json()}


_CACHE: Recent[AttackRun] = Recent(CACHE_SIZE)


def clear_cache() -> None:
    """Forget every cached evaluation's figures."""
    _CACHE.clear()


def attacks_to_run(spec: ReleaseSpec, secrets: list[str]) -> list[str]:
    """The attacks of :mod:`anon_dagster.risk.attacks` the declared criteria judge, in order."""
    attacks = spec.policy.attacks
    names: list[str] = []
    for criterion, _ in declared_attacks(attacks):
        if criterion.key == "inference" and not secrets:
            continue
        names += [a for a in criterion.attacks if a not in names]
    return names


def attack_figures(spec: ReleaseSpec, anonymized: pd.DataFrame, record: TransformationRecord | None,
                   original: pd.DataFrame | None, *, secrets: list[str] | None = None,
                   config: AttackConfig | None = None, attacks: list[str] | None = None,
                   cache: bool = True) -> AttackRun:
    """The attacks on the release ``anonymized`` (module docstring): ``record`` is the record that
    produced it, ``original`` the pseudonymized partition it was anonymized from. ``secrets``,
    ``config`` and ``attacks`` (names of :data:`~anon_dagster.risk.attacks.ATTACKS`) override the
    spec's (``anon-dagster attack``); the cache serves only the spec's own.

    Raises DataError when the table, its record and the partition do not belong together."""
    if spec.policy.attacks is None:
        raise DataError(f"{spec.label}: the spec declares no policy.attacks")
    if original is None:
        raise DataError("the attacks need the partition before anonymization")
    if record is None:
        raise DataError("no transformation record for this table: the attacks recode their targets with it "
                        "(materialize the anonymized asset again)")
    if record.output_hash != gate.anonymization_hash(anonymized):
        raise DataError("the transformation record does not describe this anonymized table (output hash "
                        "differs): materialize the anonymized asset again")
    if spec.anonymization.method == "synthetic":
        raise DataError("a synthetic release is attacked by its audit (anon_dagster.release.synthetic."
                        "synthetic_figures), with the records it was made from as the main targets")
    if record.attack_control is None or gate.SOURCE_ROW_COLUMN not in anonymized.columns:
        raise DataError("the table was anonymized without setting the attacks' control records aside: "
                        "materialize the anonymized asset again")
    base = gate.publishable_view(original).reset_index(drop=True)
    key = (spec.spec_hash(), record.output_hash, table_hash(base))
    own = secrets is None and config is None and attacks is None and cache
    if own and (kept := _CACHE.get(key)) is not None:
        return kept
    split = verified_split(spec, record, original)
    done = record.attack_control
    withheld = ~np.asarray(split.released, dtype=bool)
    positions = anonymized[gate.SOURCE_ROW_COLUMN].to_numpy(dtype=np.int64)
    if len(positions) and (positions.min() < 0 or positions.max() >= len(base) or withheld[positions].any()):
        raise DataError("the anonymized rows do not trace to released records of the partition: the partition "
                        "is not the one anonymized")
    release = gate.publishable_view(anonymized).reset_index(drop=True)
    originals = base.iloc[positions].reset_index(drop=True)
    columns, chosen = attack_columns(spec, release, secrets)
    if not columns:
        raise DataError("the release publishes no quasi-identifier: nothing to attack with")
    names = (attacks_to_run(spec, chosen) if attacks is None
             else [a for a in attacks if a != "inference" or chosen])
    declared = spec.policy.attacks
    if config is None:  # the budget shared equally by the attacks run (inference once per secret)
        runs = len(names) + (len(chosen) - 1 if "inference" in names else 0)
        share = declared.budget_seconds / max(runs, 1) if declared.budget_seconds else None
        config = AttackConfig(budget=Budget(max_seconds=share))
    control_persons = (gate.person_link(spec, gate.publishable_view(split.control))
                       if split.source == "withheld" else None)
    results = run_attacks(release, originals, split.control, columns=columns, secrets=chosen, record=record,
                          hierarchies=spec.hierarchies, persons=gate.person_link(spec, release),
                          control_persons=control_persons, config=config, attacks=names)
    run = AttackRun(control=done.to_json(), columns=columns, secrets=chosen, released_rows=len(release),
                    results=results, budget_seconds=declared.budget_seconds)
    if own:
        _CACHE.put(key, run)
    return run


def verified_split(spec: ReleaseSpec, record: TransformationRecord, original: pd.DataFrame) -> ControlSplit:
    """The control records re-derived from the partition ``original`` (:func:`control_split`),
    checked to be those the anonymization set aside (``record.attack_control``). Raises
    DataError when they are not, or when the record says none were set aside."""
    done = record.attack_control
    split = control_split(spec, original)
    if done is None or split is None:
        raise DataError("the table was anonymized without setting the control records aside: materialize the "
                        "anonymized asset again")
    withheld = ~np.asarray(split.released, dtype=bool)
    if (split.source, int(withheld.sum()), len(split.control), len(original), selection_digest(split)) != (
            done.source, done.rows_withheld, done.control_rows, done.rows_before, done.selection):
        raise DataError(f"the control records re-derived from the partition ({split.note}) are not those the "
                        f"anonymization set aside ({done.note}): the partition is not the one anonymized")
    return split


# ----- the checks -------------------------------------------------------------------------------


def evidence_table(results: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per attack result judged: rates, residual risk and its interval, targets."""
    rows = [{"attack": r["attack"], "secret": r.get("secret") or "",
             "main": r["main"]["rate"], "control": r["control"]["rate"], "baseline": r["baseline"]["rate"],
             "residual": r["residual"]["risk"], "low": r["residual"]["low"], "high": r["residual"]["high"],
             "main_targets": int(r["targets"]["main"]), "control_targets": int(r["targets"]["control"]),
             "complete": bool(r["complete"])} for r in results]
    columns = ["attack", "secret", "main", "control", "baseline", "residual", "low", "high", "main_targets",
               "control_targets", "complete"]
    return pd.DataFrame(rows, columns=columns).astype(
        {"main": float, "control": float, "baseline": float, "residual": float, "low": float, "high": float})


def attack_outcomes(spec: ReleaseSpec, run: AttackRun, names: set[str] | None = None) -> list[CheckResult]:
    """One check result per attack declared (those named in ``names``), judged by its criterion."""
    figures = run.results_json()
    severity = spec.policy.attacks.severity
    out = []
    for criterion, threshold in declared_attacks(spec.policy.attacks):
        if names is not None and criterion.check_name not in names:
            continue
        judged = criterion.judge(figures, threshold, _fmt)
        summary = judged.summary
        if criterion.key == "inference" and not run.secrets:
            summary = f"{criterion.label}: no secret column is published, so it cannot pass"
        out.append(CheckResult(name=criterion.check_name, passed=bool(judged.passed), severity=severity,
                               value=judged.value, threshold=threshold, comparison=criterion.comparison,
                               summary=summary, spec_key=criterion.spec_key,
                               details={"table": evidence_table(criterion.results(figures))}))
    return out


__all__ = ["ATTACK_CHECKS", "CONTROL_PURPOSE", "AttackRun", "attack_columns", "attack_figures", "attack_outcomes",
           "attacks_to_run", "clear_cache", "control_key", "control_settings", "control_section", "control_split", "declares_attacks",
           "evidence_table", "mark_released", "selection_digest", "verified_split"]
