"""The pipeline's anonymize step (:func:`anonymize`): the attacks' control records set aside,
the spec's anonymization, a relaxed one when its policy is unreachable (the closest evidence,
never a crash without check results), then the person-level pass (:func:`reach_k_per_person`)
when published columns link a person's rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from ..anonymize.criteria import Policy, suppression_budget
from ..anonymize.record import TransformationRecord
from ..errors import SpecError, UserError
from ..spec import ReleaseSpec
from . import attacks as gate_attacks
from . import gate

R = TypeVar("R")


@dataclass
class Anonymized:
    """The anonymized table (internal columns included), its record and what was given up.

    ``unreachable`` says, when the declared policy cannot be met, what the table shows instead
    (None when the policy was met).
    """

    data: pd.DataFrame
    record: TransformationRecord
    suppressed: int
    unreachable: str | None = None


def anonymize(spec: ReleaseSpec, pseudonymized: pd.DataFrame, progress: Any = None, *,
              relax: bool = True, synthetic_table: pd.DataFrame | None = None) -> Anonymized:
    """The spec's anonymization; when its policy is unreachable, the closest evidence instead.

    ``synthetic_table``: a synthetic release's table supplied by a Dagster asset
    (``anonymization.synthetic.table: {asset: key}``), checked and published as a file's is
    (:func:`~anon_dagster.anonymize.synthetic_method.table_synthesis`). Without it such a release
    is a UserError naming the asset, before anything is set aside.

    With ``policy.attacks``, the attacks' control records are set aside first
    (:func:`~anon_dagster.release.attacks.control_split`): the declared population's records not
    in the sample (nothing withheld), else a keyed slice of whole persons withheld from the
    release, which never sees them. The rest is anonymized as below; the record's
    ``attack_control`` says what was set aside (counts only, ``rows_in`` counts the rows after
    the slice) and each row carries its position in ``pseudonymized``
    (:data:`~anon_dagster.release.gate.SOURCE_ROW_COLUMN`, never published), so that
    :func:`~.evaluate_step.evaluate` attacks the release with its people's own records.

    With ``relax=False`` an unreachable policy raises the anonymizer's ``NoSolution`` (a
    UserError naming the closest node and the criterion it misses) instead.

    The anonymizer refuses a policy no transformation reaches (``NoSolution``). A refusal
    here would leave the partition without check results, so a reviewer would see a crashed
    step instead of the criterion that cannot be met. Instead the anonymization is run again
    at the spec's own ``k`` with the attribute-disclosure and average-risk thresholds left out
    of the search, and :func:`~.evaluate_step.evaluate` measures that table against the full
    policy: it fails on exactly the criteria that cannot be met, and the publication is refused.
    If even that is impossible (k larger than the partition), the table is empty and every check
    fails.

    When published columns link a person's rows, the anonymizer is given each row's person:
    global recoding searches for k per person (:mod:`anon_dagster.anonymize.core`). The linking
    columns are published unchanged, so they link the same rows before and after. Then
    :func:`reach_k_per_person` removes the persons still below k (none after that search).
    """
    from ..anonymize.synthetic_method import asset_table_message

    missing = asset_table_message(spec) if synthetic_table is None else None
    if missing is not None:  # said as it is, not taken for an unreachable policy
        raise UserError(missing)
    split = gate_attacks.control_split(spec, pseudonymized)
    if split is None:
        return _anonymize(spec, pseudonymized, progress, relax=relax, synthetic_table=synthetic_table)
    base = pseudonymized.reset_index(drop=True)
    positions = np.flatnonzero(split.released)
    done = _anonymize(spec, base.iloc[positions], progress, relax=relax, synthetic_table=synthetic_table)
    if spec.anonymization.method == "synthetic":  # synthetic rows are nobody's: no source row to mark
        return Anonymized(done.data, replace(done.record, attack_control=gate_attacks.control_section(spec, base, split)),
                          done.suppressed, done.unreachable)
    data, record = gate_attacks.mark_released(done.data, done.record, positions,
                                              gate_attacks.control_section(spec, base, split))
    return Anonymized(data, record, done.suppressed, done.unreachable)


def _anonymize(spec: ReleaseSpec, pseudonymized: pd.DataFrame, progress: Any = None, *,
               relax: bool = True, synthetic_table: pd.DataFrame | None = None) -> Anonymized:
    """:func:`anonymize` of the rows given (the control records already set aside)."""
    from ..anonymize import anonymize as run_anonymization
    from ..anonymize.core import empty_record

    view = gate.publishable_view(pseudonymized)
    link = {"persons": gate.person_link(spec, view), "linked_by": gate.linking_columns(spec, view)}

    def run(which: ReleaseSpec) -> Anonymized:
        result = run_anonymization(pseudonymized, which, progress=progress, synthetic_table=synthetic_table, **link)
        return reach_k_per_person(spec, Anonymized(result.data, result.record, int(result.suppressed)),
                                  len(pseudonymized))

    done, unreachable = run_or_relax(spec, run, relax=relax)
    if done is None:
        empty = pseudonymized.iloc[0:0]
        return Anonymized(empty, empty_record(pseudonymized, spec), len(pseudonymized), unreachable)
    if unreachable is None:
        return done
    return replace(done, record=replace(done.record, policy_unreachable=unreachable), unreachable=unreachable)


def run_or_relax(spec: ReleaseSpec, run: Callable[[ReleaseSpec], R], *, relax: bool = True,
                 reraise: tuple[type[Exception], ...] = ()) -> tuple[R | None, str | None]:
    """``run(spec)``, and when the declared policy is unreachable (a UserError other than a
    SpecError or one of ``reraise``) and ``relax``, ``run(relaxed_spec(spec))``: the one way every
    engine shows an unreachable policy.

    Returns ``(result, None)`` when the policy is met; ``(relaxed result, note)`` when only the
    relaxed one exists (the note is the record's ``policy_unreachable``); ``(None, note)`` when
    neither does (the caller publishes an empty table, and every check fails).
    """
    try:
        return run(spec), None
    except (SpecError, *reraise):
        raise
    except UserError as exc:
        if not relax:
            raise
        reason = f"the declared policy is unreachable: {exc}"
    try:
        return run(relaxed_spec(spec)), relaxed_note(reason, spec)
    except UserError as exc2:
        return None, no_relaxed_note(reason, exc2)

#: the criteria the relaxed anonymization leaves out of the search (the gate still measures them)
RELAXED_CRITERIA = ("l_distinct", "l_entropy", "recursive_cl", "t_closeness", "prosecutor_avg")


def relaxed_spec(spec: ReleaseSpec) -> ReleaseSpec:
    """``spec`` at its own k without the attribute-disclosure and average-risk criteria
    (:data:`RELAXED_CRITERIA`): what is anonymized, on every engine, when the declared policy is
    unreachable."""
    thresholds = spec.policy.thresholds.model_copy(update=dict.fromkeys(RELAXED_CRITERIA))
    return spec.model_copy(update={"policy": spec.policy.model_copy(update={"thresholds": thresholds})})


def relaxed_note(reason: str, spec: ReleaseSpec) -> str:
    """The record's ``policy_unreachable`` when the relaxed anonymization is shown instead."""
    return (reason + f". Shown instead: the anonymization at k={spec.anonymization.k} without the "
            "attribute-disclosure and average-risk criteria, measured against the full policy by "
            "the checks; it cannot be published.")


def no_relaxed_note(reason: str, exc: Exception) -> str:
    """What an empty table says when not even the relaxed anonymization exists."""
    return reason + f". No relaxed anonymization exists either ({exc}): the table is empty and every check fails."


def person_pass_section(record: Any, *, k: int, linked_by: list[str], persons: int, rows: int, budget: int,
                        reached: bool) -> Any:
    """The record's ``person_suppression`` after the person pass removed ``persons`` (``rows``
    rows) within ``budget``: what the pass did, on top of what a search that targeted k per
    person removed (its section's counts added, ``search_targeted`` kept)."""
    from ..anonymize.record import PersonSuppression

    section = PersonSuppression(k=k, linked_by=list(linked_by), persons=persons, rows=rows, budget_rows=budget,
                                reached=reached, search_targeted=False)
    searched = record.person_suppression
    if searched is not None and searched.search_targeted:
        section = replace(section, persons=searched.persons + persons, rows=searched.rows + rows,
                          search_targeted=True)
    return section


def person_pass_record(record: Any, section: Any, *, suppressed: int, rows_in: int, sizes: np.ndarray,
                       output_hash: str) -> Any:
    """The record of the table the person pass returns: its section, the rows out (the sum of the
    class ``sizes``, empty classes ignored), the suppression (``suppressed`` rows of ``rows_in``),
    the classes and the ``output_hash``. One rewrite for every engine."""
    from ..anonymize.record import Classes, class_histogram

    sizes = np.rint(np.asarray(sizes, dtype=np.float64)).astype(np.int64)
    sizes = sizes[sizes > 0]
    return replace(
        record, person_suppression=section, rows_out=int(sizes.sum()), output_hash=output_hash,
        suppression=replace(record.suppression, rows=suppressed, share=suppressed / rows_in if rows_in else 0.0),
        classes=Classes(count=len(sizes), k=int(sizes.min()) if len(sizes) else None, histogram=class_histogram(sizes)),
    )


def reach_k_per_person(spec: ReleaseSpec, anonymized: Anonymized, rows_in: int) -> Anonymized:
    """The anonymization with the persons below k removed, when published columns link a
    person's rows and the suppression budget allows it (:mod:`anon_dagster.anonymize.persons`).

    The record says what was done (``person_suppression``; when the search already targeted k
    per person, what this pass removes comes on top of its section) and describes the table
    returned (rows, suppression, classes, output hash).
    """
    from ..anonymize.persons import suppress_persons
    from ..anonymize.record import table_hash
    from ..risk import EquivalenceClasses

    view = gate.publishable_view(anonymized.data)
    persons = gate.person_link(spec, view)
    qis = [q for q in spec.quasi_identifiers if q in view.columns]
    if persons is None or len(view) == 0 or not qis:
        return anonymized
    k = Policy.from_spec(spec).k
    budget = suppression_budget(Policy.from_spec(spec), rows_in)
    classes = EquivalenceClasses.from_frame(view, qis)
    result = suppress_persons(classes, persons, k, max(budget - anonymized.suppressed, 0))
    record = anonymized.record
    section = person_pass_section(record, k=k, linked_by=gate.linking_columns(spec, view), persons=result.persons,
                                  rows=result.rows, budget=budget, reached=result.reached)
    if not (result.reached and result.rows):
        return Anonymized(anonymized.data, replace(record, person_suppression=section), anonymized.suppressed,
                          anonymized.unreachable)
    data = anonymized.data[result.keep]
    sizes = np.bincount(classes.row_class[result.keep], minlength=classes.n_classes)
    suppressed = anonymized.suppressed + result.rows
    record = person_pass_record(record, section, suppressed=suppressed, rows_in=rows_in, sizes=sizes,
                                output_hash=table_hash(data))
    return Anonymized(data, record, suppressed, anonymized.unreachable)
