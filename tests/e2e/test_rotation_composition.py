"""Publish a year, rotate the keys, check the next year of the same persons: composition still
finds them, from the CLI and from Dagster.

The published pseudonyms change with the rotation (``v1:`` → ``v2:``); the ledger's linkage key
does not (it is pinned to key version 1), so the ledger still recognizes every person.
"""

from __future__ import annotations

import json

import pytest
from dagster import DagsterInstance

from anon_dagster.cli import main
from anon_dagster.io import read_table
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release import pipeline
from anon_dagster.spec import load_spec
from tests.support.linkage import composing_release, two_years
from tests.support.releases import check_evaluations, load, run

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

PASS = "correct horse battery staple"


@pytest.fixture
def key_file(tmp_path, monkeypatch, capsys):
    """A key file created with ``keys init`` and named by ANON_DAGSTER_KEYSTORE (the only source)."""
    path = tmp_path / "keys" / "keystore.json"
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", PASS)
    assert main(["keys", "init", "--path", str(path), "--scrypt-n", str(2**10)]) == 0
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE", str(path))
    capsys.readouterr()
    return path


def test_composition_finds_the_same_persons_after_keys_rotate(tmp_path, key_file, capsys):
    spec_path = composing_release(tmp_path, two_years())
    ledger = tmp_path / "state" / "ledger.sqlite"
    instance = DagsterInstance.ephemeral()
    first = run(load(tmp_path, spec_path), "yearly", "2023", instance)
    assert first.success
    published = read_table(tmp_path / "published" / "yearly" / "2023.parquet")
    assert published["pid"].str.startswith("v1:").all()

    assert main(["keys", "rotate"]) == 0
    assert "key version 2" in capsys.readouterr().out
    keystore = open_keystore()
    assert keystore.current_version == 2
    # what 2024 would publish: new pseudonyms, none of which joins the 2023 file
    spec = load_spec(spec_path)
    pseudo = pipeline.pseudonymize(spec, pipeline.ingest(spec, "2024").data, keystore).data
    assert pseudo["pid"].str.startswith("v2:").all() and set(pseudo["pid"]).isdisjoint(published["pid"])

    # the CLI gate: refused by the composition, the same persons singled out
    assert main(["check", str(spec_path), "--partition", "2024", "--ledger", str(ledger), "--json"]) == 1
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks["composition"]["passed"] is False and checks["composition"]["measured"] == 1
    assert main(["compose", str(spec_path), "--partition", "2024", "--ledger", str(ledger)]) == 1
    assert "FAILED" in capsys.readouterr().out

    # the Dagster job, after the same rotation
    second = run(load(tmp_path, spec_path), "yearly", "2024", instance)
    evaluation = check_evaluations(second)["composition"]
    assert not second.success and evaluation.passed is False and evaluation.metadata["measured"].value == 1
    assert not (tmp_path / "published" / "yearly" / "2024.parquet").exists()


def test_after_a_rotation_other_persons_still_pass(tmp_path, key_file, capsys):
    """The control: the refusal above is the persons in common, not the rotation itself."""
    spec_path = composing_release(tmp_path, two_years(other_people=True))
    instance = DagsterInstance.ephemeral()
    assert run(load(tmp_path, spec_path), "yearly", "2023", instance).success
    assert main(["keys", "rotate"]) == 0
    capsys.readouterr()
    ledger = tmp_path / "state" / "ledger.sqlite"
    assert main(["check", str(spec_path), "--partition", "2024", "--ledger", str(ledger)]) == 0
    assert run(load(tmp_path, spec_path), "yearly", "2024", instance).success
