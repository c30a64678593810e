"""examples/risk_ladder.py at reduced size: the seed study's phenomena, as shapes not numbers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

LADDER_PATH = Path(__file__).resolve().parents[2] / "examples" / "risk_ladder.py"


def _load():
    spec = importlib.util.spec_from_file_location("risk_ladder", LADDER_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["risk_ladder"] = module
    spec.loader.exec_module(module)
    return module


ladder_mod = _load()


@pytest.fixture(scope="module")
def result():
    return ladder_mod.main(population=200_000, discharges=4_000, seed=20240101, bootstrap=0,
                           verbose=False)


# ----- building blocks, hand-computed ------------------------------------------------------------


def test_age_bands_and_generalized_columns():
    ages = pd.Series([0, 14, 15, 29, 44, 45, 64, 65, 79, 80, 100])
    assert ladder_mod.age_band_labels(ages).tolist() == [
        "0-14", "0-14", "15-29", "15-29", "30-44", "45-64", "45-64", "65-79", "65-79", "80+", "80+"]
    frame = pd.DataFrame({"age": [37, 100], "postal_code": ["28014", "04110"]})
    out = ladder_mod.with_generalized_columns(frame)
    assert out["age_5y"].tolist() == ["35-39", "100-104"]
    assert out["postal_3"].tolist() == ["280**", "041**"]
    assert out["age_band"].tolist() == ["30-44", "80+"]
    assert list(frame.columns) == ["age", "postal_code"]     # input left untouched


def test_uniqueness_truth_on_a_hand_made_population():
    # classes over (a): x x x | y y | z | w  -> z and w are the population uniques (2 of 7)
    population = pd.DataFrame({"a": list("xxxyyzw")})
    step = ladder_mod.Step("t", ("a",))
    rows = ladder_mod.uniqueness_figures(population, step, fractions=[1.0], bootstrap=0)
    (row,) = rows
    assert row["records"] == 7 and row["sampling_fraction"] == 1.0
    assert row["truth"] == pytest.approx(2 / 7)
    assert row["population_share_unique"] == pytest.approx(2 / 7)
    # with the whole population as the sample, every model is exact
    for model in ("naive", "poisson", "poisson_gamma", "zayatz", "pitman", "snb", "dankar"):
        assert row[model] == pytest.approx(2 / 7), model


def test_uniqueness_truth_matches_a_pandas_recount():
    rng = np.random.default_rng(3)
    population = pd.DataFrame({"a": rng.integers(0, 40, 2000), "b": rng.integers(0, 30, 2000)})
    step = ladder_mod.Step("t", ("a", "b"))
    (row,) = ladder_mod.uniqueness_figures(population, step, fractions=[0.25], seed=8, bootstrap=0)
    sizes = population.groupby(["a", "b"])["a"].transform("size")
    assert row["population_share_unique"] == pytest.approx((sizes == 1).mean())
    assert row["records"] == 500
    # the truth is the unique share of *some* 500-person sample: bounded by what exists
    assert 0 <= row["truth"] <= (sizes == 1).sum() / 500
    assert row["naive"] >= row["truth"]


def test_unknown_step_is_named():
    with pytest.raises(ValueError, match="no ladder step 'nope'"):
        ladder_mod.step_named("nope")


# ----- the ladder ------------------------------------------------------------------------------


def test_ladder_has_six_steps_each_coarser(result):
    steps = result["ladder"]
    assert [s["step"] for s in steps] == [s.name for s in ladder_mod.LADDER]
    assert len(steps) == 6
    assert len({s["rows"] for s in steps}) == 1          # the same table at every step
    for before, after in zip(steps, steps[1:], strict=False):
        # each step coarsens the previous one: these can only move one way
        assert after["classes"] <= before["classes"], after["step"]
        assert after["uniques_pct"] <= before["uniques_pct"], after["step"]
        assert after["prosecutor_avg"] <= before["prosecutor_avg"], after["step"]
        assert after["utility_bits"] <= before["utility_bits"] + 1e-12, after["step"]
        assert after["k"] >= before["k"], after["step"]
        assert after["suppression_for_k5_pct"] <= before["suppression_for_k5_pct"], after["step"]
    for s in steps:
        assert s["prosecutor_avg"] == pytest.approx(s["classes"] / s["rows"])
        assert s["prosecutor_max"] == pytest.approx(1 / s["k"])
        assert 0 <= s["marketer"] <= s["journalist_max"] <= s["prosecutor_max"]


def test_average_risk_falls_an_order_of_magnitude_while_k_stays_1(result):
    steps = result["ladder"]
    raw = steps[0]
    assert raw["k"] == 1 and raw["uniques_pct"] > 50
    still_k1 = [s for s in steps if s["k"] == 1]
    assert min(s["prosecutor_avg"] for s in still_k1) <= raw["prosecutor_avg"] / 10


def test_adversary_models_are_orders_of_magnitude_apart(result):
    a = result["adversaries"]
    assert a["step"] == "age bands"
    assert a["prosecutor_max"] >= 10 * a["journalist_max"]
    assert a["journalist_max"] >= 5 * a["marketer"]
    assert a["prosecutor_avg"] >= 5 * a["marketer"]


def test_population_uniqueness_estimators_shape(result):
    rows = {round(r["sampling_fraction"], 4): r for r in result["uniqueness"]}
    assert sorted(rows) == [0.01, 0.05, 0.2, 0.5]
    for r in rows.values():
        # a sampled population unique is always a sample unique: naive is an upper bound
        assert r["naive"] >= r["truth"]
        assert r["truth"] > 0
    small = rows[0.01]
    assert small["naive"] >= 5 * small["truth"]                 # naive overstates, by a lot
    assert small["poisson_gamma"] < small["truth"]              # Poisson-Gamma understates
    assert rows[0.05]["poisson_gamma"] < rows[0.05]["truth"]
    # naive's overstatement shrinks as the sample grows
    ratios = [rows[f]["naive"] / rows[f]["truth"] for f in sorted(rows)]
    assert ratios[0] > ratios[-1]
    # the truth estimates one population figure: it barely depends on f
    pop_share = small["population_share_unique"]
    assert rows[0.5]["truth"] == pytest.approx(pop_share, rel=0.2)


def test_render_prints_the_three_tables(result):
    text = ladder_mod.render(result)
    assert "1. Generalization ladder" in text and "2. Adversary models" in text
    assert "3. Population uniqueness" in text
    for step in ladder_mod.LADDER:
        assert step.name in text
