"""What the demo region is made of: provinces, municipalities and postal codes, professions,
diagnoses, names; the tables' columns and the generator's error.

Every list here is read both by the draws (:mod:`.people`, :mod:`.discharges`) and by the
hierarchy files (:mod:`.hierarchy_files`), so the two cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UserError

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
