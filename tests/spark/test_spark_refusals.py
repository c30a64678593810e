"""What the Spark engine does not carry out is refused in one line before any row is read, and
nothing is written: a synthetic release (its generator is trained on the whole table), which
the engine once anonymized by global recoding instead."""

from __future__ import annotations

import pytest
import yaml

from anon_dagster.cli import main
from anon_dagster.engine.spark_anonymize import check_supported
from anon_dagster.spec import load_spec
from tests.support.attack_register import write_release
from tests.support.ledgers import env_ledger

pytestmark = pytest.mark.usefixtures("master_key")

REFUSAL = ("anonymization.method: synthetic (a generator trained on the whole table, and its audit) is not "
           "supported on the Spark engine yet: use --engine pandas")


def synthetic_release(folder):
    path = write_release(folder, name="register_synthetic")
    spec = yaml.safe_load(path.read_text())
    spec["columns"]["pid"] = {"role": "identifier"}  # a synthetic row is nobody's: dropped
    spec["anonymization"] = {"method": "synthetic", "synthetic": {"min_samples_leaf": 20}}
    spec["policy"] = {"synthetic": {"copy_rate_gap": 0.02, "closer_to_train_gap": 0.05, "mia_auc": 0.55,
                                    "control": {"fraction": 0.5}}}
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.mark.parametrize("command", ["check", "anonymize", "publish"])
def test_a_synthetic_release_on_spark_is_refused_in_one_line_writing_nothing(tmp_path, capsys, monkeypatch,
                                                                            command, spark):
    path = synthetic_release(tmp_path)
    env_ledger(tmp_path / "ledger.sqlite", create=True)
    monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(tmp_path / "ledger.sqlite"))
    extra = ["--output", str(tmp_path / "out.parquet")] if command == "anonymize" else []
    assert main([command, str(path), "--engine", "spark", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"anon-dagster {command}: error: {REFUSAL}"]
    assert not (tmp_path / "published").exists() and not (tmp_path / "out.parquet").exists()
    with pytest.raises(Exception, match="anonymization.method: synthetic"):
        check_supported(load_spec(path))
