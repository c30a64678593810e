"""Key store, reversal and audit commands from outside, with a spec and data of our own.

``keys init|rotate|list`` through ANON_DAGSTER_KEYSTORE and its passphrase, an AES-SIV column
anonymized then reversed by ``reidentify`` (actor and reason required), an HMAC reversal
refused, ``audit verify`` passing on the log and failing once an entry is edited; nothing the
commands print or write holds the passphrase.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from anon_dagster.cli import main

PASSPHRASE = "a passphrase nobody else knows 7f3a"


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = tmp_path / "secure" / "keys.store"
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE", str(path))
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", PASSPHRASE)
    return path


def cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    assert PASSPHRASE not in out.out + out.err
    return code, out.out, out.err


def test_keys_init_rotate_list_and_wrong_passphrase(store, capsys, monkeypatch):
    code, out, err = cli(capsys, "keys", "init")
    assert code == 0, err
    assert store.exists() and (store.stat().st_mode & 0o777) == 0o600
    code, out, _ = cli(capsys, "keys", "rotate")
    assert code == 0
    code, listing, _ = cli(capsys, "keys", "list")
    assert code == 0
    rows = [line.split() for line in listing.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["1", "2"] and rows[-1][-1] == "current"
    before = store.read_bytes()
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", "wrong")
    code, out, err = cli(capsys, "keys", "rotate")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "passphrase" in err
    assert store.read_bytes() == before
    assert PASSPHRASE.encode() not in before


def test_aes_siv_reversal_is_audited_and_tampering_detected(store, tmp_path, capsys):
    assert cli(capsys, "keys", "init")[0] == 0
    (tmp_path / "d.csv").write_text("pid,age,s\nA1,30,x\nA2,31,y\nA3,32,x\nA4,33,y\n")
    spec = tmp_path / "s.yaml"
    spec.write_text("release: siv\nsource: {path: d.csv}\ncolumns:\n"
                    "  pid: {role: identifier, pseudonymize: {method: aes_siv, purpose: custody}}\n"
                    "  age: {role: quasi, hierarchy: {type: interval, widths: [10]}}\n"
                    "  s: {role: sensitive}\nanonymization: {method: global, k: 2}\n"
                    "publication: {path: out.parquet}\n")
    out = tmp_path / "o.csv"
    code, _, err = cli(capsys, "anonymize", spec, "--output", out, "--quiet")
    assert code == 0, err
    published = pd.read_csv(out)
    assert not set(published["pid"]) & {"A1", "A2", "A3", "A4"}
    assert published["pid"].is_unique
    first = published["pid"].iloc[0]
    code, text, err = cli(capsys, "reidentify", "--actor", "alice", "--reason", "court order 12",
                          "--spec", spec, "--column", "pid", first)
    assert code == 0, err
    assert text.split() == [first, "A1"]
    # actor and reason are required
    with pytest.raises(SystemExit):
        main(["reidentify", "--spec", str(spec), "--column", "pid", first])
    capsys.readouterr()
    # an HMAC pseudonym is one-way: refused, exit 2, and the refusal logged
    code, _, err = cli(capsys, "reidentify", "--actor", "bob", "--reason", "curious",
                       "--method", "hmac", "--purpose", "x", "v1:00")
    assert code == 2 and "one-way" in err
    code, text, err = cli(capsys, "audit", "verify")
    assert code == 0, err
    log = store.parent / "audit.jsonl"
    # the key store's creation is the first entry of its custody log
    first_line, *lines = log.read_text().splitlines()
    assert json.loads(first_line)["event"]["action"] == "key-init"
    assert len(lines) == 2
    entries = [json.loads(line) for line in lines]
    assert all(isinstance(e, dict) for e in entries)
    assert "alice" in lines[0] and "bob" in lines[1]
    assert "A1" not in log.read_text()  # the log names who and why, not the identity revealed
    # edit the first entry's reason: verification must fail
    lines[0] = lines[0].replace("court order 12", "court order 13")
    log.write_text("\n".join([first_line, *lines]) + "\n")
    code, _, err = cli(capsys, "audit", "verify")
    assert code != 0
    assert err.strip()
