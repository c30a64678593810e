"""Sensors of a release: its source files, the freshness of its publications, and its refusals.

The decisions are the core's: which partitions a change of the source files asks for
(:mod:`anon_dagster.release.source_watch`) and whether the latest publication is fresh
(:mod:`anon_dagster.release.freshness`); this module wraps them into run requests and asset
check evaluations. :func:`refusal_sensor` hands every refused publication to a function of yours.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetKey,
    AssetRecordsFilter,
    DefaultSensorStatus,
    MetadataValue,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from ..objectstore import is_remote
from ..release.freshness import judge_freshness
from ..release.pipeline import describe_error
from ..release.source_watch import source_runs
from ..spec import ReleaseSpec
from .alerts import Refusal
from .partitions import partitions_def_for
from .translator import ReleaseTranslator

OUTCOME_KEY = "outcome"
REFUSAL_KEY = "refusal"


def source_requests(spec: ReleaseSpec, cursor: str | None,
                    now: datetime | None = None) -> tuple[list[RunRequest], str]:
    """The runs a look at the source files asks for (:func:`~anon_dagster.release.source_watch.source_runs`
    over the partitions that exist at ``now``), and the new cursor."""
    pdef = partitions_def_for(spec)
    keys = list(pdef.get_partition_keys(current_time=now)) if pdef is not None else None
    runs, cursor = source_runs(spec, cursor, keys)
    return [RunRequest(partition_key=key, run_key=run_key) for key, run_key in runs], cursor


def source_sensor(spec: ReleaseSpec, job: Any, translator: ReleaseTranslator, *,
                  minimum_interval_seconds: int = 60,
                  default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED) -> SensorDefinition | None:
    """The sensor that runs ``job`` for each partition whose source file appeared or changed
    (:func:`source_requests`); None for a source on object storage (not watched yet)."""
    if spec.source.path is None or is_remote(spec.source.path):  # an asset source is run by its own graph
        return None

    @sensor(name=translator.source_sensor_name(spec), job=job, minimum_interval_seconds=minimum_interval_seconds,
            default_status=default_status,
            description=f"Runs {spec.release}'s release for a partition when its source file appears or changes.")
    def _source(context: SensorEvaluationContext):
        requests, cursor = source_requests(spec, context.cursor)
        if not requests:
            return SensorResult(skip_reason=SkipReason("no new or changed source file"), cursor=cursor)
        return SensorResult(run_requests=requests, cursor=cursor)

    return _source


def freshness_evaluation(spec: ReleaseSpec, ledger: Any, translator: ReleaseTranslator,
                         now: datetime | None = None) -> AssetCheckEvaluation:
    """The ``freshness`` check's result (:func:`~anon_dagster.release.freshness.judge_freshness`)."""
    fresh = judge_freshness(spec, ledger, now)
    metadata = {k: MetadataValue.float(v) if k == "age_days" else v for k, v in fresh.metadata.items()}
    return AssetCheckEvaluation(asset_key=translator.asset_key(spec, "published"),
                                check_name=translator.freshness_check_name(spec), severity=AssetCheckSeverity.ERROR,
                                passed=fresh.passed, description=fresh.description, metadata=metadata)


def freshness_sensor(spec: ReleaseSpec, translator: ReleaseTranslator, *, minimum_interval_seconds: int = 6 * 3600,
                     default_status: DefaultSensorStatus = DefaultSensorStatus.RUNNING) -> SensorDefinition:
    """The sensor that judges the ``freshness`` check from the ledger every few hours, without a run."""

    @sensor(name=translator.freshness_sensor_name(spec), minimum_interval_seconds=minimum_interval_seconds,
            default_status=default_status, required_resource_keys={"ledger", "keystore"},
            description=f"Judges the freshness check of {spec.release}'s publications from the ledger.")
    def _fresh(context: SensorEvaluationContext, **_resources: Any):  # (called with them when invoked directly)
        try:
            ledger = context.resources.ledger.open(context.resources.keystore)
        except Exception as exc:  # noqa: BLE001 - no ledger yet (or a broken one): said in one line
            return SkipReason(f"the ledger cannot be read: {describe_error(exc)}")
        return SensorResult(asset_events=[freshness_evaluation(spec, ledger, translator)])

    return _fresh


# ----- refusals --------------------------------------------------------------------------------


def refusals_since(instance: Any, asset_keys: Iterable[AssetKey], cursor: str | None,
                   limit: int = 100) -> tuple[list[Refusal], str]:
    """The refusals materialized on ``asset_keys`` (published assets) after ``cursor``, oldest
    first, and the cursor after them (a JSON object of the last storage id per asset)."""
    after: dict[str, int] = json.loads(cursor) if cursor else {}
    found: list[tuple[int, Refusal]] = []
    for key in asset_keys:
        name = key.to_user_string()
        result = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=key, after_storage_id=after.get(name)), limit=limit, ascending=True)
        for record in result.records:
            after[name] = max(after.get(name, 0), record.storage_id)
            mat = record.asset_materialization
            if mat is None or OUTCOME_KEY not in mat.metadata or mat.metadata[OUTCOME_KEY].value != "refused":
                continue
            payload = mat.metadata[REFUSAL_KEY].value if REFUSAL_KEY in mat.metadata else {}
            refusal = Refusal.from_payload({"release": key.path[0], "partition": mat.partition, **payload},
                                           run_id=record.run_id)
            found.append((record.storage_id, refusal))
    found.sort(key=lambda item: item[0])
    return [r for _, r in found], json.dumps(after, sort_keys=True)


def refusal_sensor(fn: Callable[[Refusal], RunRequest | Sequence[RunRequest] | None],
                   asset_keys: Iterable[AssetKey], *, name: str = "publication_refusals",
                   minimum_interval_seconds: int = 30, job: Any = None,
                   default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED) -> SensorDefinition:
    """A sensor calling ``fn`` once for every refused publication of ``asset_keys`` (the releases'
    published assets: ``[r.translator.asset_key(r.spec, "published") for r in releases]``).

    ``fn`` gets the :class:`~.alerts.Refusal` (release, partition, failed checks, one reason per
    failed check, evaluation id, run id: no data, no paths) and may return run requests for
    ``job``. An exception of ``fn`` fails the sensor's tick, and the refusals of that tick are
    handed again at the next one.
    """
    keys = list(asset_keys)

    @sensor(name=name, minimum_interval_seconds=minimum_interval_seconds, job=job, default_status=default_status,
            description="Hands every refused publication to a function.")
    def _refusals(context: SensorEvaluationContext):
        refusals, cursor = refusals_since(context.instance, keys, context.cursor)
        requests: list[RunRequest] = []
        for refusal in refusals:
            out = fn(refusal)
            if isinstance(out, RunRequest):
                requests.append(out)
            elif out:
                requests.extend(out)
        if not requests:
            return SensorResult(skip_reason=SkipReason(f"{len(refusals)} refusal(s) handed on"), cursor=cursor)
        return SensorResult(run_requests=requests, cursor=cursor)

    return _refusals


__all__ = ["freshness_evaluation", "freshness_sensor", "refusal_sensor", "refusals_since",
           "source_requests", "source_sensor"]
