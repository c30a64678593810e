"""A daily schedule deleting every release's stored intermediates past their retention: a one-op job
around :func:`anon_dagster.release.governance.scheduled_retention.scheduled_retention`."""

from collections.abc import Sequence

from dagster import OpExecutionContext, ScheduleDefinition, job, op

from ..release.governance.scheduled_retention import scheduled_retention
from ..spec import ReleaseSpec


def retention_schedule(specs: Sequence[ReleaseSpec], *, base_dir: str | None = None, ledger_path: str | None = None,
                       cron_schedule: str = "0 3 * * *", name: str = "anon_dagster_retention") -> ScheduleDefinition:
    """The schedule running retention of ``specs`` on ``cron_schedule`` (UTC; default 03:00 daily);
    ``ledger_path`` is the ledger's (default: the one the environment names)."""

    @op(name=f"{name}_op", description="delete the intermediates past their retention (crypto-shredded)")
    def apply(context: OpExecutionContext) -> None:
        for line in scheduled_retention(specs, base_dir=base_dir, ledger_path=ledger_path, run_id=context.run_id):
            context.log.info(line)

    @job(name=name, description="retention of the releases' stored intermediate tables")
    def retention_job() -> None:
        apply()

    return ScheduleDefinition(name=f"{name}_schedule", job=retention_job, cron_schedule=cron_schedule,
                              execution_timezone="UTC")


__all__ = ["retention_schedule"]
