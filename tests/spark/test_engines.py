"""Engine selection: the caller chooses the engine, never the spec; pandas is the default."""

from __future__ import annotations

import subprocess
import sys

import pytest

from anon_dagster.cli import build_parser, main
from anon_dagster.engine import ENGINES, Engine, PandasEngine, UnsupportedOnEngine, open_engine
from anon_dagster.errors import UserError


def test_pandas_is_the_default_engine_and_an_engine():
    engine = open_engine()
    assert isinstance(engine, PandasEngine) and isinstance(engine, Engine)
    assert ENGINES == ("pandas", "spark")
    with pytest.raises(UserError, match="unknown engine 'dask': one of pandas, spark"):
        open_engine("dask")


@pytest.mark.parametrize("command", [["check", "s.yaml"], ["anonymize", "s.yaml", "--output", "o.parquet"],
                                     ["risk", "--config", "s.yaml"]])
def test_release_commands_take_engine_and_spark_master(command):
    args = build_parser().parse_args(command)
    assert (args.engine, args.spark_master) == ("pandas", "local[2]")
    args = build_parser().parse_args([*command, "--engine", "spark", "--spark-master", "local[1]"])
    assert (args.engine, args.spark_master) == ("spark", "local[1]")


def test_the_data_form_of_risk_refuses_another_engine(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n")
    assert main(["risk", str(path), "--qi", "a", "--engine", "spark"]) == 2
    assert "--engine spark needs --config" in capsys.readouterr().err


def test_importing_the_engines_loads_neither_pyspark_nor_dagster():
    code = ("import sys, anon_dagster.engine, anon_dagster.commands.check; "
            "print(sorted(m for m in ('pyspark', 'dagster') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_unsupported_feature_is_one_line_naming_it():
    err = UnsupportedOnEngine("anonymization.method: mondrian (Mondrian)", hint="use method: global")
    assert str(err) == ("anonymization.method: mondrian (Mondrian) is not supported on the Spark engine yet: "
                        "use method: global")
    assert "\n" not in str(err)
