"""No output ever carries key material or the passphrase.

One end-to-end run through every operation of the pseudonymization area — key store creation,
rotation and listing, table pseudonymization with the three methods, summaries, reversal,
audit verification, rotation helpers, and each failure path — collects everything it shows or
writes (tables as CSV and Parquet, summaries, captured logs, stdout/stderr of the CLI,
exception texts, reprs, the files beside the key store) and searches it for every master and
derived key in raw, hex and base64 form, and for the passphrase.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import pickle

import pandas as pd
import pytest

from anon_dagster.cli import main
from anon_dagster.errors import UserError
from anon_dagster.pseudonymize import (
    EnvKeyBackend,
    hmac_bridge,
    open_keystore,
    pseudonymize,
    reidentify,
    rekey_aes_siv,
)
from anon_dagster.spec import spec_from_dict

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

PASSPHRASE = "Tr0ub4dor&3-leak-canary"
FAST_N = 2**10


def forms(secret: bytes) -> list[bytes]:
    """Every encoding of a key a careless program could print or store."""
    b64 = base64.b64encode(secret)
    url = base64.urlsafe_b64encode(secret)
    return [secret, secret.hex().encode(), secret.hex().upper().encode(), b64, b64.rstrip(b"="),
            url, url.rstrip(b"="), base64.b32encode(secret)]


def find_leaks(blob: bytes, secrets: dict[str, bytes], passphrase: str) -> list[str]:
    leaks = [f"{name} ({i})" for name, s in secrets.items() for i, f in enumerate(forms(s)) if f in blob]
    if passphrase.encode() in blob:
        leaks.append("passphrase")
    return leaks


def test_the_detector_itself_finds_each_form():
    key = os.urandom(32)
    for f in forms(key):
        assert find_leaks(b"xx" + f + b"yy", {"k": key}, "pw")
    assert find_leaks(b"the pw is pw!", {}, "pw is pw") == ["passphrase"]


@pytest.fixture
def env(monkeypatch, tmp_path):
    store = tmp_path / "secure" / "keystore.json"
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE", str(store))
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", PASSPHRASE)
    return store


def test_no_output_contains_key_material_or_the_passphrase(env, tmp_path, capsys, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="anon_dagster.pseudonymize.keystore")  # other tests may quiet it
    shown: list[bytes] = []

    def cli(*argv: str) -> int:
        code = main(list(argv))
        out = capsys.readouterr()
        shown.extend([out.out.encode(), out.err.encode()])
        return code

    def failing(fn, *a, **kw) -> None:
        with pytest.raises((UserError, TypeError)) as err:
            fn(*a, **kw)
        shown.append(str(err.value).encode())
        shown.append(repr(err.value).encode())

    # key store life cycle through the CLI
    assert cli("keys", "init", "--scrypt-n", str(FAST_N)) == 0
    assert cli("keys", "rotate") == 0
    assert cli("keys", "list") == 0
    assert cli("keys", "list", "--json") == 0
    ks = open_keystore()
    shown += [repr(ks).encode(), repr(ks.backend).encode(), str(ks.versions()).encode()]

    # a table with the three methods
    raw_spec = {
        "release": "leak_check", "source": {"path": "raw.csv"}, "publication": {"path": "out.parquet"},
        "columns": {
            "patient_id": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}},
            "case_id": {"role": "identifier", "pseudonymize": {"method": "aes_siv", "purpose": "care"}},
            "email": {"role": "identifier", "pseudonymize": {"method": "token", "purpose": "contact"}},
            "name": {"role": "identifier"},
            "age": {"role": "quasi"},
        },
    }
    spec_file = tmp_path / "leak_check.yaml"
    spec_file.write_text(json.dumps(raw_spec))  # JSON is YAML: the CLI reads the same spec
    spec = spec_from_dict(raw_spec, spec_file)
    publication = "leak_check/all"  # scope release (the default) of a release without partitions
    n = 300
    df = pd.DataFrame({
        "patient_id": [f"{i:08d}Z" for i in range(n)],
        "case_id": [f"C{i}" for i in range(n)],
        "email": [f"p{i}@example.org" for i in range(n)],
        "name": ["someone"] * n,
        "age": range(n),
    })
    out, summary = pseudonymize(df, spec, ks)
    buffer = io.BytesIO()
    out.to_parquet(buffer)
    shown += [out.to_csv().encode(), buffer.getvalue(), json.dumps(summary.to_dict()).encode(), repr(summary).encode()]

    # reversal, refusal, audit verification, rotation helpers
    res = reidentify(out["case_id"][:5], keystore=ks, method="aes_siv", purpose="care", actor="a", reason="r",
                     publication=publication)
    shown.append(repr(res).encode())
    assert res.not_found == 0
    assert cli("reidentify", "--spec", str(spec_file), "--column", "email", "--actor", "a", "--reason", "r",
               out["email"][0]) == 0
    assert cli("reidentify", "--method", "hmac", "--purpose", "research", "--actor", "a", "--reason", "r",
               out["patient_id"][0]) == 2
    assert cli("audit", "verify") == 0
    shown.append(hmac_bridge(df["patient_id"], ks, purpose="research", from_version=1,
                             publication=publication).to_csv().encode())
    shown.append(rekey_aes_siv(out["case_id"], ks, purpose="care", to_version=1,
                               publication=publication).to_csv().encode())

    # failure paths
    failing(open_keystore, passphrase="wrong " + PASSPHRASE[::-1])
    doc = json.loads(env.read_text())
    corrupt = tmp_path / "other" / "keystore.json"
    corrupt.parent.mkdir()
    doc["keys"][0]["created"] = "1999-01-01T00:00:00+00:00"
    corrupt.write_text(json.dumps(doc))
    os.chmod(corrupt, 0o600)
    failing(open_keystore, corrupt, passphrase=PASSPHRASE)
    os.chmod(corrupt, 0o644)
    failing(open_keystore, corrupt, passphrase=PASSPHRASE)
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", "x" + PASSPHRASE)
    assert cli("keys", "list") == 2
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", PASSPHRASE)
    failing(pickle.dumps, ks)
    short_key = base64.b64encode(os.urandom(20)).decode()
    failing(EnvKeyBackend, short_key)
    failing(EnvKeyBackend, "1:" + short_key + "%%")

    # what sits beside the key store (audit log, head, token vault) must not hold keys either
    written = [p.read_bytes() for p in env.parent.rglob("*") if p.is_file() and p != env]
    assert len(written) >= 3
    shown += written
    shown.append(caplog.text.encode())

    secrets = {f"master v{v}": k for v, k in ks.backend._keys.items()}
    for v in (1, 2):
        secrets[f"hmac research v{v}"] = ks.pseudonym_key("hmac", "research", v)
        secrets[f"aes_siv care v{v}"] = ks.pseudonym_key("aes_siv", "care", v)
        secrets[f"hmac research {publication} v{v}"] = ks.pseudonym_key("hmac", "research", v, publication)
        secrets[f"aes_siv care {publication} v{v}"] = ks.pseudonym_key("aes_siv", "care", v, publication)
        for purpose in ("audit-log", "token-vault:contact", "ledger-linkage", "data-at-rest"):
            secrets[f"{purpose} v{v}"] = ks.derive_key(purpose, v)
    secrets["short env key"] = base64.b64decode(short_key)
    blob = b"\n".join(shown)
    assert find_leaks(blob, secrets, PASSPHRASE) == []
    assert short_key.encode() not in blob
    # and the check is live: the outputs are there, and a leak in them would be caught
    assert out["patient_id"][0].encode() in blob
    assert find_leaks(blob + secrets["master v1"].hex().encode(), secrets, PASSPHRASE) == ["master v1 (1)"]
