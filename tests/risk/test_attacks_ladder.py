"""examples/attacks_ladder.py at reduced size (3,000 Adult records): the shapes, not the numbers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

LADDER_PATH = Path(__file__).resolve().parents[2] / "examples" / "attacks_ladder.py"


def _load():
    spec = importlib.util.spec_from_file_location("attacks_ladder", LADDER_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["attacks_ladder"] = module
    spec.loader.exec_module(module)
    return module


ladder_mod = _load()


@pytest.fixture(scope="module")
def ladder(adult_dir):
    figures = ladder_mod.main(rows=3000, verbose=False)
    return {step["release"]: step["attacks"] for step in figures["ladder"]}, figures


def test_the_ladder_splits_adult_in_halves_and_attacks_everybody(ladder):
    steps, figures = ladder
    assert figures["released"] == figures["control"] == 1500
    assert list(steps) == ["raw", "global k=10", "mondrian k=5", "cart synthetic"]
    for attacks in steps.values():
        assert list(attacks) == ["singling_out_multivariate", "linkability", "inference[occupation]",
                                 "inference[salary-class]"]
    assert steps["raw"]["linkability"]["targets"] == [1500, 1500]


def test_the_raw_release_gives_the_attacker_something_on_every_attack(ladder):
    raw = ladder[0]["raw"]
    assert raw["singling_out_multivariate"]["residual"] > 0.3
    assert raw["inference[occupation]"]["residual"] > 0.5
    assert raw["inference[salary-class]"]["residual"] > 0.5
    link = raw["linkability"]
    assert link["low"] > 0 and link["main"] > 10 * link["control"]
    for f in raw.values():
        assert f["low"] > 0  # every interval above 0


def test_global_recoding_at_k_10_leaves_residuals_near_0(ladder):
    glob = ladder[0]["global k=10"]
    assert glob["singling_out_multivariate"]["main"] == 0.0
    assert abs(glob["linkability"]["residual"]) < 0.01
    assert abs(glob["inference[occupation]"]["residual"]) < 0.1
    assert abs(glob["inference[salary-class]"]["residual"]) < 0.1
    for f in glob.values():
        assert f["low"] <= 0.0  # no interval above 0


def test_mondrian_at_k_5_leaves_clearly_more_salary_inference_than_global_at_k_10(ladder):
    steps = ladder[0]
    mondrian, glob = steps["mondrian k=5"]["inference[salary-class]"], steps["global k=10"]["inference[salary-class]"]
    assert mondrian["residual"] > glob["residual"] + 0.1
    assert mondrian["low"] > 0
    assert steps["mondrian k=5"]["singling_out_multivariate"]["main"] == 0.0


def test_the_cart_synthesis_keeps_less_than_the_raw_release_and_more_than_global_recoding(ladder):
    steps, figures = ladder
    synthetic, raw = steps["cart synthetic"], steps["raw"]
    for name in ("singling_out_multivariate", "inference[occupation]"):
        assert synthetic[name]["residual"] < raw[name]["residual"]
    assert synthetic["inference[occupation]"]["residual"] > steps["global k=10"]["inference[occupation]"]["residual"]
    audit = next(step["audit"] for step in figures["ladder"] if step["release"] == "cart synthetic")
    assert set(audit) == {"copy_rate_gap", "closer_to_train_gap", "mia_auc"}
    assert 0.0 < audit["copy_rate_gap"] < 1.0 and 0.5 < audit["mia_auc"] < 1.0
