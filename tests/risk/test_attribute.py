"""δ-disclosure and β-likeness: hand-computed matrices, dense vs sparse, properties."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import sparse

from anon_dagster.errors import DataError
from anon_dagster.risk.attribute import beta_likeness, delta_disclosure

# Three classes over three sensitive values; table distribution p = (0.4, 0.2, 0.4).
COUNTS = np.array([[3, 1, 0], [1, 1, 2], [0, 0, 2]])


def test_delta_disclosure_by_hand():
    d = delta_disclosure(COUNTS)
    # class 0: log2(0.75/0.4), log2(0.25/0.2); class 1: |log2(0.25/0.4)|, log2(0.25/0.2) twice;
    # class 2: log2(1/0.4).
    expected = [math.log2(0.75 / 0.4), abs(math.log2(0.25 / 0.4)), math.log2(2.5)]
    assert d.per_class == pytest.approx(expected)
    assert d.delta == pytest.approx(math.log2(2.5)) and d.worst_class == 2
    assert d.satisfies(1.33) and not d.satisfies(math.log2(2.5))
    natural = delta_disclosure(COUNTS, base=math.e)
    assert natural.delta == pytest.approx(math.log(2.5))
    assert json.loads(json.dumps(d.to_dict()))["log_base"] == 2.0


def test_beta_likeness_by_hand():
    b = beta_likeness(COUNTS)
    # Gains: class 0: 0.875 and 0.25; class 1: -0.375, 0.25, 0.25; class 2: 1.5.
    assert b.basic_per_class == pytest.approx([0.875, 0.25, 1.5])
    assert b.basic == pytest.approx(1.5) and b.worst_class == 2
    # Enhanced: class 2's gain 1.5 exceeds -ln 0.4 = 0.916, so no threshold meets it.
    assert b.enhanced_per_class[:2] == pytest.approx([0.875, 0.25])
    assert math.isinf(b.enhanced_per_class[2]) and math.isinf(b.enhanced)
    assert b.satisfies(1.5) and not b.satisfies(1.49)
    assert not b.satisfies(100.0, enhanced=True)
    d = json.loads(json.dumps(b.to_dict()))
    assert d["beta_likeness_enhanced"] is None and d["enhanced_attainable"] is False


def test_enhanced_equals_basic_when_attainable():
    # p = (0.5, 0.25, 0.25); class gains 0.5 (<= ln 2) and 1.0 (<= ln 4).
    b = beta_likeness(np.array([[3, 1, 0], [1, 1, 2]]))
    assert b.basic == pytest.approx(1.0)
    assert b.enhanced == pytest.approx(1.0)
    assert b.satisfies(1.0, enhanced=True)


def test_table_like_classes_disclose_nothing():
    # Every class has the table's distribution: delta 0 and beta 0.
    counts = np.array([[99, 1], [198, 2], [990, 10]])
    assert delta_disclosure(counts).delta == pytest.approx(0.0, abs=1e-12)
    b = beta_likeness(counts)
    assert b.basic == pytest.approx(0.0, abs=1e-12) and b.enhanced == pytest.approx(0.0, abs=1e-12)


def test_rare_value_concentrated_in_one_class():
    # 99 "none" + 1 "HIV" in class 0, 100 "none" in class 1: p(HIV) = 1/200.
    b = beta_likeness(np.array([[99, 1], [100, 0]]))
    assert b.basic == pytest.approx((0.01 - 0.005) / 0.005)
    d = delta_disclosure(np.array([[99, 1], [100, 0]]))
    assert d.delta == pytest.approx(1.0)  # log2(0.01 / 0.005)


def test_reference_distribution():
    d = delta_disclosure(COUNTS, reference=[1, 1, 2])  # normalized to (0.25, 0.25, 0.5)
    assert d.per_class[2] == pytest.approx(1.0)  # log2(1 / 0.5)
    with pytest.raises(DataError, match="probability 0"):
        beta_likeness(COUNTS, reference=[1, 0, 1])
    with pytest.raises(DataError, match="3 columns"):
        beta_likeness(COUNTS, reference=[1, 1])


def test_empty_classes_are_skipped():
    counts = np.array([[3, 1, 0], [0, 0, 0], [1, 1, 2], [0, 0, 2]])
    d = delta_disclosure(counts)
    assert math.isnan(d.per_class[1])
    assert d.delta == pytest.approx(delta_disclosure(COUNTS).delta)
    assert beta_likeness(counts).basic == pytest.approx(1.5)


@pytest.mark.parametrize("bad,message", [
    (np.zeros((2, 2)), "no record"),
    (np.array([[1, -1]]), "non-negative"),
    (np.array([1, 2]), "2-D"),
    (np.array([["a", "b"]]), "numeric"),
])
def test_bad_matrices(bad, message):
    with pytest.raises(DataError, match=message):
        delta_disclosure(bad)


def test_bad_log_base():
    with pytest.raises(DataError, match="log base"):
        delta_disclosure(COUNTS, base=1)


@pytest.mark.parametrize("fmt", [sparse.csr_matrix, sparse.csr_array, sparse.coo_matrix])
def test_sparse_equals_dense(fmt):
    d_dense, b_dense = delta_disclosure(COUNTS), beta_likeness(COUNTS)
    m = fmt(COUNTS)
    d_sparse, b_sparse = delta_disclosure(m), beta_likeness(m)
    np.testing.assert_allclose(d_sparse.per_class, d_dense.per_class)
    np.testing.assert_allclose(b_sparse.basic_per_class, b_dense.basic_per_class)
    assert b_sparse.enhanced == b_dense.enhanced


count_matrices = arrays(
    np.int64, st.tuples(st.integers(1, 12), st.integers(1, 6)), elements=st.integers(0, 30)
).filter(lambda a: a.sum() > 0)


@settings(max_examples=60, deadline=None)
@given(count_matrices, st.randoms(use_true_random=False))
def test_properties(counts, rnd):
    d = delta_disclosure(counts)
    b = beta_likeness(counts)
    assert d.delta >= 0 and b.basic >= 0
    assert b.enhanced >= b.basic
    # Invariance under the order of classes and of sensitive values.
    rows = list(range(counts.shape[0]))
    cols = list(range(counts.shape[1]))
    rnd.shuffle(rows)
    rnd.shuffle(cols)
    shuffled = counts[rows][:, cols]
    assert delta_disclosure(shuffled).delta == pytest.approx(d.delta)
    assert beta_likeness(shuffled).basic == pytest.approx(b.basic)
    assert beta_likeness(shuffled).enhanced == pytest.approx(b.enhanced)
    np.testing.assert_allclose(
        delta_disclosure(shuffled).per_class, d.per_class[rows], equal_nan=True
    )
    # Sparse input gives the same figures.
    assert delta_disclosure(sparse.csr_matrix(counts)).delta == pytest.approx(d.delta)
    # Scaling every count leaves shares, hence every figure, unchanged.
    assert beta_likeness(counts * 3).basic == pytest.approx(b.basic)
    # A brute-force reference over every present cell.
    p = counts.sum(axis=0) / counts.sum()
    worst_d, worst_b = 0.0, 0.0
    for i in range(counts.shape[0]):
        n_i = counts[i].sum()
        for s in range(counts.shape[1]):
            if counts[i, s]:
                share = counts[i, s] / n_i
                worst_d = max(worst_d, abs(math.log2(share / p[s])))
                worst_b = max(worst_b, (share - p[s]) / p[s])
    assert d.delta == pytest.approx(worst_d)
    assert b.basic == pytest.approx(worst_b)
