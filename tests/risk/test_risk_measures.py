"""measure_risk: hand-computed cases, golden tests for known peer bugs, bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from anon_dagster import RiskMeasures, measure_risk
from anon_dagster.anonymize.record import class_histogram
from anon_dagster.errors import DataError, HierarchyError, UserError
from anon_dagster.hierarchies import TableHierarchy
from anon_dagster.risk import CONTRACT_KEYS, utility_query_error


def hiv_table(index=None) -> pd.DataFrame:
    """One class of 99 "none" and 1 "HIV", one class of 2 distinct values."""
    df = pd.DataFrame({
        "zip": ["280"] * 100 + ["281"] * 2,
        "diag": ["none"] * 99 + ["HIV"] + ["flu", "none"],
    })
    if index is not None:
        df.index = index
    return df


def test_hiv_class_entropy_and_distinct():
    m = measure_risk(hiv_table().iloc[:100], ["zip"], "diag")
    assert m.l_distinct == 2
    entropy = -(0.99 * math.log(0.99) + 0.01 * math.log(0.01))
    assert entropy == pytest.approx(0.0560, abs=1e-4)
    assert entropy / math.log(2) == pytest.approx(0.0808, abs=1e-4)  # the 0.08 bits
    assert m.l_entropy == pytest.approx(math.exp(entropy), rel=1e-12)
    assert m.l_entropy == pytest.approx(1.0576, abs=1e-4)
    assert isinstance(m.l_entropy, float) and m.l_entropy != 1  # never rounded to an int
    assert m.t_closeness == pytest.approx(0.0)


def test_contract_figures_hand_computed():
    m = measure_risk(hiv_table(), ["zip"], "diag")
    d = m.to_dict()
    assert list(d)[: len(CONTRACT_KEYS)] == list(CONTRACT_KEYS)
    assert d["rows"] == 102 and d["classes"] == 2 and d["k"] == 2
    assert d["uniques_fraction"] == 0.0
    assert d["prosecutor_max"] == pytest.approx(0.5)
    assert d["prosecutor_avg"] == pytest.approx(2 / 102)
    assert d["prosecutor_avg_per_class"] == pytest.approx((1 / 100 + 1 / 2) / 2)
    # class "281" holds {flu, none}; H = ln 2; the "280" class is the worst
    assert d["l_distinct"] == 2
    # p = none 100/102, HIV 1/102, flu 1/102; class 281: q = (.5, 0, .5)
    p = np.array([100, 1, 1]) / 102
    tv_281 = 0.5 * np.abs(np.array([0.5, 0, 0.5]) - p).sum()
    tv_280 = 0.5 * np.abs(np.array([0.99, 0.01, 0]) - p).sum()
    assert d["t_closeness"] == pytest.approx(max(tv_281, tv_280))
    assert d["journalist_max"] is None and d["marketer"] is None
    assert d["records_at_risk"] == pytest.approx(2 / 102)  # 1/2 > 0.2: the class of 2 is at risk
    json.dumps(d)  # plain types only


def test_records_at_risk_threshold():
    m = measure_risk(hiv_table(), ["zip"], "diag", risk_threshold=0.4)
    assert m.to_dict()["records_at_risk"] == pytest.approx(2 / 102)
    m = measure_risk(hiv_table(), ["zip"], "diag", risk_threshold=0.5)
    assert m.to_dict()["records_at_risk"] == 0.0  # strictly above the threshold


def test_k_stays_one_while_average_risk_falls():
    raw = pd.DataFrame({"a": range(10)})
    coarse = pd.DataFrame({"a": [0] + [1] * 9})
    m_raw, m_coarse = measure_risk(raw, ["a"]), measure_risk(coarse, ["a"])
    assert m_raw.k == m_coarse.k == 1
    assert m_raw.prosecutor_avg == pytest.approx(1.0)
    assert m_coarse.prosecutor_avg == pytest.approx(0.2)
    assert m_raw.prosecutor_max == m_coarse.prosecutor_max == 1.0
    assert m_coarse.uniques_fraction == pytest.approx(0.1)


def test_histogram_counts_classes_and_rows():
    df = pd.DataFrame({"a": [1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4]})
    hist = {b["sizes"]: (b["classes"], b["rows"]) for b in measure_risk(df, ["a"]).extras["class_size_histogram"]}
    assert hist["1"] == (1, 1) and hist["2"] == (1, 2) and hist["3-4"] == (1, 3) and hist["5-9"] == (1, 5)
    assert sum(c for c, _ in hist.values()) == 4 and sum(r for _, r in hist.values()) == 11


def test_record_histogram_uses_the_risk_bands():
    # sizes 1, 1, 2, 4, 99, 100, 999, 1000: the bands' edges on both sides
    sizes = np.array([1, 1, 2, 4, 99, 100, 999, 1000])
    assert class_histogram(sizes) == {
        "1": 2, "2": 1, "3-4": 1, "5-9": 0, "10-19": 0, "20-49": 0, "50-99": 1,
        "100-999": 2, "1000+": 1,
    }


# ----- golden tests: the peers' reproduced bugs ---------------------------------------------


@pytest.mark.parametrize("index", [
    list(range(1000, 1102)),
    [f"r{i}" for i in range(102)],
    list(range(101, -1, -1)),
    [7] * 102,  # duplicated labels
])
def test_non_range_index_gives_identical_figures(index):
    base = measure_risk(hiv_table(), ["zip"], "diag").to_dict()
    assert measure_risk(hiv_table(index), ["zip"], "diag").to_dict() == base


def test_sorted_frame_gives_the_same_t():
    df = hiv_table()
    base = measure_risk(df, ["zip"], "diag")
    for by in (["diag"], ["zip", "diag"], ["diag", "zip"]):
        sorted_df = df.sort_values(by)  # keeps the old labels, in a new order
        assert measure_risk(sorted_df, ["zip"], "diag").t_closeness == pytest.approx(base.t_closeness)


def test_missing_values_are_kept_not_dropped():
    df = pd.DataFrame({
        "age": [30, 30, np.nan, 40, 40, np.nan],
        "sex": ["F", "F", "M", None, None, "M"],
        "diag": ["a", "b", None, "a", np.nan, "c"],
    })
    m = measure_risk(df, ["age", "sex"], "diag")
    assert m.rows == 6 and m.classes == 3 and m.k == 2
    # the class (40, missing) holds {"a", missing}: missing is a value of its own
    assert m.l_distinct == 2
    one_missing = df.copy()
    one_missing.loc[5, "sex"] = None  # (NaN, None) differs from (NaN, "M")
    m2 = measure_risk(one_missing, ["age", "sex"], "diag")
    assert m2.k == 1 and m2.rows == 6


def test_missing_sensitive_value_counts_as_a_value():
    df = pd.DataFrame({"q": [1, 1, 1, 1], "s": ["x", None, "x", None]})
    m = measure_risk(df, ["q"], "s")
    assert m.l_distinct == 2
    assert m.l_entropy == pytest.approx(2.0)


# ----- encodings -----------------------------------------------------------------------------


def test_categorical_and_arrow_columns_match_plain():
    df = hiv_table()
    base = measure_risk(df, ["zip"], "diag").to_dict()
    cat = df.astype("category")
    arrow = df.astype(pd.ArrowDtype(pa.string()))
    dict_arrow = pd.DataFrame({
        c: pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array([pa.array(df[c].tolist()).dictionary_encode()])))
        for c in df.columns
    })
    for other in (cat, arrow, dict_arrow):
        assert measure_risk(other, ["zip"], "diag").to_dict() == base


# ----- population: journalist, marketer, k-map ---------------------------------------------


def test_journalist_and_marketer_from_microdata():
    sample = pd.DataFrame({"a": ["x", "x", "y"]})
    population = pd.DataFrame({"a": ["x"] * 4 + ["y"] * 10 + ["z"] * 6})
    m = measure_risk(sample, ["a"], population=population, uniqueness=False)
    # F_x = 4, F_y = 10
    assert m.journalist_max == pytest.approx(1 / 4)
    marketer = (2 / 4 + 1 / 10) / 3
    assert m.marketer == pytest.approx(marketer)
    assert m.journalist_avg == pytest.approx(max(2 / 14, marketer))
    assert m.extras["k_map"] == 4
    assert m.extras["sampling_fraction"] == pytest.approx(3 / 20)


def test_population_frequency_table_with_count_column():
    sample = pd.DataFrame({"a": ["x", "x", "y"], "b": [1, 1, 2]})
    freq = pd.DataFrame({"a": ["x", "y", "y", "x"], "b": [1, 2, 2, 2], "n": [4, 3, 7, 100]})
    m = measure_risk(sample, ["a", "b"], population=freq, count_column="n", uniqueness=False)
    assert m.journalist_max == pytest.approx(1 / 4)  # (x,1): 4; (y,2): 3 + 7 rows repeat
    assert m.marketer == pytest.approx((2 / 4 + 1 / 10) / 3)
    assert m.extras["population_size"] == 114


def test_population_lacking_a_class_names_it():
    sample = pd.DataFrame({"a": ["x", "q"], "b": [1, 2]})
    population = pd.DataFrame({"a": ["x", "x"], "b": [1, 1]})
    with pytest.raises(DataError, match=r"a='q', b=2"):
        measure_risk(sample, ["a", "b"], population=population)


def test_population_smaller_than_sample_class_is_an_error():
    sample = pd.DataFrame({"a": ["x", "x", "x"]})
    with pytest.raises(DataError, match="3 rows but the population only 2"):
        measure_risk(sample, ["a"], population=pd.DataFrame({"a": ["x", "x"]}))


def test_journalist_estimated_from_sampling_fraction():
    sample = pd.DataFrame({"a": ["x", "x", "y"]})
    m = measure_risk(sample, ["a"], sampling_fraction=0.5, uniqueness=False)
    # F = n_c / f: x -> 4, y -> 2
    assert m.journalist_max == pytest.approx(0.5)
    assert m.marketer == pytest.approx((2 / 4 + 1 / 2) / 3)


# ----- recursive (c, l) ------------------------------------------------------------------------


def test_recursive_cl_hand_computed():
    # class A counts 5,3,2 ; class B counts 4,4
    df = pd.DataFrame({"q": ["A"] * 10 + ["B"] * 8,
                       "s": ["a"] * 5 + ["b"] * 3 + ["c"] * 2 + ["a"] * 4 + ["b"] * 4})
    # c = 2: A: l=2: 5 < 2*(3+2)=10 yes; l=3: 5 < 2*2=4 no -> 2.  B: l=2: 4 < 2*4=8 yes -> 2
    assert measure_risk(df, ["q"], "s", recursive_c=2).extras["l_recursive"] == 2
    # c = 3: A: l=3: 5 < 6 yes -> 3.  B: only 2 values -> 2; table: 2
    assert measure_risk(df, ["q"], "s", recursive_c=3).extras["l_recursive"] == 2
    # c = 1: l=1 needs r1 < 1*n_c: A 5 < 10 yes, l=2: 5 < 5 no -> 1
    assert measure_risk(df, ["q"], "s", recursive_c=1).extras["l_recursive"] == 1


# ----- t-closeness distances --------------------------------------------------------------------


def test_ordered_emd_matches_li_et_al_salary_example():
    salaries = [3, 4, 5, 6, 8, 11, 7, 9, 10]
    df = pd.DataFrame({"q": ["c1"] * 3 + ["c2"] * 3 + ["c3"] * 3, "salary": salaries})
    m = measure_risk(df, ["q"], "salary", sensitive_kind="numeric")
    assert m.extras["t_closeness_distance"] == "ordered_emd"
    per_class = dict(zip(m.class_table()["q"], m.class_table()["t"], strict=True))
    assert per_class["c1"] == pytest.approx(0.375)
    assert per_class["c2"] == pytest.approx(1 / 6)
    assert m.t_closeness == pytest.approx(0.375)


def test_ordinal_order_is_respected():
    df = pd.DataFrame({"q": ["a", "a", "b", "b"], "s": ["low", "high", "mid", "mid"]})
    m = measure_risk(df, ["q"], "s", sensitive_kind="ordinal", sensitive_order=["low", "mid", "high"])
    # P = (1/4, 1/2, 1/4) cumulative (.25, .75); class a Q = (.5, .5): |.25|+|-.25| = .5 /2 = .25
    assert m.t_closeness == pytest.approx(0.25)
    with pytest.raises(DataError, match="'mid' is not in its declared order"):
        measure_risk(df, ["q"], "s", sensitive_kind="ordinal", sensitive_order=["low", "high"])


def test_hierarchical_emd_hand_computed(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("flu;resp;*\npneumonia;resp;*\nulcer;digest;*\ngastritis;digest;*\n")
    h = TableHierarchy.from_csv("d", path)
    df = pd.DataFrame({"q": ["A", "A", "B", "B"], "d": ["flu", "pneumonia", "ulcer", "gastritis"]})
    m = measure_risk(df, ["q"], "d", sensitive_hierarchy=h)
    # level 0 TV(A) = .5, level 1 TV(A) = .5 -> mean .5 (H = 2)
    assert m.extras["t_closeness_distance"] == "hierarchical_emd"
    assert m.t_closeness == pytest.approx(0.5)
    df2 = pd.DataFrame({"q": ["A", "A", "B", "B"], "d": ["flu", "ulcer", "pneumonia", "gastritis"]})
    # level 0 TV = .5, level 1 TV = 0 -> .25: moving mass inside a branch is cheaper
    assert measure_risk(df2, ["q"], "d", sensitive_hierarchy=h).t_closeness == pytest.approx(0.25)


# ----- utility -------------------------------------------------------------------------------


def test_generic_utility_hand_computed():
    df = pd.DataFrame({"a": [1, 1, 2, 3]})
    m = measure_risk(df, ["a"], suppressed=1, k=2)
    assert m.extras["qi_entropy_bits"] == pytest.approx(1.5)  # p = .5, .25, .25
    assert m.extras["discernibility"] == pytest.approx(4 + 1 + 1 + 1 * 5)
    # the suppressed row is one more class of *: 5 input rows in 4 classes
    assert m.extras["aecs"] == pytest.approx(5 / 4)
    assert m.extras["aecs_normalized"] == pytest.approx(5 / 8)


def test_generalization_loss_and_precision(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("a;ab;*\nb;ab;*\nc;cd;*\nd;cd;*\n")
    h = TableHierarchy.from_csv("v", path)
    original = pd.DataFrame({"v": ["a", "b", "c", "d"]})
    published = pd.DataFrame({"v": ["ab", "ab", "c", "*"]})
    m = measure_risk(published, ["v"], hierarchies={"v": h}, original=original)
    # loss: ab -> (2-1)/(4-1) = 1/3 twice, c -> 0, * -> 1 : mean (2/3 + 1) / 4
    assert m.extras["generalization_loss"] == pytest.approx((2 / 3 + 1) / 4)
    # precision: levels 1/2, 1/2, 0, 1 -> 1 - 2/4
    assert m.extras["precision"] == pytest.approx(0.5)
    with pytest.raises(HierarchyError, match="'zz'"):
        measure_risk(pd.DataFrame({"v": ["zz"]}), ["v"], hierarchies={"v": h}, original=original)


# ----- breakdowns ------------------------------------------------------------------------------


def test_breakdown_by_subgroup_shows_the_minority():
    df = pd.DataFrame({
        "age": [30] * 8 + [40, 50],
        "province": ["big"] * 8 + ["small", "small"],
    })
    m = measure_risk(df, ["age"], subgroup="province")
    groups = {g["value"]: g for g in m.extras["subgroups"]["province"]}
    assert groups["big"]["k"] == 8 and groups["big"]["prosecutor_avg"] == pytest.approx(1 / 8)
    assert groups["small"]["k"] == 1 and groups["small"]["uniques_fraction"] == 1.0
    assert groups["small"]["prosecutor_avg"] == 1.0
    assert m.prosecutor_avg == pytest.approx(3 / 10)  # the overall average hides the minority


# ----- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, message", [
    ({"quasi_identifiers": []}, "no quasi-identifiers"),
    ({"quasi_identifiers": ["nope"]}, "'nope'"),
    ({"quasi_identifiers": ["zip"], "sensitive": "nope"}, "sensitive attribute 'nope'"),
    ({"quasi_identifiers": ["zip", "diag"], "sensitive": "diag"}, "both as quasi-identifier and as sensitive"),
    ({"quasi_identifiers": ["zip"], "sampling_fraction": 0}, "outside"),
    ({"quasi_identifiers": ["zip"], "sampling_fraction": 1.5}, "outside"),
    ({"quasi_identifiers": ["zip"], "count_column": "n"}, "without a population"),
])
def test_bad_input_raises_user_error(kwargs, message):
    with pytest.raises(UserError, match=message):
        measure_risk(hiv_table(), **kwargs)


def test_empty_table_is_an_error():
    with pytest.raises(DataError, match="empty"):
        measure_risk(hiv_table().iloc[:0], ["zip"])


def test_measures_type():
    m = measure_risk(hiv_table(), "zip")
    assert isinstance(m, RiskMeasures)
    assert m.record_risk().tolist() == [1 / 100] * 100 + [1 / 2] * 2


def test_utility_query_error_hand_computed():
    original = pd.DataFrame({
        "province": ["A"] * 4 + ["B"] * 2 + ["C"],
        "diag": ["flu", "flu", "none", "none", "flu", "none", "flu"],
    }, index=[9, 8, 7, 6, 5, 4, 3])
    # one "none" of A and the only row of C suppressed
    anonymized = original.iloc[[0, 1, 2, 4, 5]]
    result = utility_query_error(original, anonymized, "province", "diag")
    t = result.table.set_index(["province", "diag"])
    # A: flu 50% -> 66.7%, none 50% -> 33.3%; B unchanged; C: flu 100% -> absent (0)
    assert t.loc[("A", "flu"), "error_points"] == pytest.approx(100 / 6)
    assert t.loc[("B", "none"), "error_points"] == 0
    assert t.loc[("C", "flu"), "error_points"] == 100 and bool(t.loc[("C", "flu"), "missing_in_anonymized"])
    assert result.max_error_points == 100
    assert t.loc[("A", "none"), "count_anonymized"] == 1 and t.loc[("A", "none"), "rows_anonymized"] == 3
    without_c = utility_query_error(original.iloc[:6], anonymized, ["province"], "diag")
    assert without_c.max_error_points == pytest.approx(100 / 6)


def test_utility_queries_in_measure_risk():
    original = pd.DataFrame({"p": ["A", "A", "B", "B"], "q": [1, 1, 2, 2], "d": ["x", "y", "x", "x"]})
    m = measure_risk(original.iloc[[0, 2, 3]], ["q"], original=original,
                     utility_queries=[{"name": "by_p", "group_by": ["p"], "target": "d", "max_error_points": 5}])
    entry = m.to_dict()["utility_queries"]["by_p"]
    assert entry["max_error_points"] == pytest.approx(50.0)
    assert entry["max_error_points_allowed"] == 5


def test_population_typed_differently_matches_by_label():
    sample = pd.DataFrame({"age": [30, 30, 41], "sex": ["F", "F", "M"]})
    population = pd.DataFrame({"age": ["30", "41", "30", "52"], "sex": ["F", "M", "F", "F"], "n": [3, 5, 1, 9]})
    m = measure_risk(sample, ["age", "sex"], population=population, count_column="n", uniqueness=False)
    assert m.journalist_max == pytest.approx(1 / 4)  # (30, F): 3 + 1 people
    floats = population.assign(age=[30.0, 41.0, 30.0, np.nan])
    m2 = measure_risk(sample, ["age", "sex"], population=floats, count_column="n", uniqueness=False)
    assert m2.marketer == pytest.approx((2 / 4 + 1 / 5) / 3)


def test_population_qis_subset_and_lenient_population():
    sample = pd.DataFrame({"age": [30, 30, 41], "day": ["mon", "tue", "mon"]})
    register = pd.DataFrame({"age": [30, 30, 30, 41, 41]})
    with pytest.raises(DataError, match="'day'"):
        measure_risk(sample, ["age", "day"], population=register)
    m = measure_risk(sample, ["age", "day"], population=register, population_qis=["age"], uniqueness=False)
    # F over age only: 30 -> 3, 41 -> 2 (coarser classes: the figure understates)
    assert m.journalist_max == pytest.approx(1 / 2)
    assert m.marketer == pytest.approx((1 / 3 + 1 / 3 + 1 / 2) / 3)
    assert m.extras["population_qis"] == ["age"]
    events = pd.DataFrame({"age": [30, 30, 30]})  # three admissions, two people
    with pytest.raises(DataError, match="events"):
        measure_risk(events, ["age"], population=pd.DataFrame({"age": [30, 30]}))
    lenient = measure_risk(events, ["age"], population=pd.DataFrame({"age": [30, 30]}),
                           strict_population=False, uniqueness=False)
    assert lenient.journalist_max == pytest.approx(1 / 3)


def test_population_join_with_categorical_and_arrow_columns():
    sample = pd.DataFrame({"a": pd.Categorical(["x", "x", "y"]), "b": [1, 1, 2]})
    population = pd.DataFrame({"a": pd.array(["x", "y", "x", "z"], dtype=pd.ArrowDtype(pa.string())),
                               "b": [1, 2, 1, 3]})
    m = measure_risk(sample, ["a", "b"], population=population, uniqueness=False)
    # (x, 1): 2 people for 2 rows, (y, 2): 1 person for 1 row
    assert m.journalist_max == pytest.approx(1.0) and m.extras["k_map"] == 1
    assert m.marketer == pytest.approx((2 / 2 + 1 / 1) / 3)


def test_delta_presence_and_attribute_disclosure_are_reported():
    population = pd.DataFrame({"a": ["x"] * 4 + ["y"] * 4})
    subset = pd.DataFrame({"a": ["x", "x", "y"], "s": ["p", "q", "p"]})
    m = measure_risk(subset, ["a"], "s", population=population, presence=True, uniqueness=False)
    d = m.to_dict()
    assert d["delta_presence"]["delta_max"] == pytest.approx(0.5)
    assert d["delta_presence"]["delta_min"] == pytest.approx(0.25)
    # p = (2/3, 1/3); class x: (1/2, 1/2): |log2(.5/(1/3))| = 0.585 ; class y: log2(1/(2/3)) = 0.585
    assert d["delta_disclosure"] == pytest.approx(math.log2(1.5))
    assert d["beta_likeness"] == pytest.approx(0.5)  # (1/2 - 1/3) / (1/3)
