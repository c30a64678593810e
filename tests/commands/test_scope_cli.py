"""A column of scope ``release`` from the command line: ``anonymize --partition`` binds it to the
partition, and ``reidentify``, ``keys rekey``, ``keys bridge`` and ``keys reseal-tokens`` open or
carry over only that partition's pseudonyms (the release comes from ``--spec``).
"""

from __future__ import annotations

import base64
import json

import pandas as pd
import pytest

from anon_dagster.cli import main
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.pseudonymize.tokens import vault_path
from tests.support.keys import MASTER_KEY
from tests.support.visits import scoped_release

SECOND_KEY = base64.b64encode(bytes(range(100, 132))).decode()
SCOPE_KEY = "columns.pid.pseudonymize.scope"


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def anonymized(capsys, tmp_path, spec, year: str) -> pd.DataFrame:
    out = tmp_path / f"out_{spec.stem}_{year}.csv"
    code, _, err = cli(capsys, "anonymize", spec, "--partition", year, "--output", out, "--quiet")
    assert code == 0, err
    return pd.read_csv(out, dtype={"pid": str})


def reverse(capsys, spec, *extra) -> tuple[int, str, str]:
    return cli(capsys, "reidentify", "--spec", spec, "--column", "pid", "--actor", "custodian",
               "--reason", "incident 7", *extra)


def rotate(monkeypatch) -> None:
    """Key version 2 added, as an operator rotating an environment key does."""
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", f"1:{MASTER_KEY},2:{SECOND_KEY}")


@pytest.mark.parametrize("method", ["aes_siv", "token"])
def test_reidentify_opens_a_partition_with_its_partition_only(tmp_path, master_key, capsys, method):
    spec = scoped_release(tmp_path, None, method=method)  # the default scope: release
    year_2024 = anonymized(capsys, tmp_path, spec, "2024")
    year_2023 = anonymized(capsys, tmp_path, spec, "2023")
    assert not set(year_2023["pid"]) & set(year_2024["pid"])
    first = year_2024["pid"].iloc[0]
    code, text, err = reverse(capsys, spec, "--partition", "2024", first)
    assert code == 0, err
    assert text.split()[0] == first and text.split()[1].startswith("PID")
    # another partition's key (or vault) does not open it: not found, nothing decrypted
    code, text, _ = reverse(capsys, spec, "--partition", "2023", first)
    assert code == 3 and text.strip() == f"{first}\t<not found>"
    log = [json.loads(line)["event"] for line in (open_keystore().state_dir / "audit.jsonl").read_text().splitlines()]
    assert [(e["outcome"], e.get("publication")) for e in log] == [("granted", "visits/2024"), ("granted", "visits/2023")]
    assert log[1]["not_found"] == 1


def test_reidentify_refuses_a_release_column_without_its_partition(tmp_path, master_key, capsys):
    spec = scoped_release(tmp_path, "release", method="aes_siv")
    first = anonymized(capsys, tmp_path, spec, "2024")["pid"].iloc[0]
    code, _, err = reverse(capsys, spec, first)
    assert code == 2 and err.count("\n") == 1 and SCOPE_KEY in err and str(spec) in err
    code, _, err = reverse(capsys, spec, "--partition", "2025", first)
    assert code == 2 and err.count("\n") == 1 and "2025" in err
    code, _, err = cli(capsys, "reidentify", "--method", "aes_siv", "--purpose", "research", "--partition", "2024",
                       "--actor", "a", "--reason", "r", first)
    assert code == 2 and "--partition needs --spec" in err
    assert first not in err


def test_keys_rekey_carries_a_partition_over_a_rotation(tmp_path, master_key, capsys, monkeypatch):
    spec = scoped_release(tmp_path, None, method="aes_siv")
    before = anonymized(capsys, tmp_path, spec, "2024")
    table = tmp_path / "published_2024.csv"
    before.to_csv(table, index=False)
    rotate(monkeypatch)
    out = tmp_path / "rekeyed.csv"
    code, _, err = cli(capsys, "keys", "rekey", "--spec", spec, "--column", "pid", "--partition", "2024",
                       "--input", table, "--output", out)
    assert code == 0, err
    rekeyed = pd.read_csv(out, dtype={"pid": str})
    assert rekeyed["pid"].str.startswith("v2:").all()
    assert rekeyed["pid"].tolist() == anonymized(capsys, tmp_path, spec, "2024")["pid"].tolist()  # as made with v2
    code, _, err = cli(capsys, "keys", "rekey", "--spec", spec, "--column", "pid", "--partition", "2023",
                       "--input", table, "--output", tmp_path / "wrong.csv")
    assert code == 2 and "publication 'visits/2023'" in err and not (tmp_path / "wrong.csv").exists()


def test_keys_bridge_links_the_generations_of_one_partition(tmp_path, master_key, capsys, monkeypatch):
    spec = scoped_release(tmp_path, None, method="hmac")
    old = set(anonymized(capsys, tmp_path, spec, "2024")["pid"])
    rotate(monkeypatch)
    new = set(anonymized(capsys, tmp_path, spec, "2024")["pid"])
    out = tmp_path / "bridge.csv"
    code, _, err = cli(capsys, "keys", "bridge", "--spec", spec, "--column", "pid", "--partition", "2024",
                       "--from-version", "1", "--input", tmp_path / "data" / "visits.csv", "--output", out)
    assert code == 0, err
    bridge = pd.read_csv(out)
    # the source holds exactly the twelve persons published in 2024
    assert set(bridge["old"]) == old and set(bridge["new"]) == new and len(bridge) == len(old)
    other = tmp_path / "bridge_2023.csv"
    code, _, err = cli(capsys, "keys", "bridge", "--spec", spec, "--column", "pid", "--partition", "2023",
                       "--from-version", "1", "--input", tmp_path / "data" / "visits.csv", "--output", other)
    assert code == 0, err
    assert not set(pd.read_csv(other)["old"]) & old  # 2023's generations, not 2024's


def test_keys_reseal_tokens_reseals_every_publication_vault(tmp_path, master_key, capsys, monkeypatch):
    spec = scoped_release(tmp_path, None, method="token")
    tokens = {year: anonymized(capsys, tmp_path, spec, year)["pid"].tolist() for year in ("2023", "2024")}
    rotate(monkeypatch)
    code, text, err = cli(capsys, "keys", "reseal-tokens", "--purpose", "research")
    assert code == 0, err
    assert "visits/2023" in text and "visits/2024" in text
    store = open_keystore()
    assert not vault_path(store, "research").exists()  # no empty purpose vault made on the way
    for year in ("2023", "2024"):
        assert json.loads(vault_path(store, "research", f"visits/{year}").read_text())["key_version"] == 2
        assert anonymized(capsys, tmp_path, spec, year)["pid"].tolist() == tokens[year]
