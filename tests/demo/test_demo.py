"""The demo data generator: determinism, sizes, invariants, hierarchies, spec conformance."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import chi2_contingency

from anon_dagster.demo import (
    DISCHARGE_COLUMNS,
    POPULATION_COLUMNS,
    DemoError,
    generate,
    generate_frames,
    hierarchy_texts,
    is_current,
)
from anon_dagster.demo.__main__ import main as demo_main
from anon_dagster.demo.generate import (
    DIAGNOSES,
    GEOGRAPHY,
    MUNICIPALITY_PROVINCE,
    PROFESSION_GROUP,
    PROFESSIONS,
    PROVINCE_CODE,
    PROVINCES,
)
from anon_dagster.hierarchies import TableHierarchy
from anon_dagster.spec import check_data, load_spec

POP, DIS = 20_000, 2_000
DNI = "TRWAGMYFPDXBNJZSQVHLCKE"   # the official control-letter table, restated independently


@pytest.fixture(scope="module")
def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    return generate_frames(POP, DIS, seed=11)


@pytest.fixture(scope="module")
def spec(repo_root):
    return load_spec(repo_root / "assets_config" / "hospital_discharges.yaml")


# ----- determinism and sizes ---------------------------------------------------------------------


def test_same_seed_gives_identical_frames(frames):
    again = generate_frames(POP, DIS, seed=11)
    pd.testing.assert_frame_equal(frames[0], again[0])
    pd.testing.assert_frame_equal(frames[1], again[1])


def test_different_seed_gives_different_frames(frames):
    other_pop, other_dis = generate_frames(POP, DIS, seed=12)
    assert not frames[0]["patient_id"].equals(other_pop["patient_id"])
    assert not frames[0]["age"].equals(other_pop["age"])
    assert not frames[1]["diagnosis"].equals(other_dis["diagnosis"])


def test_sizes_columns_and_types(frames):
    people, stays = frames
    assert len(people) == POP and len(stays) == DIS
    assert list(people.columns) == POPULATION_COLUMNS
    assert list(stays.columns) == DISCHARGE_COLUMNS
    for col in ("patient_id", "national_id", "full_name", "sex", "postal_code", "municipality",
                "province", "profession", "diagnosis"):
        frame = stays if col == "diagnosis" else people
        assert pd.api.types.is_string_dtype(frame[col]), col
        assert not frame[col].isna().any(), col
    assert people["age"].dtype == np.int64
    assert stays["admission_date"].dtype == "datetime64[ns]"
    assert stays["length_of_stay"].dtype == np.int64
    assert (stays["length_of_stay"] >= 1).all()
    assert people["age"].between(0, 100).all()
    assert stays["admission_date"].min() >= pd.Timestamp("2024-01-01")
    assert stays["admission_date"].max() <= pd.Timestamp("2025-12-31")


def test_zero_discharges_is_an_empty_table():
    people, stays = generate_frames(500, 0, seed=1)
    assert len(people) == 500 and len(stays) == 0
    assert list(stays.columns) == DISCHARGE_COLUMNS


@pytest.mark.parametrize("kwargs, fragment", [
    ({"population": 0}, "population must be a positive integer"),
    ({"population": 10**7}, "7-digit patient ids"),
    ({"population": 100, "discharges": 1000}, "distinct patients"),
    ({"discharges": -1}, "discharges must be"),
    ({"seed": -5}, "seed must be"),
    ({"population": 2.5}, "population must be"),
])
def test_bad_parameters_are_user_errors(kwargs, fragment):
    args = {"population": 1000, "discharges": 100, "seed": 1, **kwargs}
    with pytest.raises(DemoError, match=fragment):
        generate_frames(**args)


# ----- identifiers -------------------------------------------------------------------------------


def test_direct_identifiers_are_unique_and_well_formed(frames):
    people, _ = frames
    assert people["patient_id"].is_unique
    assert people["national_id"].is_unique
    assert people["patient_id"].str.fullmatch(r"P\d{7}").all()
    assert people["national_id"].str.fullmatch(r"\d{8}[A-Z]").all()
    numbers = people["national_id"].str[:8].astype(int).to_numpy()
    expected = np.array(list(DNI))[numbers % 23]
    assert (people["national_id"].str[8].to_numpy() == expected).all()
    assert people["full_name"].str.fullmatch(r"\w+ \w+ \w+").all()


# ----- geography and demography ------------------------------------------------------------------


def test_postal_code_prefix_is_the_province_code(frames):
    people, _ = frames
    codes = people["province"].map(PROVINCE_CODE)
    assert people["postal_code"].str.fullmatch(r"\d{5}").all()
    assert (people["postal_code"].str[:2] == codes).all()


def test_municipality_lies_in_its_province_and_owns_its_postal_code(frames):
    people, _ = frames
    assert (people["municipality"].map(MUNICIPALITY_PROVINCE) == people["province"]).all()
    owner = dict(zip(GEOGRAPHY.postal_code, GEOGRAPHY.municipality, strict=True))
    assert (people["postal_code"].map(owner) == people["municipality"]).all()
    # a postal code belongs to exactly one municipality in the data too
    assert (people.groupby("postal_code")["municipality"].nunique() == 1).all()


def test_geography_shape():
    assert 8 <= len(PROVINCES) <= 10
    assert len(set(PROVINCE_CODE.values())) == len(PROVINCES)
    assert len(set(GEOGRAPHY.postal_code)) == len(GEOGRAPHY.postal_code)
    per_province = pd.Series(GEOGRAPHY.municipality).groupby(GEOGRAPHY.province).nunique()
    assert (per_province >= 3).all()
    assert np.isclose(GEOGRAPHY.probability.sum(), 1.0)


def test_provinces_are_very_unequal(frames):
    people, _ = frames
    shares = people["province"].value_counts(normalize=True)
    assert len(shares) == len(PROVINCES)
    assert shares.iloc[0] > 5 * shares.iloc[-1]
    assert shares.iloc[0] > 0.25


def test_professions_have_a_long_tail(frames):
    people, _ = frames
    assert 60 <= len(PROFESSIONS) <= 100
    workers = people.loc[people["profession"].isin(dict(PROFESSIONS)), "profession"]
    counts = workers.value_counts()
    assert len(counts) > 50                            # the tail is drawn, not just the head
    assert counts.iloc[0] > 20 * counts.iloc[-1]       # the head dominates the tail
    assert (people.loc[people["age"] < 16, "profession"] == "Minor").all()


def test_age_pyramid_is_plausible(frames):
    people, _ = frames
    age = people["age"]
    assert 35 < age.mean() < 50
    assert (age >= 90).mean() < 0.02 < (age < 15).mean()
    # women outlive men
    old = people[age >= 85]
    assert (old["sex"] == "F").mean() > 0.55


# ----- discharges ----------------------------------------------------------------------------------


def test_discharge_quasi_identifiers_equal_their_persons_population_row(frames):
    people, stays = frames
    merged = stays.merge(people, on="patient_id", how="left", suffixes=("", "_pop"), validate="m:1")
    assert merged["age_pop"].notna().all()
    for col in POPULATION_COLUMNS[1:]:
        assert (merged[col] == merged[f"{col}_pop"]).all(), col


def test_discharges_are_mostly_first_admissions_of_older_people(frames):
    people, stays = frames
    repeats = stays["patient_id"].value_counts()
    assert (repeats == 1).sum() / len(repeats) > 0.8
    assert repeats.max() >= 2                          # readmissions exist
    assert stays["age"].mean() > people["age"].mean() + 10
    again = stays.loc[stays["patient_id"].duplicated(keep=False), "age"]
    assert again.mean() > stays["age"].mean()


def test_diagnoses_depend_on_age_and_sex(frames):
    _, stays = frames
    chapter = stays["diagnosis"].str[0]
    obstetric = stays[chapter == "O"]
    assert len(obstetric) > 0
    assert (obstetric["sex"] == "F").all() and obstetric["age"].between(14, 50).all()
    assert (stays.loc[stays["diagnosis"].isin(["C61", "N40"]), "sex"] == "M").all()
    circulatory_old = (chapter[stays["age"] >= 65] == "I").mean()
    circulatory_young = (chapter[stays["age"] < 45] == "I").mean()
    assert circulatory_old > 2 * circulatory_young


def test_diagnoses_depend_on_province():
    _, stays = generate_frames(60_000, 20_000, seed=3)
    table = pd.crosstab(stays["province"], stays["diagnosis"].str[0])
    table = table.loc[:, table.min() >= 5]
    assert chi2_contingency(table.to_numpy()).pvalue < 1e-6


def test_diagnosis_list_size():
    codes = [c for c, *_ in DIAGNOSES]
    assert 60 <= len(codes) <= 120 and len(set(codes)) == len(codes)
    assert all(len(c) == 3 and c[0].isalpha() and c[1:].isdigit() for c in codes)


# ----- hierarchies -----------------------------------------------------------------------------


def test_committed_hierarchy_files_are_what_the_generator_writes(repo_root):
    folder = repo_root / "assets_config" / "hierarchies"
    for name, text in hierarchy_texts().items():
        assert (folder / name).read_text(encoding="utf-8") == text, (
            f"{name} is stale: run `python -m anon_dagster.demo hierarchies`"
        )


def test_hierarchy_files_load_and_cover_every_generated_value(repo_root, frames):
    people, stays = frames
    folder = repo_root / "assets_config" / "hierarchies"
    for stem, column, values in [
        ("municipality", "municipality", sorted(MUNICIPALITY_PROVINCE)),
        ("profession", "profession", sorted(PROFESSION_GROUP)),
        ("icd10", "diagnosis", [c for c, *_ in DIAGNOSES]),
        ("postal_code", "postal_code", GEOGRAPHY.postal_code.tolist()),
        ("age", "age", [str(a) for a in range(101)]),
    ]:
        h = TableHierarchy.from_csv(column, folder / f"{stem}.csv")  # validates coarsening
        assert set(h.rows) == {str(v) for v in values}, stem
        frame = stays if column == "diagnosis" else people
        h.table(frame[column].unique())              # raises if a value is uncovered
    muni = TableHierarchy.from_csv("municipality", folder / "municipality.csv")
    assert all(muni.rows[m][0] == p for m, p in MUNICIPALITY_PROVINCE.items())
    # region level groups whole provinces: each province sits in one region
    regions = pd.DataFrame(list(muni.rows.values())).groupby(0)[1].nunique()
    assert (regions == 1).all()


def test_inline_spec_hierarchies_agree_with_the_written_files(repo_root, spec, frames):
    """postal_code.csv and age.csv restate the spec's mask and interval hierarchies."""
    folder = repo_root / "assets_config" / "hierarchies"
    for column in ("postal_code", "age"):
        written = TableHierarchy.from_csv(column, folder / f"{column}.csv")
        values = list(written.rows)
        inline = spec.hierarchies[column].table(
            np.array([int(v) for v in values]) if column == "age" else values
        )
        assert [list(r[1:]) for r in inline] == [written.rows[v] for v in values]


def test_spec_validates_against_the_data(spec, frames):
    _, stays = frames
    check_data(spec, stays)
    assert set(spec.quasi_identifiers) <= set(stays.columns)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), population=st.integers(50, 3000))
def test_invariants_hold_for_any_seed(spec, seed, population):
    discharges = population // 3
    people, stays = generate_frames(population, discharges, seed)
    assert len(people) == population and len(stays) == discharges
    assert people["patient_id"].is_unique and people["national_id"].is_unique
    assert (people["postal_code"].str[:2] == people["province"].map(PROVINCE_CODE)).all()
    assert (people["municipality"].map(MUNICIPALITY_PROVINCE) == people["province"]).all()
    assert set(stays["patient_id"]) <= set(people["patient_id"])
    if discharges:
        check_data(spec, stays)


# ----- files, manifest and command line ----------------------------------------------------------


def test_generate_writes_files_and_is_idempotent(tmp_path):
    out = tmp_path / "demo"
    first = generate(out, population=3000, discharges=300, seed=5)
    assert not first["skipped"]
    assert first["files"]["population.parquet"]["rows"] == 3000
    people = pd.read_parquet(out / "population.parquet")
    stays = pd.read_parquet(out / "discharges.parquet")
    expected_people, expected_stays = generate_frames(3000, 300, 5)
    pd.testing.assert_frame_equal(people, expected_people, check_dtype=False)
    pd.testing.assert_frame_equal(stays, expected_stays, check_dtype=False)
    assert stays["admission_date"].dtype.kind == "M"
    mtime = os.stat(out / "population.parquet").st_mtime_ns
    second = generate(out, population=3000, discharges=300, seed=5)
    assert second["skipped"] and os.stat(out / "population.parquet").st_mtime_ns == mtime
    assert is_current(out, 3000, 300, 5) and not is_current(out, 3000, 300, 6)
    third = generate(out, population=3000, discharges=300, seed=6)
    assert not third["skipped"]
    assert json.loads((out / "manifest.json").read_text())["parameters"]["seed"] == 6


def test_a_tampered_file_is_regenerated(tmp_path):
    generate(tmp_path, population=1000, discharges=100, seed=1)
    (tmp_path / "discharges.parquet").write_bytes(b"not parquet")
    assert not is_current(tmp_path, 1000, 100, 1)
    assert not generate(tmp_path, population=1000, discharges=100, seed=1)["skipped"]
    assert len(pd.read_parquet(tmp_path / "discharges.parquet")) == 100


def test_bad_parameters_write_nothing(tmp_path):
    with pytest.raises(DemoError):
        generate(tmp_path / "x", population=100, discharges=10_000)
    assert not (tmp_path / "x").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(DemoError, match="not a folder"):
        generate(tmp_path / "file", population=100, discharges=10)


def test_command_line(tmp_path, capsys):
    args = ["generate", "--out", str(tmp_path), "--population", "2000", "--discharges", "100",
            "--seed", "9"]
    assert demo_main(args) == 0
    assert "2,000 rows (written)" in capsys.readouterr().out
    assert demo_main(args) == 0
    assert "skipped" in capsys.readouterr().out
    assert demo_main(["generate", "--out", str(tmp_path), "--population", "0"]) == 2
    err = capsys.readouterr().err
    assert "population must be a positive integer" in err and "Traceback" not in err
    assert demo_main(["hierarchies", "--out", str(tmp_path / "h")]) == 0
    assert (tmp_path / "h" / "icd10.csv").read_text() == hierarchy_texts()["icd10.csv"]


def test_run_demo_measures_the_first_partition(tmp_path, repo_root, monkeypatch, capsys):
    import functools
    import shutil

    from anon_dagster.demo import run as demo_run

    config = tmp_path / "assets_config"
    shutil.copytree(repo_root / "assets_config" / "hierarchies", config / "hierarchies")
    shutil.copy(repo_root / "assets_config" / "hospital_discharges.yaml", config)
    out = tmp_path / "data" / "demo"           # where the spec's ../data/demo/ points
    monkeypatch.setattr(demo_run, "default_out_dir", lambda: out)
    monkeypatch.setattr(demo_run, "generate",
                        functools.partial(generate, population=5000, discharges=600, seed=2))
    assert demo_run.run_demo(config / "hospital_discharges.yaml") == 0
    printed = capsys.readouterr().out
    assert "discharges.parquet 600 rows" in printed
    stays = pd.read_parquet(out / "discharges.parquet")
    in_2024 = int((stays["admission_date"].dt.year == 2024).sum())
    assert 0 < in_2024 < 600
    # whichever path measured it, the partition's row count is what was printed
    assert f"{in_2024:,}" in printed or str(in_2024) in printed


def test_run_demo_approves_the_reviewed_release_as_the_dpo_then_publishes_it(tmp_path, repo_root, monkeypatch,
                                                                             capsys):
    import functools
    import re
    import shutil

    from anon_dagster.demo import run as demo_run

    config = tmp_path / "assets_config"
    shutil.copytree(repo_root / "assets_config" / "hierarchies", config / "hierarchies")
    shutil.copy(repo_root / "assets_config" / "hospital_discharges_reviewed.yaml", config)
    out = tmp_path / "data" / "demo"
    monkeypatch.setattr(demo_run, "default_out_dir", lambda: out)
    monkeypatch.setattr(demo_run, "generate", functools.partial(generate, population=5000, discharges=600, seed=2))
    assert demo_run.run_demo(config / "hospital_discharges_reviewed.yaml") == 0
    printed = capsys.readouterr().out
    assert "hospital_discharges_reviewed 2024: " in printed and "AWAITING APPROVAL" in printed
    command = re.search(r"the demo's DPO runs: (anon-dagster approve \S+ --partition 2024 --evaluation "
                        r"([0-9a-f]+) --as dpo --reason .+)", printed)
    assert command is not None, printed
    assert f"evaluation {command.group(2)}: approved by dpo" in printed and "1 run requested" in printed
    assert "PUBLISHED" in printed.split("1 run requested", 1)[1]
    assert (tmp_path / "published" / "hospital_discharges_reviewed" / "2024.parquet").exists()
