"""The demo discharges: hospital stays drawn from the population.

Distinct patients are chosen with a probability rising with age (and for women of
child-bearing age), then readmissions are added, again more often for the old. A discharge
copies its person's identifiers and quasi-identifiers; its diagnosis depends on age, sex and
province, its admission date is uniform over the period, its length of stay grows with age.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .vocabularies import (
    CHAPTERS,
    DIAGNOSES,
    DISCHARGE_COLUMNS,
    FIRST_DAY,
    LAST_DAY,
    MODEL_SEED,
    PROVINCE_EFFECT_SD,
    PROVINCES,
)


def _admission_weight(age: np.ndarray, female: np.ndarray) -> np.ndarray:
    """Relative yearly admission rate by age and sex: births, then rising steeply with age."""
    a = age.astype(float)
    rate = 0.9 * np.exp(-a / 1.5) + 0.08 + 0.02 * np.exp(a / 18)
    rate += female * 0.45 * np.exp(-0.5 * ((a - 32) / 6) ** 2)      # childbirth
    return rate


def _profile_weight(profile: str, age: np.ndarray, female: np.ndarray) -> np.ndarray:
    """Relative prevalence of a diagnosis with this age-sex ``profile`` (see DIAGNOSES)."""
    a = age.astype(float)
    bump = lambda centre, sd: np.exp(-0.5 * ((a - centre) / sd) ** 2)  # noqa: E731
    rising = lambda mid, scale: 1 / (1 + np.exp(-(a - mid) / scale))  # noqa: E731
    if profile == "flat":
        return np.ones_like(a)
    if profile == "child":
        return np.exp(-a / 6) + 0.02
    if profile == "infant":
        return np.exp(-a / 1.0)
    if profile == "newborn":
        return (a == 0).astype(float)
    if profile == "teen":
        return bump(17, 4) * (0.2 + 0.8 * female)
    if profile == "young":
        return bump(30, 10)
    if profile == "adult":
        return bump(52, 14)
    if profile == "old":
        return rising(62, 7)
    if profile == "very_old":
        return rising(78, 5)
    if profile == "u_shape":
        return np.exp(-a / 4) + rising(72, 6)
    if profile == "female_adult":
        return bump(55, 14) * female
    if profile == "male_adult":
        return bump(50, 16) * ~female
    if profile == "male_old":
        return rising(65, 6) * ~female
    if profile == "obstetric":
        return bump(31, 5.5) * female * ((a >= 14) & (a <= 50))
    raise ValueError(f"unknown diagnosis profile {profile!r}")


def _province_effects() -> np.ndarray:
    """Multiplicative effect of each province (rows, PROVINCES order) on each chapter."""
    rng = np.random.default_rng(MODEL_SEED)
    return np.exp(rng.normal(0.0, PROVINCE_EFFECT_SD, size=(len(PROVINCES), len(CHAPTERS))))


def diagnosis_weights(age: np.ndarray, female: np.ndarray, province_index: np.ndarray) -> np.ndarray:
    """Unnormalized P(diagnosis | age, sex, province): shape (len(age), len(DIAGNOSES))."""
    chapters = list(CHAPTERS)
    chapter_of = np.array([chapters.index(ch) for _code, ch, _w, _p in DIAGNOSES])
    base = np.array([w for _code, _ch, w, _p in DIAGNOSES])
    profiles = np.column_stack([_profile_weight(p, age, female) for _c, _ch, _w, p in DIAGNOSES])
    effect = _province_effects()[province_index][:, chapter_of]
    return profiles * base * effect


def _draw_diagnoses(rng: np.random.Generator, age: np.ndarray, female: np.ndarray,
                    province_index: np.ndarray) -> np.ndarray:
    """One diagnosis index per row, drawn per (age, sex, province) cell with one uniform each.

    Rows sharing a cell share the distribution, so weights are computed once per cell (at most
    101 × 2 × 9) and rows are sampled by inverse CDF; memory stays O(rows + cells × codes).
    """
    cell = (age.astype(np.int64) * 2 + female) * len(PROVINCES) + province_index
    cells, inverse = np.unique(cell, return_inverse=True)
    c_age = cells // (2 * len(PROVINCES))
    c_female = ((cells // len(PROVINCES)) % 2).astype(bool)
    c_prov = cells % len(PROVINCES)
    cdf = np.cumsum(diagnosis_weights(c_age, c_female, c_prov), axis=1)
    cdf /= cdf[:, -1:]
    u = rng.random(len(age))
    # vectorized inverse CDF: count, per row, the cdf steps of its cell below u
    order = np.argsort(inverse, kind="stable")
    out = np.empty(len(age), dtype=np.int64)
    bounds = np.searchsorted(inverse[order], np.arange(len(cells) + 1))
    for c in range(len(cells)):   # a loop over cells, not rows
        rows = order[bounds[c]:bounds[c + 1]]
        out[rows] = np.searchsorted(cdf[c], u[rows], side="right")
    return np.minimum(out, len(DIAGNOSES) - 1)


def _weighted_sample_without_replacement(rng: np.random.Generator, weights: np.ndarray, k: int) -> np.ndarray:
    """Indices of ``k`` distinct items drawn with probability ∝ ``weights`` (Efraimidis-Spirakis).

    Each item gets the key ``log(u) / w``; the ``k`` largest keys form the sample. Vectorized
    and O(n), unlike ``Generator.choice(replace=False, p=...)``.
    """
    keys = np.log(rng.random(len(weights))) / weights
    chosen = np.argpartition(-keys, k - 1)[:k] if k else np.empty(0, dtype=np.int64)
    return np.sort(chosen)


#: Share of discharges that are a patient's first in the period (the rest are readmissions).
FIRST_ADMISSION_SHARE = 0.88


def generate_discharges(population: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` discharges drawn from ``population`` (columns :data:`DISCHARGE_COLUMNS`).

    Distinct patients are chosen with probability rising with age (and childbirth); the
    remaining discharges are readmissions of those patients, again weighted by age. Each row
    copies its person's identifiers and quasi-identifiers unchanged.
    """
    age = population["age"].to_numpy()
    female = (population["sex"] == "F").to_numpy()
    weight = _admission_weight(age, female)
    n_patients = min(len(population), max(1, round(n * FIRST_ADMISSION_SHARE))) if n else 0
    patients = _weighted_sample_without_replacement(rng, weight, n_patients)
    extra = n - n_patients
    if extra:
        p = weight[patients] ** 1.5     # readmissions concentrate on the old and frail
        again = patients[rng.choice(n_patients, size=extra, p=p / p.sum())]
        persons = np.concatenate([patients, again])
    else:
        persons = patients
    persons = persons[rng.permutation(len(persons))]
    frame = population.iloc[persons].reset_index(drop=True)
    p_age = age[persons]
    p_female = female[persons]
    province_index = pd.Categorical(
        frame["province"], categories=[name for name, *_ in PROVINCES]
    ).codes.astype(np.int64)
    diagnosis = _draw_diagnoses(rng, p_age, p_female, province_index)
    days = int((LAST_DAY - FIRST_DAY).astype(int)) + 1
    admission = FIRST_DAY + rng.integers(0, days, size=len(persons)).astype("timedelta64[D]")
    mean_stay = np.array([CHAPTERS[ch][1] for _c, ch, _w, _p in DIAGNOSES])[diagnosis]
    mean_stay = mean_stay * (1 + p_age / 200)
    # overdispersed stays: negative binomial with shape 2 around (mean - 1), plus the first day
    shape = 2.0
    stay = rng.negative_binomial(shape, shape / (shape + mean_stay - 1)) + 1
    codes = np.array([c for c, *_ in DIAGNOSES], dtype=object)
    frame["admission_date"] = admission.astype("datetime64[ns]")
    frame["diagnosis"] = pd.Series(codes[diagnosis], dtype="str")
    frame["length_of_stay"] = stay.astype(np.int64)
    return frame[DISCHARGE_COLUMNS]
