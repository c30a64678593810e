"""``declared_checks``: every check a spec declares, in order, with its spec key."""

from __future__ import annotations

from anon_dagster.criteria import REGISTRY, DeclaredCheck, declared_checks
from anon_dagster.spec import spec_from_dict
from tests.support.thresholds import BASE

EVERY_THRESHOLD = {key: c.threshold_type.example for key, c in REGISTRY.items()}


def spec(**extra):
    return spec_from_dict({**BASE, **extra})


def test_every_threshold_query_composition_and_contract_in_order():
    s = spec(
        policy={"sampling_fraction": 0.1, "thresholds": EVERY_THRESHOLD},
        utility_queries=[
            {"name": "by_age", "group_by": ["age"], "target": "diag", "max_error_points": 2.5},
            {"name": "soft", "group_by": ["age"], "target": "diag", "max_error_points": 5, "severity": "warn"},
            {"name": "unbounded", "group_by": ["age"], "target": "diag"},
        ],
        composition={"population": "patients", "person": "pid", "min_k": 4},
    )
    checks = declared_checks(s)
    assert [c.name for c in checks] == [
        *(c.check_name for c in REGISTRY.values()), "utility_by_age", "utility_soft", "utility_unbounded", "composition", "data_contract"]
    by_name = {c.name: c for c in checks}
    assert by_name["k_anonymity"] == DeclaredCheck(
        "k_anonymity", "policy.thresholds.k", "error",
        "smallest equivalence class (k) >= 5, declared in policy.thresholds.k", ">=", 5)
    assert by_name["l_diversity_recursive_cl"].threshold == {"c": 2.0, "l": 2}
    assert by_name["l_diversity_recursive_cl"].comparison == "holds"
    soft = by_name["utility_soft"]
    assert (soft.severity, soft.spec_key, soft.threshold, soft.comparison) == ("warn", "utility_queries.soft", 5, "<=")
    assert soft.description == "prevalence of diag by age: error <= 5.0 points (warn), declared in utility_queries.soft"
    assert by_name["utility_by_age"].severity == "error"
    assert by_name["utility_unbounded"].description == (
        "prevalence of diag by age: largest error reported, no bound (error), declared in utility_queries.unbounded")
    comp = by_name["composition"]
    assert (comp.spec_key, comp.threshold, comp.comparison) == ("composition.min_k", 4, ">=")
    assert comp.description.endswith(">= 4, declared in composition.min_k")
    contract = by_name["data_contract"]
    assert (contract.spec_key, contract.threshold) == ("columns", None)
    assert contract.description.endswith("declared in columns")
    for c in checks:
        assert c.description.endswith(f"declared in {c.spec_key}")
        assert c.severity in ("error", "warn")


def test_without_thresholds_only_the_contract():
    assert [c.name for c in declared_checks(spec())] == ["data_contract"]


def test_aggregates_declare_only_the_epsilon_budget():
    s = spec(policy={"sampling_fraction": 0.1, "thresholds": {"k": 5}},
             composition={"population": "patients", "person": "pid"},
             publication={"path": "out.csv", "mode": "aggregates", "epsilon": 0.5, "total_epsilon": 2.0})
    [check] = declared_checks(s)
    assert (check.name, check.spec_key, check.severity, check.comparison, check.threshold) == (
        "epsilon_budget", "publication.epsilon", "error", "<=", 2.0)
    assert check.description == ("composed epsilon of the population after this release <= 2 "
                                 "(basic composition), declared in publication.epsilon")


def test_a_single_dp_release_is_its_own_total():
    s = spec(publication={"path": "out.csv", "mode": "aggregates", "epsilon": 0.5})
    assert declared_checks(s)[0].threshold == 0.5


def test_declared_checks_are_plain_json():
    import json

    s = spec(policy={"sampling_fraction": 0.1, "thresholds": EVERY_THRESHOLD})
    json.dumps([c.to_dict() for c in declared_checks(s)])
