"""After a key rotation: bridging HMAC pseudonyms, re-keying AES-SIV pseudonyms and token vaults.

A rotation (:meth:`KeyStore.rotate`) adds master key version N+1; data already made keeps the
version in its ``v<N>:`` prefix and stays valid. New data gets the new version, so the same
person has different pseudonyms before and after. What each method needs to link them:

* **hmac** — one-way: old pseudonyms cannot be converted. :func:`hmac_bridge` computes the
  old → new table *from the original identifiers*, so it runs where the raw data is (the secure
  zone), and the table is itself personal data, to be kept with the pseudonymized data, never
  published. Cost: one pass over every identifier ever pseudonymized.
* **aes_siv** — reversible: :func:`rekey_aes_siv` decrypts with the old version and encrypts
  with the new, without the original identifiers. Cost: one pass over the pseudonymized data.
* **token** — tokens are random and stay the same; :func:`rekey_token_vault` re-seals the vault
  under the new key version so the old key can be retired.

A column of scope ``release`` is carried over one publication at a time: each function takes
``publication`` (the label ``"<release>/<partition>"``), and its old and new keys (or its vault)
are that publication's. Scope ``row`` needs nothing: its values are random, derived from no key.

The ledger's linkage key needs nothing: it is pinned to key version 1
(:data:`~.keystore.base.PINNED_VERSIONS`), so the composition check recognizes the persons of
publications made before the rotation.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..errors import DataError
from ..spec import NormalizeSpec
from .keystore import KeyStore
from .methods import siv_decrypt, siv_pseudonyms, split_version
from .table import pseudonymize_values
from .tokens import open_vault


def hmac_bridge(
    identifiers: pd.Series | Sequence,
    keystore: KeyStore,
    *,
    purpose: str,
    from_version: int,
    to_version: int | None = None,
    normalize: NormalizeSpec | None = None,
    prefix_version: bool = True,
    publication: str | None = None,
) -> pd.DataFrame:
    """Old → new HMAC pseudonyms of the given original identifiers (distinct rows, nulls left out).

    Columns ``old`` and ``new``. Both versions must be in the key store. Run it in the secure
    zone: it needs the identifiers, and its output links the two pseudonym generations.
    ``publication``: the publication label of a column of scope ``release`` (None: scope
    ``population``); both generations are that publication's.
    """
    to_version = keystore.current_version if to_version is None else to_version
    if to_version == from_version:
        raise DataError(f"the bridge goes from one key version to another (both are {from_version})")
    values = identifiers if isinstance(identifiers, pd.Series) else pd.Series(list(identifiers), dtype=object)
    kwargs = {"method": "hmac", "purpose": purpose, "normalize": normalize, "prefix_version": prefix_version,
              "scope": "population" if publication is None else "release", "publication": publication}
    old, _ = pseudonymize_values(values, keystore, key_version=from_version, **kwargs)
    new, _ = pseudonymize_values(values, keystore, key_version=to_version, **kwargs)
    table = pd.DataFrame({"old": old.to_numpy(), "new": new.to_numpy()}).dropna()
    return table.drop_duplicates().reset_index(drop=True)


def rekey_aes_siv(
    pseudonyms: pd.Series | Sequence,
    keystore: KeyStore,
    *,
    purpose: str,
    to_version: int | None = None,
    from_version: int | None = None,
    prefix_version: bool = True,
    publication: str | None = None,
) -> pd.Series:
    """AES-SIV pseudonyms re-encrypted under ``to_version`` (default: current); nulls stay null.

    Each pseudonym's version is read from its prefix (or is ``from_version`` when pseudonyms
    carry none). A pseudonym that does not decrypt raises DataError: re-keying never silently
    drops a person. ``publication``: the publication label of a column of scope ``release``
    (None: scope ``population``); it stays bound to that publication.
    """
    to_version = keystore.current_version if to_version is None else to_version
    values = pseudonyms if isinstance(pseudonyms, pd.Series) else pd.Series(list(pseudonyms), dtype=object)
    new_key = keystore.pseudonym_key("aes_siv", purpose, to_version, publication)
    prefix = f"v{to_version}:" if prefix_version else ""
    cache: dict[str, str] = {}
    out: list[str | None] = []
    for i, p in enumerate(values.tolist()):
        if p is None or (isinstance(p, float) and pd.isna(p)) or p is pd.NA:
            out.append(None)
            continue
        if p not in cache:
            version, body = split_version(p)
            version = version if version is not None else from_version
            if version is None:
                raise DataError(f"row {i}: pseudonym without a version prefix: give from_version")
            plain = siv_decrypt(keystore.pseudonym_key("aes_siv", purpose, version, publication), purpose, body)
            if plain is None:
                where = f" of publication {publication!r}" if publication else ""
                raise DataError(f"row {i}: not an AES-SIV pseudonym of purpose {purpose!r}{where} under key version {version}")
            cache[p] = siv_pseudonyms(new_key, purpose, [plain.encode("utf-8")], prefix)[0].as_py()
        out.append(cache[p])
    return pd.Series(pd.array(out, dtype="str"), index=values.index)


def rekey_token_vault(keystore: KeyStore, purpose: str, to_version: int | None = None,
                      publication: str | None = None) -> int:
    """Re-seal the token vault of ``purpose`` (of ``publication`` when given) under
    ``to_version``; return its number of tokens."""
    to_version = keystore.current_version if to_version is None else to_version
    with open_vault(keystore, purpose, write=False, publication=publication) as vault:
        vault.save(version=to_version)
        return len(vault.forward)
