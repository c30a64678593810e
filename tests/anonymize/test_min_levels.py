"""anonymization.min_levels on the pandas engine: the optimal search over the sub-lattice above
the declared levels (hand-computed), the restriction in the record, the spec's rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize import NoSolution, anonymize
from anon_dagster.anonymize.coding import code_qi
from anon_dagster.anonymize.global_recoding import classes_at
from anon_dagster.anonymize.lattice import qi_above
from anon_dagster.errors import SpecError
from anon_dagster.hierarchies import IntervalHierarchy
from tests.support.specs import release_spec

# eight people, two ages by four zip codes: every (age, zip) once
SMALL = pd.DataFrame({"age": [20, 21] * 4,
                      "zip": [z for z in ("1001", "1002", "1003", "1004") for _ in range(2)]})
COLUMNS = {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10, 20]}},  # levels 0..3
           "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [3]}}}  # levels 0..2


def spec_with(min_levels=None, columns=None, **anonymization):
    an = {"method": "global", "k": 2, "utility": "discernibility", **anonymization}
    if min_levels is not None:
        an["min_levels"] = min_levels
    return release_spec(columns or COLUMNS, anonymization=an, thresholds={"k": anonymization.get("k", 2)})


def test_without_min_levels_the_whole_lattice_is_searched():
    # (age 0, zip 0): 8 classes of 1. (age 1, zip 0): 4 classes of 2, discernibility 4 x 2^2 = 16;
    # (age 0, zip 1): 2 classes of 4, 2 x 4^2 = 32. The optimum is ages to decades.
    result = anonymize(SMALL, spec_with())
    assert result.record.levels == {"age": 1, "zip": 0}
    assert result.record.utility.value == 16.0
    assert "min_levels" not in result.record.search
    assert result.record.search["lattice_size"] == 4 * 3


def test_min_levels_move_the_node_to_the_sub_lattice():
    # zip at least 1: the sub-lattice's bottom (age 0, zip 1) already meets k=2 and is the
    # least loss there (32); age at least 1: the optimum (1, 0) lies in it and is kept
    zip1 = anonymize(SMALL, spec_with({"zip": 1}))
    assert zip1.record.levels == {"age": 0, "zip": 1}
    assert zip1.record.utility.value == 32.0
    assert sorted(map(tuple, zip1.data.astype(str).to_numpy())) == [("20", "100*")] * 4 + [("21", "100*")] * 4
    age1 = anonymize(SMALL, spec_with({"age": 1}))
    assert age1.record.levels == {"age": 1, "zip": 0}
    assert age1.record.utility.value == 16.0


def test_the_record_names_the_restriction_and_the_sub_lattice():
    record = anonymize(SMALL, spec_with({"zip": 1})).record
    search = record.search
    assert search["min_levels"] == {"age": 0, "zip": 1}
    assert search["lattice_size"] == 4 * 2  # zip's levels 1..2 only
    assert search["levels"] == {"age": 0, "zip": 1}  # named in the whole lattice
    assert all(node["levels"]["zip"] >= 1 for node in search["frontier"])
    again = type(record).from_json(record.to_json())
    assert again.search["min_levels"] == {"age": 0, "zip": 1}


def test_an_unreachable_policy_says_the_search_was_restricted():
    # two diagnoses cannot make a class 3-diverse at any node, the top included
    data = SMALL.assign(diagnosis=["A10", "B20"] * 4)
    columns = {**COLUMNS, "diagnosis": {"role": "sensitive"}}
    spec = release_spec(columns, anonymization={"method": "global", "k": 2, "min_levels": {"zip": 1}},
                        thresholds={"k": 2, "l_distinct": 3})
    with pytest.raises(NoSolution, match=r"no generalization at or above anonymization.min_levels satisfies"):
        anonymize(data, spec)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 99), min_size=1, max_size=40), st.integers(0, 3), st.integers(0, 3))
def test_qi_above_has_the_classes_of_the_whole_lattice(ages, floor, extra):
    """At every node above the floor, the sub-lattice's classes are the whole lattice's."""
    qi = code_qi(pd.Series(ages, name="age"), IntervalHierarchy("age", [5, 10, 50]))
    floor = min(floor, qi.n_levels - 1)
    level = min(floor + extra, qi.n_levels - 1)
    up = qi_above(qi, floor)
    assert up.n_levels == qi.n_levels - floor
    mine, _ = classes_at([up], [level - floor])
    theirs, _ = classes_at([qi], [level])
    assert np.array_equal(pd.factorize(mine)[0], pd.factorize(theirs)[0])
    assert list(up.labels[level - floor]) == list(qi.labels[level])


def test_spec_hash_is_unchanged_without_min_levels():
    plain = spec_with()
    assert "min_levels" not in plain.model_dump(mode="json")["anonymization"]
    assert plain.spec_hash() != spec_with({"zip": 1}).spec_hash()


@pytest.mark.parametrize(("min_levels", "columns", "anonymization", "key", "says"), [
    ({"height": 1}, None, {}, "anonymization.min_levels.height", "'height' is not declared under columns"),
    ({"zip": 3}, None, {}, "anonymization.min_levels.zip",
     "level 3 is above the height of the hierarchy of column 'zip' (2: levels 0..2)"),
    ({"age": -1}, None, {}, "anonymization.min_levels.age", "level -1 is negative"),
    ({"region": 0}, {**COLUMNS, "region": {"role": "quasi", "partition_key": True}}, {},
     "anonymization.min_levels.region", "'region' is a partition key"),
    ({"note": 1}, {**COLUMNS, "note": {"role": "insensitive"}}, {}, "anonymization.min_levels.note",
     "'note' is not a quasi-identifier"),
    ({"age": 1}, None, {"method": "mondrian"}, "anonymization.min_levels", "applies to method global only"),
])
def test_min_levels_are_checked_against_the_columns_and_hierarchies(min_levels, columns, anonymization, key,
                                                                    says):
    with pytest.raises(SpecError) as caught:
        spec_with(min_levels, columns, **anonymization)
    text = str(caught.value)
    assert key in text and says in text


def test_the_report_says_the_search_was_restricted():
    from anon_dagster.release.report.content import _frontier_note, risk_utility_frontier

    restricted = risk_utility_frontier(anonymize(SMALL, spec_with({"zip": 1})).record.to_json())
    assert restricted["min_levels"] == {"age": 0, "zip": 1}
    assert _frontier_note(restricted).endswith(
        "The search was restricted to the sub-lattice above anonymization.min_levels (age=0, zip=1).")
    whole = risk_utility_frontier(anonymize(SMALL, spec_with()).record.to_json())
    assert "min_levels" not in whole and "restricted" not in _frontier_note(whole)
