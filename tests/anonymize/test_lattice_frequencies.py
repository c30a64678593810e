"""The lattice search on a weighted frequency table finds what it finds on the rows.

The frequency table is the bottom node's: one row per distinct combination of the QIs and the
sensitive attribute, with the number of rows it stands for. Node, loss, suppressed rows, the
checks made and the frontier are those of the search over the rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anon_dagster.anonymize.coding import code_qi
from anon_dagster.anonymize.criteria import Policy
from anon_dagster.anonymize.global_recoding import classes_at, failing_rows
from anon_dagster.anonymize.lattice import Lattice
from anon_dagster.hierarchies import TableHierarchy
from anon_dagster.risk.frequencies import frequency_table
from anon_dagster.risk.sensitive import code_sensitive


@pytest.fixture(scope="module")
def adult(adult_dir: Path):
    df = pd.read_csv(adult_dir / "adult.csv", sep=";")
    hier = {c: TableHierarchy.from_csv(c, adult_dir / f"adult_hierarchy_{c}.csv") for c in df.columns}
    return df, hier


CASES = [
    (["sex", "age", "race", "education"], Policy(k=5), "loss", None),
    (["sex", "age", "race", "marital-status"], Policy(k=10, max_suppression=0.02), "entropy", None),
    (["workclass", "occupation", "native-country", "age"], Policy(k=5, max_suppression=0.01), "discernibility", None),
    (["age", "sex", "education"], Policy(k=3, l_distinct=2, max_suppression=0.03, sensitive=("salary-class",)),
     "entropy", "salary-class"),
    (["age", "race", "marital-status"], Policy(k=2, t_closeness=0.2, max_suppression=0.05,
                                               sensitive=("salary-class",)), "loss", "salary-class"),
    (["age", "race", "sex"], Policy(k=5, prosecutor_avg=0.05, max_suppression=0.01), "aecs", None),
]


@pytest.mark.parametrize("qis,policy,metric,sensitive", CASES)
def test_frequency_lattice_equals_the_rows(adult, qis, policy, metric, sensitive):
    df, hier = adult
    sens = [sensitive] if sensitive else []
    rows = Lattice([code_qi(df[c], hier[c]) for c in qis], policy,
                   [code_sensitive(df[s], s) for s in sens], metric=metric)
    on_rows = rows.search(frontier=True)
    freq = frequency_table(df, qis + sens).sample(frac=1.0, random_state=3).reset_index(drop=True)
    counts = freq["count"].to_numpy()
    lattice = Lattice.from_frequencies([code_qi(freq[c], hier[c]) for c in qis], counts, policy,
                                       [code_sensitive(freq[s], s) for s in sens], metric=metric)
    on_freq = lattice.search(frontier=True)
    assert lattice.n_rows == len(df) and lattice.budget == rows.budget
    assert on_freq.levels == on_rows.levels
    assert on_freq.loss == pytest.approx(on_rows.loss, rel=1e-12)
    assert on_freq.best.suppressed == on_rows.best.suppressed
    assert on_freq.best.classes == on_rows.best.classes
    assert sorted(f.levels for f in on_freq.frontier) == sorted(f.levels for f in on_rows.frontier)

    # the failing classes at the node: the rows the pandas engine suppresses
    row_class, sizes, failing = lattice.failing_classes(on_freq.levels)
    coded = [code_qi(df[c], hier[c]) for c in qis]
    rc, sz = classes_at(coded, list(on_rows.levels))
    attrs = sensitive_attributes_of(policy, df, sens)
    fail, _ = failing_rows(policy, rc, sz, attrs)
    assert int(counts[failing[row_class]].sum()) == int(fail.sum())
    assert int(sizes.sum()) == len(df)


def sensitive_attributes_of(policy: Policy, df: pd.DataFrame, sens: list[str]):
    return [code_sensitive(df[s], s) for s in sens] if policy.needs_sensitive else []


def test_weights_are_checked(adult):
    df, hier = adult
    freq = frequency_table(df, ["sex", "race"])
    qis = [code_qi(freq[c], hier[c]) for c in ("sex", "race")]
    with pytest.raises(ValueError, match="whole numbers >= 1"):
        Lattice.from_frequencies(qis, np.zeros(len(freq)), Policy(k=2))


def test_persons_on_a_frequency_table_search_as_on_its_rows(adult):
    """k per person from (person, QIs) -> count finds the node the rows find: a person's rows
    are its frequency rows repeated as many times as they count."""
    df, hier = adult
    qis = ["sex", "race", "age"]
    rows = df[qis].head(3000).reset_index(drop=True)
    rows["person"] = np.arange(len(rows)) // 3  # three rows a person, in up to three classes
    freq = frequency_table(rows, ["person", *qis])
    policy = Policy(k=4, max_suppression=0.05)
    on_rows = Lattice([code_qi(rows[c], hier[c]) for c in qis], policy,
                      persons=rows["person"].to_numpy()).search()
    on_freq = Lattice([code_qi(freq[c], hier[c]) for c in qis], policy, persons=freq["person"].to_numpy(),
                      weights=freq["count"].to_numpy()).search()
    assert on_freq.levels == on_rows.levels
    assert on_freq.best.suppressed == on_rows.best.suppressed
    per_row = Lattice([code_qi(rows[c], hier[c]) for c in qis], policy).search()
    assert per_row.levels != on_rows.levels  # the persons decide the node here: the case is not trivial



@pytest.mark.parametrize("policy", [Policy(k=10, max_suppression=0.02), Policy(k=25, max_suppression=0.05)])
def test_a_utility_query_on_a_frequency_table_is_the_rows_error(adult, policy):
    """The query's prevalences counted from the frequency rows weighted by their counts: the same
    error at every node the search checks, so the same node, the rows' error, and the same
    suppressed rows."""
    from anon_dagster.anonymize.lattice import QuerySpec

    df, hier = adult
    qis = ["sex", "age", "race", "marital-status"]

    def query(frame: pd.DataFrame) -> QuerySpec:
        target, _ = pd.factorize(frame["salary-class"])
        return QuerySpec(group_qi=[0, 2], group_fixed=[], target=target.astype(np.int64))

    metric = "query:by_sex_race"
    rows = Lattice([code_qi(df[c], hier[c]) for c in qis], policy, metric=metric, query=query(df))
    on_rows = rows.search()
    freq = frequency_table(df, qis + ["salary-class"]).sample(frac=1.0, random_state=5).reset_index(drop=True)
    lattice = Lattice.from_frequencies([code_qi(freq[c], hier[c]) for c in qis], freq["count"].to_numpy(), policy,
                                       metric=metric, query=query(freq))
    on_freq = lattice.search()
    assert on_freq.levels == on_rows.levels and on_freq.best.suppressed == on_rows.best.suppressed
    assert on_freq.loss == pytest.approx(on_rows.loss, abs=1e-9)
    # every node's error, suppression included, is the rows' own
    errors = []
    for idx in range(lattice.size):
        _, rows_failing, _ = rows._verdict(rows.state(idx), policy)
        _, freq_failing, _ = lattice._verdict(lattice.state(idx), policy)
        errors.append(rows.query_error(idx, rows_failing))
        assert lattice.query_error(idx, freq_failing) == pytest.approx(errors[-1], abs=1e-9)
    assert len({round(e, 6) for e in errors}) >= 3  # the nodes' errors differ: the comparison is not of zeros
