"""Retention: the stored intermediate tables of a release deleted once past their retention.

Definitions (the spec block is :mod:`anon_dagster.spec.retention`):

- the *intermediates* of a release are its stored tables ``(release, step)`` for the steps
  ``raw``, ``pseudonymized`` and ``anonymized`` (:mod:`anon_dagster.storage`), every partition;
  publications, reports and the ledger are not, and are kept;
- a table's *retention* is ``retention.raw_days`` for ``raw``, ``retention.pseudonymized_days``
  for ``pseudonymized`` and ``anonymized`` (the anonymized table still holds the linkage
  pseudonyms); it *expires* at ``stored_at + days × 24 h`` and is *past its retention* at
  ``now`` when ``now >= expires``;
- deleting a table destroys its partition's data key first (crypto-shredding:
  :meth:`~anon_dagster.storage.TableStore.shred`), then its file.

Retention and erasure of one release hold its *release lock* (:func:`release_lock`, an
exclusive ``flock`` on ``<storage>/.keys/.locks/<release>.lock``) while they find and change
tables: two retention runs at once delete and record each table once, and an erasure never
rewrites a table retention is deleting.

Each deletion goes to the custody log (``retention-delete``), then one ``retention`` event to the
ledger: which tables (step, partition, when stored, when expired, whether a data key was
destroyed) and when. No value of the data is recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ...errors import UserError
from ...pseudonymize.keystore.anchor import locked_file
from ...spec import ReleaseSpec
from ...storage import KEYS_FOLDER
from ..ledger import Ledger
from ..step_storage import storage_folder
from . import access
from .binding import runner

RETAINED_STEPS = {"raw": "raw_days", "pseudonymized": "pseudonymized_days", "anonymized": "pseudonymized_days"}
STAMP = "%Y-%m-%dT%H:%M:%SZ"


def stamp(when: datetime) -> str:
    """``when`` as the UTC time the ledger and the custody log write."""
    return when.astimezone(UTC).strftime(STAMP)


def parse_now(text: str | None) -> datetime:
    """The time given as ISO 8601 (UTC when it names no zone), else now; UserError naming the value."""
    if not text:
        return datetime.now(UTC)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UserError(f"--now {text!r}: not an ISO 8601 time (e.g. 2026-03-01T00:00:00Z)") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def intermediates_base(explicit: str | Path | None = None) -> Path:
    """Where the intermediates are stored, as the IO manager finds it
    (:func:`~anon_dagster.release.step_storage.storage_folder`): ``explicit``, else
    ``$DAGSTER_HOME/anon_dagster/storage``; UserError when neither is known (the orchestrator's own
    storage folder is known only inside it)."""

    def unknown() -> Path:
        raise UserError("where are the intermediate tables stored? give --storage (the IO manager's base_dir) "
                        "or set DAGSTER_HOME")

    return storage_folder(str(explicit) if explicit else None, unknown)


@dataclass(frozen=True)
class Expired:
    """One stored table past its retention (or deleted): step, partition, its times, the key destroyed."""

    step: str
    partition: str
    stored_at: str
    expired_at: str
    key_destroyed: bool = False


@dataclass(frozen=True)
class RetentionOutcome:
    """What one run of retention found (``dry_run``) or deleted, and its ledger event (None when
    nothing was deleted, or in a dry run)."""

    release: str
    now: str
    tables: list[Expired]
    dry_run: bool
    ledger_seq: int | None = None

    def describe(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        if not self.tables:
            return f"{self.release}: nothing past its retention at {self.now}"
        lines = [f"{self.release}: {verb} {len(self.tables)} intermediate table(s) past their retention at {self.now}"
                 + (f" (ledger event {self.ledger_seq})" if self.ledger_seq is not None else "")]
        for t in self.tables:
            shred = "data key destroyed" if t.key_destroyed else ("" if self.dry_run else "clear-text file removed")
            lines.append(f"  {t.step}/{t.partition or '__all__'}: stored {t.stored_at}, expired {t.expired_at}"
                         + (f", {shred}" if shred else ""))
        return "\n".join(lines)


def expired_tables(spec: ReleaseSpec, store: Any, now: datetime) -> list[Expired]:
    """The stored tables of ``spec``'s release past their retention at ``now`` (see the module
    docstring), in step then partition order; none without a ``retention`` block."""
    retention = spec.retention
    if retention is None:
        return []
    out = []
    for step, key in RETAINED_STEPS.items():
        days = getattr(retention, key)
        if days is None:
            continue
        for partition in store.partitions((spec.release, step)):
            stored = store.stored_at((spec.release, step), partition)
            if stored is None:
                continue
            expires = stored + timedelta(days=int(days))
            if now >= expires:
                out.append(Expired(step, partition or "", stamp(stored), stamp(expires)))
    return out


@contextmanager
def release_lock(store: Any, release: str) -> Iterator[None]:
    """Hold the release lock of ``release`` in ``store`` for the block (see the module docstring)."""
    with locked_file(Path(store.base) / KEYS_FOLDER / ".locks" / f"{release}.lock"):
        yield


def apply_retention(spec: ReleaseSpec, store: Any, *, now: datetime, ledger: Ledger | None, keystore: Any = None,
                    dry_run: bool = False, why: str = "") -> RetentionOutcome:
    """Delete the tables :func:`expired_tables` finds (nothing with ``dry_run``): each one's data
    key then file, each deletion in the custody log, then one ``retention`` event in ``ledger``;
    under the release lock, so a second run at once finds what the first left."""
    if dry_run:
        return RetentionOutcome(spec.release, stamp(now), expired_tables(spec, store, now), dry_run)
    with release_lock(store, spec.release):
        return _apply(spec, store, now=now, ledger=ledger, keystore=keystore, why=why)


def _apply(spec: ReleaseSpec, store: Any, *, now: datetime, ledger: Ledger | None, keystore: Any,
           why: str) -> RetentionOutcome:
    found = expired_tables(spec, store, now)
    if not found:
        return RetentionOutcome(spec.release, stamp(now), found, False)
    if ledger is None:
        raise UserError(f"{spec.label}: retention records what it deletes in the ledger, and none was given "
                        "(--ledger or ANON_DAGSTER_LEDGER)")
    why = why or f"retention of {spec.label}"
    deleted = []
    for table in found:
        # the custody entry first: a deletion is never done without its trace
        access.record("retention-delete", keystore=keystore, why=why, release=spec.release, step=table.step,
                      partition=table.partition, stored_at=table.stored_at, expired_at=table.expired_at)
        shredded = store.shred((spec.release, table.step), table.partition or None)
        deleted.append(Expired(table.step, table.partition, table.stored_at, table.expired_at,
                               shredded.key_destroyed))
    event = {"event": "retention", "release": spec.release, "at": stamp(datetime.now(UTC)), "now": stamp(now),
             "by": runner(), "why": why, "tables": [asdict(t) for t in deleted],
             "retention": spec.retention.model_dump(mode="json") if spec.retention else {}}
    seq = ledger.append_content_event(event)
    return RetentionOutcome(spec.release, stamp(now), deleted, False, seq)


__all__ = ["RETAINED_STEPS", "Expired", "RetentionOutcome", "apply_retention", "expired_tables",
           "intermediates_base", "parse_now", "release_lock", "stamp"]
