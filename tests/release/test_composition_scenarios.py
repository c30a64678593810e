"""Composition from outside: three releases of one population, and a sequential release.

Twelve persons P0..P11, hand-computed:

* A (age band): {P0..P5}, {P6..P11};  B (sex): evens, odds;  C (town): {0,1,2,6,7,8}, {3,4,5,9,10,11}.
* C composed with A: classes of 3 (C∩A = {0,1,2}, {3,4,5}, {6,7,8}, {9,10,11});
  with B: {0,2,6,8}, {1,7}, {3,5,9,11}, {4,10} → effective k 2, persons below 3: P1, P7, P4, P10;
  with A and B at once: {0,2}, {1}, {6,8}, {7}, {4}, {3,5}, {10}, {9,11} → joint k 1, all 12 exposed.
* A published again for another partition with P5 gone: class "0-5" changed by exactly one
  person (who left is revealed); class "6-11" is unchanged.
"""

from __future__ import annotations

import pandas as pd
import pytest

from anon_dagster.release import check_composition, class_assignment
from tests.support.ledgers import new_ledger

PERSONS = [f"P{i}" for i in range(12)]


def table(column: str, labels: list[str]) -> pd.DataFrame:
    return pd.DataFrame({column: labels})


def assignment_of(column, labels, persons=PERSONS):
    return class_assignment(table(column, labels), [column], pd.Series(persons))


A = ("age", ["0-5"] * 6 + ["6-11"] * 6)
B = ("sex", ["F" if i % 2 == 0 else "M" for i in range(12)])
C = ("town", ["x" if i in (0, 1, 2, 6, 7, 8) else "y" for i in range(12)])


def publish(ledger, release, partition, qi, labels, persons=PERSONS, data_hash=None):
    ledger.record(release=release, partition=partition, population="cohort", spec_hash="s" * 64,
                  data_hash=data_hash or f"{release}-{partition}", qis={qi: "as published"}, k=3,
                  rows=len(labels), assignment=assignment_of(qi, labels, persons))


@pytest.fixture
def ledger(tmp_path):
    return new_ledger(tmp_path / "ledger.sqlite")


def test_third_release_composed_with_two_earlier_ones(ledger):
    publish(ledger, "rel_a", "2024", *A)
    publish(ledger, "rel_b", "2024", *B)
    result = check_composition(assignment_of(*C), ledger, population="cohort", release="rel_c",
                               partition="2024", min_k=3)
    assert not result.passed
    pairs = {p.release: p for p in result.compared}
    assert set(pairs) == {"rel_a", "rel_b"}
    assert pairs["rel_a"].effective_k == 3 and pairs["rel_a"].exposed_persons == 0
    assert pairs["rel_b"].effective_k == 2 and pairs["rel_b"].exposed_persons == 4
    assert result.effective_k == 2 and result.exposed_persons == 4
    assert result.joint_effective_k == 1 and result.joint_exposed_persons == 12
    text = str(result.to_dict())
    assert not any(p in text.split("'") for p in PERSONS), "no person value in the result"
    # alone each release is 6-anonymous; with min_k 2 the pairwise check passes
    assert check_composition(assignment_of(*C), ledger, population="cohort", release="rel_c",
                             partition="2024", min_k=2).effective_k == 2


def test_other_population_is_not_composed(ledger):
    publish(ledger, "rel_a", "2024", *A)
    result = check_composition(assignment_of(*B), ledger, population="someone_else", release="rel_b",
                               partition="2024", min_k=5)
    assert result.passed and result.compared == []


def test_sequential_release_reveals_who_left(ledger):
    publish(ledger, "rel_a", "2023", *A)
    persons = [p for p in PERSONS if p != "P5"]
    labels = [lab for p, lab in zip(PERSONS, A[1], strict=True) if p != "P5"]
    result = check_composition(assignment_of("age", labels, persons), ledger, population="cohort",
                               release="rel_a", partition="2024", min_k=5)
    assert result.passed  # 5-anonymous, and intersecting with itself costs nothing here
    assert result.effective_k == 5
    seq = [s for s in result.sequential if s.release == "rel_a"]
    assert seq and seq[0].shared_signatures == 2 and seq[0].changed_by_one == 1
    assert result.to_dict()["sequential_changed_by_one"] == 1
