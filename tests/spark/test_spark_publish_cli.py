"""``anon-dagster publish --engine spark``: the same gate and publication protocol as on pandas,
the rows written by Spark: the same exit status, the same published rows and ledger entry, the
same refusal line with nothing written, and a target that is an input refused."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
import yaml

from anon_dagster.cli import build_parser, main
from tests.support.ledgers import env_ledger
from tests.support.spark_releases import published_rows, write_release

pytestmark = pytest.mark.usefixtures("master_key", "spark")

SECTIONS = {"anonymization": {"method": "global", "k": 3, "max_suppression": 0.05},
            "policy": {"thresholds": {"k": 3, "l_distinct": 2}}}


def publish(capsys, monkeypatch, folder, engine: str, *extra: str) -> tuple[int, str, str]:
    """``publish`` of the release in ``folder`` (its own ledger) for 2023 on ``engine``."""
    ledger = folder / "state" / "ledger.sqlite"
    if not ledger.exists():
        ledger.parent.mkdir(parents=True)
        env_ledger(ledger, create=True)
    monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(ledger))
    capsys.readouterr()
    code = main(["publish", str(folder / "specs" / "tiny.yaml"), "--partition", "2023", "--engine", engine, *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def entries(folder):
    ledger = env_ledger(folder / "state" / "ledger.sqlite")
    return [(e.release, e.partition, e.status, e.rows, e.k, e.qis) for e in ledger.entries()]


def test_publish_takes_the_engine_options():
    args = build_parser().parse_args(["publish", "s.yaml", "--engine", "spark", "--spark-master", "local[1]"])
    assert (args.engine, args.spark_master) == ("spark", "local[1]")
    assert build_parser().parse_args(["publish", "s.yaml"]).engine == "pandas"


def test_spark_publishes_the_pandas_rows_and_ledger_entry(tmp_path, capsys, monkeypatch):
    outcomes = {}
    for engine in ("pandas", "spark"):
        folder = tmp_path / engine
        write_release(folder, **SECTIONS)
        code, out, err = publish(capsys, monkeypatch, folder, engine)
        assert code == 0, err
        assert out.startswith("published: ")
        target = folder / "published" / "tiny" / "2023.parquet"
        outcomes[engine] = published_rows(pd.read_parquet(target)), entries(folder)
    assert outcomes["spark"] == outcomes["pandas"]
    assert outcomes["pandas"][1] and outcomes["pandas"][1][0][2] == "published"


def test_a_refused_gate_on_spark_is_the_pandas_refusal_and_writes_nothing(tmp_path, capsys, monkeypatch):
    refusals = {}
    for engine in ("pandas", "spark"):
        folder = tmp_path / engine
        # four diagnoses: no class can hold five
        write_release(folder, **{**SECTIONS, "policy": {"thresholds": {"k": 3, "l_distinct": 5}}})
        code, out, err = publish(capsys, monkeypatch, folder, engine)
        assert code == 1 and not out
        assert not (folder / "published").exists()
        refusals[engine] = err.replace(str(folder), "<folder>")
    assert refusals["spark"] == refusals["pandas"]
    assert refusals["pandas"].startswith("refused: tiny 2023: publication refused, nothing written: ")
    assert "l_diversity_distinct: distinct l-diversity = " in refusals["pandas"]


def test_a_target_over_the_source_is_refused_on_spark(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "spark"
    spec_path = write_release(folder, **SECTIONS)
    spec = yaml.safe_load(spec_path.read_text())
    spec["publication"]["path"] = "../data/tiny.parquet"  # the source itself
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
    source = folder / "data" / "tiny.parquet"
    shutil.copy(source, tmp_path / "before.parquet")
    code, _, err = publish(capsys, monkeypatch, folder, "spark")
    assert code != 0 and "tiny.parquet" in err
    assert source.read_bytes() == (tmp_path / "before.parquet").read_bytes()


def test_dp_aggregates_on_spark_spend_the_pandas_budget(tmp_path, capsys, monkeypatch):
    from tests.support.spark_releases import aggregates_release

    spent = {}
    for engine in ("pandas", "spark"):
        folder = tmp_path / engine
        aggregates_release(folder, total_epsilon=0.8)
        (folder / "specs" / "dp.yaml").rename(folder / "specs" / "tiny.yaml")
        first = publish(capsys, monkeypatch, folder, engine)
        assert first[0] == 0 and "cells" in first[1], first[2]
        published = pd.read_parquet(folder / "published" / "dp" / "2023.parquet")
        second = main(["publish", str(folder / "specs" / "tiny.yaml"), "--partition", "2024", "--engine", engine])
        err = capsys.readouterr().err
        spent[engine] = (sorted(published.columns), len(published), second, "budget" in err or "epsilon" in err)
    assert spent["spark"] == spent["pandas"]
    assert spent["pandas"][2] == 1 and spent["pandas"][3]  # 0.5 + 0.5 > 0.8: the second is refused
