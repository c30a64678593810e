"""Retention of several releases in one scheduled run (docs/governance.md, retention).

Every spec with a ``retention`` block has its stored intermediates past retention deleted
(:func:`~.retention.apply_retention`); a spec without one is skipped. The key store and the
ledger are the ones the environment names (the ledger at ``ledger_path`` when given), the
storage folder is ``base_dir`` (else :func:`~.retention.intermediates_base`'s default), and each
deletion is in the custody log with the run's id.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from ...spec import ReleaseSpec


def retained(specs: Sequence[ReleaseSpec]) -> list[ReleaseSpec]:
    """The specs with a ``retention`` block: the ones a scheduled retention applies (none: no schedule)."""
    return [s for s in specs if s.retention is not None]


def scheduled_retention(specs: Sequence[ReleaseSpec], *, base_dir: str | None, ledger_path: str | None,
                        run_id: str | None, now: datetime | None = None) -> Iterator[str]:
    """Apply the retention of ``specs`` at ``now`` (default: now, UTC), one line per release as it is done."""
    from ... import storage
    from ...pseudonymize import open_keystore
    from ..ledger import open_ledger
    from .access import custody_context
    from .retention import apply_retention, intermediates_base

    governed = retained(specs)
    keystore = open_keystore()
    ledger = open_ledger(ledger_path, keystore)
    store = storage.TableStore(intermediates_base(base_dir))
    with custody_context(keystore=keystore, run=run_id, why="scheduled retention"):
        for spec in governed:
            outcome = apply_retention(spec, store, now=now or datetime.now(UTC), ledger=ledger, keystore=keystore,
                                      why=f"scheduled retention of release {spec.release}")
            yield outcome.describe()


__all__ = ["retained", "scheduled_retention"]
