"""The sources only the Spark engine reads: ``source.table`` (a table of the Spark catalog) and
``source.format: delta``, validated as the other source keys are (every problem at once, each
with file and key)."""

from __future__ import annotations

import pytest

from anon_dagster.errors import SpecError
from anon_dagster.spec import load_spec
from anon_dagster.spec.catalog import is_table_name, pandas_refusal, table_name_parts
from tests.support.specs import spec_problems, visits_spec_file


@pytest.mark.parametrize("name,parts", [
    ("visits", ["visits"]),
    ("clinic.visits", ["clinic", "visits"]),
    ("spark_catalog.clinic.visits_2024", ["spark_catalog", "clinic", "visits_2024"]),
    ("`odd name`", ["odd name"]),
    ("clinic.`visits.2024`", ["clinic", "visits.2024"]),
    ("`it``s`", ["it`s"]),
    ("_tmp.v1", ["_tmp", "v1"]),
])
def test_a_table_name_loads_and_reads_as_its_parts(tmp_path, name, parts):
    spec = load_spec(visits_spec_file(tmp_path, {"table": name}))
    assert spec.source.table == name
    assert spec.source.spark_only == "source.table"
    assert spec.source.described == f"the catalog table {name!r}"
    assert table_name_parts(name) == parts


@pytest.mark.parametrize("name", ["a..b", "1visits", "clinic.2024", "a.b.c.d", "odd name", "`unclosed",
                                  "a`b`", "visits_{partition}", "", "clinic.", "a-b", "``"])
def test_a_bad_table_name_is_one_problem_naming_file_and_key(tmp_path, name):
    assert not is_table_name(name)
    path = visits_spec_file(tmp_path, {"table": name})
    found = spec_problems(path)
    assert [k for k, _ in found] == ["source.table"], found
    assert "is not a table name" in found[0][1] and repr(name)[:40] in found[0][1]
    with pytest.raises(SpecError, match=str(path).replace("\\", "\\\\")):
        load_spec(path)


@pytest.mark.parametrize("source,key,message", [
    ({"table": "clinic.visits", "path": "visits.parquet"}, "source.table", "not both"),
    ({"table": "clinic.visits", "asset": "warehouse/visits"}, "source.table", "not both"),
    ({"table": "clinic.visits", "asset": "warehouse/visits", "path": "v.csv"}, "source.table", "not all three"),
    ({"table": "clinic.visits", "format": "parquet"}, "source.format", "applies to a file source only"),
    ({"table": "clinic.visits", "separator": ";"}, "source.separator", "applies to a file source only"),
    ({"path": "visits", "format": "delta", "separator": ";"}, "source.separator", "format is delta"),
    ({"path": "visits", "format": "orc"}, "source.format", ""),
])
def test_a_table_with_the_keys_of_another_source_is_refused(tmp_path, source, key, message):
    found = spec_problems(visits_spec_file(tmp_path, source))
    assert any(k == key and message in m for k, m in found), found


def test_every_problem_of_the_source_at_once(tmp_path):
    found = spec_problems(visits_spec_file(tmp_path, {"table": "a..b", "format": "csv", "separator": ","}))
    assert [k for k, _ in found] == ["source.table", "source.separator", "source.format"], found


def test_a_delta_folder_loads_and_only_spark_reads_it(tmp_path):
    spec = load_spec(visits_spec_file(tmp_path, {"path": "visits_delta", "format": "delta"}))
    assert spec.source.spark_only == "source.format"
    line = pandas_refusal(spec)
    assert line is not None and line.startswith(f"{spec.label}: source.format delta ('visits_delta')")
    assert "--engine spark" in line and "--input DATA" in line and "\n" not in line


def test_a_file_source_dumps_and_hashes_as_before(tmp_path):
    spec = load_spec(visits_spec_file(tmp_path, {"path": "visits.csv"}))
    assert set(spec.source.model_dump()) == {"path", "separator", "format"}
    assert spec.source.spark_only is None and pandas_refusal(spec) is None
    table = load_spec(visits_spec_file(tmp_path, {"table": "clinic.visits"}))
    assert set(table.source.model_dump()) == {"table", "separator", "format"}
    assert table.spec_hash() != spec.spec_hash()
