"""A daily schedule deleting every release's stored intermediates past their retention.

:func:`retention_schedule` wraps the core's
:func:`~anon_dagster.release.governance.retention.apply_retention` (docs/governance.md,
retention) in a one-op job run on ``cron_schedule``; each spec without a ``retention`` block is
skipped. The key store and the ledger are the ones the environment names, the storage folder is
the IO manager's (``base_dir``, else ``$DAGSTER_HOME/anon_dagster/storage``). Each deletion is in
the custody log with the run's id. The component adds it to its definitions when a spec declares
``retention`` (stopped until you start it, as Dagster's schedules are); otherwise pass it to
``Definitions(schedules=[...])``.
"""

from collections.abc import Sequence
from datetime import UTC, datetime

from dagster import OpExecutionContext, ScheduleDefinition, job, op

from ..spec import ReleaseSpec


def retention_schedule(specs: Sequence[ReleaseSpec], *, base_dir: str | None = None, ledger_path: str | None = None,
                       cron_schedule: str = "0 3 * * *", name: str = "anon_dagster_retention") -> ScheduleDefinition:
    """The schedule running retention of ``specs`` on ``cron_schedule`` (UTC; default 03:00 daily);
    ``ledger_path`` is the ledger's (default: the one the environment names)."""
    governed = [s for s in specs if s.retention is not None]

    @op(name=f"{name}_op", description="delete the intermediates past their retention (crypto-shredded)")
    def apply(context: OpExecutionContext) -> None:
        from .. import storage
        from ..pseudonymize import open_keystore
        from ..release.governance.access import custody_context
        from ..release.governance.retention import apply_retention, intermediates_base
        from ..release.ledger import open_ledger

        keystore = open_keystore()
        ledger = open_ledger(ledger_path, keystore)
        store = storage.TableStore(intermediates_base(base_dir))
        with custody_context(keystore=keystore, run=context.run_id, why="scheduled retention"):
            for spec in governed:
                outcome = apply_retention(spec, store, now=datetime.now(UTC), ledger=ledger, keystore=keystore,
                                          why=f"scheduled retention of release {spec.release}")
                context.log.info(outcome.describe())

    @job(name=name, description="retention of the releases' stored intermediate tables")
    def retention_job() -> None:
        apply()

    return ScheduleDefinition(name=f"{name}_schedule", job=retention_job, cron_schedule=cron_schedule,
                              execution_timezone="UTC")


__all__ = ["retention_schedule"]
