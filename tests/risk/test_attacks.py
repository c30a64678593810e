"""The attacks of anon_dagster.risk.attacks: hand-computed cases, ties, persons, properties, privacy."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize import anonymize
from anon_dagster.errors import DataError
from anon_dagster.risk.attacks import (
    AttackConfig,
    Budget,
    prepare,
    recode_targets,
    residual,
    residual_interval,
    run_attacks,
    wilson,
)
from anon_dagster.risk.attacks.coding import ReleaseCoding
from anon_dagster.risk.attacks.search import find
from tests.support.specs import release_spec

ALL = AttackConfig(targets=None)


def _one(results, attack, secret=None):
    return next(r for r in results if r.attack == attack and r.secret == secret)


def _run(release, control, columns, *, attacks, secrets=(), persons=None, control_persons=None,
         config=ALL, originals=None, **kw):
    return run_attacks(release, release if originals is None else originals, control, columns=columns,
                       secrets=secrets, persons=persons, control_persons=control_persons, config=config,
                       attacks=attacks, seed=kw.pop("seed", 7), **kw)


# ----- singling out, by hand -----------------------------------------------------------------------


def test_singling_out_isolates_exactly_the_persons_alone_in_their_tuple():
    release = pd.DataFrame({"a": ["x", "x", "y", "y", "z"], "b": ["1", "1", "1", "2", "2"]})
    control = pd.DataFrame({"a": ["x", "z", "w"], "b": ["1", "2", "1"]})
    results = _run(release, control, ["a", "b"], attacks=("singling_out_multivariate", "singling_out_univariate"))
    multi = _one(results, "singling_out_multivariate")
    # (x,1) holds for two persons; (y,1), (y,2), (z,2) each isolate the target
    assert multi.main.value == pytest.approx(3 / 5)
    # control: (z,2) isolates somebody (by chance), (x,1) two persons, (w,1) nobody
    assert multi.control.value == pytest.approx(1 / 3)
    assert multi.residual == pytest.approx((3 / 5 - 1 / 3) / (2 / 3))
    assert (multi.main.n, multi.control.n, multi.queries) == (5, 3, 8)
    uni = _one(results, "singling_out_univariate")
    # a = z isolates the last row; no value of b isolates anybody: 1/2 of one target's predicates
    assert uni.main.value == pytest.approx(0.5 / 5)
    assert uni.control.value == pytest.approx(0.5 / 3)


def test_k_anonymity_leaves_nobody_singled_out():
    release = pd.DataFrame({"a": ["x"] * 3 + ["y"] * 3, "b": ["1"] * 6})
    control = pd.DataFrame({"a": ["x", "y"], "b": ["1", "1"]})
    res = _one(_run(release, control, ["a", "b"], attacks=("singling_out_multivariate",)), "singling_out_multivariate")
    assert (res.main.value, res.control.value, res.residual) == (0.0, 0.0, 0.0)


def test_a_person_counts_once_however_many_rows_they_have():
    # the two x rows are one person: the predicate a = x holds for exactly one person, who is the target
    release = pd.DataFrame({"a": ["x", "x", "y", "y"]})
    persons = pd.Series(["P1", "P1", "P2", "P3"])
    control = pd.DataFrame({"a": ["y"]})
    res = _one(_run(release, control, ["a"], attacks=("singling_out_multivariate",), persons=persons),
               "singling_out_multivariate")
    assert res.main.n == 3  # three persons, not four rows
    assert res.main.value == pytest.approx(1 / 3)


# ----- linkability, by hand ------------------------------------------------------------------------


def test_linkability_counts_each_tie_as_one_over_t():
    release = pd.DataFrame({"a": ["x", "y", "y", "z"], "b": [1, 2, 3, 3]})
    control = pd.DataFrame({"a": ["w", "x"], "b": [1, 3]})
    res = _one(_run(release, control, ["a", "b"], attacks=("linkability",)), "linkability")
    # (x,1): one record each side, the same; (y,2): 2 on a, 1 on b -> 1/2; (y,3): 2 and 2 sharing
    # one -> 1/4; (z,3): 1 and 2 -> 1/2
    assert res.main.value == pytest.approx((1 + 0.5 + 0.25 + 0.5) / 4)
    # (w,1): nothing covers w, so every record is nearest on a (4), b = 1 reaches the first -> 1/4;
    # (x,3): the first record on a, the last two on b: no common person
    assert res.control.value == pytest.approx(0.25 / 2)
    assert res.settings == {"part_a": ["a"], "part_b": ["b"]}


def test_a_row_links_to_exactly_one_record():
    release = pd.DataFrame({"a": ["x", "y"], "b": ["1", "2"]})
    res = _one(_run(release, release.iloc[:0], ["a", "b"], attacks=("linkability",)), "linkability")
    assert res.main.value == 1.0 and res.control.n == 0


def test_identical_records_tie_they_are_never_taken_first():
    release = pd.DataFrame({"a": ["x"] * 3, "b": ["1"] * 3})
    res = _one(_run(release, release.iloc[:1], ["a", "b"], attacks=("linkability",)), "linkability")
    assert res.main.value == pytest.approx(1 / 3)  # 3 persons on each side, all shared: 3 / 9
    assert res.control.value == pytest.approx(1 / 3)
    # the same three rows as one person: one candidate on each side
    one = _one(_run(release, release.iloc[:1], ["a", "b"], attacks=("linkability",),
                    persons=pd.Series(["P"] * 3)), "linkability")
    assert (one.main.value, one.main.n) == (1.0, 1)


# ----- inference, by hand --------------------------------------------------------------------------


def test_inference_is_certain_and_so_is_the_control_when_the_release_holds_only_regularities():
    release = pd.DataFrame({"a": ["x", "x", "y", "y"], "s": ["p", "p", "q", "q"]})
    control = pd.DataFrame({"a": ["x", "y", "y"], "s": ["p", "q", "q"]})
    res = _one(_run(release, control, ["a"], secrets=["s"], attacks=("inference",)), "inference", "s")
    assert (res.main.value, res.control.value, res.residual) == (1.0, 1.0, 0.0)
    assert res.baseline.n == 4


def test_inference_draws_among_equally_frequent_secrets_and_shows_membership():
    release = pd.DataFrame({"a": ["x", "x", "x", "y", "y", "y"], "s": ["p", "p", "q", "q", "q", "p"]})
    control = pd.DataFrame({"a": ["x", "y"], "s": ["p", "p"]})
    res = _one(_run(release, control, ["a"], secrets=["s"], attacks=("inference",)), "inference", "s")
    # class x guesses p (2 of 3 targets right), class y guesses q (2 of 3)
    assert res.main.value == pytest.approx(4 / 6)
    assert res.control.value == pytest.approx(0.5)  # x -> p right, y -> q wrong
    tie = pd.DataFrame({"a": ["x", "x"], "s": ["p", "q"]})
    res = _one(_run(tie, tie.iloc[:0], ["a"], secrets=["s"], attacks=("inference",)), "inference", "s")
    assert res.main.value == pytest.approx(0.5)  # two modes: each right with chance 1/2


def test_numeric_inference_takes_a_random_neighbour_within_the_tolerance():
    release = pd.DataFrame({"a": ["x", "x", "y"], "s": [100.0, 104.0, 50.0]})
    control = pd.DataFrame({"a": ["x"], "s": [200.0]})
    res = _one(_run(release, control, ["a"], secrets=["s"], attacks=("inference",),
                    config=AttackConfig(targets=None, tolerance=0.05)), "inference", "s")
    # 100: both neighbours within 5 %; 104: both (100 is within 5.2); 50: its own value
    assert res.main.value == pytest.approx(1.0)
    assert res.control.value == 0.0
    res = _one(_run(release, control, ["a"], secrets=["s"], attacks=("inference",),
                    config=AttackConfig(targets=None, tolerance=0.01)), "inference", "s")
    assert res.main.value == pytest.approx((0.5 + 0.5 + 1) / 3)
    assert res.settings["kind"] == "numeric" and res.settings["tolerance"] == 0.01


def test_a_secret_published_as_a_star_is_no_guess():
    release = pd.DataFrame({"a": ["x", "x", "x"], "s": ["*", "*", "p"]})
    originals = release.assign(s=["q", "q", "p"])
    res = _one(_run(release, release.iloc[:0], ["a"], secrets=["s"], attacks=("inference",), originals=originals),
               "inference", "s")
    # the starred rows reveal nothing: the guess is p (not *, which would cover every secret)
    assert res.main.value == pytest.approx(1 / 3)


# ----- recoding through the transformation record --------------------------------------------------


def _adultish(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 80, n), "zip": rng.choice(["28001", "28002", "28013", "08001"], n),
                         "sex": rng.choice(["F", "M"], n), "s": rng.choice(["a", "b", "c"], n)})


def _spec(method: str, k: int, suppression: str = "rows", max_suppression: float = 0.1):
    return release_spec({
        "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5, 10, 20]}},
        "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [4, 3]}},
        "sex": {"role": "quasi"}, "s": {"role": "sensitive"},
    }, anonymization={"method": method, "k": k, "max_suppression": max_suppression, "suppression": suppression})


@pytest.mark.parametrize("method, suppression", [("global", "rows"), ("global", "cells"), ("mondrian", "rows")])
def test_every_released_record_is_covered_by_its_own_published_row(method, suppression):
    raw = _adultish(400, 1)
    spec = _spec(method, 5, suppression, 0.2)
    result = anonymize(raw, spec)
    if suppression == "cells":  # a suppressed cell is published as *, which covers every value
        assert (result.data[["age", "zip"]].astype(str) == "*").to_numpy().any()
    originals = raw.loc[result.data.index].reset_index(drop=True)
    coding = ReleaseCoding(result.data, result.record, spec.hierarchies)
    qis = ["age", "zip", "sex"]
    recoded = recode_targets(coding, originals, qis)
    for q in qis:
        rc = recoded[q]
        own = coding[q].codes
        assert (rc.distance(rc.value, own).diagonal() == 0).all(), q
    setup = prepare(result.data, raw.loc[result.data.index], raw.iloc[:0], columns=qis,
                    record=result.record, hierarchies=spec.hierarchies)
    sets = find(setup.tuples(qis), setup.recoded, exact_only=True)
    assert (sets.of_target >= 0).all()  # every main target is covered by some class: its own


def test_global_recoding_k_anonymous_release_singles_out_nobody():
    raw = _adultish(600, 2)
    spec = _spec("global", 5)
    released, control = raw.iloc[:400], raw.iloc[400:]
    result = anonymize(released, spec)
    results = run_attacks(result.data, released.loc[result.data.index], control, columns=["age", "zip", "sex"],
                          secrets=["s"], record=result.record, hierarchies=spec.hierarchies)
    so = _one(results, "singling_out_multivariate")
    assert so.main.value == 0.0 and so.control.value == 0.0
    assert _one(results, "inference", "s").main.n == result.data.shape[0]


def test_the_seed_comes_from_the_output_hash_so_a_release_gives_the_same_figures_again():
    raw = _adultish(500, 3)
    spec = _spec("mondrian", 4)
    released, control = raw.iloc[:350], raw.iloc[350:]
    result = anonymize(released, spec)
    run = lambda: [r.to_json() for r in run_attacks(  # noqa: E731
        result.data, released.loc[result.data.index], control, columns=["age", "zip", "sex"], secrets=["s"],
        record=result.record, hierarchies=spec.hierarchies, config=AttackConfig(targets=100, predicates=4))]
    assert run() == run()


# ----- budget, output, intervals -------------------------------------------------------------------


def test_a_query_budget_cuts_the_attack_and_the_result_says_so():
    release = pd.DataFrame({"a": [str(i % 50) for i in range(500)], "b": [str(i % 7) for i in range(500)]})
    control = release.iloc[:200].copy()
    config = AttackConfig(targets=None, chunk=64, budget=Budget(max_queries=300))
    res = _one(_run(release, control, ["a", "b"], attacks=("linkability",), config=config), "linkability")
    assert not res.complete and "query budget of 300" in res.cut
    assert res.queries <= 300 and res.main.n + res.control.n == res.queries // 2
    assert res.main.n > 0 and res.control.n > 0  # main and control attacked in turn
    assert res.to_json()["complete"] is False
    timed = _one(_run(release, control, ["a", "b"], attacks=("linkability",),
                      config=AttackConfig(targets=None, budget=Budget(max_seconds=0))), "linkability")
    assert not timed.complete and "time budget" in timed.cut and timed.main.n == 0


def test_nothing_personal_in_the_output():
    rng = np.random.default_rng(5)
    n = 300
    words = np.array([f"Qv{i:03d}zz" for i in range(40)], dtype=object)
    table = pd.DataFrame({"city": rng.choice(words, n), "job": rng.choice(words[:12], n),
                          "income": np.round(rng.uniform(1000, 9000, n), 2) + 0.37,
                          "illness": rng.choice(["Dx_alpha_q", "Dx_beta_q", "Dx_gamma_q"], n)})
    release, control = table.iloc[:200], table.iloc[200:]
    results = run_attacks(release, release, control, columns=["city", "job", "income"],
                          secrets=["illness", "income"], config=AttackConfig(targets=None, predicates=5))
    text = json.dumps([r.to_json() for r in results])
    for value in pd.unique(table[["city", "job", "illness"]].to_numpy().ravel()):
        assert value not in text
    for value in table["income"]:
        assert f"{value}" not in text and f"{value:.2f}" not in text
    assert {r.name for r in results} == {"singling_out_univariate", "singling_out_multivariate", "linkability",
                                         "inference[illness]", "inference[income]"}


def test_wilson_and_residual_figures():
    low, high = wilson(0.5, 1000)
    assert (high - low) / 2 == pytest.approx(0.031, abs=0.0005)
    assert wilson(0.0, 10)[0] == 0.0 and wilson(1.0, 10)[1] == 1.0
    assert residual(0.6, 0.2) == pytest.approx(0.5)
    assert residual(0.3, 1.0) == 0.0 and residual(0.0, 0.5) == -1.0
    lo, hi = residual_interval(0.6, 1000, 0.2, 1000)
    assert lo < 0.5 < hi and hi - lo < 0.15


def test_bad_input_is_a_data_error():
    release = pd.DataFrame({"a": ["x"]})
    with pytest.raises(DataError, match="'b' is not in the release"):
        run_attacks(release, release, release, columns=["a", "b"])
    with pytest.raises(DataError, match="original records"):
        run_attacks(release, pd.concat([release, release]), release, columns=["a"])


# ----- properties ----------------------------------------------------------------------------------

RATES = ("singling_out_univariate", "singling_out_multivariate", "linkability", "inference")


def _rates(results):
    return {r.name: (r.main.value, r.control.value, r.main.n, r.control.n) for r in results}


def _tables(draw):
    n = draw(st.integers(4, 30))
    m = draw(st.integers(0, 10))
    cat = st.sampled_from(["u", "v", "w"])
    rows = st.tuples(cat, cat, st.integers(0, 3), st.sampled_from(["p", "q"]))
    release = pd.DataFrame(draw(st.lists(rows, min_size=n, max_size=n)), columns=["a", "b", "c", "s"])
    control = pd.DataFrame(draw(st.lists(rows, min_size=m, max_size=m)), columns=["a", "b", "c", "s"])
    return release, control


@st.composite
def tables(draw):
    return _tables(draw)


def _close(x, y):
    for key in x:
        for a, b in zip(x[key], y[key], strict=True):
            assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b), key


@settings(max_examples=40, deadline=None)
@given(tables(), st.randoms(use_true_random=False))
def test_the_figures_do_not_depend_on_the_order_of_rows(data, rnd):
    release, control = data
    order = list(range(len(release)))
    rnd.shuffle(order)
    kw = {"columns": ["a", "b", "c"], "secrets": ["s"], "attacks": RATES, "config": ALL, "seed": 1}
    first = run_attacks(release, release, control, **kw)
    shuffled = release.iloc[order].reset_index(drop=True)
    again = run_attacks(shuffled, shuffled, control.iloc[::-1], **kw)
    _close(_rates(first), _rates(again))


@settings(max_examples=40, deadline=None)
@given(tables())
def test_the_figures_do_not_depend_on_the_names_of_values(data):
    release, control = data
    rename = {"a": {"u": "Lx", "v": "Ly", "w": "Lz"}, "b": {"u": "w", "v": "u", "w": "v"}, "s": {"p": "q", "q": "p"}}

    def renamed(df):
        return df.assign(**{c: df[c].map(m) for c, m in rename.items()})

    kw = {"columns": ["a", "b", "c"], "secrets": ["s"], "attacks": RATES, "config": ALL, "seed": 1}
    first = run_attacks(release, release, control, **kw)
    again = run_attacks(renamed(release), renamed(release), renamed(control), **kw)
    _close(_rates(first), _rates(again))


@pytest.mark.parametrize("method", ["global", "mondrian"])
def test_control_values_the_hierarchy_or_the_boxes_do_not_hold_are_compared_to_the_nearest(tmp_path, method):
    (tmp_path / "job.csv").write_text("nurse;health;*\ndoctor;health;*\nclerk;office;*\nmanager;office;*\n")
    rng = np.random.default_rng(4)
    raw = pd.DataFrame({"age": rng.integers(20, 60, 300), "job": rng.choice(["nurse", "doctor", "clerk", "manager"], 300),
                        "s": rng.choice(["a", "b"], 300)})
    spec = release_spec({
        "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5, 10, 20]}},
        "job": {"role": "quasi", "hierarchy": {"type": "table", "path": str(tmp_path / "job.csv")}},
        "s": {"role": "sensitive"},
    }, anonymization={"method": method, "k": 5, "max_suppression": 0.1})
    result = anonymize(raw, spec)
    control = pd.DataFrame({"age": [95, 30, 41], "job": ["pilot", "nurse", "pilot"], "s": ["a", "b", "a"]})
    results = run_attacks(result.data, raw.loc[result.data.index], control, columns=["age", "job"], secrets=["s"],
                          record=result.record, hierarchies=spec.hierarchies, config=ALL)
    for r in results:
        assert r.control.n == 3 and 0.0 <= r.control.value <= 1.0


def test_microaggregated_numbers_are_compared_by_distance():
    release = pd.DataFrame({"age": [30.5, 30.5, 61.0, 61.0], "s": ["p", "p", "q", "q"]})
    originals = release.assign(age=[30, 31, 60, 62])
    control = pd.DataFrame({"age": [33, 58], "s": ["p", "q"]})
    res = _one(_run(release, control, ["age"], secrets=["s"], attacks=("inference",), originals=originals),
               "inference", "s")
    assert (res.main.value, res.control.value) == (1.0, 1.0)
