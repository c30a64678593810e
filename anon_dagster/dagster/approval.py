"""A sensor that asks for a release's publication once an approval lands in the ledger; which runs
is the core's (:func:`anon_dagster.release.governance.requests.approval_runs`); docs/dagster.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dagster as dg

from ..release.governance.requests import approval_runs, governed
from ..release.ledger import Ledger
from ..release.step_conventions import object_description
from ..spec import ReleaseSpec
from .translator import ReleaseTranslator


def approval_sensor(specs: Sequence[ReleaseSpec], *, translator: ReleaseTranslator | None = None,
                    ledger: Callable[[], Ledger] | None = None, job: Any = None, name: str = "release_approvals",
                    minimum_interval_seconds: int = 60,
                    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED) -> dg.SensorDefinition:
    """A sensor requesting the ``published`` asset's partition of every evaluation an approval
    made due, for the releases of ``specs`` that require approval. ``ledger`` opens the ledger
    (default: the definitions' ``ledger`` resource, opened with their ``keystore``); ``job``,
    when given, is the job run instead of an asset selection."""
    t = translator or ReleaseTranslator()
    governing = governed(specs)

    def selection(*releases: str) -> list[Any] | None:
        return None if job is not None else [t.asset_key(governing[r], "published") for r in releases]

    @dg.sensor(name=name, minimum_interval_seconds=minimum_interval_seconds, default_status=default_status,
               job=job, asset_selection=selection(*governing),
               required_resource_keys={"ledger", "keystore"} if ledger is None else set(),
               description=object_description("approval_sensor"))
    def _approvals(context: dg.SensorEvaluationContext, **_resources: Any) -> dg.SensorResult:
        opened = ledger() if ledger is not None else context.resources.ledger.open(context.resources.keystore)
        runs, cursor = approval_runs(opened, governing.values(), context.cursor)
        requests = [dg.RunRequest(run_key=r.run_key, partition_key=r.partition, tags=r.tags,
                                  asset_selection=selection(r.release)) for r in runs]
        return dg.SensorResult(run_requests=requests, cursor=cursor)

    return _approvals


__all__ = ["approval_sensor"]
