"""Sensors of a release: its source files, the freshness of its publications, and its refusals.

- :func:`source_sensor` starts a partition's run when the partition's source file appears or
  changes (local files; a cursor of each file's modification time and size): one run per new
  partition key or new version of its file;
- :func:`freshness_evaluation` and :func:`freshness_sensor`: the ``freshness`` check of the
  published asset (judged by the publication step and by the sensor), failed when the latest
  publication in the ledger is older than ``policy.review_after_days``. The ledger decides, not Dagster's last materialization: a
  refused publication is materialized too (outcome ``refused``) and is no publication;
- :func:`refusal_sensor` hands every refused publication (:class:`~.alerts.Refusal`) to a
  function of yours: a ticket, a message, a run of a job of your own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
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
from ..partitions import UNPARTITIONED
from ..release.pipeline import describe_error
from ..spec import ReleaseSpec
from .alerts import Refusal
from .partitions import partitions_def_for
from .translator import ReleaseTranslator

OUTCOME_KEY = "outcome"
REFUSAL_KEY = "refusal"


# ----- source files ----------------------------------------------------------------------------


def _signature(path: Any) -> str | None:
    """``<mtime_ns>:<size>`` of a local file, None when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_mtime_ns}:{st.st_size}"


def source_requests(spec: ReleaseSpec, cursor: str | None,
                    now: datetime | None = None) -> tuple[list[RunRequest], str]:
    """The runs a look at the source files asks for, and the new cursor.

    A source path with ``{partition}``: one run for each partition whose file appeared or changed.
    One file for every partition: when it appears or changes, a run for each partition not yet
    run and for the latest one (its period is the one most likely to have been filled in); a
    partition that begins to exist (its period ended) gets its run too. Partitions are asked for
    in order, as an ordered release publishes them. Unpartitioned: one run per version of the file.
    """
    state: dict[str, Any] = json.loads(cursor) if cursor else {}
    pdef = partitions_def_for(spec)
    requests: list[RunRequest] = []
    if pdef is None:
        sig = _signature(spec.resolve(spec.source.path, partition=UNPARTITIONED))
        if sig is not None and state.get("file") != sig:
            requests.append(RunRequest(run_key=f"{UNPARTITIONED}@{sig}"))
            state["file"] = sig
        return requests, json.dumps(state, sort_keys=True)
    keys = list(pdef.get_partition_keys(current_time=now))
    if "{partition}" in spec.source.path:
        seen = state.setdefault("partitions", {})
        for key in keys:
            sig = _signature(spec.resolve(spec.source.path, partition=key))
            if sig is not None and seen.get(key) != sig:
                requests.append(RunRequest(partition_key=key, run_key=f"{key}@{sig}"))
                seen[key] = sig
        return requests, json.dumps(state, sort_keys=True)
    sig = _signature(spec.resolve(spec.source.path))
    if sig is None:
        return [], json.dumps(state, sort_keys=True)
    done = set(state.get("requested", []))
    wanted = [k for k in keys if k not in done]
    if state.get("file") != sig and keys and keys[-1] not in wanted:
        wanted.append(keys[-1])
    for key in sorted(wanted, key=keys.index):
        requests.append(RunRequest(partition_key=key, run_key=f"{key}@{sig}"))
    state.update(file=sig, requested=sorted(done | set(wanted), key=keys.index))
    return requests, json.dumps(state, sort_keys=True)


def source_sensor(spec: ReleaseSpec, job: Any, translator: ReleaseTranslator, *,
                  minimum_interval_seconds: int = 60,
                  default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED) -> SensorDefinition | None:
    """The sensor that runs ``job`` for each partition whose source file appeared or changed
    (:func:`source_requests`); None for a source on object storage (not watched yet)."""
    if is_remote(spec.source.path):
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


# ----- freshness -------------------------------------------------------------------------------


def _published_at(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def freshness_evaluation(spec: ReleaseSpec, ledger: Any, translator: ReleaseTranslator,
                         now: datetime | None = None) -> AssetCheckEvaluation:
    """The ``freshness`` check's result: failed when the latest publication of the release in
    the ledger (the newest current one of any partition) is older than ``policy.review_after_days``."""
    now = now or datetime.now(UTC)
    days = spec.policy.review_after_days
    current = [e for e in ledger.entries(release=spec.release) if e.status == "published"]
    common = {"asset_key": translator.asset_key(spec, "published"),
              "check_name": translator.freshness_check_name(spec), "severity": AssetCheckSeverity.ERROR}
    if not current:
        return AssetCheckEvaluation(passed=True, description="nothing published yet: nothing to review",
                                    metadata={"review_after_days": days}, **common)
    latest = max(current, key=lambda e: _published_at(e.published_at))
    age = (now - _published_at(latest.published_at)).total_seconds() / 86400
    passed = age <= days
    text = (f"latest publication {spec.release} {latest.partition or ''}".rstrip() +
            f" is {age:.0f} days old ({latest.published_at}); review after {days} days" +
            ("" if passed else ": review the release and publish it again"))
    return AssetCheckEvaluation(
        passed=passed, description=text, **common,
        metadata={"latest_partition": latest.partition or UNPARTITIONED, "published_at": latest.published_at,
                  "age_days": MetadataValue.float(round(age, 2)), "review_after_days": days})


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
