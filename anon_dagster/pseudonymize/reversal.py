"""Re-identification: an authorized, logged operation, for AES-SIV pseudonyms and tokens only.

Every call is appended to the audit log (:mod:`.audit`), and the log's new head anchored in the
key store, *before* any identifier is returned: who (``actor``), why (``reason``), what (method,
purpose, how many pseudonyms, a digest of them and the first few), and the outcome. A log that
does not verify — edited, erased, replaced, rolled back, or with no anchor where one is needed —
refuses the call before any pseudonym is opened. A refused call — an HMAC pseudonym, a missing actor or
reason, an unknown method — is logged as a refusal, then raised. HMAC pseudonyms cannot be
reversed by anyone, by design: there is nothing to decrypt, only a one-way function.

What comes back is the *normalized* identifier (trimmed, case-folded, NFC, as the column
declared), since that is what was keyed.

A pseudonym of scope ``release`` opens only with its own publication (``publication``, the
label ``"<release>/<partition>"``): that publication's key for AES-SIV, its vault for tokens.
Under any other publication it does not authenticate (or is in no vault) and comes back not
found: nothing is decrypted. The publication asked for is in the log entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from ..errors import UserError
from .audit import AuditLog, AuditTampered, current_run
from .keystore import KeyStore
from .methods import siv_decrypt, split_version
from .tokens import open_vault

REVERSIBLE_METHODS = ("aes_siv", "token")
LOGGED_PSEUDONYMS = 20  # the first few pseudonyms go in the log verbatim; all of them in a digest


class ReversalRefused(UserError):
    """A re-identification request that is not allowed (logged before it is raised)."""


@dataclass
class Reversal:
    """The result of :func:`reidentify`: identifiers in input order (None where not found)."""

    identifiers: list[str | None]
    not_found: int
    audit_seq: int
    versions: dict[int, int] = field(default_factory=dict)


def _text_or_none(value: object) -> str | None:
    """Missing values (None, NaN, NA) and empty strings are not pseudonyms: None."""
    if isinstance(value, str):
        return value.strip() or None
    return None if value is None or pd.isna(value) else str(value)


def _digest(pseudonyms: Sequence[str | None]) -> str:
    h = hashlib.sha256()
    for p in pseudonyms:
        h.update((p or "").encode("utf-8") + b"\n")
    return h.hexdigest()


def reidentify(
    pseudonyms: Sequence[str | None],
    *,
    keystore: KeyStore,
    method: str,
    purpose: str,
    actor: str,
    reason: str,
    key_version: int | None = None,
    audit: AuditLog | None = None,
    publication: str | None = None,
) -> Reversal:
    """Turn AES-SIV pseudonyms or tokens back into identifiers, logging the request.

    ``key_version`` is needed only for AES-SIV pseudonyms written without a version prefix;
    when it is omitted for those, every key version is tried (AES-SIV authenticates, so only
    the right key opens a pseudonym). ``publication`` is the publication label of pseudonyms
    of scope ``release`` (None: scope ``population``).
    """
    audit = audit or AuditLog(keystore)
    try:
        # fail before opening anything: the append re-verifies under the lock, this only makes
        # sure no pseudonym is decrypted (no vault read) for a log that cannot take the entry
        audit.verify()
    except AuditTampered as exc:
        raise ReversalRefused(f"re-identification refused: the audit log does not verify: {exc}") from None
    pseudonyms = [_text_or_none(p) for p in pseudonyms]
    event = {
        "action": "reidentify",
        "actor": (actor or "").strip(),
        "reason": (reason or "").strip(),
        "run": current_run(),
        "method": method,
        "purpose": purpose,
        "scope": "population" if publication is None else "release",
        **({} if publication is None else {"publication": publication}),
        "count": len(pseudonyms),
        "pseudonyms_sha256": _digest(pseudonyms),
        "first_pseudonyms": pseudonyms[:LOGGED_PSEUDONYMS],
    }

    def refuse(why: str) -> ReversalRefused:
        audit.append({**event, "outcome": "refused", "refusal": why})
        return ReversalRefused(f"re-identification refused: {why} (the refusal is in the audit log)")

    if not event["actor"]:
        raise refuse("an actor (who asks) is required")
    if not event["reason"]:
        raise refuse("a reason (why) is required")
    if method == "hmac":
        raise refuse("HMAC pseudonyms are one-way by design and cannot be reversed; "
                     "use aes_siv or token for columns that must be reversible")
    if method not in REVERSIBLE_METHODS:
        raise refuse(f"unknown method {method!r} (reversible methods: aes_siv, token)")

    versions: dict[int, int] = {}
    out: list[str | None] = []
    if method == "token":
        with open_vault(keystore, purpose, write=False, publication=publication) as vault:
            out = [vault.lookup(p) if p else None for p in pseudonyms]
    else:
        all_versions = sorted((k.version for k in keystore.versions()), reverse=True)
        for p in pseudonyms:
            if not p:
                out.append(None)
                continue
            version, body = split_version(p)
            candidates = [version] if version is not None else ([key_version] if key_version else all_versions)
            found = None
            for v in candidates:
                if v not in all_versions:
                    continue
                found = siv_decrypt(keystore.pseudonym_key("aes_siv", purpose, v, publication), purpose, body)
                if found is not None:
                    versions[v] = versions.get(v, 0) + 1
                    break
            out.append(found)
    not_found = sum(1 for p, v in zip(pseudonyms, out, strict=True) if p and v is None)
    entry = audit.append({**event, "outcome": "granted", "not_found": not_found,
                          "key_versions": {str(k): n for k, n in sorted(versions.items())}})
    return Reversal(out, not_found, entry["seq"], versions)
