"""The vectorized estimators behind the population-uniqueness intervals agree with the
single-sample ones they replace (the bootstrap solves every replicate at once)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.risk import population as P


def _heavy_tailed_sizes(seed: int, classes: int = 800) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.zipf(1.6 + 0.6 * rng.random(), size=classes)


@pytest.mark.parametrize("f", [0.01, 0.1, 0.5, 0.9])
def test_shlosser_batch_matches_scalar(f):
    sizes, counts = P.frequencies_of_frequencies(_heavy_tailed_sizes(1))
    rng = np.random.default_rng(2)
    boot = rng.multinomial(counts.sum(), counts / counts.sum(), size=12)
    batch = P._shlosser_classes_batch(sizes, boot, f)
    assert batch == pytest.approx([P.shlosser_classes(sizes, row, f) for row in boot], rel=1e-12)


@pytest.mark.parametrize("a,b,f", [(0.3, 0.2, 0.1), (2.0, 0.7, 0.5), (0.05, 0.01, 0.02)])
def test_snb_residual_jacobian_matches_finite_differences(a, b, f):
    x = np.array([[math.log(a), math.log(b / (1 - b))]])
    log_c = np.log(np.array([[40.0, 9.0]]))
    log_k = np.log(np.array([500.0]))
    res, jac = P._snb_residuals(x, log_c, log_k, f)
    e1, e2 = P.snb_log_expected_c1_c2(a, b, f, 500.0)
    assert res[0] == pytest.approx([e1 - math.log(40.0), e2 - math.log(9.0)], rel=1e-12)
    eps = 1e-6
    for j in range(2):
        step = np.zeros((1, 2))
        step[0, j] = eps
        up, _ = P._snb_residuals(x + step, log_c, log_k, f)
        down, _ = P._snb_residuals(x - step, log_c, log_k, f)
        assert jac[0, :, j] == pytest.approx(((up - down) / (2 * eps))[0], rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("seed,f", [(3, 0.05), (4, 0.1), (5, 0.3), (6, 0.7)])
def test_snb_batch_matches_the_one_by_one_solver(seed, f):
    sizes, counts = P.frequencies_of_frequencies(_heavy_tailed_sizes(seed))
    rng = np.random.default_rng(seed)
    boot = rng.multinomial(counts.sum(), counts / counts.sum(), size=25)
    _, _, fit = P._snb_estimate(sizes, counts, f)
    batch = P._snb_uniques_batch(sizes, boot, f, start=fit)
    one_by_one = np.array([P._snb_uniques(sizes, row, f)[0] for row in boot])
    assert np.array_equal(np.isnan(batch), np.isnan(one_by_one))
    finite = ~np.isnan(one_by_one)
    assert finite.sum() > 0
    assert batch[finite] == pytest.approx(one_by_one[finite], rel=1e-6)


def test_snb_batch_replicate_without_uniques_is_zero_and_without_pairs_is_nan():
    sizes = np.array([1, 2, 3])
    boot = np.array([[0, 5, 5], [4, 0, 6], [10, 4, 2]])
    out = P._snb_uniques_batch(sizes, boot, 0.2)
    assert out[0] == 0.0  # no class of size 1: no sample unique can be population-unique
    assert math.isnan(out[1])  # no class of size 2: not identifiable
    assert out[2] == pytest.approx(P._snb_uniques(sizes, boot[2], 0.2)[0], rel=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(1, 60), min_size=8, max_size=300),
    st.sampled_from([0.02, 0.1, 0.4]),
)
def test_snb_batch_property(class_sizes, f):
    sizes, counts = P.frequencies_of_frequencies(class_sizes)
    if sizes[0] != 1:
        return
    rng = np.random.default_rng(len(class_sizes))
    boot = rng.multinomial(counts.sum(), counts / counts.sum(), size=6)
    _, _, fit = P._snb_estimate(sizes, counts, f)
    batch = P._snb_uniques_batch(sizes, boot, f, start=fit)
    one_by_one = np.array([
        P._snb_uniques(sizes, row, f)[0] if row[0] > 0 else 0.0 for row in boot
    ])
    assert np.array_equal(np.isnan(batch), np.isnan(one_by_one))
    finite = ~np.isnan(one_by_one)
    assert batch[finite] == pytest.approx(one_by_one[finite], rel=1e-5, abs=1e-9)


@pytest.mark.parametrize("seed", [7, 8, 9, 10])
def test_pitman_newton_reaches_the_bfgs_maximum(seed, monkeypatch):
    sizes, counts = P.frequencies_of_frequencies(_heavy_tailed_sizes(seed, classes=2000))
    newton = P._pitman_fit(sizes, counts)
    assert newton is not None
    monkeypatch.setattr("anon_dagster.risk.uniqueness.pitman._pitman_newton", lambda *args, **kwargs: None)
    bfgs = P._pitman_fit(sizes, counts)
    assert bfgs is not None
    like = [P.pitman_log_likelihood(t, a, sizes, counts) for t, a in (newton, bfgs)]
    # the same maximum: Newton's likelihood is as high (to rounding), the parameters agree
    assert like[0] >= like[1] - 1e-7 * abs(like[1])
    assert newton == pytest.approx(bfgs, rel=1e-3)
    n = float((sizes * counts).sum())
    assert P._pitman_uniques(*newton, n / 0.05) == pytest.approx(P._pitman_uniques(*bfgs, n / 0.05), rel=1e-4)


def test_pitman_newton_declines_a_boundary_maximum(monkeypatch):
    # sizes with little overdispersion push alpha towards 0 (the boundary): Newton hands the
    # decision to BFGS, so the fit is exactly what it was without Newton
    sizes, counts = P.frequencies_of_frequencies([1] * 30 + [2] * 30 + [3] * 25 + [4] * 10)
    assert P._pitman_newton(np.array([math.log(20.5), 0.0]), sizes, counts) is None
    with_newton = P._pitman_fit(sizes, counts)
    monkeypatch.setattr("anon_dagster.risk.uniqueness.pitman._pitman_newton", lambda *args, **kwargs: None)
    assert P._pitman_fit(sizes, counts) == with_newton
