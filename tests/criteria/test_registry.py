"""The criteria registry: every entry validates, compares, measures and describes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from anon_dagster.criteria import REGISTRY, TOLERANCE, criterion_for_check, declared_thresholds
from anon_dagster.errors import SpecError
from anon_dagster.spec import ReleaseSpec
from tests.support.thresholds import spec_with


def model_attribute(model: type[BaseModel], dotted: str) -> object:
    """The field a dotted spec key names, walking the spec model's fields (KeyError if absent)."""
    current: object = model
    for part in dotted.split("."):
        assert isinstance(current, type) and issubclass(current, BaseModel), dotted
        field = current.model_fields[part]
        current = field.annotation
        # ``X | None`` fields: walk into the model among the union's members
        for arg in getattr(current, "__args__", ()):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                current = arg
    return current


def test_registry_keys_are_the_threshold_keys_and_check_names_are_unique():
    assert list(REGISTRY) == [c.key for c in REGISTRY.values()]
    assert len({c.check_name for c in REGISTRY.values()}) == len(REGISTRY)
    for c in REGISTRY.values():
        assert criterion_for_check(c.check_name) is c
    assert criterion_for_check("data_contract") is None


def test_check_names_are_the_published_ones():
    # users select and alert on these names: they must never change
    assert {k: c.check_name for k, c in REGISTRY.items()} == {
        "k": "k_anonymity", "prosecutor_avg": "prosecutor_risk_avg", "prosecutor_max": "prosecutor_risk_max",
        "journalist_avg": "journalist_risk_avg", "journalist_max": "journalist_risk_max",
        "marketer": "marketer_risk", "population_uniqueness": "population_uniqueness",
        "l_distinct": "l_diversity_distinct", "l_entropy": "l_diversity_entropy",
        "recursive_cl": "l_diversity_recursive_cl", "t_closeness": "t_closeness",
        "uniques_fraction": "uniques_fraction",
    }


@pytest.mark.parametrize("key", list(REGISTRY))
def test_every_description_names_a_spec_key_that_exists(key):
    c = REGISTRY[key]
    threshold = c.threshold_type.example
    text = c.describe(threshold)
    assert text.endswith(f", declared in {c.spec_key}")
    assert c.label in text and c.comparison in text
    model_attribute(ReleaseSpec, c.spec_key)  # KeyError if the spec has no such key
    # and the key reads the declared value back from a loaded spec
    spec = spec_with({key: threshold})
    value = spec
    for part in c.spec_key.split("."):
        value = getattr(value, part)
    assert value is not None


@pytest.mark.parametrize("key", list(REGISTRY))
def test_every_entry_validates_its_type(key):
    c = REGISTRY[key]
    assert getattr(spec_with({key: c.threshold_type.example}).policy.thresholds, key) is not None
    with pytest.raises(SpecError) as err:
        spec_with({key: c.threshold_type.invalid})
    assert any(p.key.startswith(c.spec_key) for p in err.value.problems)


@pytest.mark.parametrize("key", list(REGISTRY))
def test_every_entry_compares_and_never_passes_unmeasured(key):
    c = REGISTRY[key]
    threshold = c.threshold_type.example
    bound = c.bound(threshold)
    sense = c.bound_comparison or c.comparison
    inside = bound + 1 if sense == ">=" else bound * 0.5
    outside = bound - 1 if sense == ">=" else bound * 2 + 0.1
    assert c.passes(inside, threshold) and c.passes(bound, threshold)
    assert not c.passes(outside, threshold)
    assert not c.passes(None, threshold) and not c.passes(math.nan, threshold)


def test_hand_computed_descriptions():
    assert REGISTRY["k"].describe(5) == "smallest equivalence class (k) >= 5, declared in policy.thresholds.k"
    assert REGISTRY["prosecutor_max"].describe(0.2) == (
        "highest prosecutor risk <= 0.2, declared in policy.thresholds.prosecutor_max")
    assert REGISTRY["recursive_cl"].describe({"c": 2.0, "l": 3}) == (
        "recursive (c,l)-diversity holds l=3 at c=2, declared in policy.thresholds.recursive_cl")


def test_recursive_cl_reads_l_recursive_at_the_declared_c_only():
    c = REGISTRY["recursive_cl"]
    measured = {"rows": 10, "l_recursive": 3, "recursive_c": 2.0}
    assert c.value(measured, {"c": 2, "l": 3}) == 3
    assert c.judge(measured, {"c": 2, "l": 3}).passed
    assert not c.judge(measured, {"c": 2, "l": 4}).passed
    # measured at another c: not a figure of this criterion
    assert c.value(measured, {"c": 3, "l": 3}) is None
    assert "not measured" in c.judge(measured, {"c": 3, "l": 3}).summary


def test_population_uniqueness_judges_the_most_pessimistic_estimator():
    c = REGISTRY["population_uniqueness"]
    pu = {"min": 0.01, "max": 0.08, "estimates": {"pitman": {"fraction": 0.01}, "zayatz": {"fraction": 0.08}}}
    assert c.value({"population_uniqueness": pu}, 0.05) == 0.08
    assert not c.judge({"rows": 5, "population_uniqueness": pu}, 0.05).passed
    assert c.judge({"rows": 5, "population_uniqueness": pu}, 0.1).passed
    # without the summary keys, the largest valid estimate
    assert c.value({"population_uniqueness": {"estimates": {"a": {"fraction": 0.02}, "b": {"fraction": None},
                                                             "c": {"fraction": 0.03}}}}, 0.05) == 0.03


def test_an_empty_release_never_passes():
    j = REGISTRY["prosecutor_max"].judge({"rows": 0, "prosecutor_max": 0.0}, 0.2)
    assert not j.passed and "no rows" in j.summary


def test_prosecutor_max_targets_k_by_its_reciprocal():
    assert REGISTRY["prosecutor_max"].target(0.2) == ("k", 5)
    assert REGISTRY["prosecutor_max"].target(0.3) == ("k", 4)
    assert [c.key for c in REGISTRY.values() if c.targetable] == [
        "k", "prosecutor_avg", "prosecutor_max", "l_distinct", "l_entropy", "recursive_cl", "t_closeness"]


def test_declared_thresholds_in_registry_order_as_plain_values():
    spec = spec_with({"t_closeness": 0.3, "k": 5, "recursive_cl": {"c": 2, "l": 2}})
    assert [(c.key, t) for c, t in declared_thresholds(spec.policy.thresholds)] == [
        ("k", 5), ("recursive_cl", {"c": 2.0, "l": 2}), ("t_closeness", 0.3)]


@given(st.floats(min_value=0, max_value=1), st.floats(min_value=0.001, max_value=1))
def test_upper_bounds_pass_exactly_when_within_tolerance(value, threshold):
    for c in REGISTRY.values():
        if c.comparison == "<=":
            assert c.passes(value, threshold) == (value <= threshold + TOLERANCE)


@given(st.integers(min_value=0, max_value=50), st.integers(min_value=1, max_value=50))
def test_lower_bounds_pass_exactly_when_at_least_the_threshold(value, threshold):
    for c in REGISTRY.values():
        if c.comparison == ">=":
            assert c.passes(value, threshold) == (value >= threshold)
