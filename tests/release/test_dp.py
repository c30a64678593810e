"""DP aggregates: exact discrete Laplace sampling, sensitivity, and the epsilon budget."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from anon_dagster.errors import SpecError
from anon_dagster.release.dp import (
    AggregatesConfig,
    SumSpec,
    aggregates_config,
    bernoulli_exp,
    budget_population,
    discrete_laplace,
    discrete_laplace_error,
    discrete_laplace_pmf,
    dp_aggregates,
    epsilon_spend,
    exact_fraction,
)
from anon_dagster.release.ledger import BudgetExceeded
from anon_dagster.spec import spec_from_dict
from tests.support.ledgers import new_ledger


def _chi_square_pvalue(samples: np.ndarray, scale: Fraction) -> float:
    """Chi-square goodness of fit of integer samples against the exact pmf (tails pooled)."""
    p = discrete_laplace_pmf(np.arange(-200, 201), scale)
    support = np.arange(-200, 201)
    keep = p * len(samples) >= 5  # bins with enough expected counts; the rest pooled
    lo, hi = support[keep].min(), support[keep].max()
    observed = [np.sum(samples < lo)] + [np.sum(samples == v) for v in range(lo, hi + 1)] + [np.sum(samples > hi)]
    expected_p = np.concatenate([[p[support < lo].sum()], p[(support >= lo) & (support <= hi)], [p[support > hi].sum()]])
    expected_p = expected_p / expected_p.sum()
    return float(stats.chisquare(observed, expected_p * len(samples)).pvalue)


def test_noise_matches_the_discrete_laplace_of_sensitivity_over_epsilon():
    # a count with max_contributions 2 at epsilon 0.8: scale = 2 / 0.8 = 5/2
    config = AggregatesConfig(group_by=(), count=True, max_contributions=2)
    assert config.sensitivity("count") == 2
    rng = random.Random(20240101)
    scale = Fraction(2) / exact_fraction(0.8)
    assert scale == Fraction(5, 2)
    samples = np.array([discrete_laplace(scale, rng) for _ in range(20000)])
    assert _chi_square_pvalue(samples, scale) > 0.001
    # the same test rejects noise of the wrong scale (it has power)
    assert _chi_square_pvalue(samples, Fraction(2)) < 1e-6
    err = discrete_laplace_error(scale)
    assert math.isclose(samples.var(), err["variance"], rel_tol=0.05)
    assert math.isclose(np.abs(samples).mean(), err["mean_abs_error"], rel_tol=0.05)
    assert np.mean(np.abs(samples) <= err["interval_95"]) >= 0.94


def test_error_figures_by_hand():
    # scale 1: p = e^-1; variance 2p/(1-p)^2; E|Y| = 2p/(1-p^2)
    p = math.exp(-1)
    err = discrete_laplace_error(1)
    assert math.isclose(err["variance"], 2 * p / (1 - p) ** 2)
    assert math.isclose(err["mean_abs_error"], 2 * p / (1 - p * p))
    a = int(err["interval_95"])
    tail = lambda a: 2 * p ** (a + 1) / (1 + p)  # noqa: E731  P(|Y| > a)
    assert tail(a) <= 0.05 < tail(a - 1)
    assert math.isclose(discrete_laplace_pmf(np.arange(-500, 501), Fraction(7, 3)).sum(), 1.0)


@settings(max_examples=20, deadline=None)
@given(st.fractions(min_value=0, max_value=3, max_denominator=7))
def test_bernoulli_exp_frequency(gamma):
    rng = random.Random(3)
    n = 3000
    hits = sum(bernoulli_exp(gamma, rng) for _ in range(n))
    p = math.exp(-float(gamma))
    assert abs(hits / n - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-9


def test_exact_fraction_reads_decimals_exactly():
    assert exact_fraction(0.1) == Fraction(1, 10)
    assert exact_fraction("0.25") == Fraction(1, 4)


def _spec(**aggregates) -> object:
    return spec_from_dict({
        "release": "stays",
        "source": {"path": "x.csv"},
        "columns": {
            "patient_id": {"role": "identifier", "pseudonymize": {"method": "hmac"}},
            "province": {"role": "quasi"},
            "sex": {"role": "quasi"},
            "length_of_stay": {"role": "insensitive"},
        },
        "anonymization": {"method": "none"},
        "composition": {"population": "patients", "person": "patient_id"},
        "publication": {"path": "out.csv", "mode": "aggregates", "epsilon": 0.3, "total_epsilon": 1.0,
                        "aggregates": aggregates},
    })


def test_aggregates_config_parses_and_reports_every_problem():
    spec = _spec(group_by=["province"], sums=[{"column": "length_of_stay", "lower": 0, "upper": 60}],
                 max_contributions=2, domain={"province": ["A", "B"]})
    config = aggregates_config(spec)
    assert config.person == "patient_id"  # default: composition.person
    assert config.measures == ["count", "sum_length_of_stay"]
    assert config.sensitivity("sum_length_of_stay") == 120
    bad = _spec(group_by=["nope", "patient_id"], sums=[{"column": "x", "lower": 5, "upper": 1.5}],
                max_contributions=0, colour="red")
    with pytest.raises(SpecError) as info:
        aggregates_config(bad)
    text = str(info.value)
    for fragment in ("'nope'", "identifier", "'x'", "integers", "max_contributions", "colour"):
        assert fragment in text


def test_aggregates_bound_contributions_and_cover_the_domain():
    df = pd.DataFrame({
        "patient_id": ["a"] * 5 + ["b", "c"],
        "province": ["A"] * 5 + ["A", "C"],
        "sex": ["F"] * 7,
        "length_of_stay": [100, 1, 1, 1, 1, 3, 4],
    })
    config = AggregatesConfig(
        group_by=("province",), count=True, sums=(SumSpec("length_of_stay", 0, 10),),
        max_contributions=1, person="patient_id", domain={"province": ("A", "B")},
    )
    # a huge epsilon makes the noise vanish with overwhelming probability: exact values show
    result = dp_aggregates(df, config, 1e9, rng=random.Random(0))
    table = result.table.set_index("province")
    assert list(table.index) == ["A", "B"]  # B is in the domain though empty; C is outside it
    assert table.loc["A", "count"] == 2 and table.loc["B", "count"] == 0
    assert table.loc["A", "sum_length_of_stay"] == 10 + 3  # a's first row clamped to 10
    assert result.rows_dropped_by_bound == 4 and result.rows_outside_domain == 1
    assert result.domain_declared and result.cells == 2
    assert result.measures["sum_length_of_stay"]["sensitivity"] == 10.0


def test_aggregates_noise_is_integer_and_centred():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"g": rng.choice(list("abcdefghij"), 5000), "v": rng.integers(0, 5, 5000)})
    config = AggregatesConfig(group_by=("g",), count=True, sums=(SumSpec("v", 0, 4),))
    noise = []
    for seed in range(30):
        out = dp_aggregates(df, config, 1.0, rng=random.Random(seed))
        true = df.groupby("g").size().reindex(out.table["g"]).to_numpy()
        noise.extend(out.table["count"].to_numpy() - true)
        assert out.table["count"].dtype == "int64"
    noise = np.array(noise)
    # count: epsilon 1 split over two measures, sensitivity 1 -> scale 2
    err = discrete_laplace_error(2)
    assert abs(noise.mean()) < 4 * err["std"] / math.sqrt(len(noise))
    assert math.isclose(out.measures["count"]["variance"], err["variance"])


def test_a_dp_release_series_stops_at_the_budget(tmp_path):
    spec = _spec(group_by=["province"])
    assert epsilon_spend(spec) == (0.3, 1.0, "basic", None)
    assert budget_population(spec) == "patients"
    ledger = new_ledger(tmp_path / "l.sqlite")
    published = []
    for year in ("2021", "2022", "2023", "2024", "2025"):
        try:
            ledger.record(release=spec.release, partition=year, population=budget_population(spec),
                          spec_hash=spec.spec_hash(), data_hash=f"h{year}", qis={}, k=None,
                          epsilon_spend=epsilon_spend(spec))
            published.append(year)
        except BudgetExceeded as exc:
            assert "total_epsilon=1" in str(exc)
            break
    assert published == ["2021", "2022", "2023"]  # 0.9 spent; a fourth 0.3 would make 1.2
    assert ledger.counts()["epsilon_spend"] == 3
    # re-publishing the same partition with the same data spends nothing more
    again = ledger.record(release=spec.release, partition="2021", population="patients",
                          spec_hash="s", data_hash="h2021", qis={}, k=None, epsilon_spend=epsilon_spend(spec))
    assert again.action == "unchanged" and ledger.counts()["epsilon_spend"] == 3
    # advanced composition with many small releases goes further than basic
    small = [0.01] * 400
    ledger2 = new_ledger(tmp_path / "l2.sqlite")
    n_basic = n_adv = 0
    for i, e in enumerate(small):
        try:
            ledger2.record(release="s", partition=str(i), population="p", spec_hash="s", data_hash="h",
                           qis={}, k=None, epsilon_spend=(e, 1.0, "advanced", 1e-6))
            n_adv += 1
        except BudgetExceeded:
            break
    n_basic = int(round(1.0 / 0.01))
    assert n_adv > n_basic


def test_dp_release_end_to_end_report_and_refusal(tmp_path):
    from anon_dagster.release.publish import dp_release, record_evaluation
    from anon_dagster.release.report import render_markdown, report_inputs

    spec = _spec(group_by=["province"], domain={"province": ["A", "B"]})
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"patient_id": [f"p{i}" for i in range(300)], "province": rng.choice(["A", "B"], 300),
                       "sex": "F", "length_of_stay": rng.integers(0, 9, 300)})
    ledger = new_ledger(tmp_path / "l.sqlite")
    verdicts = []
    for year in ("2021", "2022", "2023", "2024"):
        try:
            result, dp_info = dp_release(spec, df, ledger, rng=random.Random(int(year)))
        except BudgetExceeded:
            verdicts.append("refused")
            continue
        inputs = report_inputs(spec, partition=year, data_hash=f"h{year}", dp=dp_info,
                               evaluated_at=f"{year}-06-01T00:00:00Z")
        outcome, report = record_evaluation(ledger, spec, inputs, epsilon_spend=epsilon_spend(spec))
        assert report["verdict"]["publishable"] and outcome.action == "inserted"
        assert "epsilon_budget" in [c["name"] for c in report["verdict"]["checks"]]
        assert report["measures"]["dp"]["measures"]["count"]["sensitivity"] == 1.0
        assert "95% half-width" in render_markdown(report)
        verdicts.append("published")
    assert verdicts == ["published", "published", "published", "refused"]
    assert ledger.counts()["epsilon_spend"] == 3
