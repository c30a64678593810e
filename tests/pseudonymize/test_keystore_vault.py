"""Vault Transit backend against a small Vault stand-in on the loopback interface."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

from anon_dagster.cli import main
from anon_dagster.errors import SecretError
from anon_dagster.pseudonymize import (
    ExternalKeyBackend,
    KeyStore,
    VaultTransitBackend,
    open_keystore,
    pseudonymize_values,
)

TOKEN = "hvs.test-token-never-printed"


class FakeTransit:
    """The three Transit endpoints the backend uses, with Vault's request and answer shapes."""

    def __init__(self):
        self.keys = {1: os.urandom(32)}
        self.created = {1: 1767225600}
        self.hmac_calls = 0

    def handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _answer(self, code, body=None):
                data = json.dumps(body or {}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self):
                if self.headers.get("X-Vault-Token") != TOKEN:
                    self._answer(403, {"errors": ["permission denied"]})
                    return False
                return True

            def do_GET(self):  # noqa: N802 - http.server's naming
                if not self._authorized():
                    return
                if self.path == "/v1/transit/keys/pseudo":
                    self._answer(200, {"data": {"keys": {str(v): t for v, t in fake.created.items()},
                                                "min_decryption_version": 1}})
                else:
                    self._answer(404, {"errors": []})

            def do_POST(self):  # noqa: N802
                if not self._authorized():
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                if self.path == "/v1/transit/hmac/pseudo/sha2-256":
                    fake.hmac_calls += 1
                    v = int(body.get("key_version") or max(fake.keys))
                    mac = hmac.new(fake.keys[v], base64.b64decode(body["input"]), hashlib.sha256).digest()
                    self._answer(200, {"data": {"hmac": f"vault:v{v}:{base64.b64encode(mac).decode()}"}})
                elif self.path == "/v1/transit/keys/pseudo/rotate":
                    v = max(fake.keys) + 1
                    fake.keys[v], fake.created[v] = os.urandom(32), 1767225600 + v
                    self._answer(204)
                else:
                    self._answer(404, {"errors": []})

        return Handler


@pytest.fixture
def vault(monkeypatch, tmp_path):
    fake = FakeTransit()
    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("VAULT_ADDR", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("VAULT_TOKEN", TOKEN)
    monkeypatch.setenv("ANON_DAGSTER_VAULT_KEY", "pseudo")
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(tmp_path / "state"))
    yield fake
    server.shutdown()
    server.server_close()


def test_subkeys_expand_from_one_transit_hmac_per_version(vault):
    ks = open_keystore()
    assert isinstance(ks.backend, VaultTransitBackend) and ks.current_version == 1
    a = ks.derive_key("ledger-linkage")
    out, _ = pseudonymize_values(pd.Series([f"id{i}" for i in range(1000)]), ks, method="hmac")
    assert vault.hmac_calls == 1 and out.nunique() == 1000
    prk = hmac.new(vault.keys[1], ExternalKeyBackend.ROOT_LABEL, hashlib.sha256).digest()
    expected = HKDFExpand(algorithm=hashes.SHA256(), length=32,
                          info=b'["anon_dagster","internal","ledger-linkage",1]').derive(prk)
    assert a == expected


def test_rotation_goes_through_vault(vault, capsys):
    assert main(["keys", "rotate"]) == 0
    assert "key version 2" in capsys.readouterr().out
    ks = open_keystore()
    assert [k.version for k in ks.versions()] == [1, 2]
    assert ks.derive_key("x", 1) != ks.derive_key("x", 2)
    assert main(["keys", "list", "--json"]) == 0
    listing = capsys.readouterr().out
    assert json.loads(listing)["keys"][0]["created"].startswith("2026-01-01")
    assert TOKEN not in listing


def test_refused_token_is_a_clear_error_without_the_token(vault, monkeypatch, capsys):
    monkeypatch.setenv("VAULT_TOKEN", "hvs.wrong-token")
    with pytest.raises(SecretError, match="HTTP 403") as err:
        open_keystore().derive_key("x")
    assert "hvs." not in str(err.value)
    assert main(["keys", "list"]) == 2
    assert "hvs." not in capsys.readouterr().err


def test_unreachable_vault_is_a_clear_error(monkeypatch):
    backend = VaultTransitBackend("http://127.0.0.1:9", TOKEN, "pseudo", timeout=2)
    with pytest.raises(SecretError, match="cannot be reached") as err:
        KeyStore(backend)
    assert TOKEN not in str(err.value)


def test_missing_settings_are_named():
    with pytest.raises(SecretError, match="VAULT_ADDR, VAULT_TOKEN"):
        VaultTransitBackend("", TOKEN, "k")
