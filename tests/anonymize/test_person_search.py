"""The optimal search targets k per person when the published rows of a person are linked.

The person predicate at a node (docstring of :mod:`anon_dagster.anonymize.lattice`): the persons
whose person class holds fewer than k persons are removed, all their rows, with the rows of the
classes missing a per-class criterion, and the rows removed fit in the suppression budget. The
brute force below evaluates it at every node from the generalized rows with the hierarchies' own
``generalize``, the measurement's :class:`~anon_dagster.risk.person.PersonClasses` and the budget,
independently of the search's roll-ups.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize import anonymize
from anon_dagster.anonymize.coding import code_qi
from anon_dagster.anonymize.criteria import Policy
from anon_dagster.anonymize.lattice import Lattice
from anon_dagster.anonymize.persons import persons_below_k
from anon_dagster.hierarchies import (
    IntervalHierarchy,
    MaskHierarchy,
    SuppressionHierarchy,
    generalization_loss,
)
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import gate, pipeline
from anon_dagster.risk import EquivalenceClasses
from anon_dagster.risk.person import PersonClasses, PersonKeys, person_codes
from anon_dagster.spec import load_spec
from tests.support.ledgers import new_ledger
from tests.support.releases import write_release

QIS = ["age", "sex", "zip"]
HIER = {"age": IntervalHierarchy("age", [2, 4]), "sex": SuppressionHierarchy("sex"), "zip": MaskHierarchy("zip", [1])}


def coded(df: pd.DataFrame, qis=QIS):
    return [code_qi(df[c], HIER[c]) for c in qis]


def person_k(df: pd.DataFrame, levels: dict[str, int]) -> int:
    """k per person of ``df`` generalized to ``levels`` (the measurement's kernel)."""
    gen = pd.DataFrame({c: HIER[c].generalize(df[c], lv).astype(str) for c, lv in levels.items()})
    pc = PersonClasses.build(EquivalenceClasses.from_frame(gen, list(levels)), df["person"])
    return int(pc.sizes.min())


# ----- a hand-computed case ---------------------------------------------------------------------


def test_the_row_level_optimum_singles_out_two_persons_and_the_search_generalizes_further():
    # a stayed at ages 0 and 4, b at 1 and 6; c (5) and d (7) once. With ages in pairs (level 1)
    # every class holds 2 rows: [0,2) a b, [4,6) a c, [6,8) b d; but the keys {[0,2), [4,6)},
    # {[0,2), [6,8)}, {[4,6)}, {[6,8)} are all different: k per person is 1. In fours
    # (level 2), a and b are both {[0,4), [4,8)} and c and d both {[4,8)}: k per person 2.
    df = pd.DataFrame({"person": ["a", "a", "b", "b", "c", "d"], "age": [0, 4, 1, 6, 5, 7], "sex": ["F"] * 6})
    qis = ["age", "sex"]
    rows = Lattice(coded(df, qis), Policy(k=2), metric="loss").search()
    assert rows.levels == (1, 0) and rows.best.suppressed == 0 and not rows.per_person
    assert person_k(df, {"age": 1, "sex": 0}) == 1
    persons = Lattice(coded(df, qis), Policy(k=2), metric="loss", persons=df["person"]).search()
    assert persons.levels == (2, 0) and persons.best.suppressed == 0 and persons.per_person
    assert person_k(df, {"age": 2, "sex": 0}) == 2
    assert persons.loss > rows.loss
    assert persons.to_dict()["k_per_person"] is True


def test_a_person_below_k_is_removed_within_the_budget_and_counted():
    # at ages in pairs a = {[0,2), [4,6)} is alone, b and d share {[0,2)}, c and e {[4,6)}:
    # removing a (2 rows) fits the budget of 2; exact ages would leave a, b and d below k (4 rows)
    df = pd.DataFrame({"person": ["a", "a", "b", "d", "c", "e"], "age": [0, 4, 1, 0, 5, 5], "sex": ["F"] * 6})
    lat = Lattice(coded(df, ["age", "sex"]), Policy(k=2, max_suppression=1 / 3), metric="loss", persons=df["person"])
    res = lat.search(frontier="complete")
    assert res.levels == (1, 0) and res.best.suppressed == 2
    assert lat.persons_below(lat.index(res.levels)).tolist() == [True, True, False, False, False, False]
    assert not lat.check_monotone(lat.index((0, 0)))
    exact = lat.infos[lat.index((0, 0))]
    assert exact.suppressed == 4
    assert any(m.startswith("k per person: 3 persons") for m in exact.missing)


# ----- the brute force --------------------------------------------------------------------------


def brute_force(df: pd.DataFrame, k: int, l_distinct: int | None, max_sup: float, metric: str):
    """The node the search must return: among the nodes satisfying the person predicate, the
    least metric, ties to the first in the search's order (loss: by bound, height, index;
    discernibility: by height, index), a later node replacing it only when better by 1e-12."""
    n, q = len(df), len(QIS)
    budget = math.floor(max_sup * n + 1e-9)
    values = {c: pd.unique(df[c]) for c in QIS}
    row_loss = {c: generalization_loss(HIER[c], values[c])[pd.Index(values[c]).get_indexer(df[c])] for c in QIS}
    dims = [coded(df)[j].n_levels for j in range(q)]
    found = []
    for idx, node in enumerate(itertools.product(*(range(d) for d in dims))):
        gen = pd.DataFrame({c: HIER[c].generalize(df[c], lv).astype(str) for c, lv in zip(QIS, node, strict=True)})
        ec = EquivalenceClasses.from_frame(gen, QIS)
        fail = ec.sizes[ec.row_class] < k
        if l_distinct:
            distinct = df.groupby(ec.row_class)["dx"].nunique().reindex(range(ec.n_classes)).to_numpy()
            fail |= (distinct < l_distinct)[ec.row_class]
        pc = PersonClasses.build(ec, df["person"])
        removed = fail | (pc.sizes[pc.person_class] < k)[pc.person_of_row]
        if removed.sum() > budget:
            continue
        per_row = sum(row_loss[c][:, lv] for c, lv in zip(QIS, node, strict=True))
        if metric == "loss":
            value = (float(per_row[~removed].sum()) + int(removed.sum()) * q) / (n * q)
            order = (round(float(per_row.sum()) / (n * q), 9), sum(node), idx)
        else:
            kept = np.bincount(ec.row_class[~removed], minlength=ec.n_classes)
            value = float((kept.astype(float) ** 2).sum() + int(removed.sum()) * n)
            order = (sum(node), idx)
        found.append((order, value, node))
    best = None
    for _, value, node in sorted(found, key=lambda f: f[0]):
        if best is None or value < best[0] - 1e-12:
            best = (value, node)
    return best


rows_strategy = st.lists(
    st.tuples(st.integers(0, 7), st.sampled_from(["F", "M"]), st.sampled_from(["10", "11", "20", "21"]),
              st.integers(0, 14), st.sampled_from(["x", "y", "z"])),
    min_size=1, max_size=36)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows_strategy, st.integers(1, 3), st.sampled_from([None, 2]), st.sampled_from([0.0, 0.1, 0.25, 0.5]),
       st.sampled_from(["loss", "discernibility"]))
def test_the_search_returns_the_brute_force_optimum_per_person(rows, k, l_distinct, max_sup, metric):
    df = pd.DataFrame(rows, columns=[*QIS, "person", "dx"])
    policy = Policy(k=k, l_distinct=l_distinct, max_suppression=max_sup, sensitive=("dx",) if l_distinct else ())
    sens = [pd.factorize(df["dx"])[0]] if l_distinct else []
    res = Lattice(coded(df), policy, sens, metric=metric, persons=df["person"]).search()
    best = brute_force(df, k, l_distinct, max_sup, metric)
    if best is None:
        assert not res.solved
        return
    assert res.solved and res.levels == best[1]
    assert res.loss == pytest.approx(best[0], rel=1e-9, abs=1e-12)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows_strategy, st.integers(1, 3), st.sampled_from([0.0, 0.1, 0.25, 0.5]), st.sampled_from(["loss", "entropy"]))
def test_with_one_row_per_person_the_search_is_the_row_level_one(rows, k, max_sup, metric):
    df = pd.DataFrame(rows, columns=[*QIS, "person", "dx"])
    policy = Policy(k=k, max_suppression=max_sup)
    plain = Lattice(coded(df), policy, metric=metric).search(frontier=False)
    persons = pd.Series([f"P{i}" for i in np.random.default_rng(len(df)).permutation(len(df))])
    linked = Lattice(coded(df), policy, metric=metric, persons=persons).search(frontier=False)
    assert linked.levels == plain.levels and linked.loss == plain.loss
    if plain.solved:
        assert linked.best.suppressed == plain.best.suppressed


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 11), st.integers(0, 9)), min_size=1, max_size=60), st.integers(1, 6))
def test_coarsened_person_keys_give_the_person_classes_of_the_coarser_classes(rows, width):
    df = pd.DataFrame(rows, columns=["person", "value"])
    fine = EquivalenceClasses.from_frame(df, ["value"])
    coarse_df = pd.DataFrame({"value": df["value"] // width})
    coarse = EquivalenceClasses.from_frame(coarse_df, ["value"])
    class_map = np.zeros(fine.n_classes, dtype=np.int64)
    class_map[fine.row_class] = coarse.row_class
    keys = PersonKeys.of_rows(person_codes(df["person"]), fine.row_class, fine.n_classes)
    group, sizes = keys.coarsen(class_map, coarse.n_classes).person_classes()
    measured = PersonClasses.build(coarse, df["person"])
    # the same partition of the persons: equal sizes per person, and the groups one to one
    assert np.array_equal(sizes[group], measured.sizes[measured.person_class])
    assert len(set(zip(group.tolist(), measured.person_class.tolist(), strict=True))) == len(sizes) == measured.n_classes


# ----- the release pipeline ---------------------------------------------------------------------


def readmissions() -> pd.DataFrame:
    """Two single-stay patients in each (age, sex, region) cell; A and B stayed twice at ages
    in their thirties (F, North), C and D in their forties (M, South), E once in each decade
    (F, South). With exact ages every class holds 2 rows, but A to E are each alone per person;
    with ages by decade A and B share a key, C and D too, and E stays alone (2 rows)."""
    rows = []
    for age, sex, region in itertools.product([30, 31, 42, 43], ["F", "M"], ["North", "South"]):
        rows += [(f"S{len(rows):04d}", age, sex, region), (f"S{len(rows) + 1:04d}", age, sex, region)]
    rows += [("A", 30, "F", "North"), ("A", 31, "F", "North"), ("B", 31, "F", "North"), ("B", 31, "F", "North"),
             ("C", 42, "M", "South"), ("C", 43, "M", "South"), ("D", 43, "M", "South"), ("D", 43, "M", "South"),
             ("E", 30, "F", "South"), ("E", 43, "F", "South")]
    df = pd.DataFrame(rows, columns=["pid", "age", "sex", "region"])
    n = len(df)
    df.insert(1, "name", [f"N {i}" for i in range(n)])
    df["visit_date"] = "2023-03-01"
    df["diagnosis"] = np.random.default_rng(1).choice(["A10", "B20", "C30"], n)
    return df


def test_the_release_pipeline_publishes_a_table_k_anonymous_per_person_by_the_search(tmp_path, master_key):
    df = readmissions()
    n = len(df)  # 42 rows: a budget of 2 at 5 %
    spec = load_spec(write_release(tmp_path, name="readmit", data=df, rows_2023=n, rows_2024=0,
                                   thresholds={"k": 2}, max_suppression=0.05))
    ingested = pipeline.ingest(spec, "2023")
    pseudo = pipeline.pseudonymize(spec, ingested.data, open_keystore())

    # the row-level optimum keeps exact ages, where A to E are alone per person (10 rows, over budget)
    row_level = anonymize(pseudo.data, spec)
    assert row_level.record.levels == {"age": 0, "sex": 0} and row_level.suppressed == 0

    anonymized = pipeline.anonymize(spec, pseudo.data)
    record = anonymized.record
    assert record.levels == {"age": 1, "sex": 0} and record.search["k_per_person"] is True
    section = record.person_suppression
    assert section is not None and section.search_targeted and section.reached
    assert (section.persons, section.rows, section.budget_rows, section.linked_by) == (1, 2, 2, ["pid"])
    assert anonymized.suppressed == record.suppression.rows == 2 and record.rows_out == n - 2
    assert record.to_json()["person_suppression"]["search_targeted"] is True

    # the person pass after the search finds nobody more to remove
    view = gate.publishable_view(anonymized.data)
    qis = [q for q in spec.quasi_identifiers if q in view.columns]
    rows, below = persons_below_k(EquivalenceClasses.from_frame(view, qis), gate.person_link(spec, view), 2)
    assert below == 0 and not rows.any()
    again = pipeline.reach_k_per_person(spec, pipeline.Anonymized(anonymized.data, record, anonymized.suppressed), n)
    assert again.record.person_suppression == section and len(again.data) == len(anonymized.data)

    evaluation = pipeline.evaluate(spec, anonymized.data, record=record, original=pseudo.data, raw=ingested.data,
                                   ledger=new_ledger(tmp_path / "ledger.sqlite"), partition="2023")
    assert evaluation.measures["person"]["k"] >= 2
    assert evaluation.check("k_anonymity").passed and "per person" in evaluation.check("k_anonymity").summary


def test_other_methods_keep_the_person_pass_after_the_anonymization(tmp_path, master_key):
    df = readmissions()
    spec = load_spec(write_release(tmp_path, name="readmit_m", data=df, rows_2023=len(df), rows_2024=0,
                                   method="mondrian", thresholds={"k": 2}, max_suppression=0.5))
    pseudo = pipeline.pseudonymize(spec, pipeline.ingest(spec, "2023").data, open_keystore())
    section = pipeline.anonymize(spec, pseudo.data).record.person_suppression
    assert section is not None and section.search_targeted is False
