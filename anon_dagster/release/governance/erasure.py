"""Erasure: a person removed from every stored intermediate of a release, and from every later one.

For each person named (the value of the release's person column,
:func:`~.suppression.person_column`), in this order:

1. the custody log records the erasure (``erase``: who, run, why, the person's digest and how
   many rows of each table), before anything changes;
2. the person's linkage pseudonym joins the release's suppression list
   (:mod:`.suppression`), so :func:`~anon_dagster.release.pipeline.pseudonymize` drops their
   rows from every later run;
3. every stored partition of the ``raw`` and ``pseudonymized`` tables holding the person is
   rewritten without their rows (raw: by the person column; pseudonymized: by the linkage
   column), under a fresh data key: the key of the version that held them is destroyed, so no
   copy of it can be decrypted; an ``anonymized`` table holding them is deleted the same way
   (its transformation record no longer describes it once rows are gone): the next run
   recomputes it from the pseudonymized table;
4. the ledger records an ``erasure`` event: the person's digest (:func:`~.suppression.digest`,
   never the value nor the pseudonym), the tables changed, and the earlier publications of the
   release whose class assignment held the person (for the record of processing). Those
   publications are anonymized and stay published (docs/governance.md says why).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from ... import storage
from ...errors import UserError
from ...spec import ReleaseSpec
from ..gate import LINKAGE_COLUMN
from ..ledger import Ledger
from . import access
from .binding import runner
from .custody import opened
from .retention import release_lock, stamp
from .suppression import add_suppressed, digest, person_column, person_pseudonyms


@dataclass(frozen=True)
class TableErased:
    """One stored table a person was removed from: rows removed, and whether it was deleted whole."""

    step: str
    partition: str
    rows_removed: int
    deleted: bool = False


@dataclass
class ErasureOutcome:
    """What an erasure did for one person (named by digest only)."""

    person: str
    tables: list[TableErased] = field(default_factory=list)
    publications: list[int] = field(default_factory=list)
    newly_suppressed: bool = True
    ledger_seq: int | None = None

    def describe(self, release: str) -> str:
        rows = sum(t.rows_removed for t in self.tables)
        where = ", ".join(f"{t.step}/{t.partition or '__all__'}" + (" (deleted)" if t.deleted else "")
                          for t in self.tables) or "no stored table"
        pubs = ", ".join(str(p) for p in self.publications) or "none"
        return (f"{release}: person {self.person} erased: {rows} row(s) removed from {where}; suppressed in every "
                f"later run; earlier publications that held them (ledger entries, they stay published): {pubs} "
                f"(ledger event {self.ledger_seq})")


def _quiet(name: Sequence[str], partition: str | None) -> None:
    """Erasure's own reads are in custody as its ``erase`` entry, not as reads."""


def _matches(spec: ReleaseSpec, step: str, table: pd.DataFrame, wanted: str, keystore: Any) -> pd.Series:
    if step == "raw":
        return pd.Series(person_pseudonyms(spec, table[person_column(spec)], keystore) == wanted)
    if LINKAGE_COLUMN not in table.columns:
        raise UserError(f"{spec.label}: the stored {step} table holds no linkage pseudonym to find a person by: "
                        "erasure needs composition.person declared")
    return pd.Series(table[LINKAGE_COLUMN].astype(str).to_numpy() == wanted)


def publications_holding(ledger: Ledger, release: str, pseudonym: str) -> list[int]:
    """The ledger entries of ``release`` (every status) whose class assignment holds ``pseudonym``."""
    out = []
    for pub in ledger.entries(release=release, include_failed=True, include_superseded=True):
        members = ledger.assignment(pub.id).members
        if len(members) and (members["person"].astype(str) == pseudonym).any():
            out.append(pub.id)
    return out


def erase(spec: ReleaseSpec, base: Any, *, persons: Sequence[str], keystore: Any, ledger: Ledger,
          why: str) -> list[ErasureOutcome]:
    """Erase each of ``persons`` from the intermediates stored under ``base`` (see the module
    docstring); one outcome per person."""
    why = (why or "").strip()
    if not why:
        raise UserError("an erasure needs a reason (--reason): the request it answers")
    persons = [str(p) for p in persons if str(p).strip()]
    if not persons:
        raise UserError("no person to erase (give --person ID or --file with one identifier per line)")
    keystore = opened(keystore)
    store = storage.TableStore(base.base if isinstance(base, storage.TableStore) else base, on_read=_quiet)
    kek = keystore.derive_key(storage.DATA_AT_REST_PURPOSE)
    pseudonyms = person_pseudonyms(spec, pd.Series(persons, dtype=object), keystore)
    with release_lock(store, spec.release):  # retention deletes nothing this rewrites meanwhile
        return [_erase_one(spec, store, kek, pseudonym, keystore=keystore, ledger=ledger, why=why)
                for pseudonym in dict.fromkeys(str(p) for p in pseudonyms)]


def _erase_one(spec: ReleaseSpec, store: storage.TableStore, kek: bytes, pseudonym: str, *, keystore: Any,
               ledger: Ledger, why: str) -> ErasureOutcome:
    """Erase the person of linkage pseudonym ``pseudonym`` (the four steps of the module docstring)."""
    outcome = ErasureOutcome(digest(pseudonym))
    plan: list[tuple[str, str | None, pd.DataFrame, pd.Series]] = []
    for step in ("raw", "pseudonymized", "anonymized"):
        name = (spec.release, step)
        for partition in store.partitions(name):
            table = store.read(name, partition, lambda: kek)
            hit = _matches(spec, step, table, pseudonym, keystore)
            if hit.any():
                plan.append((step, partition, table, hit))
                outcome.tables.append(TableErased(step, partition or "", int(hit.sum()), step == "anonymized"))
    outcome.publications = publications_holding(ledger, spec.release, pseudonym)
    access.record("erase", keystore=keystore, why=why, release=spec.release, person=outcome.person,
                  tables=[asdict(t) for t in outcome.tables], publications=outcome.publications)
    outcome.newly_suppressed = add_suppressed(keystore, spec.release, {pseudonym}) > 0
    for step, partition, table, hit in plan:
        name = (spec.release, step)
        if step == "anonymized":
            store.shred(name, partition)
            continue
        encrypted = store.path(name, partition, True).exists()
        stored_at = store.stored_at(name, partition)
        store.write(name, partition, table.loc[~hit.to_numpy()].reset_index(drop=True),
                    kek if encrypted else None, stored_at=stored_at)
    event = {"event": "erasure", "release": spec.release, "person": outcome.person, "by": runner(),
             "at": stamp(datetime.now(UTC)), "why": why, "tables": [asdict(t) for t in outcome.tables],
             "publications": outcome.publications, "suppressed": True}
    outcome.ledger_seq = ledger.append_content_event(event)
    return outcome


def erasures(ledger: Ledger, release: str | None = None) -> list[dict[str, Any]]:
    """The ``erasure`` events of the ledger (of ``release``), oldest first."""
    return [e for e in ledger.content_events() if e["event"] == "erasure"
            and (release is None or e.get("release") == release)]


__all__ = ["ErasureOutcome", "TableErased", "erase", "erasures", "publications_holding"]
