"""The release pipeline, written once: ingest → pseudonymize → anonymize → evaluate → publish.

Plain functions over DataFrames and plain values (no Dagster): the Dagster assets and checks,
``anon-dagster check``, ``anonymize``, ``compose`` and ``risk --config`` all call these, so
every figure and every verdict has one computation. A step never re-derives what an earlier
step computed: :func:`evaluate` builds the published view's equivalence classes once and hands
them to every figure (risk, class sizes, small classes, composition).

- :func:`ingest` reads the partition's rows of the spec's source and checks them against the spec;
- :func:`pseudonymize` replaces identifiers by keyed pseudonyms (or drops them) and, when the
  spec composes releases, adds the ledger's linkage pseudonym (never published);
- :func:`anonymize` generalizes and suppresses as the spec declares; a policy no transformation
  reaches gives the closest evidence instead (see :func:`anonymize`), never a crash without
  check results. With ``policy.attacks`` it first sets the attacks' control records aside
  (:mod:`anon_dagster.release.attacks`): a withheld slice is never published;
- :func:`evaluate` judges the anonymized table against every declared check
  (:class:`~anon_dagster.release.evaluation.Evaluation`), the attacks included;
- :func:`~anon_dagster.release.publication.publish` writes a passing evaluation's publication
  (the protocol is in :mod:`anon_dagster.release.publication`);
  :func:`~anon_dagster.release.publication.record_refusal` keeps a failing one's report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ..anonymize.criteria import Policy, suppression_budget
from ..anonymize.record import TransformationRecord
from ..criteria import DeclaredCheck
from ..criteria import declared_checks as registry_checks
from ..errors import SpecError, UserError
from ..io import plain_json
from ..partitions import read_release_data
from ..risk.exposure import small_classes
from ..spec import ReleaseSpec, check_data
from . import attacks as gate_attacks
from . import gate
from .evaluation import CheckResult, Evaluation
from .ledger import Ledger, dataset_hash, linkage_pseudonyms
from .ledger.linkage import person_normalization

LINKAGE_PURPOSE = "ledger-linkage"


# ----- ingest and pseudonymize -----------------------------------------------------------------


@dataclass
class Ingested:
    """A partition's rows of the source, checked against the spec, and where they came from."""

    data: pd.DataFrame
    source: str


def ingest(spec: ReleaseSpec, partition: str | None = None, input_path: str | None = None) -> Ingested:
    """The rows of ``partition`` (all rows when None) of ``input_path`` or the spec's source.

    Raises a UserError naming the file and column for data that does not match the spec.
    """
    df, path = read_release_data(spec, partition, input_path)
    check_data(spec, df, source=path)
    return Ingested(df, str(path))


def needs_keystore(spec: ReleaseSpec) -> bool:
    """Whether the release opens the key store: it pseudonymizes a column or composes releases."""
    return bool(spec.pseudonymized) or spec.composition is not None


def check_keystore(spec: ReleaseSpec, keystore: Any | None) -> None:
    """Refuse a missing key store, or one kept among the release's data (source, publication,
    population folders): the key must be kept apart from what it protects."""
    from ..pseudonymize.keystore import check_apart_from

    if keystore is None:
        raise UserError(f"{spec.label}: the release needs the key store, and none was given")
    check_apart_from(keystore, spec.data_folders(), f"release {spec.release!r}")


@dataclass
class Pseudonymized:
    """The table with identifiers replaced (or dropped); still personal data."""

    data: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)


def pseudonymize(spec: ReleaseSpec, raw: pd.DataFrame, keystore: Any | None, *,
                 linkage: bool = True, partition: str | None = None) -> Pseudonymized:
    """Identifiers pseudonymized as declared, the others dropped.

    ``partition`` is the partition ``raw`` holds (None: the whole release): a column of scope
    ``release`` (the default) is bound to that one publication, so another partition's
    pseudonyms of the same person differ.

    With ``linkage`` (the default) and a ``composition`` block, the column
    :data:`~anon_dagster.release.gate.LINKAGE_COLUMN` holds each row's linkage pseudonym of
    ``composition.person`` under the key store's ``ledger-linkage`` subkey: it links a person
    across releases in the ledger and is never published. The key store must sit apart from
    the release's data (checked here, before anything is written).
    """
    from ..pseudonymize import pseudonymize as pseudonymize_columns

    wants_linkage = linkage and spec.composition is not None
    if spec.pseudonymized or wants_linkage:
        check_keystore(spec, keystore)
    if spec.pseudonymized:
        out, summary = pseudonymize_columns(raw, spec, keystore, partition=partition)
        info = summary.to_dict()
    else:
        out, info = raw.drop(columns=[c for c in spec.identifiers if c in raw.columns]), {}
    if wants_linkage:
        out = out.copy()
        out[gate.LINKAGE_COLUMN] = linkage_column(spec, raw, keystore)
    return Pseudonymized(out, plain_json(info))


def linkage_column(spec: ReleaseSpec, table: pd.DataFrame, keystore: Any) -> Any:
    """Each row's linkage pseudonym of ``composition.person``: the identifier spelled as the
    published pseudonym spells it (:func:`~.ledger.linkage.person_normalization`), keyed with the
    ``ledger-linkage`` subkey, which key rotation does not change (see the key store)."""
    key = keystore.derive_key(LINKAGE_PURPOSE)
    return linkage_pseudonyms(table[spec.composition.person].reset_index(drop=True), key,
                              normalize=person_normalization(spec))


# ----- anonymize -------------------------------------------------------------------------------


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
              relax: bool = True) -> Anonymized:
    """The spec's anonymization; when its policy is unreachable, the closest evidence instead.

    With ``policy.attacks``, the attacks' control records are set aside first
    (:func:`~anon_dagster.release.attacks.control_split`): the declared population's records not
    in the sample (nothing withheld), else a keyed slice of whole persons withheld from the
    release, which never sees them. The rest is anonymized as below; the record's
    ``attack_control`` says what was set aside (counts only, ``rows_in`` counts the rows after
    the slice) and each row carries its position in ``pseudonymized``
    (:data:`~anon_dagster.release.gate.SOURCE_ROW_COLUMN`, never published), so that
    :func:`evaluate` attacks the release with its people's own records.

    With ``relax=False`` an unreachable policy raises the anonymizer's ``NoSolution`` (a
    UserError naming the closest node and the criterion it misses) instead.

    The anonymizer refuses a policy no transformation reaches (``NoSolution``). A refusal
    here would leave the partition without check results, so a reviewer would see a crashed
    step instead of the criterion that cannot be met. Instead the anonymization is run again
    at the spec's own ``k`` with the attribute-disclosure and average-risk thresholds left out
    of the search, and :func:`evaluate` measures that table against the full policy: it fails
    on exactly the criteria that cannot be met, and the publication is refused. If even that
    is impossible (k larger than the partition), the table is empty and every check fails.

    When published columns link a person's rows, the anonymizer is given each row's person:
    global recoding searches for k per person (:mod:`anon_dagster.anonymize.core`). The linking
    columns are published unchanged, so they link the same rows before and after. Then
    :func:`reach_k_per_person` removes the persons still below k (none after that search).
    """
    split = gate_attacks.control_split(spec, pseudonymized)
    if split is None:
        return _anonymize(spec, pseudonymized, progress, relax=relax)
    base = pseudonymized.reset_index(drop=True)
    positions = np.flatnonzero(split.released)
    done = _anonymize(spec, base.iloc[positions], progress, relax=relax)
    data, record = gate_attacks.mark_released(done.data, done.record, positions,
                                              gate_attacks.control_section(spec, base, split))
    return Anonymized(data, record, done.suppressed, done.unreachable)


def _anonymize(spec: ReleaseSpec, pseudonymized: pd.DataFrame, progress: Any = None, *,
               relax: bool = True) -> Anonymized:
    """:func:`anonymize` of the rows given (the control records already set aside)."""
    from ..anonymize import anonymize as run_anonymization
    from ..anonymize.core import empty_record

    view = gate.publishable_view(pseudonymized)
    link = {"persons": gate.person_link(spec, view), "linked_by": gate.linking_columns(spec, view)}
    try:
        result = run_anonymization(pseudonymized, spec, progress=progress, **link)
        return reach_k_per_person(spec, Anonymized(result.data, result.record, int(result.suppressed)),
                                  len(pseudonymized))
    except SpecError:
        raise
    except UserError as exc:
        if not relax:
            raise
        reason = f"the declared policy is unreachable: {exc}"
    thresholds = spec.policy.thresholds.model_copy(update={
        "l_distinct": None, "l_entropy": None, "recursive_cl": None, "t_closeness": None,
        "prosecutor_avg": None})
    relaxed = spec.model_copy(update={"policy": spec.policy.model_copy(update={"thresholds": thresholds})})
    try:
        result = run_anonymization(pseudonymized, relaxed, progress=progress, **link)
    except UserError as exc2:
        empty = pseudonymized.iloc[0:0]
        return Anonymized(empty, empty_record(pseudonymized, spec), len(pseudonymized),
                          reason + f". No relaxed anonymization exists either ({exc2}): the table is "
                          "empty and every check fails.")
    unreachable = (reason + f". Shown instead: the anonymization at k={spec.anonymization.k} without the "
                   "attribute-disclosure and average-risk criteria, measured against the full policy by "
                   "the checks; it cannot be published.")
    return reach_k_per_person(spec, Anonymized(result.data, replace(result.record, policy_unreachable=unreachable),
                                               int(result.suppressed), unreachable), len(pseudonymized))


def reach_k_per_person(spec: ReleaseSpec, anonymized: Anonymized, rows_in: int) -> Anonymized:
    """The anonymization with the persons below k removed, when published columns link a
    person's rows and the suppression budget allows it (:mod:`anon_dagster.anonymize.persons`).

    The record says what was done (``person_suppression``; when the search already targeted k
    per person, what this pass removes comes on top of its section) and describes the table
    returned (rows, suppression, classes, output hash).
    """
    from ..anonymize.persons import suppress_persons
    from ..anonymize.record import Classes, PersonSuppression, class_histogram, table_hash
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
    section = PersonSuppression(k=k, linked_by=gate.linking_columns(spec, view), persons=result.persons,
                                rows=result.rows, budget_rows=budget, reached=result.reached, search_targeted=False)
    searched = record.person_suppression
    if searched is not None and searched.search_targeted:
        section = replace(section, persons=searched.persons + result.persons, rows=searched.rows + result.rows,
                          search_targeted=True)
    if not (result.reached and result.rows):
        return Anonymized(anonymized.data, replace(record, person_suppression=section), anonymized.suppressed,
                          anonymized.unreachable)
    data = anonymized.data[result.keep]
    sizes = np.bincount(classes.row_class[result.keep], minlength=classes.n_classes)
    sizes = sizes[sizes > 0]
    suppressed = anonymized.suppressed + result.rows
    record = replace(
        record, person_suppression=section, rows_out=len(data), output_hash=table_hash(data),
        suppression=replace(record.suppression, rows=suppressed, share=suppressed / rows_in if rows_in else 0.0),
        classes=Classes(count=len(sizes), k=int(sizes.min()) if len(sizes) else None, histogram=class_histogram(sizes)),
    )
    return Anonymized(data, record, suppressed, anonymized.unreachable)


# ----- evaluate --------------------------------------------------------------------------------


def declared_checks(spec: ReleaseSpec) -> list[DeclaredCheck]:
    """Every check of the release, in the order the Dagster layer and the CLI show them
    (:func:`anon_dagster.criteria.declared_checks`)."""
    return registry_checks(spec)


def evaluate(
    spec: ReleaseSpec,
    anonymized: pd.DataFrame,
    *,
    record: TransformationRecord | None,
    original: pd.DataFrame | None,
    raw: pd.DataFrame | None,
    ledger: Ledger | None,
    partition: str | None,
    only: set[str] | None = None,
    mitigations: list[str] | None = None,
) -> Evaluation:
    """Judge ``anonymized`` against every check the spec declares (or those named in ``only``).

    ``record`` is the transformation record that produced ``anonymized`` (it places the
    declared population into the published classes); ``original`` the table before
    anonymization (utility queries compare with it; the attacks re-derive their control records
    from it and take each released row's record from it); ``raw`` the ingested table (its identifier
    values must never appear in the publication); ``ledger`` holds the earlier publications the
    release is composed with (and the ε budget). A check that cannot be computed fails and
    says why: it never passes silently.

    The attacks of ``policy.attacks`` run once per evaluation (cached by spec, output and
    partition hashes: :func:`~anon_dagster.release.attacks.attack_figures`); their figures are in
    ``measures["attacks"]`` and in each attack check's ``details``.
    """
    declared = declared_checks(spec)
    wanted = [d for d in declared if only is None or d.name in only]
    names = {d.name for d in wanted}
    results: dict[str, CheckResult] = {}
    measures: dict[str, Any] = {}
    classes = None
    view = gate.publishable_view(anonymized)
    attack_names = {d.name for d in wanted if d.name in gate_attacks.ATTACK_CHECKS}
    risk_names = {d.name for d in wanted if d.name not in ("composition", "epsilon_budget", "data_contract")
                  and d.name not in attack_names}
    if risk_names:
        try:
            population = gate.population_in_classes(spec, anonymized, record)
            measured = gate.risk_measures(spec, anonymized, population)
            if measured is not None:
                classes = measured.equivalence_classes
                measures = gate.release_figures(spec, measured, population)
            else:
                measures = {"rows": 0, "classes": 0}
            outcomes = gate.threshold_outcomes(spec, measures)
            if original is not None:
                outcomes += gate.utility_outcomes(spec, gate.publishable_view(original), anonymized)
            for o in outcomes:
                results[o.name] = _result(o, declared)
        except Exception as exc:  # every check still gets a result: failed, saying why
            for d in wanted:
                if d.name in risk_names:
                    results[d.name] = CheckResult(d.name, False, d.severity, spec_key=d.spec_key,
                                                  summary=f"could not be measured: {describe_error(exc)}")
    if attack_names:
        try:
            run = gate_attacks.attack_figures(spec, anonymized, record, original)
            measures = {**measures, "attacks": run.to_dict()}
            for outcome in gate_attacks.attack_outcomes(spec, run, attack_names):
                results[outcome.name] = _result(outcome, declared)
        except Exception as exc:  # every attack check still gets a result: failed, saying why
            for d in wanted:
                if d.name in attack_names:
                    results[d.name] = CheckResult(d.name, False, d.severity, spec_key=d.spec_key,
                                                  summary=f"could not be measured: {describe_error(exc)}")
    composition = assignment = None
    if "composition" in names:
        outcome, composition, assignment = _composition(spec, anonymized, ledger, partition, classes)
        results["composition"] = _result(outcome, declared)
    if "epsilon_budget" in names:
        results["epsilon_budget"] = _result(_budget(spec, ledger), declared)
    if "data_contract" in names:
        results["data_contract"] = _result(_contract(spec, view, raw), declared)
    checks = [results.get(d.name) or CheckResult(d.name, False, d.severity, spec_key=d.spec_key,
                                                 summary="no result was computed") for d in wanted]
    if classes is None and len(view) and any(q in view.columns for q in spec.quasi_identifiers):
        classes = gate.published_classes(spec, anonymized)
    notes = list(mitigations or [])
    if record is not None and record.policy_unreachable and record.policy_unreachable not in notes:
        notes.append(record.policy_unreachable)
    return Evaluation(
        release=spec.release, partition=partition, spec_hash=spec.spec_hash(), data_hash=dataset_hash(view),
        checks=checks, measures=measures, record=record.to_json() if record is not None else None, composition=composition,
        class_sizes=gate.class_sizes(spec, anonymized, classes) if classes is not None else [],
        small_classes=small_classes(classes, Policy.from_spec(spec).k).to_dict() if classes is not None else None,
        mitigations=notes, rows=len(view), assignment=assignment,
    )


@dataclass
class GateRun:
    """A release partition taken through the whole gate: every step's output and the evaluation."""

    ingested: Ingested
    pseudonymized: Pseudonymized
    anonymized: Anonymized
    evaluation: Evaluation


def run_gate(spec: ReleaseSpec, *, partition: str | None = None, input_path: str | None = None,
             keystore: Any | None = None, ledger: Ledger | None = None, only: set[str] | None = None) -> GateRun:
    """Ingest, pseudonymize, anonymize and evaluate one partition, as the Dagster assets and
    checks do in turn (``anon-dagster check``): the same functions, so the same outcomes."""
    ingested = ingest(spec, partition, input_path)
    pseudo = pseudonymize(spec, ingested.data, keystore, partition=partition)
    anon = anonymize(spec, pseudo.data)
    evaluation = evaluate(spec, anon.data, record=anon.record, original=pseudo.data, raw=ingested.data,
                          ledger=ledger, partition=partition, only=only)
    return GateRun(ingested, pseudo, anon, evaluation)


def _result(outcome: CheckResult, declared: list[DeclaredCheck]) -> CheckResult:
    """``outcome`` with the spec key that declares its check."""
    spec_key = next((d.spec_key for d in declared if d.name == outcome.name), "")
    return replace(outcome, passed=bool(outcome.passed), spec_key=spec_key)


def composition_assignment(spec: ReleaseSpec, anonymized: pd.DataFrame, classes: Any = None) -> Any:
    """The class assignment of the published view, keyed by the linkage pseudonyms it carries."""
    from .composition import class_assignment

    if gate.LINKAGE_COLUMN not in anonymized.columns:
        raise UserError(f"{spec.label}: the table carries no linkage pseudonyms: pseudonymize it with the "
                        "release's composition block first")
    persons = anonymized[gate.LINKAGE_COLUMN].reset_index(drop=True)
    return class_assignment(gate.publishable_view(anonymized), spec.quasi_identifiers, persons,
                            classes=classes)


def _composition(spec: ReleaseSpec, anonymized: pd.DataFrame, ledger: Ledger | None, partition: str | None,
                 classes: Any) -> tuple[gate.Outcome, dict[str, Any] | None, Any]:
    """Intersection of this release with every earlier publication of the same population."""
    from .composition import check_composition

    comp = spec.composition
    try:
        if ledger is None:
            raise UserError("no ledger to compose with")
        assignment = composition_assignment(spec, anonymized, classes)
        result = check_composition(assignment, ledger, population=comp.population, release=spec.release,
                                   partition=partition, min_k=comp.min_k)
    except Exception as exc:  # a composition that cannot be checked fails, never passes
        return gate.Outcome("composition", False, summary=f"could not be checked: {describe_error(exc)}"), None, None
    summary = (f"effective k = {result.effective_k} against {len(result.compared)} earlier "
               f"publication(s) of population {comp.population!r} (minimum {comp.min_k}); "
               f"{result.exposed_persons} persons exposed. {result.text}")
    details = result.to_dict(class_values=False)  # sizes only: the smallest classes' values single people out
    return gate.Outcome("composition", bool(result.passed), value=int(result.effective_k), threshold=comp.min_k,
                        comparison=">=", summary=summary, details={"composition": details}), details, assignment


def _budget(spec: ReleaseSpec, ledger: Ledger | None) -> gate.Outcome:
    """Whether this release's epsilon fits in its population's remaining budget."""
    from .dp import budget_population, epsilon_spend

    try:
        if ledger is None:
            raise UserError("no ledger holds the budget")
        eps, total, method, delta = epsilon_spend(spec)
        state = ledger.budget(budget_population(spec), epsilon=eps, total=total, composition=method, delta=delta)
    except Exception as exc:
        return gate.Outcome("epsilon_budget", False, summary=f"could not be checked: {describe_error(exc)}")
    summary = (f"population {state.population!r}: epsilon {eps:g} brings the budget from "
               f"{state.composed_before:.4g} to {state.composed_after:.4g} of {total:g} ({method} composition)"
               + ("" if state.allowed else ": budget exceeded"))
    return gate.Outcome("epsilon_budget", bool(state.allowed), value=float(state.composed_after),
                        threshold=float(total), comparison="<=", summary=summary,
                        details={"composition": plain_json(state.to_dict())})


def _contract(spec: ReleaseSpec, view: pd.DataFrame, raw: pd.DataFrame | None) -> gate.Outcome:
    """The data contract of the publication (Great Expectations), or a failure saying why."""
    from .contract import validate_contract

    try:
        raw_values = gate.raw_identifier_values(spec, raw) if raw is not None else None
        return validate_contract(spec, view, raw_values)
    except Exception as exc:
        return gate.Outcome("data_contract", False, summary=f"could not be validated: {describe_error(exc)}")


def describe_error(exc: BaseException) -> str:
    """``Type: first line of the message`` (never a traceback, never more than one line)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


__all__ = [
    "LINKAGE_PURPOSE", "Anonymized", "DeclaredCheck", "GateRun", "Ingested", "Pseudonymized", "anonymize", "check_keystore",
    "composition_assignment", "declared_checks", "describe_error", "evaluate", "ingest", "linkage_column", "needs_keystore",
    "pseudonymize", "run_gate",
]
