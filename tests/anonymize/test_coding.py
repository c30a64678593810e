"""Integer coding of QIs: the fast paths give exactly what pandas and the hierarchy give.

``factorize`` dictionary-encodes Arrow strings with Arrow and numbers small integer ranges by a
reverse scatter; both must return ``pd.factorize(..., use_na_sentinel=False)``'s codes and
values (same order of first appearance, same missing value, same Python types). ``code_qi``
reads a table hierarchy's rows directly for strings and integers; its label table must be the
hierarchy's own ``table``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize.coding import code_qi, factorize
from anon_dagster.hierarchies import TableHierarchy


def assert_same_as_pandas(series: pd.Series) -> None:
    codes, uniques = factorize(series)
    want_codes, want = pd.factorize(series, use_na_sentinel=False)
    want = np.asarray(want, dtype=object)
    assert codes.dtype == np.int64 and codes.tolist() == want_codes.tolist()
    assert len(uniques) == len(want) and uniques.dtype == object
    for got, exp in zip(uniques, want, strict=True):
        assert type(got) is type(exp)
        assert (pd.isna(got) and pd.isna(exp)) or got == exp


WORDS = st.lists(st.one_of(st.sampled_from(["a", "b", "é", "", "long value"]), st.none()), max_size=40)


@settings(max_examples=60)
@given(WORDS, st.sampled_from(["str", "string[pyarrow]", "arrow", "chunked"]))
def test_arrow_strings_code_as_pandas_codes_them(words, flavour):
    if flavour == "arrow":
        series = pd.Series(words, dtype=pd.ArrowDtype(pa.large_string()))
    elif flavour == "chunked":
        half = len(words) // 2
        series = pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array([words[:half], words[half:]],
                                                                           type=pa.string())))
    else:
        series = pd.Series(words, dtype=flavour)
    assert_same_as_pandas(series)


@settings(max_examples=60)
@given(st.lists(st.integers(-50, 50), max_size=60), st.sampled_from(["int64", "int16", "uint8", "Int64"]))
def test_integers_code_as_pandas_codes_them(values, dtype):
    if dtype == "uint8":
        values = [abs(v) for v in values]
    assert_same_as_pandas(pd.Series(values, dtype=dtype))


def test_a_wide_integer_range_still_codes_as_pandas():
    assert_same_as_pandas(pd.Series([10**12, 3, 10**12, -7]))


@pytest.mark.parametrize("column", [["nurse", "clerk", "nurse", "doctor"], [30, 17, 30, 45]])
def test_table_hierarchy_labels_read_from_its_rows_equal_its_table(column):
    rows = {"nurse": ["health", "*"], "doctor": ["health", "*"], "clerk": ["office", "*"],
            "30": ["adult", "*"], "17": ["young", "*"], "45": ["adult", "*"]}
    hierarchy = TableHierarchy("c", rows=rows, n=3)
    series = pd.Series(column, name="c")
    qi = code_qi(series, hierarchy)
    table = hierarchy.table(qi.uniques)
    for level in range(3):
        assert [qi.labels[level][c] for c in qi.level_maps[level]] == table[:, level].tolist()
    assert [str(qi.labels[0][c]) for c in qi.codes] == [str(v) for v in column]
