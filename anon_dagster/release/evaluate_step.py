"""The pipeline's evaluate step (:func:`evaluate`): the anonymized table judged against every
declared check, from one build of the published view's equivalence classes (risk, class sizes,
small classes, composition), the attacks, the ε budget and the data contract included. A check
that cannot be computed fails and says why (:func:`describe_error`): it never passes silently."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pandas as pd

from ..anonymize.criteria import Policy
from ..anonymize.record import TransformationRecord
from ..criteria import DeclaredCheck
from ..criteria import declared_checks as registry_checks
from ..errors import UserError
from ..io import plain_json
from ..risk.exposure import small_classes
from ..spec import ReleaseSpec
from . import attacks as gate_attacks
from . import gate
from . import synthetic as gate_synthetic
from .evaluation import CheckResult, Evaluation
from .ledger import Ledger, dataset_hash


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
    ``measures["attacks"]`` and in each attack check's ``details``. A synthetic release's audit
    (:func:`~anon_dagster.release.synthetic.synthetic_figures`) is in ``measures["synthetic"]``,
    its attacks in ``measures["attacks"]``.
    """
    declared = declared_checks(spec)
    wanted = [d for d in declared if only is None or d.name in only]
    names = {d.name for d in wanted}
    results: dict[str, CheckResult] = {}
    measures: dict[str, Any] = {}
    classes = measured = None
    view = gate.publishable_view(anonymized)
    risk_names = {d.name for d in wanted if d.name not in ("composition", "epsilon_budget", "data_contract",
                                                           *AUDIT_CHECKS)}
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
    audited, outcomes = audit_checks(
        spec, wanted, synthetic=lambda: gate_synthetic.synthetic_figures(spec, anonymized, record, original),
        attacks=lambda: gate_attacks.attack_figures(spec, anonymized, record, original))
    measures = {**measures, **audited}
    for outcome in outcomes:
        results[outcome.name] = _result(outcome, declared)
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
        # sizes and per-QI contributions, and each sensitive attribute's deciding classes
        # (the most distant, the least diverse) from the measurement the checks judged
        small_classes=(small_classes(classes, Policy.from_spec(spec).k, measured=measured, table=view).to_dict()
                       if classes is not None else None),
        mitigations=notes, rows=len(view), assignment=assignment,
    )


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


# the checks judged by the attacks and by a synthetic release's audit (:func:`audit_checks`)
AUDIT_CHECKS = (*gate_attacks.ATTACK_CHECKS, *gate_synthetic.SYNTHETIC_CHECKS)


def audit_checks(spec: ReleaseSpec, wanted: list[DeclaredCheck], *, synthetic: Callable[[], Any],
                 attacks: Callable[[], Any], passthrough: tuple[type[BaseException], ...] = ()
                 ) -> tuple[dict[str, Any], list[CheckResult]]:
    """The attack and synthetic-audit checks among ``wanted`` and what they add to the
    evaluation's measures (``synthetic``, ``attacks``). Each engine computes the runs its way:
    ``synthetic`` the synthetic release's audit (:class:`~.synthetic.SyntheticRun`, whose attacks
    the attack checks then judge), ``attacks`` the attacks of any other release
    (:class:`~.attacks.AttackRun`). When a run cannot be computed each of these checks fails
    saying why, unless the error is one of ``passthrough`` (raised)."""
    names = {d.name for d in wanted}
    attack_names = names & set(gate_attacks.ATTACK_CHECKS)
    synthetic_names = names & set(gate_synthetic.SYNTHETIC_CHECKS)
    audited = gate_synthetic.declares_synthetic(spec) and bool(synthetic_names or attack_names)
    if not (audited or attack_names):
        return {}, []
    try:
        if audited:
            audit = synthetic()
            run = audit.attacks
            measures = {"synthetic": audit.to_dict(), "attacks": run.to_dict()}
            outcomes = gate_synthetic.synthetic_outcomes(spec, audit, synthetic_names)
        else:
            run = attacks()
            measures, outcomes = {"attacks": run.to_dict()}, []
        if attack_names:
            outcomes += gate_attacks.attack_outcomes(spec, run, attack_names)
        return measures, outcomes
    except passthrough:
        raise
    except Exception as exc:  # every audit and attack check still gets a result: failed, saying why
        return {}, [CheckResult(d.name, False, d.severity, spec_key=d.spec_key,
                                summary=f"could not be measured: {describe_error(exc)}")
                    for d in wanted if d.name in attack_names | synthetic_names]


def describe_error(exc: BaseException) -> str:
    """``Type: first line of the message`` (never a traceback, never more than one line)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
