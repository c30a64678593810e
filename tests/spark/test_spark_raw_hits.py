"""The data contract's raw-value search on Spark counts what its definition counts.

The definition is the pandas one (:func:`anon_dagster.release.gate.raw_value_hits`); Spark skips
the join for an identifier's own column of well-formed pseudonyms when no raw value looks like a
pseudonym, and joins distinct cells otherwise. The frames below are made to hit every path: raw
values left in the pseudonym column, raw values that look like pseudonyms and equal one, long raw
values in a text column, short ones that must not count, raw values repeated in the raw rows.
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.engine.spark_gate import contract_outcome
from anon_dagster.engine.spark_raw_hits import raw_value_hits
from anon_dagster.pseudonymize import pseudonym_pattern
from anon_dagster.release import gate
from tests.support.specs import release_spec

pytestmark = pytest.mark.usefixtures("spark")

GOOD = ["v1:" + "a" * 32, "v1:" + "0123456789abcdef" * 2, "v2:" + "f" * 32]  # well-formed HMAC pseudonyms
COLUMNS = {
    "pid": {"role": "identifier", "pseudonymize": {"method": "hmac"}},
    "email": {"role": "identifier", "pseudonymize": {"method": "hmac"}},
    "zip": {"role": "quasi"},
    "note": {"role": "insensitive"},
}
MIN_LENGTH = 5


def spec():
    return release_spec(COLUMNS)


def definition_hits(spec, published: pd.DataFrame, raw: pd.DataFrame) -> dict[tuple[str, str], int]:
    """The pandas definition's count per pair (its boolean arrays summed)."""
    values = {i: {str(v) for v in raw[i].dropna()} for i in spec.identifiers if i in raw.columns}
    return {pair: int(found.sum()) for pair, found in gate.raw_value_hits(spec, published, values,
                                                                          MIN_LENGTH).items()}


def formats(published: pd.DataFrame) -> dict[str, tuple[str, int]]:
    """Per pseudonym column: the HMAC pattern and the cells that do not match it (the contract's figures)."""
    pattern = pseudonym_pattern("hmac")
    return {c: (pattern, int((published[c].notna() & ~published[c].fillna("").str.match(pattern)).sum()))
            for c in ("pid", "email")}


def spark_hits(session, spec, published: pd.DataFrame, raw: pd.DataFrame) -> dict[tuple[str, str], int]:
    pub, raw_df = (session.createDataFrame(frame, schema=", ".join(f"{c} string" for c in frame.columns))
                   for frame in (published, raw))
    return raw_value_hits(spec, pub, raw_df, list(published.columns), dict(pub.dtypes), set(), MIN_LENGTH,
                          formats(published))


def test_well_formed_pseudonyms_and_no_raw_value_anywhere(spark):
    s = spec()
    published = pd.DataFrame({"pid": GOOD, "email": GOOD[::-1], "zip": ["28001", "28002", "ab"],
                              "note": ["fine", "ok", "none"]})
    raw = pd.DataFrame({"pid": ["P0001", "P0002", "P0001"], "email": ["ada@x.org", "bo@y.org", "c@z.org"]})
    got = spark_hits(spark, s, published, raw)
    assert got == definition_hits(s, published, raw)
    assert set(got.values()) == {0}
    assert ("pid", "pid") in got and ("zip", "pid") in got  # searched, and found nothing


def test_a_raw_value_that_looks_like_a_pseudonym_is_still_found(spark):
    s = spec()
    published = pd.DataFrame({"pid": GOOD, "email": GOOD, "zip": ["28001"] * 3, "note": ["a", "b", "c"]})
    # the raw table holds a value with the pseudonym format, equal to published cells; no other
    # identifier whose search would read the pid column too
    raw = pd.DataFrame({"pid": ["P0001", GOOD[0], GOOD[0]]})
    got = spark_hits(spark, s, published, raw)
    assert got == definition_hits(s, published, raw)
    assert got[("pid", "pid")] == 1  # one cell, though the raw value is there twice
    assert got[("email", "pid")] == 1  # another identifier's long raw value in a text column


def test_raw_values_left_in_the_pseudonym_column_and_in_free_text(spark):
    s = spec()
    published = pd.DataFrame({"pid": ["P0001", "P0001", GOOD[0], "Q9"], "email": [GOOD[1]] * 4,
                              "zip": ["P0002", "28001", "28001", None], "note": ["ada@x.org", "x", "P0", "ada@x.org"]})
    raw = pd.DataFrame({"pid": ["P0001", "P0002", "P0"], "email": ["ada@x.org", "bo@y.org", None]})
    got = spark_hits(spark, s, published, raw)
    assert got == definition_hits(s, published, raw)
    assert got[("pid", "pid")] == 2 and got[("zip", "pid")] == 1 and got[("note", "email")] == 2
    assert got[("note", "pid")] == 0  # "P0" is shorter than five characters outside its own column


CELLS = st.sampled_from([*GOOD, "P0001", "P0002", "P0", "28001", "ada@x.org", None])
RAW = st.sampled_from(["P0001", "P0002", "P0", GOOD[1], "ada@x.org", "28001", None])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(CELLS, CELLS, CELLS, CELLS), min_size=1, max_size=8),
       st.lists(st.tuples(RAW, RAW), min_size=1, max_size=6))
def test_every_pair_counts_what_the_definition_counts(spark, cells, raw_rows):
    s = spec()
    published = pd.DataFrame(cells, columns=["pid", "email", "zip", "note"], dtype=object)
    raw = pd.DataFrame(raw_rows, columns=["pid", "email"], dtype=object)
    assert spark_hits(spark, s, published, raw) == definition_hits(s, published, raw)


def test_the_contract_reports_the_counts_not_the_values(spark):
    s = spec()
    published = pd.DataFrame({"pid": [GOOD[0], "P0001"], "email": GOOD[:2], "zip": ["28001", "28002"],
                              "note": ["ada@x.org", "n"]})
    raw = pd.DataFrame({"pid": ["P0001"], "email": ["ada@x.org"]})
    outcome = contract_outcome(s, spark.createDataFrame(published), spark.createDataFrame(raw), set())
    assert not outcome.passed
    assert "pid: holds no raw value of identifier pid: 1 rows violate it" in outcome.summary
    assert "note: holds no raw value of identifier email: 1 rows violate it" in outcome.summary
    assert "pid: pseudonyms match the hmac format: 1 rows violate it" in outcome.summary
    assert "P0001" not in outcome.summary and "ada@x.org" not in outcome.summary
