"""The demo population: one row per person, drawn with a seeded generator.

An age pyramid over 0..100 with a baby-boom bulge, a female share rising among the old, a
place of residence by the postal codes' probabilities, a profession with a long tail (or an
employment status by age), and direct identifiers unique per person.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .vocabularies import (
    DNI_LETTERS,
    GEOGRAPHY,
    GIVEN_NAMES_F,
    GIVEN_NAMES_M,
    HOMEMAKER,
    MAX_AGE,
    MINOR,
    POPULATION_COLUMNS,
    PROFESSION_ZIPF,
    PROFESSIONS,
    RETIRED,
    STUDENT,
    SURNAMES,
    UNEMPLOYED,
    DemoError,
)


def _age_weights() -> np.ndarray:
    """Relative population at each age 0..100: a contracting pyramid with a baby-boom bulge."""
    age = np.arange(MAX_AGE + 1, dtype=float)
    births = 0.75 + 0.25 * np.clip((age - 5) / 30, 0, 1)           # fewer births lately
    boom = 0.45 * np.exp(-0.5 * ((age - 50) / 9) ** 2)              # the 1960s-70s boom
    survival = np.exp(-np.exp((age - 86) / 8.5))                    # Gompertz-like mortality
    return (births + boom) * survival


def _zipf(n: int, exponent: float) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** exponent
    return w / w.sum()


def _spaced_unique(rng: np.random.Generator, n: int, space: int, what: str) -> np.ndarray:
    """``n`` distinct integers in [0, space), in random order, without materializing ``space``.

    One draw per stratum of width ``space // n``: distinct by construction, uniform enough for
    identifiers, and O(n) memory (a permutation of 10^8 values would take 800 MB).
    """
    width = space // n if n else 1
    if width < 1:
        raise DemoError(f"population {n:,} is too large for {what} ({space:,} possible values)")
    values = np.arange(n, dtype=np.int64) * width + rng.integers(0, width, size=n)
    return rng.permutation(values)


def _professions(rng: np.random.Generator, age: np.ndarray) -> np.ndarray:
    """Profession or employment status by age; the workforce follows a Zipf law."""
    n = len(age)
    u = rng.random(n)
    status = np.full(n, "", dtype=object)
    status[age < 16] = MINOR
    young = (age >= 16) & (age < 25)
    status[young & (u < 0.55)] = STUDENT
    working_age = (age >= 16) & (age < 67)
    status[working_age & (u >= 0.55) & (u < 0.63)] = UNEMPLOYED
    status[working_age & (age >= 25) & (u >= 0.63) & (u < 0.68)] = HOMEMAKER
    status[(age >= 67) & (u < 0.96)] = RETIRED
    workers = status == ""
    names = np.array([p for p, _g in PROFESSIONS], dtype=object)
    status[workers] = names[rng.choice(len(names), size=int(workers.sum()), p=_zipf(len(names), PROFESSION_ZIPF))]
    return status


def _full_names(rng: np.random.Generator, female: np.ndarray) -> np.ndarray:
    n = len(female)
    given_f = np.array(GIVEN_NAMES_F, dtype=object)[rng.choice(len(GIVEN_NAMES_F), n, p=_zipf(len(GIVEN_NAMES_F), 0.7))]
    given_m = np.array(GIVEN_NAMES_M, dtype=object)[rng.choice(len(GIVEN_NAMES_M), n, p=_zipf(len(GIVEN_NAMES_M), 0.7))]
    surnames = np.array(SURNAMES, dtype=object)
    p_sur = _zipf(len(SURNAMES), 0.6)
    first = rng.choice(len(SURNAMES), n, p=p_sur)
    second = rng.choice(len(SURNAMES), n, p=p_sur)
    given = np.where(female, given_f, given_m)
    return given + " " + surnames[first] + " " + surnames[second]


def generate_population(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """One row per person (columns :data:`POPULATION_COLUMNS`), drawn with ``rng``."""
    age_w = _age_weights()
    age = rng.choice(MAX_AGE + 1, size=n, p=age_w / age_w.sum()).astype(np.int64)
    # women outlive men: the female share rises from 49 % to ~75 % among the very old
    p_female = 0.49 + 0.26 * np.clip((age - 60) / 40, 0, 1)
    female = rng.random(n) < p_female
    place = rng.choice(len(GEOGRAPHY.postal_code), size=n, p=GEOGRAPHY.probability)
    patient_num = _spaced_unique(rng, n, 10**7, "7-digit patient ids")
    dni_num = _spaced_unique(rng, n, 10**8, "8-digit national ids")
    letters = np.array(list(DNI_LETTERS), dtype=object)[dni_num % 23]
    profession = _professions(rng, age)
    full_name = _full_names(rng, female)
    frame = pd.DataFrame({
        "patient_id": pd.Series(patient_num).astype(str).str.zfill(7).radd("P"),
        "national_id": pd.Series(dni_num).astype(str).str.zfill(8) + pd.Series(letters, dtype="str"),
        "full_name": pd.Series(full_name, dtype="str"),
        "age": age,
        "sex": pd.Series(np.where(female, "F", "M"), dtype="str"),
        "postal_code": pd.Series(GEOGRAPHY.postal_code[place], dtype="str"),
        "municipality": pd.Series(GEOGRAPHY.municipality[place], dtype="str"),
        "province": pd.Series(GEOGRAPHY.province[place], dtype="str"),
        "profession": pd.Series(profession, dtype="str"),
    })
    return frame[POPULATION_COLUMNS]
