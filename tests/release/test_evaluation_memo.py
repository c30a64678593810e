"""The memo of complete evaluations, keyed by everything they depend on."""

from __future__ import annotations

import pandas as pd

from anon_dagster.release import evaluation_memo as memo


def test_a_table_digest_sees_values_dtypes_order_and_attrs():
    table = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    same = memo.table_digest(table)
    assert memo.table_digest(table.copy()) == same
    assert memo.table_digest(table.iloc[::-1]) != same
    assert memo.table_digest(table.astype({"a": "float64"})) != same
    carrying = table.copy()
    carrying.attrs = {"record": "r"}
    assert memo.table_digest(carrying) != same
    assert memo.table_digests(anonymized=table, pseudonymized=carrying, raw=table) == \
        (same, memo.table_digest(carrying), same)


def test_the_memo_keeps_the_last_eight_evaluations():
    memo.forget()
    for i in range(10):
        memo.remember(("key", i), f"evaluation {i}")  # type: ignore[arg-type]
    assert memo.recall(("key", 0)) is None and memo.recall(("key", 1)) is None
    assert [memo.recall(("key", i)) for i in (2, 9)] == ["evaluation 2", "evaluation 9"]
    memo.remember(("key", 2), "again")  # type: ignore[arg-type]  # a key kept again is the newest
    memo.remember(("key", 10), "ten")  # type: ignore[arg-type]
    assert memo.recall(("key", 2)) == "again" and memo.recall(("key", 3)) is None
    memo.forget()
    assert memo.recall(("key", 9)) is None
