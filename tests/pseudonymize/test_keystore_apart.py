"""A release refuses a key store that sits among its own data or publication folders."""

from __future__ import annotations

import pandas as pd
import pytest

from anon_dagster.cli import main
from anon_dagster.pseudonymize.keystore import init_keystore
from tests.support.specs import release_spec

PASSPHRASE = "a passphrase for this test only"


def make_spec(tmp_path):
    return release_spec({"pid": {"role": "identifier", "pseudonymize": {"method": "hmac"}}, "age": {"role": "quasi"}},
                        release="r", source="in/data.csv", anonymization={"method": "global", "k": 1},
                        publication="opendata/{release}/{partition}.parquet", base=tmp_path)


def test_data_folders_are_source_and_publication(tmp_path):
    spec = make_spec(tmp_path)
    assert spec.data_folders() == [(tmp_path / "in").resolve(), (tmp_path / "opendata").resolve()]


@pytest.mark.parametrize("inside, refused", [("opendata/keys", True), ("in", True), ("keys", False)])
def test_anonymize_refuses_a_keystore_inside_the_release_folders(tmp_path, monkeypatch, capsys, inside, refused):
    (tmp_path / "in").mkdir()
    pd.DataFrame({"pid": ["a", "b"], "age": [30, 30]}).to_csv(tmp_path / "in" / "data.csv", index=False)
    (tmp_path / "spec.yaml").write_text(
        "release: r\nsource: {path: in/data.csv}\n"
        "columns:\n  pid: {role: identifier, pseudonymize: {method: hmac}}\n  age: {role: quasi}\n"
        "anonymization: {method: global, k: 1}\npublication: {path: opendata/{release}/{partition}.parquet}\n")
    store = tmp_path / inside / "keystore.json"
    init_keystore(store, PASSPHRASE, scrypt_n=2**10)
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE", str(store))
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", PASSPHRASE)
    out = tmp_path / "out.parquet"
    code = main(["anonymize", str(tmp_path / "spec.yaml"), "--output", str(out), "--quiet"])
    err = capsys.readouterr().err
    if refused:
        assert code == 2 and "keep keys apart" in err and not out.exists()
        assert PASSPHRASE not in err
    else:
        assert code == 0, err
        assert out.exists()
