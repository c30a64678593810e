"""The publication ledger: an embedded SQLite database of everything that was published.

Definitions.
- A *publication entry* records one evaluation of one release partition: release, partition,
  population (spec ``composition.population``), spec hash, data hash, the quasi-identifiers
  with their levels or regions, k reached, date, report path, the report itself (JSON) and the
  inputs it was built from, and the per-person class assignment. Its ``status`` is
  ``published`` (it counts for composition) or ``failed`` (an evaluation that did not pass its
  checks: kept for its report, never counted for composition).
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

Every write happens inside one ``BEGIN IMMEDIATE`` transaction: a process killed midway
leaves no partial entry (SQLite rolls the journal back) and the previous entry intact.

Modules: :mod:`.schema` (the database: connections, write transactions, the schema and its
version), :mod:`.publications` (:class:`Ledger`: recording and reading entries),
:mod:`.budget` (the epsilon ledger's composition and refusals), :mod:`.linkage` (linkage
pseudonyms, data hashes and the stored class assignment).
"""

from .budget import BudgetExceeded, BudgetState, compose_epsilons
from .linkage import ClassAssignmentRows, dataset_hash, linkage_pseudonyms
from .publications import Ledger, Publication, RecordOutcome
from .schema import LEDGER_ENV, SCHEMA_VERSION, STATUSES, LedgerError, default_ledger_path

__all__ = [
    "LEDGER_ENV", "SCHEMA_VERSION", "STATUSES", "BudgetExceeded", "BudgetState",
    "ClassAssignmentRows", "Ledger", "LedgerError", "Publication", "RecordOutcome",
    "compose_epsilons", "dataset_hash", "default_ledger_path", "linkage_pseudonyms",
]
