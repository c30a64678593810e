"""Locations in a release spec: local paths, or object-storage URIs where a spec may hold one.

``source.path`` and ``publication.path`` may be ``s3://``, ``gs://``, ``az://`` or ``abfs[s]://``
URIs; anything else with a scheme is a spec error naming the file and the key, every problem at
once, and a URI that carries credentials is refused without repeating them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from anon_dagster import objectstore
from anon_dagster.errors import SpecError
from anon_dagster.objectstore import ObjectPath, location_problem
from anon_dagster.release.targets import (
    TargetRefused,
    check_target,
    publication_problems,
    target_of,
)
from anon_dagster.spec import load_spec

DOCS = Path(__file__).resolve().parents[2] / "docs"

COLUMNS = {"pid": {"role": "identifier"}, "age": {"role": "quasi"}, "sex": {"role": "quasi"}}


def _write(tmp: Path, source: str = "data.csv", publication: str = "out/{release}.parquet", **extra: object) -> Path:
    raw = {"release": "r", "source": {"path": source}, "columns": dict(COLUMNS),
           "anonymization": {"k": 2}, "publication": {"path": publication}, **extra}
    path = tmp / "spec.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _problems(path: Path) -> dict[str, str]:
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert all(p.file == str(path) for p in caught.value.problems)
    return {p.key: p.message for p in caught.value.problems}


@pytest.mark.parametrize("location", [
    "ftp://files.example.org/data.csv", "http://example.org/data.csv", "https://example.org/data.csv",
    "s3:/bucket/data.csv", "s3:bucket/data.csv", "file:///srv/data.csv", "sftp://host/data.csv",
    "s3://bucket", "s3://bucket/folder/", "s3://{release}/data.csv", "s3://bucket/a//b.csv",
    "s3://bucket/../b.csv", "s3://bucket/data.csv?region=eu-west-1", "s3://bucket:9000/data.csv",
    "abfs://account.dfs.core.windows.net/container/x.csv",
])
def test_an_unsupported_location_is_a_spec_error_naming_the_file_and_the_key(tmp_path, location):
    problems = _problems(_write(tmp_path, source=location, publication=location.replace("data.csv", "out.parquet")))
    assert set(problems) == {"source.path", "publication.path"}  # both at once


def test_supported_locations_load_and_resolve_to_their_normalized_uri(tmp_path):
    spec = load_spec(_write(tmp_path, source="S3://Raw-Bucket/in/{partition}.csv",
                            publication="gs://portal/{release}/data.parquet"))
    assert spec.resolve(spec.source.path, partition="all") == ObjectPath("s3", "raw-bucket", "in/all.csv")
    target = target_of(spec, None)
    assert str(target.path) == "gs://portal/r/data.parquet"
    assert str(target.report_path("html")) == "gs://portal/r/data.report.html"
    assert spec.data_folders() == []  # a bucket is no folder of this machine
    for text in ("az://container/x/y.parquet", "abfss://container@account.dfs.core.windows.net/x.parquet",
                 "gcs://bucket/x.csv"):
        assert location_problem(text) is None, text
    assert str(ObjectPath.parse("gcs://Bucket/x.csv")) == "gs://bucket/x.csv"


def test_a_local_path_is_never_taken_for_a_location():
    for text in ("data/x.csv", "../published/{release}.parquet", "/srv/x.csv", "C:\\data\\x.csv", "./a:b.csv"):
        assert objectstore.scheme_of(text) is None, text
        assert location_problem(text) is None


def test_credentials_in_a_location_are_refused_without_being_repeated(tmp_path):
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    for written in (f"s3://AKIAEXAMPLE:{secret}@bucket/x.parquet", "s3://AKIAEXAMPLE@bucket/x.parquet",
                    f"abfs://container:{secret}@account.dfs.core.windows.net/x.parquet"):
        problems = _problems(_write(tmp_path, publication=written))
        assert "never holds credentials" in problems["publication.path"]
        assert secret not in problems["publication.path"] and "AKIAEXAMPLE" not in problems["publication.path"]


def test_the_population_and_hierarchy_tables_stay_local(tmp_path):
    columns = {**COLUMNS, "age": {"role": "quasi", "hierarchy": {"type": "table", "path": "s3://bucket/age.csv"}}}
    path = _write(tmp_path, policy={"population": {"path": "s3://bucket/population.parquet"}})
    raw = yaml.safe_load(path.read_text())
    raw["columns"] = columns
    path.write_text(yaml.safe_dump(raw))
    problems = _problems(path)
    assert "source.path and publication.path only" in problems["policy.population.path"]
    assert "source.path and publication.path only" in problems["columns.age.hierarchy.path"]


def test_a_target_onto_the_source_by_normalized_uri_is_refused(tmp_path):
    spec = load_spec(_write(tmp_path, source="s3://Bucket/data/{partition}.parquet",
                            publication="S3://bucket/data/{partition}.parquet"))
    with pytest.raises(TargetRefused, match="the release's source"):
        check_target(spec, None, ledger_path=tmp_path / "ledger.sqlite")
    assert any("the release's source" in p for p in publication_problems(spec, ledger_path=tmp_path / "l.sqlite"))
    apart = load_spec(_write(tmp_path, source="s3://bucket/data/{partition}.parquet",
                             publication="s3://bucket/published/{partition}.parquet"))
    target = check_target(apart, None, ledger_path=tmp_path / "ledger.sqlite")
    assert target.root.locks == tmp_path / "publication-locks"
    assert publication_problems(apart, ledger_path=tmp_path / "ledger.sqlite") == []


def test_store_errors_never_show_a_secret(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t/value+with/slashes")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", "azure-account-key==")
    text = objectstore.describe(OSError("signed with s3cr3t/value+with/slashes and azure-account-key==\nmore"))
    assert text == "signed with *** and ***"


def test_the_contracts_list_every_variable_the_stores_read():
    text = (DOCS / "contracts.md").read_text(encoding="utf-8")
    table = text.split("\n## Environment variables\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table))
    assert set(objectstore.iter_variables()) - listed == set()
