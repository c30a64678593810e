"""The words, kinds and code version of a release's steps."""

from __future__ import annotations

from types import SimpleNamespace

from anon_dagster.release.step_conventions import (
    OBJECT_TEXTS,
    STEPS,
    TABLE_KINDS,
    code_version,
    object_description,
    package_version,
    step_description,
    step_kinds,
    store_kind,
)


def release(source: str | None = "data/visits.csv", publication: str = "out/{release}.parquet", description=""):
    return SimpleNamespace(release="visits", description=description,
                           source=SimpleNamespace(path=source, format=None),
                           publication=SimpleNamespace(path=publication), spec_hash=lambda: "ab" * 32)


def test_kinds_say_how_each_step_is_kept():
    assert step_kinds(release(), "raw") == {"pandas", "csv"}
    assert step_kinds(release(source=None), "raw") == {"pandas"}
    assert step_kinds(release(), "anonymized") == {"pandas", "parquet"}
    assert step_kinds(release(publication="s3://bucket/{release}.parquet"), "published") == {"parquet", "s3"}
    assert [store_kind(p) for p in ("gs://b/x", "az://c/x", "x.csv")] == [{"gcs"}, {"azure"}, set()]


def test_a_description_leads_with_the_specs_own():
    assert step_description(release(), "raw") == "Rows of visits's source for the partition, checked against the spec."
    assert step_description(release(description="  Clinic visits \n"), "raw").startswith("Clinic visits\n\nRows of")


def test_the_code_version_is_the_package_and_the_spec_hash():
    assert code_version(release()) == f"{package_version()}-{'ab' * 8}"


def test_each_object_says_what_it_does_naming_its_release():
    assert object_description("job", release()) == "Release visits: ingest, pseudonymize, anonymize, check, publish."
    assert object_description("source_sensor", release()).startswith("Runs visits's release for a partition")
    assert "visits's publications" in object_description("freshness_sensor", release())
    assert object_description("refusal_sensor") == "Hands every refused publication to a function."
    assert all("{" not in object_description(kind, release()) for kind in OBJECT_TEXTS)


def test_the_table_of_record_is_a_pandas_table_and_no_step():
    assert TABLE_KINDS == {"pandas", "table"} and "table" not in STEPS
