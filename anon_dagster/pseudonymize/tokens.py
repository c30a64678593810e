"""Tokenization: a random token per distinct identifier, the mapping kept encrypted by the key store.

A token is ``tk_`` + 26 base32 characters of 16 random bytes: it is a function of nothing, so
it reveals nothing, and only the mapping table (the *vault*) links it back. One vault per
purpose, so tokens of two purposes never coincide. The vault is a file in the key store's
folder (``tokens/<purpose>.vault``), never in the data folder, sealed with AES-256-GCM under
``keystore.derive_key("token-vault:<purpose>", version)``; its header (purpose, key version) is
the associated data. The same identifier always gets the same token, across runs and
partitions, as long as the vault is kept.

A column of scope ``release`` has one vault per publication (``publication``, the label
``"<release>/<partition>"``): ``tokens/publications/<release>/<partition>/<purpose>.vault``,
whose header (so the seal) also names the publication. The same identifier then gets another
token in every publication, and reversal needs that publication's vault.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import hashlib
import json
import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import DataError, SecretError
from ..io import write_bytes_atomic
from .keystore import KeyStore
from .methods import PUBLICATION_LABEL, TOKEN_PREFIX

VAULT_FORMAT = "anon_dagster.token_vault"


def new_token() -> str:
    """A fresh random token: ``tk_`` + base32 (lowercase, unpadded) of 16 random bytes."""
    return TOKEN_PREFIX + base64.b32encode(secrets.token_bytes(16)).decode("ascii").rstrip("=").lower()


def vault_path(keystore: KeyStore, purpose: str, publication: str | None = None) -> Path:
    """The vault file of ``purpose`` (of one publication when given) in the key store's folder
    (odd purpose names are hashed).

    A publication's vaults sit in their own folder tree, ``tokens/publications/<release>/<partition>/``:
    a purpose's own vault is a file directly in ``tokens/``, so the two never share a path.
    """
    name = purpose if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", purpose) and not purpose.startswith(".") \
        else "p-" + hashlib.sha256(purpose.encode("utf-8")).hexdigest()[:32]
    folder = keystore.require_state_dir() / "tokens"
    if publication is not None:
        if not PUBLICATION_LABEL.fullmatch(publication):
            raise DataError(f"{publication[:80]!r} is not a publication label (<release>/<partition>)")
        folder = folder.joinpath("publications", *publication.split("/"))
    return folder / f"{name}.vault"


def vault_publications(keystore: KeyStore, purpose: str) -> list[str]:
    """The labels of the publications holding a vault of ``purpose`` (scope ``release``), sorted."""
    root = keystore.require_state_dir() / "tokens" / "publications"
    name = vault_path(keystore, purpose).name
    if not root.is_dir():
        return []
    labels = [f"{path.parent.parent.name}/{path.parent.name}" for path in root.glob(f"*/*/{name}")]
    return sorted(label for label in labels if PUBLICATION_LABEL.fullmatch(label))


class TokenVault:
    """The identifier → token table of one purpose, decrypted in memory."""

    def __init__(self, keystore: KeyStore, purpose: str, path: Path, mapping: dict[str, str], version: int,
                 publication: str | None = None):
        self.keystore = keystore
        self.purpose = purpose
        self.publication = publication
        self.path = path
        self.forward = mapping
        self.version = version
        self._reverse: dict[str, str] | None = None
        self.changed = False

    # -- loading and saving --
    @classmethod
    def load(cls, keystore: KeyStore, purpose: str, publication: str | None = None) -> TokenVault:
        path = vault_path(keystore, purpose, publication)
        if not path.exists():
            return cls(keystore, purpose, path, {}, keystore.current_version, publication)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            header = {k: doc[k] for k in ("format", "purpose", "key_version")}
            if "publication" in doc:
                header["publication"] = doc["publication"]
            nonce = base64.b64decode(doc["nonce"], validate=True)
            ciphertext = base64.b64decode(doc["ciphertext"], validate=True)
            if header["format"] != VAULT_FORMAT or header["purpose"] != purpose \
                    or header.get("publication") != publication:
                raise ValueError("header")
            version = int(header["key_version"])
        except (OSError, ValueError, KeyError, TypeError, binascii.Error):
            raise SecretError(f"{path}: not a readable token vault for purpose {purpose!r}"
                              + (f" of publication {publication!r}" if publication else "") + " (corrupted?)") from None
        key = keystore.derive_key(f"token-vault:{purpose}", version)
        try:
            plain = AESGCM(key).decrypt(nonce, ciphertext, _aad(header))
            mapping = json.loads(plain)
        except InvalidTag:
            raise SecretError(f"{path}: the token vault was modified or belongs to another key store (seal does not verify)") from None
        return cls(keystore, purpose, path, mapping, version, publication)

    def save(self, version: int | None = None) -> None:
        """Seal the table (under key ``version``, default: the version it had) and write atomically."""
        version = self.version if version is None else version
        header: dict[str, object] = {"format": VAULT_FORMAT, "purpose": self.purpose, "key_version": version}
        if self.publication is not None:  # sealed into the associated data: a vault cannot be moved
            header["publication"] = self.publication
        key = self.keystore.derive_key(f"token-vault:{self.purpose}", version)
        nonce = secrets.token_bytes(12)
        plain = json.dumps(self.forward, separators=(",", ":")).encode("utf-8")
        ciphertext = AESGCM(key).encrypt(nonce, plain, _aad(header))
        doc = {**header, "nonce": base64.b64encode(nonce).decode(), "ciphertext": base64.b64encode(ciphertext).decode()}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_bytes_atomic(json.dumps(doc).encode("utf-8"), self.path, mode=0o600)
        self.version = version
        self.changed = False

    # -- use --
    def tokens_for(self, values: list[str]) -> list[str]:
        """The token of each value, minting one for values not seen before."""
        forward = self.forward
        out = []
        for value in values:
            token = forward.get(value)
            if token is None:
                if self._reverse is None:
                    self._reverse = {t: v for v, t in forward.items()}
                token = new_token()
                while token in self._reverse:  # 2^-128 per draw, but one-to-one is a promise
                    token = new_token()
                forward[value] = token
                self._reverse[token] = value
                self.changed = True
            out.append(token)
        return out

    def lookup(self, token: str) -> str | None:
        """The identifier a token stands for, or None if the vault does not know it."""
        if self._reverse is None:
            self._reverse = {t: v for v, t in self.forward.items()}
        return self._reverse.get(token)

    def __repr__(self) -> str:
        scope = f" publication={self.publication!r}" if self.publication else ""
        return f"<TokenVault purpose={self.purpose!r}{scope} entries={len(self.forward)}>"


def _aad(header: dict) -> bytes:
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")


@contextmanager
def open_vault(keystore: KeyStore, purpose: str, write: bool = True,
               publication: str | None = None) -> Iterator[TokenVault]:
    """The vault of ``purpose`` (of ``publication`` when given) under an exclusive lock; saved on
    exit if new tokens were minted."""
    path = vault_path(keystore, purpose, publication)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock_fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(lock_fd, "r+") as lock:
        # two runs minting tokens at once would each save a table missing the other's tokens
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            vault = TokenVault.load(keystore, purpose, publication)
            yield vault
            if write and vault.changed:
                vault.save()
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def token_pseudonyms(keystore: KeyStore, purpose: str, values: list[bytes],
                     publication: str | None = None) -> pa.Array:
    """Tokens of distinct values (UTF-8 bytes), minting and saving new ones (in the vault of
    ``publication`` when given)."""
    with open_vault(keystore, purpose, publication=publication) as vault:
        tokens = vault.tokens_for([v.decode("utf-8") for v in values])
    return pa.array(tokens, type=pa.large_string())
