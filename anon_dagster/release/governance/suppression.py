"""The suppression list: the persons erased from a release, whom no later release may contain.

Definitions.

- The *person column* of a release is ``composition.person``, else its only identifier column;
  a person is named by the *linkage pseudonym* of that column's value
  (:func:`~anon_dagster.release.ledger.linkage_pseudonyms`: HMAC-SHA256 under the key store's
  ``ledger-linkage`` subkey of the value spelled as the published pseudonym spells it), never
  by the value itself.
- The *suppression list* of a release is the file ``<state>/suppression/<release>.json`` in the
  key store's state folder (with the keys, apart from the data): the sorted linkage pseudonyms
  and an HMAC-SHA256 of them under the ``suppression-list`` subkey, so a list edited by hand
  (a person taken off it) is refused rather than read.
- :func:`drop_suppressed` is called by :func:`~anon_dagster.release.pipeline.pseudonymize`, the
  one step every path through a release takes with the key store (the Dagster asset, ``check``,
  the engines): rows of a suppressed person go no further than the raw table.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import SecretError, UserError
from ...io import write_bytes_atomic
from ...pseudonymize.methods import PERSON_NORMALIZATION
from ..ledger import linkage_pseudonyms
from .custody import custody_log, opened

LINKAGE_PURPOSE = "ledger-linkage"
SUPPRESSION_PURPOSE = "suppression-list"
FOLDER = "suppression"
FORMAT = "anon_dagster.suppression-list"


def person_column(spec: Any) -> str:
    """The release's person column (see the module docstring); UserError when it has none."""
    if spec.composition is not None:
        return str(spec.composition.person)
    identifiers = list(spec.identifiers)
    if len(identifiers) == 1:
        return identifiers[0]
    raise UserError(f"{spec.label}: erasure needs to know which column names a person: declare composition.person "
                    f"(the release has {len(identifiers)} identifier columns)")


def person_normalize(spec: Any) -> Any:
    """How the person column is spelled before its linkage pseudonym is keyed: the ``normalize``
    block of its ``pseudonymize`` block, else :data:`~anon_dagster.pseudonymize.methods.PERSON_NORMALIZATION`."""
    column = spec.columns.get(person_column(spec))
    how = getattr(column, "pseudonymize", None)
    return how.normalize if how is not None else PERSON_NORMALIZATION


def person_pseudonyms(spec: Any, values: pd.Series, keystore: Any) -> Any:
    """The linkage pseudonym of each value of the person column (see the module docstring)."""
    return linkage_pseudonyms(values.reset_index(drop=True), keystore.derive_key(LINKAGE_PURPOSE),
                              normalize=person_normalize(spec))


def named_persons(values: pd.Series) -> np.ndarray:
    """The rows whose person column names someone: present and not blank (a row without a person
    cannot be an erased person's, and linkage refuses it elsewhere, if it must)."""
    return (values.notna() & values.astype(str).str.strip().ne("")).to_numpy()


def list_path(keystore: Any, release: str) -> Path:
    """Where the suppression list of ``release`` is kept (SecretError when the key store keeps no state)."""
    return opened(keystore).require_state_dir() / FOLDER / f"{release}.json"


def _mac(keystore: Any, release: str, pseudonyms: list[str]) -> str:
    body = json.dumps({"release": release, "pseudonyms": pseudonyms}, sort_keys=True, separators=(",", ":"))
    return hmac.new(keystore.derive_key(SUPPRESSION_PURPOSE), body.encode(), hashlib.sha256).hexdigest()


def erased_digests(keystore: Any, release: str) -> set[str]:
    """The digests of the persons the custody log records as erased from ``release`` (the log
    verified against its anchor first: AuditTampered otherwise)."""
    return {str(e["event"].get("person")) for e in custody_log(keystore).entries()
            if e["event"].get("action") == "erase" and e["event"].get("release") == release}


def suppressed(keystore: Any, release: str, *, anchored: bool = True) -> set[str]:
    """The linkage pseudonyms on the suppression list of ``release`` (empty when it has none, or the
    key store keeps no state); UserError when the list was altered or, with ``anchored``, lacks
    persons the custody log records as erased (see the module docstring)."""
    try:
        path = list_path(keystore, release)
    except SecretError:
        return set()
    listed = _read_list(keystore, release, path) if path.exists() else set()
    if anchored:
        lacking = erased_digests(keystore, release) - {digest(p) for p in listed}
        if lacking:
            state = "lacks" if path.exists() else "is missing, and with it"
            raise UserError(f"{path}: the suppression list of release {release!r} {state} {len(lacking)} person(s) "
                            "the custody log records as erased (deleted, or an older copy restored): nothing is "
                            "processed until the latest copy is restored or those persons are erased again")
    return listed


def _read_list(keystore: Any, release: str, path: Path) -> set[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        pseudonyms = [str(p) for p in data["pseudonyms"]]
        ok = hmac.compare_digest(str(data["mac"]), _mac(keystore, release, pseudonyms))
    except (OSError, ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise UserError(f"{path}: the suppression list of release {release!r} was altered (its MAC does not match): "
                        "nothing is processed until it is restored from a backup")
    return set(pseudonyms)


def add_suppressed(keystore: Any, release: str, pseudonyms: set[str]) -> int:
    """Add ``pseudonyms`` to the suppression list of ``release``; how many were new."""
    before = suppressed(keystore, release, anchored=False)  # erasing again is how a lost list is repaired
    after = sorted(before | set(pseudonyms))
    path = list_path(keystore, release)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    record = {"format": FORMAT, "release": release, "pseudonyms": after, "mac": _mac(keystore, release, after)}
    write_bytes_atomic(json.dumps(record, sort_keys=True).encode(), path, mode=0o600)
    return len(after) - len(before)


def drop_suppressed(spec: Any, raw: pd.DataFrame, keystore: Any) -> pd.DataFrame:
    """``raw`` without the rows of a person on the release's suppression list (unchanged when the
    list is empty, or there is no key store to read it with)."""
    if keystore is None or raw.empty:
        return raw
    listed = suppressed(keystore, spec.release)
    if not listed:
        return raw
    values = raw[person_column(spec)]
    named = named_persons(values)
    keep = np.ones(len(raw), dtype=bool)
    if named.any():
        keep[named] = ~pd.Series(person_pseudonyms(spec, values[named], keystore)).isin(listed).to_numpy()
    return raw.loc[keep].reset_index(drop=True) if not keep.all() else raw


def erased_rows(spec: Any, tables: Any, keystore: Any) -> int:
    """How many rows of ``tables`` (DataFrames that carry the ledger's linkage column) belong to a
    person on the release's suppression list: the last look before a publication, for a person
    erased while the run was already past its pseudonymize step. 0 without a key store, a list,
    or the linkage column (a release without ``composition`` names no person in its tables)."""
    from ..gate import LINKAGE_COLUMN

    if keystore is None:
        return 0
    with_linkage = [t for t in tables if t is not None and LINKAGE_COLUMN in t.columns and len(t)]
    if not with_linkage:
        return 0
    listed = suppressed(keystore, spec.release)
    return sum(int(t[LINKAGE_COLUMN].isin(listed).sum()) for t in with_linkage) if listed else 0


def digest(pseudonym: str) -> str:
    """What the ledger and the custody log name an erased person by: SHA-256 of the linkage
    pseudonym, 16 hex characters (it finds the person's records without being the pseudonym)."""
    return hashlib.sha256(pseudonym.encode()).hexdigest()[:16]


__all__ = ["add_suppressed", "digest", "drop_suppressed", "erased_digests", "list_path", "named_persons", "person_column",
           "person_normalize", "person_pseudonyms",
           "suppressed"]
