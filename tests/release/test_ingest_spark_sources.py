"""The pandas pipeline (the default engine) and a source only the Spark engine reads: a table of
the Spark catalog (``source.table``) or a Delta table (``source.format: delta``) is refused before
anything is read or written, in one line naming the spec, the key and the ways out; with
``--input DATA`` the command reads that file instead."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest
import yaml

from anon_dagster.cli import main
from anon_dagster.errors import UserError
from anon_dagster.release import pipeline
from anon_dagster.spec import load_spec
from tests.support.releases import write_release

pytestmark = pytest.mark.usefixtures("master_key")


def with_source(spec_path, source: dict) -> None:
    spec = yaml.safe_load(spec_path.read_text())
    spec["source"] = source
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))


@pytest.fixture
def table_spec(tmp_path):
    path = write_release(tmp_path, composition=False)
    with_source(path, {"table": "clinic.visits"})
    return path


def refusal(spec_path, key_text: str) -> str:
    return (f"{spec_path}: {key_text}, read by the Spark engine only: run the command with --engine spark, "
            "or give the rows with --input DATA (a csv or parquet file) where the command takes it")


@pytest.mark.parametrize("command", [
    ["check", "{spec}", "--partition", "2023"],
    ["anonymize", "{spec}", "--partition", "2023", "--output", "{out}"],
    ["risk", "--config", "{spec}", "--partition", "2023"],
    ["attack", "{spec}", "--partition", "2023"],
])
def test_each_command_refuses_a_catalog_table_in_one_line(table_spec, tmp_path, capsys, command):
    out = tmp_path / "out.parquet"
    args = [a.format(spec=table_spec, out=out) for a in command]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err == (f"anon-dagster {args[0]}: error: "
                   + refusal(table_spec, "source.table 'clinic.visits' is a table of the Spark catalog") + "\n")
    assert not out.exists() and not (tmp_path / "published").exists()


def test_the_ingest_refuses_a_delta_table_and_reads_an_input_instead(tmp_path):
    path = write_release(tmp_path, composition=False)
    with_source(path, {"path": "../data/visits_delta", "format": "delta"})
    spec = load_spec(path)
    with pytest.raises(UserError) as info:
        pipeline.ingest(spec, "2023")
    assert str(info.value) == refusal(path, "source.format delta ('../data/visits_delta') is a Delta table")
    ingested = pipeline.ingest(spec, "2023", str(tmp_path / "data" / "tiny.csv"))
    assert len(ingested.data) == 40  # the 2023 rows of the file given instead


def test_check_with_an_input_reads_that_file(table_spec, tmp_path):
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["check", str(table_spec), "--partition", "2023", "--input", str(tmp_path / "data" / "tiny.csv"),
                     "--json"])
    assert code in (0, 1)
    assert json.loads(out.getvalue())["partition"] == "2023"
