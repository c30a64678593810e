"""The publication ledger: an embedded SQLite database of everything that was published.

Definitions.
- A *publication entry* records one evaluation of one release partition: release, partition,
  population (spec ``composition.population``), spec hash, data hash, the quasi-identifiers
  with their levels or regions, k reached, date, report path, the report itself (JSON) and the
  inputs it was built from, where its file was placed with the SHA-256 of its bytes, and the
  per-person class assignment. Its ``status`` is ``pending`` (recorded, its files on their way
  into place: it counts for composition and the ε budget until reconciled), ``published`` (it
  counts for composition), ``failed`` (an evaluation that did not pass its checks: kept for its
  report, never counted) or ``abandoned`` (a pending entry whose files never took their place).
- The *class assignment* maps each person, keyed by an internal *linkage pseudonym*
  (HMAC-SHA256 of the ``composition.person`` value under a ledger-only key), to the
  equivalence class(es) holding that person's rows. Linkage pseudonyms are never published
  nor logged; they exist so that later releases of the same population can be composed.
- Re-publishing the same release and partition with the same data hash is idempotent (the
  existing entry is returned); with a different data hash the new entry *supersedes* the old
  one, which stays in the history.
- The *epsilon ledger* records the privacy budget spent by differentially private releases,
  per population; a spend that would exceed the population's total is refused inside the
  same transaction that records it, so two concurrent releases cannot both squeeze in.
- *Integrity*: every change appends a MACed event to a chain whose head is anchored outside the
  ledger file, in the key store's state (:mod:`.chain`); a ledger is created only on request
  and opened only when it is sound (:mod:`.lifecycle`, :mod:`.schema`).

Every write happens inside one ``BEGIN IMMEDIATE`` transaction: a process killed midway
leaves no partial entry (SQLite rolls the journal back) and the previous entry intact.

Modules: :mod:`.schema` (the database: connections, write transactions, the schema, opening
and verifying), :mod:`.chain` (the MACed events, entry digests, the seal and the anchor),
:mod:`.lifecycle` (creating, migrating, adopting, opening with a key store),
:mod:`.publications` (:class:`Ledger`: recording and reading entries), :mod:`.budget` (the
epsilon ledger's composition and refusals), :mod:`.linkage` (linkage pseudonyms, data hashes
and the stored class assignment).
"""

from .budget import BudgetExceeded, BudgetState, compose_epsilons
from .chain import INTEGRITY_PURPOSE, LedgerIntegrityError, LedgerSeal
from .lifecycle import InitOutcome, init_ledger, open_ledger
from .linkage import ClassAssignmentRows, dataset_hash, linkage_pseudonyms
from .publications import Ledger, Publication, RecordOutcome
from .schema import (
    COUNTED_STATUSES,
    LEDGER_ENV,
    SCHEMA_VERSION,
    STATUSES,
    LedgerError,
    default_ledger_path,
)

__all__ = [
    "COUNTED_STATUSES", "INTEGRITY_PURPOSE", "LEDGER_ENV", "SCHEMA_VERSION", "STATUSES", "BudgetExceeded",
    "BudgetState", "ClassAssignmentRows", "InitOutcome", "Ledger", "LedgerError", "LedgerIntegrityError",
    "LedgerSeal", "Publication", "RecordOutcome", "compose_epsilons", "dataset_hash", "default_ledger_path",
    "init_ledger", "linkage_pseudonyms", "open_ledger",
]
