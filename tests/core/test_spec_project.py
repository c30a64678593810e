"""The spec keys that tie a release to a Dagster project: ``source.asset`` and the table
publication (``publication.io_manager``, ``publication.table``), each problem with file and key."""

from __future__ import annotations

import pytest

from anon_dagster.errors import SpecError
from anon_dagster.spec import load_spec
from tests.support.specs import spec_problems, visits_spec_file


def test_an_asset_source_and_a_table_publication_load(tmp_path):
    spec = load_spec(visits_spec_file(tmp_path, publication={"io_manager": "warehouse", "table": "open_data.visits"}))
    assert spec.source.asset_key == ("warehouse", "visits")
    assert spec.source.path is None and spec.data_folders() == [(tmp_path / "out").resolve()]
    assert (spec.publication.io_manager, spec.publication.table) == ("warehouse", "open_data.visits")
    listed = load_spec(visits_spec_file(tmp_path, source={"asset": ["warehouse", "visits"]}))
    assert listed.source.asset_key == ("warehouse", "visits")


def test_a_spec_without_the_new_keys_dumps_as_before(tmp_path):
    spec = load_spec(visits_spec_file(tmp_path, source={"path": "visits.csv"}))
    assert set(spec.source.model_dump()) == {"path", "separator", "format"}
    assert not {"io_manager", "table", "table_partition_column"} & set(spec.publication.model_dump())
    with_table = load_spec(visits_spec_file(tmp_path, source={"path": "visits.csv"},
                                 publication={"io_manager": "warehouse", "table": "visits_open"}))
    assert with_table.spec_hash() != spec.spec_hash()  # a table publication is part of what the spec says


@pytest.mark.parametrize("source,key,message", [
    ({"path": "visits.csv", "asset": "warehouse/visits"}, "source.asset", "not both"),
    ({}, "source", "give source.path (a csv or parquet file) or source.asset"),
    ({"asset": "warehouse//visits"}, "source.asset", "is not an asset key"),
    ({"asset": "ware house"}, "source.asset", "is not an asset key"),
    ({"asset": "visits/raw"}, "source.asset", "one of the release's own steps"),
    ({"asset": "warehouse/visits", "format": "csv"}, "source.format", "applies to a file source only"),
])
def test_a_bad_source_is_named_by_file_and_key(tmp_path, source, key, message):
    path = visits_spec_file(tmp_path, source=source)
    found = spec_problems(path)
    assert any(k == key and message in m for k, m in found), found
    with pytest.raises(SpecError, match=str(path).replace("\\", "\\\\")):
        load_spec(path)


@pytest.mark.parametrize("publication,key,message", [
    ({"io_manager": "warehouse"}, "publication.table", "names both"),
    ({"table": "visits_open"}, "publication.io_manager", "names both"),
    ({"io_manager": "io_manager", "table": "visits_open"}, "publication.io_manager", "a resource of the releases"),
    ({"io_manager": "ware-house", "table": "visits_open"}, "publication.io_manager", "is not a resource key"),
    ({"io_manager": "warehouse", "table": "published"}, "publication.table", "visits/published is taken"),
    ({"io_manager": "warehouse", "table": "a.b.c"}, "publication.table", "is not a table name"),
    ({"io_manager": "warehouse", "table": "t", "table_partition_column": "age"},
     "publication.table_partition_column", "is a column of the release"),
])
def test_a_bad_table_publication_is_named_by_key(tmp_path, publication, key, message):
    found = spec_problems(visits_spec_file(tmp_path, publication=publication))
    assert any(k == key and message in m for k, m in found), found


def test_an_unpartitioned_release_needs_no_partition_column(tmp_path):
    spec = load_spec(visits_spec_file(tmp_path, partitioned=False,
                           publication={"io_manager": "warehouse", "table": "t", "table_partition_column": "age"}))
    assert spec.publication.table == "t"
