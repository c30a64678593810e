"""policy.adversary: what its model needs (spec validation) and the report's headline risk."""

from __future__ import annotations

import pytest

from anon_dagster.criteria import headline_risk
from anon_dagster.errors import SpecError
from anon_dagster.release.report import build_report, render_html, render_markdown, report_inputs
from anon_dagster.spec import spec_from_dict
from tests.support.thresholds import BASE

MEASURES = {"rows": 20, "classes": 5, "k": 2, "prosecutor_max": 0.5, "prosecutor_avg": 0.25,
            "journalist_max": 0.05, "journalist_avg": 0.02, "marketer": 0.01}


def spec(policy: dict, **extra):
    return spec_from_dict({**BASE, "policy": policy, **extra})


@pytest.mark.parametrize("adversary", ["journalist", "marketer"])
def test_journalist_and_marketer_need_population_sizes(adversary):
    for policy in ({"adversary": adversary}, {"adversary": adversary, "sampling_fraction": 1.0}):
        with pytest.raises(SpecError) as err:
            spec({**policy, "thresholds": {"k": 9}})  # k 9 > anonymization.k 5: a second problem
        keys = [p.key for p in err.value.problems]
        assert "policy.adversary" in keys and "anonymization.k" in keys  # every problem at once
        [problem] = [p for p in err.value.problems if p.key == "policy.adversary"]
        assert problem.file == "<spec>" and adversary in problem.message
        assert "sampling_fraction below 1" in problem.message
    assert spec({"adversary": adversary, "sampling_fraction": 0.2}).policy.adversary == adversary
    assert spec({"adversary": adversary, "population": {"path": "pop.csv"}}).policy.population is not None


def test_prosecutor_needs_nothing_more():
    assert spec({"adversary": "prosecutor"}).policy.sampling_fraction is None


@pytest.mark.parametrize(("adversary", "figures"), [
    ("prosecutor", {"prosecutor_max": 0.5, "prosecutor_avg": 0.25}),
    ("journalist", {"journalist_max": 0.05, "journalist_avg": 0.02}),
    ("marketer", {"marketer": 0.01}),
])
def test_the_adversary_names_the_headline_risk(adversary, figures):
    assert headline_risk(adversary, MEASURES) == {"adversary": adversary, "figures": figures}
    s = spec({"adversary": adversary, "sampling_fraction": 0.2})
    report = build_report(report_inputs(s, partition="", data_hash="d" * 64, measures=MEASURES,
                                        evaluated_at="2025-02-01T10:00:00Z"))
    assert report["measures"]["headline_risk"]["figures"] == figures
    md = render_markdown(report)
    line = next(x for x in md.splitlines() if x.startswith("**Headline risk"))
    assert line.startswith(f"**Headline risk ({adversary} adversary)**")
    assert all(k in line for k in figures) and all(k not in line for k in set(MEASURES) - set(figures) - {"k"})
    assert f"Headline risk ({adversary} adversary):" in render_html(report)


def test_an_unmeasured_headline_says_so():
    assert headline_risk("journalist", {"rows": 3})["figures"] == {"journalist_max": None, "journalist_avg": None}
    s = spec({"adversary": "journalist", "sampling_fraction": 0.2})
    md = render_markdown(build_report(report_inputs(s, partition="", data_hash="d" * 64, measures={"rows": 3},
                                                    evaluated_at="2025-02-01T10:00:00Z")))
    assert "journalist_max not measured, journalist_avg not measured" in md


def test_aggregates_have_no_headline_risk():
    s = spec({"adversary": "prosecutor"}, publication={"path": "o.csv", "mode": "aggregates", "epsilon": 1.0})
    report = build_report(report_inputs(s, partition="", data_hash="d" * 64, evaluated_at="2025-02-01T10:00:00Z"))
    assert "headline_risk" not in report["measures"]
    assert "Headline risk" not in render_markdown(report)
