"""Seeded synthetic population and hospital-discharge table for the demo release.

The model is a fictional region publishing hospital discharges on an open-data portal:

* nine provinces of very unequal size (Zipf-like weights), each with a 2-digit code and
  grouped into three regions;
* 5 to 10 municipalities per province; each owns postal codes whose first two digits are the
  province code (the capital owns ``PP001..PP0nn``, the j-th other municipality ``PPj00``,
  ``PPj10``, ...), so masking a postal code to 3 digits groups a municipality's codes;
* an age pyramid over 0..100, sex, a profession with a long tail (Zipf over ~80 professions,
  plus not-in-employment categories that depend on age);
* direct identifiers: ``patient_id`` ("P" + 7 digits), ``national_id`` (8 digits and the
  Spanish DNI control letter) and ``full_name``, unique per person where it must be.

Discharges are drawn from the population: distinct patients are chosen with a probability
rising with age (and for women of child-bearing age), then a few readmissions are added, again
more often for the old. A discharge's quasi-identifiers are exactly its person's population
values, so journalist risk and population uniqueness have a *true* value that can be computed
from ``population.parquet``. Diagnoses (ICD-10 three-character codes) have a prevalence that
depends on age, sex and province; admission dates are uniform over 2024-01-01..2025-12-31.

The lists below (geography, professions, diagnoses) are the single source of truth for both
the generator and the hierarchy files in ``assets_config/hierarchies/``
(:func:`write_hierarchies`). Everything is vectorized with numpy: the only Python loops run over
the lists (tens of items) or over (age band, sex, province) cells, never over rows.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import UserError
from ..hierarchies import IntervalHierarchy, MaskHierarchy
from ..io import write_bytes_atomic, write_table_atomic

#: Bumped whenever the model changes, so cached demo files are regenerated.
GENERATOR_VERSION = 1
DEFAULT_SEED = 20240101
DEFAULT_POPULATION = 1_000_000
DEFAULT_DISCHARGES = 20_000
MAX_AGE = 100
FIRST_DAY = np.datetime64("2024-01-01")
LAST_DAY = np.datetime64("2025-12-31")

POPULATION_COLUMNS = [
    "patient_id", "national_id", "full_name", "age", "sex",
    "postal_code", "municipality", "province", "profession",
]
DISCHARGE_COLUMNS = POPULATION_COLUMNS + ["admission_date", "diagnosis", "length_of_stay"]

# ----- geography -------------------------------------------------------------------------------
# (name, 2-digit code, region, [other municipalities, largest first]); provinces are listed
# largest first and the capital municipality carries the province's name.
PROVINCES: list[tuple[str, str, str, list[str]]] = [
    ("Valdemora", "28", "Centro", [
        "Alcorza", "Villanueva del Prado", "Torrecilla", "San Lorenzo de Valdemora",
        "Navalrubia", "Cerromar", "Fuentecilla", "Arroyo Seco", "Los Tejares"]),
    ("Puerto Alba", "46", "Levante", [
        "Benimar", "Playasol", "Almarjal", "Gandara", "Riosol", "Cala Blanca", "Serrella",
        "Vall de Roures"]),
    ("Sierra Negra", "18", "Sur", [
        "Alhendra", "Monachil de Arriba", "Guadix Viejo", "Lanjar", "Orgiva Alta",
        "Castril de la Sierra", "Zujaira"]),
    ("Montecillo", "37", "Centro", [
        "Bejarano", "Ledesma Nueva", "Alba del Tormes", "Penaranda", "Vitigudino Bajo",
        "Guijuelo del Monte"]),
    ("Riberas", "12", "Levante", [
        "Vinarola", "Burriana Vieja", "Onda Clara", "Benicasim del Mar", "Segorbe Alto",
        "Nules de la Plana"]),
    ("Campollano", "02", "Centro", [
        "Hellinar", "Villarrobledo Norte", "Almansilla", "La Roda Baja", "Caudete Alto"]),
    ("Almedra", "04", "Sur", [
        "Roquetas del Sol", "Nijar Viejo", "Vera de Levante", "Huercal Alto", "Adra Nueva"]),
    ("Torrelobos", "23", "Sur", [
        "Linarejos", "Ubedilla", "Andujar del Rio", "Martos Bajo"]),
    ("Fuentesanta", "44", "Levante", [
        "Alcaniz del Campo", "Calamocha Alta", "Andorra de Teruel", "Utrillas Viejo"]),
]
#: Zipf exponent of province sizes: the largest province is ~15x the smallest.
PROVINCE_ZIPF = 1.25
#: Postal codes owned by each capital, largest province first.
CAPITAL_POSTAL_CODES = [40, 25, 18, 12, 10, 8, 6, 5, 4]


@dataclass(frozen=True)
class Geography:
    """Every postal code with its municipality, province and probability of residence."""

    postal_code: np.ndarray    # str, one per postal code
    municipality: np.ndarray   # str, the municipality owning each postal code
    province: np.ndarray       # str, its province
    probability: np.ndarray    # float, P(a person lives at that postal code); sums to 1


def _geography() -> Geography:
    codes, munis, provs, probs = [], [], [], []
    prov_w = 1.0 / np.arange(1, len(PROVINCES) + 1) ** PROVINCE_ZIPF
    prov_w /= prov_w.sum()
    for p, (name, code, _region, others) in enumerate(PROVINCES):
        municipalities = [name, *others]
        # the capital holds about 40 % of its province; the others follow a Zipf law
        muni_w = np.r_[0.4, 0.6 * (w := 1.0 / np.arange(1, len(others) + 1)) / w.sum()]
        for j, muni in enumerate(municipalities):
            if j == 0:
                n_codes = CAPITAL_POSTAL_CODES[p]
                owned = [f"{code}{i:03d}" for i in range(1, n_codes + 1)]
            else:
                n_codes = 3 if j <= 2 else 2 if j <= 5 else 1
                owned = [f"{code}{j}{i}0" for i in range(n_codes)]
            # uneven postal districts: weight 1/sqrt(rank)
            code_w = 1.0 / np.sqrt(np.arange(1, len(owned) + 1))
            code_w = code_w / code_w.sum() * muni_w[j] * prov_w[p]
            codes += owned
            munis += [muni] * len(owned)
            provs += [name] * len(owned)
            probs += list(code_w)
    probability = np.asarray(probs)
    return Geography(
        np.asarray(codes), np.asarray(munis), np.asarray(provs), probability / probability.sum()
    )


GEOGRAPHY = _geography()
PROVINCE_CODE = {name: code for name, code, _r, _m in PROVINCES}
PROVINCE_REGION = {name: region for name, _c, region, _m in PROVINCES}
MUNICIPALITY_PROVINCE = dict(zip(GEOGRAPHY.municipality.tolist(), GEOGRAPHY.province.tolist(), strict=True))

# ----- professions -----------------------------------------------------------------------------
# Major groups after ISCO-08; within the workforce professions follow a Zipf law in list order,
# so the list is ordered from common to rare (the long tail is at the end).
PROFESSIONS: list[tuple[str, str]] = [
    ("Shop salesperson", "Services and sales"),
    ("Office clerk", "Clerical support"),
    ("Cleaner", "Elementary occupations"),
    ("Waiter", "Services and sales"),
    ("Cook", "Services and sales"),
    ("Truck driver", "Plant and machine operators"),
    ("Primary school teacher", "Professionals"),
    ("Bricklayer", "Craft and trades"),
    ("Nurse", "Professionals"),
    ("Accounting clerk", "Clerical support"),
    ("Warehouse worker", "Elementary occupations"),
    ("Cashier", "Clerical support"),
    ("Farm labourer", "Elementary occupations"),
    ("Care worker", "Services and sales"),
    ("Electrician", "Craft and trades"),
    ("Secondary school teacher", "Professionals"),
    ("Security guard", "Services and sales"),
    ("Hairdresser", "Services and sales"),
    ("Software developer", "Professionals"),
    ("Mechanic", "Craft and trades"),
    ("Receptionist", "Clerical support"),
    ("Plumber", "Craft and trades"),
    ("Sales representative", "Technicians and associate professionals"),
    ("Carpenter", "Craft and trades"),
    ("Bus driver", "Plant and machine operators"),
    ("Accountant", "Professionals"),
    ("Police officer", "Services and sales"),
    ("Painter", "Craft and trades"),
    ("Machine operator", "Plant and machine operators"),
    ("Crop farmer", "Skilled agricultural"),
    ("Physician", "Professionals"),
    ("Administrative assistant", "Clerical support"),
    ("Lawyer", "Professionals"),
    ("Baker", "Craft and trades"),
    ("Butcher", "Craft and trades"),
    ("Kitchen helper", "Elementary occupations"),
    ("Retail manager", "Managers"),
    ("Engineering technician", "Technicians and associate professionals"),
    ("Social worker", "Professionals"),
    ("Pharmacist", "Professionals"),
    ("Welder", "Craft and trades"),
    ("Civil engineer", "Professionals"),
    ("Livestock farmer", "Skilled agricultural"),
    ("Taxi driver", "Plant and machine operators"),
    ("Postal worker", "Clerical support"),
    ("Firefighter", "Services and sales"),
    ("Hotel manager", "Managers"),
    ("Architect", "Professionals"),
    ("Laboratory technician", "Technicians and associate professionals"),
    ("Financial analyst", "Professionals"),
    ("University lecturer", "Professionals"),
    ("Dental assistant", "Technicians and associate professionals"),
    ("Forklift operator", "Plant and machine operators"),
    ("Gardener", "Skilled agricultural"),
    ("Librarian", "Professionals"),
    ("Tailor", "Craft and trades"),
    ("Psychologist", "Professionals"),
    ("Physiotherapist", "Professionals"),
    ("Journalist", "Professionals"),
    ("Production manager", "Managers"),
    ("Dentist", "Professionals"),
    ("Veterinarian", "Professionals"),
    ("Fisher", "Skilled agricultural"),
    ("Roofer", "Craft and trades"),
    ("Jeweller", "Craft and trades"),
    ("Graphic designer", "Technicians and associate professionals"),
    ("Translator", "Professionals"),
    ("Judge", "Professionals"),
    ("Air traffic controller", "Technicians and associate professionals"),
    ("Pilot", "Technicians and associate professionals"),
    ("Military officer", "Armed forces"),
    ("Soldier", "Armed forces"),
    ("Musician", "Professionals"),
    ("Actor", "Professionals"),
    ("Forester", "Skilled agricultural"),
    ("Beekeeper", "Skilled agricultural"),
    ("Clockmaker", "Craft and trades"),
    ("Glassblower", "Craft and trades"),
    ("Mayor", "Managers"),
    ("Lighthouse keeper", "Elementary occupations"),
]
NOT_EMPLOYED_GROUP = "Not in employment"
MINOR, STUDENT, UNEMPLOYED, HOMEMAKER, RETIRED = (
    "Minor", "Student", "Unemployed", "Homemaker", "Retired",
)
STATUSES = [MINOR, STUDENT, UNEMPLOYED, HOMEMAKER, RETIRED]
PROFESSION_ZIPF = 1.05
PROFESSION_GROUP = {**dict(PROFESSIONS), **{s: NOT_EMPLOYED_GROUP for s in STATUSES}}

# ----- diagnoses -------------------------------------------------------------------------------
# ICD-10 chapters: (label, chapter mean length of stay in days).
CHAPTERS: dict[str, tuple[str, float]] = {
    "A": ("I Infectious and parasitic (A00-B99)", 6.0),
    "C": ("II Neoplasms (C00-D49)", 8.0),
    "E": ("IV Endocrine and metabolic (E00-E89)", 5.0),
    "F": ("V Mental and behavioural (F01-F99)", 14.0),
    "G": ("VI Nervous system (G00-G99)", 6.0),
    "I": ("IX Circulatory system (I00-I99)", 7.0),
    "J": ("X Respiratory system (J00-J99)", 6.0),
    "K": ("XI Digestive system (K00-K95)", 4.5),
    "L": ("XII Skin (L00-L99)", 4.0),
    "M": ("XIII Musculoskeletal (M00-M99)", 5.0),
    "N": ("XIV Genitourinary (N00-N99)", 4.0),
    "O": ("XV Pregnancy and childbirth (O00-O9A)", 2.5),
    "P": ("XVI Perinatal (P00-P96)", 6.0),
    "Q": ("XVII Congenital (Q00-Q99)", 5.0),
    "R": ("XVIII Symptoms and signs (R00-R99)", 2.5),
    "S": ("XIX Injury and poisoning (S00-T88)", 5.0),
}
# (code, chapter key, base weight, age-sex profile); profiles are defined in _profile_weight.
DIAGNOSES: list[tuple[str, str, float, str]] = [
    ("A09", "A", 3.0, "child"), ("A41", "A", 4.0, "old"), ("A04", "A", 1.0, "flat"),
    ("A08", "A", 1.5, "child"), ("A46", "A", 0.8, "old"), ("B34", "A", 1.0, "child"),
    ("B20", "A", 0.3, "young"),
    ("C18", "C", 2.0, "old"), ("C34", "C", 2.5, "old"), ("C50", "C", 2.2, "female_adult"),
    ("C61", "C", 1.8, "male_old"), ("C67", "C", 1.2, "old"), ("C16", "C", 0.8, "old"),
    ("C25", "C", 0.9, "old"), ("C22", "C", 0.6, "old"), ("C71", "C", 0.4, "adult"),
    ("C91", "C", 0.3, "child"), ("C92", "C", 0.4, "old"), ("D25", "C", 1.0, "female_adult"),
    ("E11", "E", 2.5, "old"), ("E10", "E", 0.8, "young"), ("E87", "E", 1.5, "old"),
    ("E66", "E", 0.6, "adult"), ("E86", "E", 1.0, "old"), ("E03", "E", 0.3, "female_adult"),
    ("F10", "F", 1.2, "adult"), ("F20", "F", 1.0, "young"), ("F32", "F", 1.2, "adult"),
    ("F03", "F", 0.8, "very_old"), ("F31", "F", 0.6, "young"), ("F50", "F", 0.2, "teen"),
    ("G40", "G", 1.0, "flat"), ("G45", "G", 1.0, "old"), ("G30", "G", 0.7, "very_old"),
    ("G20", "G", 0.5, "old"), ("G35", "G", 0.3, "young"),
    ("I21", "I", 3.0, "old"), ("I50", "I", 4.0, "very_old"), ("I63", "I", 3.0, "old"),
    ("I48", "I", 2.5, "old"), ("I20", "I", 1.5, "old"), ("I10", "I", 0.8, "old"),
    ("I26", "I", 0.8, "adult"), ("I70", "I", 1.0, "old"), ("I61", "I", 0.8, "old"),
    ("I35", "I", 0.7, "very_old"), ("I80", "I", 0.5, "adult"),
    ("J18", "J", 5.0, "u_shape"), ("J44", "J", 3.5, "old"), ("J45", "J", 1.0, "child"),
    ("J20", "J", 1.5, "child"), ("J21", "J", 1.5, "infant"), ("J96", "J", 1.5, "very_old"),
    ("J69", "J", 0.8, "very_old"), ("J35", "J", 0.8, "child"), ("J90", "J", 0.5, "old"),
    ("K35", "K", 2.5, "young"), ("K80", "K", 3.0, "adult"), ("K40", "K", 1.8, "male_adult"),
    ("K85", "K", 1.2, "adult"), ("K56", "K", 1.2, "old"), ("K57", "K", 1.0, "old"),
    ("K92", "K", 1.0, "old"), ("K70", "K", 0.6, "adult"), ("K29", "K", 0.6, "flat"),
    ("L03", "L", 1.2, "adult"), ("L02", "L", 0.8, "flat"), ("L89", "L", 0.3, "very_old"),
    ("M17", "M", 2.0, "old"), ("M16", "M", 1.6, "old"), ("M54", "M", 1.0, "adult"),
    ("M48", "M", 0.8, "old"), ("M51", "M", 0.8, "adult"), ("M06", "M", 0.3, "female_adult"),
    ("N39", "N", 2.5, "very_old"), ("N18", "N", 1.2, "old"), ("N20", "N", 1.5, "adult"),
    ("N40", "N", 1.0, "male_old"), ("N17", "N", 1.0, "old"), ("N10", "N", 0.6, "female_adult"),
    ("O80", "O", 9.0, "obstetric"), ("O82", "O", 3.0, "obstetric"), ("O42", "O", 1.5, "obstetric"),
    ("O99", "O", 1.0, "obstetric"), ("O03", "O", 0.8, "obstetric"), ("O14", "O", 0.4, "obstetric"),
    ("P07", "P", 1.5, "newborn"), ("P59", "P", 1.5, "newborn"), ("P22", "P", 0.8, "newborn"),
    ("Q21", "Q", 0.3, "child"), ("Q65", "Q", 0.2, "infant"),
    ("R07", "R", 2.0, "adult"), ("R55", "R", 1.2, "old"), ("R10", "R", 1.5, "young"),
    ("R50", "R", 1.0, "child"), ("R06", "R", 0.8, "old"),
    ("S72", "S", 3.0, "very_old"), ("S06", "S", 1.5, "u_shape"), ("S82", "S", 1.2, "adult"),
    ("S52", "S", 1.0, "flat"), ("S32", "S", 0.8, "old"), ("T81", "S", 1.0, "old"),
    ("S42", "S", 0.7, "flat"), ("T51", "S", 0.3, "young"),
]
DIAGNOSIS_CHAPTER = {code: CHAPTERS[ch][0] for code, ch, _w, _p in DIAGNOSES}
#: Spread of the province effect on a chapter's prevalence (log scale).
PROVINCE_EFFECT_SD = 0.35
#: Fixed seed of the model's own constants (province effects): they are part of the model,
#: not of a draw, so every seed describes the same region.
MODEL_SEED = 7

# ----- names -----------------------------------------------------------------------------------
GIVEN_NAMES_F = [
    "Maria", "Carmen", "Ana", "Isabel", "Laura", "Lucia", "Cristina", "Marta", "Elena", "Pilar",
    "Sara", "Paula", "Rosa", "Raquel", "Teresa", "Andrea", "Beatriz", "Silvia", "Julia", "Alba",
    "Irene", "Nuria", "Patricia", "Rocio", "Sofia", "Monica", "Eva", "Clara", "Ines", "Noelia",
]
GIVEN_NAMES_M = [
    "Antonio", "Jose", "Manuel", "Francisco", "David", "Juan", "Javier", "Daniel", "Carlos",
    "Miguel", "Alejandro", "Rafael", "Pedro", "Pablo", "Sergio", "Jorge", "Luis", "Alberto",
    "Fernando", "Alvaro", "Diego", "Adrian", "Raul", "Ivan", "Ruben", "Oscar", "Andres",
    "Ramon", "Enrique", "Hugo",
]
SURNAMES = [
    "Garcia", "Rodriguez", "Gonzalez", "Fernandez", "Lopez", "Martinez", "Sanchez", "Perez",
    "Gomez", "Martin", "Jimenez", "Ruiz", "Hernandez", "Diaz", "Moreno", "Munoz", "Alvarez",
    "Romero", "Alonso", "Gutierrez", "Navarro", "Torres", "Dominguez", "Vazquez", "Ramos",
    "Gil", "Ramirez", "Serrano", "Blanco", "Molina", "Morales", "Suarez", "Ortega", "Delgado",
    "Castro", "Ortiz", "Rubio", "Marin", "Sanz", "Nunez", "Iglesias", "Medina", "Garrido",
    "Cortes", "Castillo", "Santos", "Lozano", "Guerrero", "Cano", "Prieto", "Mendez", "Cruz",
    "Calvo", "Gallego", "Vidal", "Leon", "Marquez", "Herrera", "Pena", "Flores",
]
DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


class DemoError(UserError):
    """Bad parameters for the demo generator (sizes, seed, output folder)."""


# ----- hierarchies -----------------------------------------------------------------------------


def hierarchy_rows() -> dict[str, list[list[str]]]:
    """The ARX hierarchy tables the demo data needs, by file stem (``value;level1;...;*``).

    ``municipality`` (municipality → province → region → ``*``), ``profession`` (profession →
    group → ``*``) and ``icd10`` (code → chapter → ``*``) are the table hierarchies of the
    release spec. ``postal_code`` and ``age`` are the same mask (keep 4, 3, 2) and interval
    (5, 10, 20 years) hierarchies the spec declares inline, written out for ARX users.
    """
    muni_rows = [
        [m, p, PROVINCE_REGION[p], "*"] for m, p in MUNICIPALITY_PROVINCE.items()
    ]
    prof_rows = [[p, g, "*"] for p, g in PROFESSION_GROUP.items()]
    icd_rows = [[code, DIAGNOSIS_CHAPTER[code], "*"] for code, _c, _w, _p in DIAGNOSES]
    postal = MaskHierarchy("postal_code", [4, 3, 2]).table(GEOGRAPHY.postal_code)
    ages = IntervalHierarchy("age", [5, 10, 20]).table(np.arange(MAX_AGE + 1))
    return {
        "municipality": muni_rows,
        "profession": prof_rows,
        "icd10": icd_rows,
        "postal_code": [list(map(str, r)) for r in postal],
        "age": [list(map(str, r)) for r in ages],
    }


def hierarchy_texts() -> dict[str, str]:
    """File name → content of every demo hierarchy file (``;``-separated, LF, no header)."""
    return {
        f"{stem}.csv": "".join(";".join(row) + "\n" for row in rows)
        for stem, rows in hierarchy_rows().items()
    }


def write_hierarchies(folder: str | Path) -> list[Path]:
    """Write the demo hierarchy files into ``folder`` (atomically); returns the paths."""
    folder = Path(folder)
    return [
        write_bytes_atomic(text.encode("utf-8"), folder / name, mode=0o644)
        for name, text in hierarchy_texts().items()
    ]


# ----- the draws -------------------------------------------------------------------------------


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


def generate_frames(population: int = DEFAULT_POPULATION, discharges: int = DEFAULT_DISCHARGES,
                    seed: int = DEFAULT_SEED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The population and discharge tables for ``seed`` (same seed → identical frames)."""
    _check_sizes(population, discharges, seed)
    rng = np.random.default_rng(seed)
    people = generate_population(population, rng)
    return people, generate_discharges(people, discharges, rng)


def _check_sizes(population: int, discharges: int, seed: int) -> None:
    if isinstance(population, bool) or not isinstance(population, (int, np.integer)) or population < 1:
        raise DemoError(f"population must be a positive integer, got {population!r}")
    if population >= 10**7:
        raise DemoError(f"population {population:,} does not fit 7-digit patient ids (max 9,999,999)")
    if isinstance(discharges, bool) or not isinstance(discharges, (int, np.integer)) or discharges < 0:
        raise DemoError(f"discharges must be a non-negative integer, got {discharges!r}")
    if round(discharges * FIRST_ADMISSION_SHARE) > population:
        raise DemoError(
            f"discharges {discharges:,} need about {round(discharges * FIRST_ADMISSION_SHARE):,} "
            f"distinct patients but the population has {population:,}"
        )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise DemoError(f"seed must be a non-negative integer, got {seed!r}")


# ----- files -----------------------------------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parents[2]
MANIFEST = "manifest.json"


def default_out_dir() -> Path:
    """``data/demo`` at the repository root (git-ignored), or under the current folder when the
    package is installed outside a checkout."""
    root = REPO_ROOT if (REPO_ROOT / "assets_config").is_dir() else Path.cwd()
    return root / "data" / "demo"


def _parameters(population: int, discharges: int, seed: int) -> dict[str, int]:
    return {
        "population": int(population), "discharges": int(discharges), "seed": int(seed),
        "generator_version": GENERATOR_VERSION,
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_current(out_dir: str | Path, population: int = DEFAULT_POPULATION,
               discharges: int = DEFAULT_DISCHARGES, seed: int = DEFAULT_SEED) -> bool:
    """True when ``out_dir`` holds files generated with these parameters, unaltered since."""
    out = Path(out_dir)
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if manifest.get("parameters") != _parameters(population, discharges, seed):
        return False
    files = manifest.get("files", {})
    for name in ("population.parquet", "discharges.parquet"):
        path = out / name
        if not path.exists() or files.get(name, {}).get("sha256") != _sha256(path):
            return False
    return True


def generate(out_dir: str | Path | None = None, population: int = DEFAULT_POPULATION,
             discharges: int = DEFAULT_DISCHARGES, seed: int = DEFAULT_SEED,
             force: bool = False) -> dict:
    """Write ``population.parquet``, ``discharges.parquet`` and ``manifest.json`` to ``out_dir``.

    Idempotent: when the folder already holds files made with the same parameters (checked by
    the manifest, including the files' SHA-256), nothing is rewritten unless ``force``. Each
    file is written atomically and the manifest last, so an interrupted run is redone. Returns
    the manifest, with ``"skipped": True`` when the files were already current.
    """
    _check_sizes(population, discharges, seed)
    out = Path(out_dir) if out_dir is not None else default_out_dir()
    if out.exists() and not out.is_dir():
        raise DemoError(f"{out}: exists and is not a folder")
    if not force and is_current(out, population, discharges, seed):
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        return {**manifest, "skipped": True}
    people, stays = generate_frames(population, discharges, seed)
    files = {}
    for name, frame in (("population.parquet", people), ("discharges.parquet", stays)):
        path = write_table_atomic(frame, out / name, mode=0o644)
        files[name] = {"rows": len(frame), "sha256": _sha256(path)}
    manifest = {"parameters": _parameters(population, discharges, seed), "files": files}
    write_bytes_atomic(json.dumps(manifest, indent=2).encode("utf-8") + b"\n", out / MANIFEST, mode=0o644)
    return {**manifest, "skipped": False}
