"""Sensors of a release's source files, of its publications' freshness and of its refusals; the core
decides (``anon_dagster.release``: ``source_watch``, ``freshness``, ``refusal_feed``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import dagster as dg

from ..objectstore import is_remote
from ..release.freshness import judge_freshness, unreadable_ledger
from ..release.refusal_feed import OUTCOME_KEY, REFUSAL_KEY, RefusalFeed, handed_on
from ..release.shown_outcomes import freshness_shown
from ..release.source_watch import NOTHING_NEW, source_runs
from ..release.step_conventions import object_description
from ..spec import ReleaseSpec
from .alerts import Refusal
from .metadata import check_result, event_values
from .partitions import partitions_def_for
from .translator import ReleaseTranslator


def source_requests(spec: ReleaseSpec, cursor: str | None,
                    now: datetime | None = None) -> tuple[list[dg.RunRequest], str]:
    """The runs a look at the source files asks for (over the partitions existing at ``now``), and the new cursor."""
    pdef = partitions_def_for(spec)
    keys = list(pdef.get_partition_keys(current_time=now)) if pdef is not None else None
    runs, cursor = source_runs(spec, cursor, keys)
    return [dg.RunRequest(partition_key=key, run_key=run_key) for key, run_key in runs], cursor


def source_sensor(spec: ReleaseSpec, job: Any, translator: ReleaseTranslator, *, minimum_interval_seconds: int = 60,
                  default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED
                  ) -> dg.SensorDefinition | None:
    """The sensor running ``job`` for each partition whose source file appeared or changed; None
    for a source on object storage or an asset source."""
    if spec.source.path is None or is_remote(spec.source.path):
        return None

    @dg.sensor(name=translator.source_sensor_name(spec), job=job, minimum_interval_seconds=minimum_interval_seconds,
            default_status=default_status, description=object_description("source_sensor", spec))
    def _source(context: dg.SensorEvaluationContext):
        requests, cursor = source_requests(spec, context.cursor)
        return dg.SensorResult(run_requests=requests, cursor=cursor,
                            skip_reason=None if requests else dg.SkipReason(NOTHING_NEW))

    return _source


def freshness_evaluation(spec: ReleaseSpec, ledger: Any, translator: ReleaseTranslator, now: datetime | None = None,
                         of: type = dg.AssetCheckEvaluation) -> Any:
    """The ``freshness`` check's result (:func:`~anon_dagster.release.freshness.judge_freshness`) as an
    :class:`~dagster.AssetCheckEvaluation` (or ``of``, e.g. an :class:`~dagster.AssetCheckResult`)."""
    return check_result(freshness_shown(judge_freshness(spec, ledger, now)), of=of,
                        asset_key=translator.asset_key(spec, "published"),
                        check_name=translator.freshness_check_name(spec))


def freshness_sensor(spec: ReleaseSpec, translator: ReleaseTranslator, *, minimum_interval_seconds: int = 6 * 3600,
                     default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.RUNNING) -> dg.SensorDefinition:
    """The sensor judging the ``freshness`` check from the ledger every few hours, without a run."""

    @dg.sensor(name=translator.freshness_sensor_name(spec), minimum_interval_seconds=minimum_interval_seconds,
            default_status=default_status, required_resource_keys={"ledger", "keystore"},
            description=object_description("freshness_sensor", spec))
    def _fresh(context: dg.SensorEvaluationContext, **_resources: Any):  # (called with them when invoked directly)
        try:
            ledger = context.resources.ledger.open(context.resources.keystore)
        except Exception as exc:  # noqa: BLE001 - no ledger yet (or a broken one): said in one line
            return dg.SkipReason(unreadable_ledger(exc))
        return dg.SensorResult(asset_events=[freshness_evaluation(spec, ledger, translator)])

    return _fresh


def refusals_since(instance: Any, asset_keys: Iterable[dg.AssetKey], cursor: str | None,
                   limit: int = 100) -> tuple[list[Refusal], str]:
    """The refusals materialized on ``asset_keys`` after ``cursor``, oldest first, and the cursor
    after them (:class:`~anon_dagster.release.refusal_feed.RefusalFeed`)."""
    feed = RefusalFeed(cursor)
    for key in asset_keys:
        name = key.to_user_string()
        result = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, after_storage_id=feed.after.get(name)), limit=limit, ascending=True)
        for record in result.records:
            mat = record.asset_materialization
            feed.add(name, record.storage_id, key.path[0], mat.partition if mat else None,
                     event_values(mat.metadata) if mat else None, record.run_id)
    return feed.refusals(), feed.cursor()


def refusal_sensor(fn: Callable[[Refusal], dg.RunRequest | Sequence[dg.RunRequest] | None],
                   asset_keys: Iterable[dg.AssetKey], *, name: str = "publication_refusals",
                   minimum_interval_seconds: int = 30, job: Any = None,
                   default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED) -> dg.SensorDefinition:
    """A sensor calling ``fn`` once for every refused publication of ``asset_keys`` (published
    assets); ``fn`` may return run requests for ``job``. An exception of ``fn`` fails the tick,
    whose refusals are handed again at the next one."""
    keys = list(asset_keys)

    @dg.sensor(name=name, minimum_interval_seconds=minimum_interval_seconds, job=job, default_status=default_status,
            description=object_description("refusal_sensor"))
    def _refusals(context: dg.SensorEvaluationContext):
        refusals, cursor = refusals_since(context.instance, keys, context.cursor)
        requests: list[dg.RunRequest] = []
        for refusal in refusals:
            out = fn(refusal)
            requests += [out] if isinstance(out, dg.RunRequest) else list(out or [])
        return dg.SensorResult(run_requests=requests, cursor=cursor,
                            skip_reason=None if requests else dg.SkipReason(handed_on(len(refusals))))

    return _refusals


__all__ = ["OUTCOME_KEY", "REFUSAL_KEY", "freshness_evaluation", "freshness_sensor", "refusal_sensor",
           "refusals_since", "source_requests", "source_sensor"]
