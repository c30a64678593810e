"""The gate's threshold outcomes come from the criteria registry."""

from __future__ import annotations

from anon_dagster.criteria import REGISTRY
from anon_dagster.release.gate import threshold_outcomes
from tests.support.thresholds import spec_with


def test_every_declared_threshold_gives_its_registry_check_in_order():
    declared = {key: c.threshold_type.example for key, c in REGISTRY.items()}
    outcomes = threshold_outcomes(spec_with(declared), {"rows": 10})
    assert [o.name for o in outcomes] == [c.check_name for c in REGISTRY.values()]
    assert [o.comparison for o in outcomes] == [c.comparison for c in REGISTRY.values()]
    # nothing was measured: nothing passes, and each says which figure is missing
    assert not any(o.passed for o in outcomes)
    assert all("not measured" in o.summary for o in outcomes)
    assert "'l_recursive'" in outcomes[list(REGISTRY).index("recursive_cl")].summary


def test_recursive_cl_and_rounding_at_the_threshold():
    spec = spec_with({"recursive_cl": {"c": 2, "l": 2}, "prosecutor_avg": 0.3})
    # 0.1 + 0.2 is 0.30000000000000004: at the threshold up to rounding, so it passes
    measures = {"rows": 10, "l_recursive": 2, "recursive_c": 2.0, "prosecutor_avg": 0.1 + 0.2}
    by_name = {o.name: o for o in threshold_outcomes(spec, measures)}
    cl = by_name["l_diversity_recursive_cl"]
    assert cl.passed and cl.value == 2 and cl.threshold == {"c": 2.0, "l": 2}
    assert cl.summary == "recursive (c,l)-diversity = 2 meets the threshold holds l=2 at c=2"
    assert by_name["prosecutor_risk_avg"].passed
    failing = threshold_outcomes(spec, {**measures, "l_recursive": 1, "prosecutor_avg": 0.31})
    assert not any(o.passed for o in failing)
