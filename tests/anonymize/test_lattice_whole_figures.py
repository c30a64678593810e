"""A sub-lattice carrying the whole lattice's figures (``Lattice.from_frequencies(whole=...)``):
each of its nodes has the loss and the search's bound it has in the whole lattice, so searches
of different sub-lattices compare as one search of the whole."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize.coding import code_qi
from anon_dagster.anonymize.criteria import Policy
from anon_dagster.anonymize.lattice import Lattice, qi_above
from anon_dagster.hierarchies import IntervalHierarchy


def hierarchies() -> dict[str, IntervalHierarchy]:
    return {"age": IntervalHierarchy("age", [5, 10, 20]), "weight": IntervalHierarchy("weight", [10, 40])}


@settings(max_examples=25, deadline=None)
@given(ages=st.lists(st.integers(20, 59), min_size=6, max_size=40), seed=st.integers(0, 1000),
       metric=st.sampled_from(["loss", "entropy", "discernibility"]), k=st.integers(1, 3),
       share=st.sampled_from([0.0, 0.2]), floor=st.sampled_from([(1, 0), (0, 1), (2, 1)]))
def test_sub_lattice_nodes_have_the_whole_lattices_loss_and_bound(ages, seed, metric, k, share, floor):
    rng = np.random.default_rng(seed)
    hier = hierarchies()
    rows = pd.DataFrame({"age": ages, "weight": rng.integers(50, 120, len(ages))})
    policy = Policy(k=k, max_suppression=share)
    coded = {c: code_qi(rows[c], hier[c]) for c in rows.columns}
    whole = Lattice(list(coded.values()), policy, metric=metric)
    # the frequency table at the floor's levels, its values those levels' labels
    at = pd.DataFrame({c: coded[c].labels[lv][coded[c].row_codes(lv)] for c, lv in zip(rows.columns, floor, strict=True)})
    freq = at.astype(str).groupby(list(at.columns), sort=False).size().reset_index(name="count")
    subs = [qi_above(coded[c], lv, freq[c]) for c, lv in zip(rows.columns, floor, strict=True)]
    carried = [(coded[c], lv) if lv else None for c, lv in zip(rows.columns, floor, strict=True)]
    sub = Lattice.from_frequencies(subs, freq["count"].to_numpy(), policy, metric=metric, whole=carried)
    for node in itertools.product(*[range(q.n_levels) for q in subs]):
        full = tuple(a + b for a, b in zip(node, floor, strict=True))
        assert sub.bound_at(node) == whole.bound_at(full)
        mine, theirs = sub.evaluate(sub.index(node)), whole.evaluate(whole.index(full))
        assert (mine.satisfied, mine.suppressed, mine.classes) == (theirs.satisfied, theirs.suppressed, theirs.classes)
        if theirs.loss is not None:
            assert mine.loss == pytest.approx(theirs.loss, rel=1e-12, abs=1e-9)


def test_without_whole_figures_a_sub_lattice_measures_loss_from_its_own_bottom():
    # ages 20..29 in 5-year bands: the whole lattice's band [20, 25) merges 5 of 10 values
    # (loss (5 - 1) / (10 - 1) = 4/9 a row); the sub-lattice from the bands sees its bottom as
    # values (loss 0), so only the whole figures give the whole lattice's 4/9
    hier = hierarchies()
    rows = pd.DataFrame({"age": list(range(20, 30)), "weight": [60] * 10})
    coded = {c: code_qi(rows[c], hier[c]) for c in rows.columns}
    whole = Lattice(list(coded.values()), Policy(k=1), metric="loss")
    at = pd.DataFrame({"age": coded["age"].labels[1][coded["age"].row_codes(1)], "weight": rows["weight"]})
    freq = at.astype(str).groupby(["age", "weight"], sort=False).size().reset_index(name="count")
    subs = [qi_above(coded["age"], 1, freq["age"]), code_qi(freq["weight"], hier["weight"])]
    own = Lattice.from_frequencies(subs, freq["count"].to_numpy(), Policy(k=1), metric="loss")
    carried = Lattice.from_frequencies(subs, freq["count"].to_numpy(), Policy(k=1), metric="loss",
                                       whole=[(coded["age"], 1), None])
    expected = whole.evaluate(whole.index((1, 0))).loss
    assert expected == pytest.approx(4 / 9 / 2)  # per row and generalized QI: age's 4/9, weight's 0
    assert carried.evaluate(carried.index((0, 0))).loss == pytest.approx(expected, rel=1e-12)
    assert own.evaluate(own.index((0, 0))).loss == 0.0
