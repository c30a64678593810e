"""HashiCorp Vault Transit as a key backend: the master keys never leave Vault.

Vault's Transit engine holds a named key with versions; its ``hmac`` endpoint computes
``HMAC-SHA256(key_version, input)`` inside Vault. :class:`VaultTransitBackend` asks it once per
key version for the MAC of a fixed label and expands every subkey from that locally
(:class:`~.base.ExternalKeyBackend`), so a million pseudonyms cost one request.

Configuration (the usual Vault variables, plus the key's name):

* ``VAULT_ADDR`` — e.g. ``https://vault.internal:8200``;
* ``VAULT_TOKEN`` — a token whose policy allows ``read`` on ``<mount>/keys/<name>``,
  ``update`` on ``<mount>/hmac/<name>/sha2-256`` (and ``<mount>/keys/<name>/rotate`` to rotate);
* ``ANON_DAGSTER_VAULT_KEY`` — the Transit key name; ``ANON_DAGSTER_VAULT_MOUNT`` — the mount
  (default ``transit``);
* ``ANON_DAGSTER_KEYSTORE_STATE`` — where token vaults and the audit log go.

Only the standard library's HTTP client is used. Error messages name the address, the key and
the HTTP status, never the token.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime

from ...errors import SecretError
from .base import ENV_VAULT_KEY, ExternalKeyBackend, KeyInfo

ENV_VAULT_MOUNT = "ANON_DAGSTER_VAULT_MOUNT"


class VaultTransitBackend(ExternalKeyBackend):
    """Master keys in a Vault Transit key; see the module docstring for the policy it needs."""

    kind = "vault-transit"

    def __init__(self, address: str, token: str, key: str, mount: str = "transit", timeout: float = 10.0):
        super().__init__()
        if not address or not token or not key:
            raise SecretError("Vault Transit needs VAULT_ADDR, VAULT_TOKEN and ANON_DAGSTER_VAULT_KEY")
        self.address = address.rstrip("/")
        self._token = token
        self.key = key
        self.mount = mount.strip("/")
        self.timeout = timeout

    @classmethod
    def from_env(cls) -> VaultTransitBackend:
        return cls(os.environ.get("VAULT_ADDR", ""), os.environ.get("VAULT_TOKEN", ""),
                   os.environ.get(ENV_VAULT_KEY, ""), os.environ.get(ENV_VAULT_MOUNT, "transit"))

    def describe(self) -> str:
        return f"Vault Transit key {self.key!r} at {self.address}/v1/{self.mount}"

    # -- HTTP --
    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        url = f"{self.address}/v1/{self.mount}/{path}"
        data = json.dumps(body).encode("utf-8") if body is not None else None
        request = urllib.request.Request(url, data=data, method=method,
                                         headers={"X-Vault-Token": self._token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            raise SecretError(f"{self.describe()}: {method} {path} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise SecretError(f"{self.describe()}: cannot be reached ({type(reason).__name__})") from None
        try:
            return json.loads(text) if text else {}
        except ValueError:
            raise SecretError(f"{self.describe()}: {method} {path} did not answer JSON") from None

    # -- backend --
    def versions(self) -> list[KeyInfo]:
        data = self._call("GET", f"keys/{urllib.parse.quote(self.key, safe='')}").get("data") or {}
        keys = data.get("keys") or {}
        out = []
        for version, created in keys.items():
            # Vault gives a Unix time for older key types and an ISO date for newer ones
            when = (datetime.fromtimestamp(created, UTC).isoformat(timespec="seconds")
                    if isinstance(created, int | float) else str(created))
            out.append(KeyInfo(int(version), when, self.kind))
        min_version = int(data.get("min_decryption_version") or 1)
        return sorted((k for k in out if k.version >= min_version), key=lambda k: k.version)

    def root_mac(self, version: int, label: bytes) -> bytes:
        answer = self._call(
            "POST", f"hmac/{urllib.parse.quote(self.key, safe='')}/sha2-256",
            {"input": base64.b64encode(label).decode("ascii"), "key_version": version},
        )
        text = ((answer.get("data") or {}).get("hmac")) or ""
        prefix = f"vault:v{version}:"
        if not text.startswith(prefix):
            raise SecretError(f"{self.describe()}: the HMAC answer is not for key version {version}")
        try:
            return base64.b64decode(text[len(prefix):], validate=True)
        except (binascii.Error, ValueError):
            raise SecretError(f"{self.describe()}: the HMAC answer is not base64") from None

    def rotate(self) -> KeyInfo:
        self._call("POST", f"keys/{urllib.parse.quote(self.key, safe='')}/rotate", {})
        return self.versions()[-1]
