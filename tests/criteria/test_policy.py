"""The anonymizer's Policy is derived from the registry's targetable criteria."""

from __future__ import annotations

import pytest

from anon_dagster.anonymize.criteria import Policy
from anon_dagster.criteria import REGISTRY
from anon_dagster.spec import spec_from_dict
from tests.support.thresholds import BASE, spec_with


def test_policy_from_every_threshold_by_hand():
    spec = spec_with({"k": 4, "prosecutor_max": 0.1, "prosecutor_avg": 0.05, "l_distinct": 2, "l_entropy": 1.5,
                      "recursive_cl": {"c": 3, "l": 2}, "t_closeness": 0.4, "marketer": 0.1,
                      "uniques_fraction": 0.0, "population_uniqueness": 0.01})
    assert Policy.from_spec(spec) == Policy(
        k=10,  # ceil(1 / 0.1) beats anonymization.k = 5 and thresholds.k = 4
        l_distinct=2, l_entropy=1.5, recursive_cl=(3.0, 2), t_closeness=0.4, prosecutor_avg=0.05,
        max_suppression=0.0, sensitive=("diag",))


def test_policy_without_sensitive_criteria_needs_no_sensitive_column():
    policy = Policy.from_spec(spec_with({"k": 5, "marketer": 0.2}))
    assert policy == Policy(k=5) and not policy.needs_sensitive


@pytest.mark.parametrize("key", [k for k, c in REGISTRY.items() if c.targetable])
def test_monotone_under_suppression_as_the_registry_says(key):
    c = REGISTRY[key]
    threshold = {"prosecutor_max": 0.1}.get(key, c.threshold_type.example)
    # anonymization.k may not be below thresholds.k: k is reached through anonymization.k
    low_k = {**BASE, "anonymization": {"k": threshold if key == "k" else 1}}
    policy = Policy.from_spec(spec_from_dict({**low_k, "policy": {"thresholds": {key: threshold}}}))
    if key != "k":
        assert policy != Policy.from_spec(spec_from_dict(low_k))  # the criterion reached the policy
    assert policy.is_monotone(suppression=True) == c.monotone_suppression
    assert policy.is_monotone(suppression=False) == c.monotone_generalization
