"""Class assignments come from the risk kernel's classes, one signature per class, and equal the
assignment of one canonical JSON signature per row (the ledger's stored form)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.release.composition import _label, class_assignment
from anon_dagster.risk.classes import EquivalenceClasses, counting_class_builds


def per_row_signatures(published: pd.DataFrame, qis: list[str], persons) -> tuple[list, list, list]:
    """The definition, row by row: a row's signature is the JSON of its QI labels; classes are
    the distinct signatures in sort order."""
    sigs = [json.dumps({q: _label(published[q].iloc[i]) for q in qis}, sort_keys=True, ensure_ascii=False)
            for i in range(len(published))]
    uniques = sorted(set(sigs))
    class_of = [uniques.index(s) for s in sigs]
    pairs = sorted({(c, str(p)) for c, p in zip(class_of, persons, strict=True)})
    return uniques, [int(np.sum(np.array(class_of) == c)) for c in range(len(uniques))], pairs


values = st.one_of(st.integers(0, 3), st.sampled_from(["a", "b", "3"]), st.just(None),
                   st.sampled_from([1.0, 2.5, float("nan")]))


@settings(max_examples=80)
@given(st.lists(st.tuples(values, values, st.integers(0, 5)), min_size=1, max_size=30))
def test_kernel_classes_equal_per_row_signatures(rows):
    published = pd.DataFrame({"a": pd.Series([r[0] for r in rows], dtype=object),
                              "b": pd.Series([r[1] for r in rows], dtype=object)})
    persons = [f"p{r[2]}" for r in rows]
    got = class_assignment(published, ["a", "b"], persons)
    sigs, rows_per_class, pairs = per_row_signatures(published, ["a", "b"], persons)
    assert got.signatures == sigs
    assert got.rows_per_class.tolist() == rows_per_class
    assert sorted(zip(got.members["class_id"].tolist(), got.members["person"].tolist(), strict=True)) == pairs


def test_hand_computed_assignment_and_one_class_build():
    published = pd.DataFrame({"age": ["20-29", "20-29", "30-39", None], "sex": ["F", "F", "M", "M"]})
    persons = ["x", "y", "x", "z"]
    with counting_class_builds() as builds:
        got = class_assignment(published, ["age", "sex"], persons)
    assert builds.count == 1
    assert got.signatures == ['{"age": "20-29", "sex": "F"}', '{"age": "30-39", "sex": "M"}',
                              '{"age": "<missing>", "sex": "M"}']
    assert got.rows_per_class.tolist() == [2, 1, 1]
    assert got.members.values.tolist() == [["x", 0], ["y", 0], ["x", 1], ["z", 2]]
    # the caller's classes of the same table are used as they are: no second build
    classes = EquivalenceClasses.from_frame(published, ["age", "sex"])
    with counting_class_builds() as builds:
        again = class_assignment(published, ["age", "sex"], persons, classes=classes)
    assert builds.count == 0
    assert again.signatures == got.signatures
