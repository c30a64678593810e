"""A sensor that asks for a release's publication once an approval lands in the ledger.

The decision is the core's (:func:`anon_dagster.release.governance.requests.approved_since`:
which partitions an approval made due); this module turns it into run requests of the
releases' ``published`` assets. The cursor is the ledger ``seq`` of the last decision seen, so
each approval is acted on once; a run re-evaluates the partition and publishes it only if the
approval still binds what it evaluates (same data, spec and code).

:func:`~.assets.build_release` adds one per release whose ``approval.required`` is true
(``<release>_approval_sensor``, running by default), reading the ledger through the definitions'
``ledger`` and ``keystore`` resources, the ones the publication runs use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from ..release.governance.requests import approved_since
from ..release.ledger import Ledger
from ..spec import ReleaseSpec
from .translator import ReleaseTranslator

# The published asset's ``outcome`` while its passing evaluation awaits approval (nothing written)
AWAITING_OUTCOME = "awaiting_approval"


def approval_sensor(specs: Sequence[ReleaseSpec], *, translator: ReleaseTranslator | None = None,
                    ledger: Callable[[], Ledger] | None = None, job: Any = None, name: str = "release_approvals",
                    minimum_interval_seconds: int = 60,
                    default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED) -> SensorDefinition:
    """A sensor requesting the ``published`` asset's partition of every evaluation an approval
    made due, for the releases of ``specs`` that require approval. ``ledger`` opens the ledger
    (default: the definitions' ``ledger`` resource, opened with their ``keystore``); ``job``,
    when given, is the job run instead of an asset selection."""
    t = translator or ReleaseTranslator()
    governed = [s for s in specs if s.approval is not None and s.approval.required]
    resources = {"ledger", "keystore"} if ledger is None else set()

    def opened(context: SensorEvaluationContext) -> Ledger:
        if ledger is not None:
            return ledger()
        return context.resources.ledger.open(context.resources.keystore)

    @sensor(name=name, minimum_interval_seconds=minimum_interval_seconds, default_status=default_status,
            job=job, asset_selection=None if job is not None else [t.asset_key(s, "published") for s in governed],
            required_resource_keys=resources,
            description="Requests the publication of every evaluation an approval recorded in the ledger made due.")
    def _approvals(context: SensorEvaluationContext, **_resources: Any) -> SensorResult:
        cursor = int(context.cursor or 0)
        due, cursor = approved_since(opened(context), governed, cursor)
        by_release = {s.release: s for s in governed}
        requests = [RunRequest(
            run_key=f"approval:{d.subject.release}:{d.subject.partition}:{d.subject.evaluation}:{d.seq}",
            partition_key=d.subject.partition if by_release[d.subject.release].partitions else None,
            asset_selection=None if job is not None else [t.asset_key(by_release[d.subject.release], "published")],
            tags={"anon_dagster/approved_evaluation": d.subject.evaluation}) for d in due]
        return SensorResult(run_requests=requests, cursor=str(cursor))

    return _approvals


__all__ = ["AWAITING_OUTCOME", "approval_sensor"]
