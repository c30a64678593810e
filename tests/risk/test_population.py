"""Population-uniqueness estimators: hand-computed cases, degenerate inputs, properties, and
validation against synthetic populations whose truth is known."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from anon_dagster.errors import DataError, UserError
from anon_dagster.risk import population as P
from anon_dagster.risk.population import MODELS, population_uniqueness

# ---------------------------------------------------------------------------------------------
# Hand-computed cases


def test_naive_and_poisson_by_hand():
    # sizes 1,1,1,2,3: n = 8, three sample uniques.
    r = population_uniqueness([1, 1, 1, 2, 3], 0.5, bootstrap=0)
    assert r.records == 8 and r.classes == 5 and r.sample_uniques == 3
    assert r.population_size == pytest.approx(16.0)
    assert r.estimates["naive"].fraction == pytest.approx(3 / 8)
    assert r.estimates["naive"].sample_count == pytest.approx(3.0)
    # Poisson: a sample unique is population-unique with probability exp(-(1-f)/f) = e^-1.
    pois = r.estimates["poisson"]
    assert pois.fraction == pytest.approx(3 * math.exp(-1) / 8)
    assert pois.sample_count == pytest.approx(3 * math.exp(-1))
    assert pois.population_count == pytest.approx(3 * math.exp(-1) / 0.5)
    low, high = pois.interval
    # Garwood bounds for one event: 0.0253 and 5.572.
    assert low == pytest.approx(3 * math.exp(-5.5716) / 8, rel=1e-3)
    assert high == pytest.approx(3 * math.exp(-0.025318) / 8, rel=1e-3)


def test_poisson_gamma_by_hand():
    # sizes 1,1,1,1,5: mean 1.8, unbiased variance 3.2 > mean, so the Gamma prior is fitted.
    f = 0.5
    r = population_uniqueness([5, 1, 1, 1, 1], f, bootstrap=0)
    mean, var = 1.8, 3.2
    beta = (var / mean - 1) / f
    alpha = mean**2 / (var - mean)
    assert alpha == pytest.approx(2.3142857, rel=1e-6)
    prob = ((1 / beta + f) / (1 / beta + 1)) ** (alpha + 1)
    assert r.estimates["poisson_gamma"].fraction == pytest.approx(4 * prob / 9)
    # Smaller than naive: some sample uniques have unseen companions.
    assert r.estimates["poisson_gamma"].fraction < r.estimates["naive"].fraction


def test_poisson_gamma_without_overdispersion_falls_back_to_poisson():
    # sizes 1,1,1,2,3: variance 0.8 < mean 1.6.
    r = population_uniqueness([1, 1, 1, 2, 3], 0.5, bootstrap=0)
    pg = r.estimates["poisson_gamma"]
    assert pg.fraction == pytest.approx(r.estimates["poisson"].fraction)
    assert "Poisson limit" in pg.note


def test_zayatz_by_hand_against_scipy_hypergeometric():
    # n = 9, f = 0.5, so N = 18 and the hypergeometric probabilities are exact integers.
    sizes = [1, 1, 1, 1, 5]
    r = population_uniqueness(sizes, 0.5, bootstrap=0)
    h = {s: stats.hypergeom.pmf(1, 18, s, 9) for s in (1, 5)}
    cond = (4 / 5) * h[1] / ((4 / 5) * h[1] + (1 / 5) * h[5])
    assert h[1] == pytest.approx(0.5)
    assert r.estimates["zayatz"].sample_count == pytest.approx(4 * cond)
    assert r.estimates["zayatz"].fraction == pytest.approx(4 * cond / 9)


def _pitman_loglik_iterative(theta, alpha, class_sizes):
    """The Pitman log-likelihood as explicit sums (the form ARX checks its closed form with)."""
    n = sum(class_sizes)
    u = len(class_sizes)
    value = sum(math.log(theta + i * alpha) for i in range(1, u))
    value -= sum(math.log(theta + i) for i in range(1, n))
    for size in class_sizes:
        value += sum(math.log(j - alpha) for j in range(1, size))
    return value


def test_pitman_likelihood_gradient_and_hessian():
    class_sizes = [1, 1, 1, 1, 2, 2, 3, 7]
    sizes, counts = P.frequencies_of_frequencies(class_sizes)
    for theta, alpha in [(2.0, 0.3), (0.5, 0.7), (-0.2, 0.4)]:
        closed = P.pitman_log_likelihood(theta, alpha, sizes, counts)
        assert closed == pytest.approx(_pitman_loglik_iterative(theta, alpha, class_sizes))
        eps = 1e-6
        num_grad = [
            (P.pitman_log_likelihood(theta + eps, alpha, sizes, counts)
             - P.pitman_log_likelihood(theta - eps, alpha, sizes, counts)) / (2 * eps),
            (P.pitman_log_likelihood(theta, alpha + eps, sizes, counts)
             - P.pitman_log_likelihood(theta, alpha - eps, sizes, counts)) / (2 * eps),
        ]
        assert P.pitman_gradient(theta, alpha, sizes, counts) == pytest.approx(num_grad, rel=1e-5)
        num_hess = np.column_stack([
            (P.pitman_gradient(theta + eps, alpha, sizes, counts)
             - P.pitman_gradient(theta - eps, alpha, sizes, counts)) / (2 * eps),
            (P.pitman_gradient(theta, alpha + eps, sizes, counts)
             - P.pitman_gradient(theta, alpha - eps, sizes, counts)) / (2 * eps),
        ])
        assert P.pitman_hessian(theta, alpha, sizes, counts) == pytest.approx(num_hess, rel=1e-4)


def test_pitman_estimate_is_the_likelihood_maximum():
    class_sizes = [1] * 30 + [2] * 8 + [3] * 4 + [5, 8, 13]
    sizes, counts = P.frequencies_of_frequencies(class_sizes)
    theta, alpha = P._pitman_fit(sizes, counts)
    best = P.pitman_log_likelihood(theta, alpha, sizes, counts)
    for dt, da in [(0.05, 0), (-0.05, 0), (0, 0.01), (0, -0.01)]:
        assert P.pitman_log_likelihood(theta + dt * (1 + abs(theta)), alpha + da, sizes, counts) < best
    r = population_uniqueness(class_sizes, 0.05, bootstrap=0)
    pop = r.population_size
    expected = math.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha) + alpha * math.log(pop))
    assert r.estimates["pitman"].population_count == pytest.approx(expected)
    low, high = r.estimates["pitman"].interval
    assert low < r.estimates["pitman"].fraction < high


def _snb_pmf_bruteforce(k, a, b, f, top=4000):
    """P[n = k] for F = 1 + NB(a, b), n ~ Binomial(F, f), by summing over F."""
    g = np.arange(top)
    p_f = stats.nbinom.pmf(g, a, b)  # P[G = g], G = F - 1
    return float((p_f * stats.binom.pmf(k, g + 1, f)).sum())


@pytest.mark.parametrize("a,b,f", [(0.5, 0.3, 0.1), (2.0, 0.6, 0.5), (0.05, 0.02, 0.2)])
def test_snb_moment_equations_match_bruteforce(a, b, f):
    e1, e2 = P.snb_expected_c1_c2(a, b, f, k=1.0)
    assert e1 == pytest.approx(_snb_pmf_bruteforce(1, a, b, f, top=200_000), rel=1e-6)
    assert e2 == pytest.approx(_snb_pmf_bruteforce(2, a, b, f, top=200_000), rel=1e-6)


def test_snb_fit_reproduces_the_observed_c1_c2():
    class_sizes = [1] * 40 + [2] * 9 + [3] * 3 + [4, 9]
    sizes, counts = P.frequencies_of_frequencies(class_sizes)
    f = 0.3
    k = P.shlosser_classes(sizes, counts, f)
    a, b = P._snb_fit(40.0, 9.0, k, f)
    assert P.snb_expected_c1_c2(a, b, f, k) == pytest.approx((40.0, 9.0), rel=1e-6)
    r = population_uniqueness(class_sizes, f, bootstrap=0)
    assert r.estimates["snb"].population_count == pytest.approx(k * b**a)


def test_shlosser_by_hand():
    # sizes 1,1,2 at f = 0.5: u = 3, c1 = 2, c2 = 1.
    sizes, counts = P.frequencies_of_frequencies([1, 1, 2])
    f, q = 0.5, 0.25
    num1 = 1 * q * 2 + 2 * q * (1 - q) * 1
    den1 = ((1 - q) - (1 - f)) * 2 + ((1 - q) ** 2 - (1 - f) ** 2) * 1
    num2 = (1 - f) * 2 + (1 - f) ** 2 * 1
    den2 = 1 * f * 2 + 2 * f * (1 - f) * 1
    expected = 3 + 2 * (num1 / den1) * (num2 / den2) ** 2
    assert P.shlosser_classes(sizes, counts, f) == pytest.approx(expected)


def test_dankar_rule():
    class_sizes = [1] * 30 + [2] * 8 + [3] * 4 + [5, 8, 13]
    small = population_uniqueness(class_sizes, 0.05, bootstrap=0)
    assert small.dankar_model == "pitman"
    assert small.dankar.fraction == small.estimates["pitman"].fraction
    assert small.dankar.note == "chose pitman"
    large = population_uniqueness(class_sizes, 0.4, bootstrap=0)
    zay, snb = large.estimates["zayatz"].fraction, large.estimates["snb"].fraction
    assert large.dankar.fraction == pytest.approx(min(zay, snb))
    assert large.dankar_model == ("snb" if snb <= zay else "zayatz")


def test_frequencies_of_frequencies():
    sizes, counts = P.frequencies_of_frequencies(np.array([3, 1, 1, 0, 3, 3, 7]))
    assert sizes.tolist() == [1, 3, 7]
    assert counts.tolist() == [2, 3, 1]
    # A few giant classes take the np.unique path and give the same answer.
    sizes, counts = P.frequencies_of_frequencies([10**9, 1, 1])
    assert sizes.tolist() == [1, 10**9] and counts.tolist() == [2, 1]


# ---------------------------------------------------------------------------------------------
# Degenerate and bad inputs


def test_f_equal_one_is_exact_for_every_model():
    class_sizes = [1, 1, 1, 2, 2, 5]
    r = population_uniqueness(class_sizes, 1.0)
    exact = 3 / 12
    for name in MODELS:
        assert r.estimates[name].fraction == pytest.approx(exact), name
    assert r.dankar.fraction == pytest.approx(exact)
    assert r.estimates["pitman"].interval == pytest.approx((exact, exact))
    assert "for every model" in r.summary


def test_no_sample_uniques_gives_zero_everywhere():
    r = population_uniqueness([2, 3, 4, 2], 0.1)
    for name in MODELS:
        assert r.estimates[name].fraction == 0.0
    assert r.dankar.fraction == 0.0


def test_all_classes_unique_documented_result():
    r = population_uniqueness([1] * 50, 0.2, bootstrap=20)
    assert r.estimates["naive"].fraction == 1.0
    assert r.estimates["zayatz"].fraction == pytest.approx(1.0)
    assert r.estimates["pitman"].fraction is None
    assert "not identifiable" in r.estimates["pitman"].note
    assert r.estimates["snb"].fraction is None
    assert r.estimates["poisson_gamma"].fraction == pytest.approx(math.exp(-4.0))
    assert r.dankar_model == "zayatz" and r.dankar.fraction == pytest.approx(1.0)
    small_f = population_uniqueness([1] * 50, 0.05, bootstrap=0)
    assert small_f.dankar_model == "zayatz"


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.5, float("nan"), float("inf"), "abc", None])
def test_invalid_sampling_fraction(bad):
    with pytest.raises(DataError, match="sampling fraction"):
        population_uniqueness([1, 2], bad)


@pytest.mark.parametrize("bad", [[1, -2], [1.5, 2], ["a", "b"]])
def test_invalid_class_sizes(bad):
    with pytest.raises(UserError, match="class sizes"):
        population_uniqueness(bad, 0.5)


def test_empty_sample():
    with pytest.raises(DataError, match="non-empty"):
        population_uniqueness([], 0.5)
    with pytest.raises(DataError, match="non-empty"):
        population_uniqueness([0, 0], 0.5)


def test_to_dict_is_json_and_has_summary():
    r = population_uniqueness([1] * 30 + [2] * 8 + [3] * 4 + [5, 8, 13], 0.05, bootstrap=50)
    d = json.loads(json.dumps(r.to_dict()))
    assert set(d["estimates"]) == set(MODELS)
    assert d["min"] <= d["dankar"]["fraction"] <= d["max"]
    assert d["summary"].startswith("population uniqueness at f = 0.05: between ")
    assert "depending on the model" in d["summary"]
    assert d["estimates"]["zayatz"]["interval_method"].startswith("class bootstrap")


def test_bootstrap_is_reproducible_and_seeded():
    sizes = [1] * 30 + [2] * 8 + [3] * 4 + [5, 8, 13]
    a = population_uniqueness(sizes, 0.3, bootstrap=40, seed=7)
    b = population_uniqueness(sizes, 0.3, bootstrap=40, seed=7)
    c = population_uniqueness(sizes, 0.3, bootstrap=40, seed=8)
    assert a.estimates["zayatz"].interval == b.estimates["zayatz"].interval
    assert a.estimates["zayatz"].interval != c.estimates["zayatz"].interval


# ---------------------------------------------------------------------------------------------
# Properties


class_sizes_strategy = st.lists(st.integers(min_value=1, max_value=40), min_size=2, max_size=60)
fraction_strategy = st.sampled_from([0.01, 0.05, 0.1, 0.3, 0.7, 1.0])


@settings(max_examples=40, deadline=None)
@given(class_sizes_strategy, fraction_strategy, st.randoms(use_true_random=False))
def test_invariant_to_class_order_and_within_unit_interval(sizes, f, rnd):
    shuffled = list(sizes)
    rnd.shuffle(shuffled)
    a = population_uniqueness(sizes, f, bootstrap=20)
    b = population_uniqueness(shuffled, f, bootstrap=20)
    assert a.to_dict() == b.to_dict()
    for e in [*a.estimates.values(), a.dankar]:
        if e.fraction is None:
            continue
        assert 0.0 <= e.fraction <= 1.0 + 1e-12, e
        assert e.sample_count == pytest.approx(e.fraction * a.records)
        if e.interval is not None:
            low, high = e.interval
            assert -1e-12 <= low <= high <= 1.0 + 1e-12, e
    # The naive share is an upper bound for the Poisson-type models.
    naive = a.estimates["naive"].fraction
    assert a.estimates["poisson"].fraction <= naive + 1e-12
    assert a.estimates["poisson_gamma"].fraction <= naive + 1e-12
    assert a.estimates["zayatz"].fraction <= naive + 1e-12


# ---------------------------------------------------------------------------------------------
# Validation on synthetic populations where the truth is known


def _sample_population(population_sizes: np.ndarray, f: float, seed: int):
    """Bernoulli(f) sample of every person; returns sample class sizes and the true share."""
    rng = np.random.default_rng(seed)
    sampled = rng.binomial(population_sizes, f)
    truth = ((population_sizes == 1) & (sampled == 1)).sum() / sampled.sum()
    return sampled[sampled > 0], float(truth)


@pytest.fixture(scope="module")
def heavy_tailed_population() -> np.ndarray:
    # Zipf(2) class sizes: most classes are small, a few are huge; about 8 % of people unique.
    return np.random.default_rng(3).zipf(2.0, size=200_000)


@pytest.mark.parametrize("f", [0.01, 0.05])
def test_directions_at_small_sampling_fractions(heavy_tailed_population, f):
    sizes, truth = _sample_population(heavy_tailed_population, f, seed=11)
    r = population_uniqueness(sizes, f, bootstrap=0)
    est = {name: e.fraction for name, e in r.estimates.items()}
    assert 0.05 < truth < 0.12
    # The naive estimator overstates strongly.
    assert est["naive"] > 2.5 * truth
    # Poisson-Gamma understates on a heavy-tailed population.
    assert est["poisson_gamma"] < 0.5 * truth
    # The models that use the class-size distribution do better than naive.
    for name in ("pitman", "snb", "zayatz"):
        assert abs(est[name] - truth) < 0.5 * abs(est["naive"] - truth), name
    assert r.dankar_model == "pitman"
    assert abs(r.dankar.fraction - truth) < 0.5 * abs(est["naive"] - truth)


def test_directions_at_one_percent_on_a_heavier_tail():
    # Zipf(1.6): under 0.1 % of the people are unique, the naive share is an order of
    # magnitude too high at f = 1 %.
    population = np.random.default_rng(5).zipf(1.6, size=200_000)
    population = population[population < 10**7]
    sizes, truth = _sample_population(population, 0.01, seed=2)
    r = population_uniqueness(sizes, 0.01, bootstrap=0)
    assert r.estimates["naive"].fraction > 8 * truth
    assert r.estimates["poisson_gamma"].fraction < truth
    assert abs(r.dankar.fraction - truth) < 0.15 * abs(r.estimates["naive"].fraction - truth)


def test_large_sampling_fraction_dankar_close_to_truth(heavy_tailed_population):
    sizes, truth = _sample_population(heavy_tailed_population, 0.5, seed=4)
    r = population_uniqueness(sizes, 0.5, bootstrap=0)
    assert r.dankar_model in ("snb", "zayatz")
    assert abs(r.dankar.fraction - truth) < 0.1 * truth
    assert r.estimates["naive"].fraction > 1.2 * truth


def test_full_population_every_estimator_exact(heavy_tailed_population):
    sizes, truth = _sample_population(heavy_tailed_population, 1.0, seed=0)
    r = population_uniqueness(sizes, 1.0)
    for e in [*r.estimates.values(), r.dankar]:
        assert e.fraction == pytest.approx(truth)


@pytest.mark.parametrize("sizes,f", [
    # (1 - d) ** (alpha + 2) underflowed in the SNB moment equations.
    ([3, 4, 1, 1, 1, 1, 1, 3, 4, 2, 3, 1, 3, 4], 0.3),
    # At f = 0.99 a bootstrap replicate can hold only classes too large to be sampled once.
    ([5, 23, 23, 19, 2, 10, 15, 16, 23, 1, 7, 12, 11, 1], 0.99),
    ([1], 0.5),
    ([1, 10**9], 0.01),
])
def test_numerically_hard_inputs_give_valid_results(sizes, f):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = population_uniqueness(sizes, f, bootstrap=20)
    for e in [*r.estimates.values(), r.dankar]:
        assert e.fraction is None or 0.0 <= e.fraction <= 1.0
