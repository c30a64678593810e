"""The custody log: every approval and rejection, in the key store's tamper-evident audit log
(reads, deletions, erasures and key operations are recorded by :mod:`.access`).

The custody log *is* the audit log of :mod:`anon_dagster.pseudonymize.audit` (MAC-chained
JSON lines under the key store's ``audit-log`` subkey, its head anchored in the key store), so
``anon-dagster audit verify`` checks decisions and reversals in one chain and ``anon-dagster
audit show`` lists them. A decision's entry holds ``action`` (``approve`` or ``reject``),
``actor`` (the approver named), ``by`` (the runner identity of the process), ``reason``, the
subject (release, partition, evaluation, spec hash, data hash, code version) and ``runner``
(who ran the evaluation); the entry's ``ts`` says when. Never a value of the data.

The ledger's decision records the custody entry's ``seq`` and ``mac``; a publication counts an
approval only when that entry is in the verified custody log (:func:`custody_missing`), so a
decision cannot be slipped into the ledger without its trace, nor its trace erased afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...pseudonymize.audit import AuditLog
from ...pseudonymize.keystore import KeyStore
from .binding import Subject
from .records import Decision

GOVERNANCE_ACTIONS = ("approve", "reject")


def opened(keystore: Any) -> KeyStore:
    """The key store itself, from a KeyStore, anything whose ``open()`` returns one (the Dagster
    resource), or None (the key store the environment names)."""
    if keystore is None:
        from ...pseudonymize import open_keystore

        return open_keystore()
    return keystore if isinstance(keystore, KeyStore) else keystore.open()


def custody_log(keystore: Any, path: str | Path | None = None) -> AuditLog:
    """The custody log (the key store's audit log, or the one at ``path``)."""
    store = opened(keystore)
    return AuditLog(store, path) if path is not None else AuditLog(store)


def record_custody(log: AuditLog, decision: str, subject: Subject, *, approver: str, by: str, reason: str,
                   runner: str) -> dict[str, Any]:
    """Append one decision to the custody log (verified against its anchor first); the entry."""
    return log.append({"action": decision, "actor": approver, "by": by, "reason": reason, "runner": runner,
                       **subject.fields()})


def verified_entries(log: AuditLog) -> list[dict[str, Any]]:
    """Every entry of the custody log, once the whole log verifies against its anchor."""
    return log.entries()


def custody_missing(decisions: list[Decision], entries: list[dict[str, Any]]) -> list[Decision]:
    """The decisions whose custody entry is not in ``entries`` (by seq and MAC, naming the same
    approver, decision and subject)."""
    by_seq = {int(e["seq"]): e for e in entries}
    missing = []
    for d in decisions:
        entry = by_seq.get(int(d.custody.get("seq", -1)))
        event = (entry or {}).get("event") or {}
        if (entry is None or entry.get("mac") != d.custody.get("mac") or event.get("action") != d.decision
                or event.get("actor") != d.approver or Subject.of(event) != d.subject):
            missing.append(d)
    return missing


__all__ = ["GOVERNANCE_ACTIONS", "custody_log", "custody_missing", "opened", "record_custody", "verified_entries"]
