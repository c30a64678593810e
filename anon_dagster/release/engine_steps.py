"""The release's stored steps on the engine the deployment chooses, the spec unchanged.

An orchestrator that stores each step's output between runs (the Dagster assets ``raw ->
pseudonymized -> anonymized -> checks -> published``) calls one function per step with the
engine (:mod:`anon_dagster.engine`):

- on the pandas engine (the default and the reference) each function is today's code path:
  the step hands on a pandas DataFrame (:mod:`.pipeline`, :mod:`.publish_step`);
- on the Spark engine the rows stay on Spark: each of the first three steps writes its table as
  a parquet folder under the release's storage folder (:func:`~.step_storage.spark_folder`,
  owner-only) and hands on a :class:`~.stored_table.StoredTable` (the folder and its digest),
  which the next step verifies and reads back with Spark. The checks are the Spark engine's
  evaluation (:func:`anon_dagster.engine.spark_gate.evaluate`), shown as on pandas
  (:mod:`.shown_outcomes`); the publication step evaluates the gate again from the stored
  tables (or takes up the checks' evaluation of the very same tables, :mod:`.evaluation_memo`,
  keyed by the stored digests) and publishes a passing evaluation through the publication
  protocol (:func:`~.publication.publish_release`): Spark writes the published rows and the
  driver streams them into the staged file one row group at a time
  (:func:`~anon_dagster.engine.spark_publication.spark_rows`), whatever their number; with
  ``publication.mode: aggregates`` the rows stay on Spark, which bounds the contributions and counts the groups
  (:func:`~anon_dagster.engine.spark_aggregates.dp_release`), and the driver draws the noise
  with the pandas engine's code and hands the aggregates to the same protocol.

A source given by a Dagster asset (``source.asset``) may be a pandas or a Spark DataFrame on
Spark; a synthetic table given by a Dagster asset is a pandas DataFrame, which the Spark engine
checks on the driver as the pandas engine does (:mod:`anon_dagster.engine.spark_synthetic`).
What the engine refuses, it refuses in one line (:class:`~anon_dagster.engine.UnsupportedOnEngine`,
docs/scale.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from ..spec import ReleaseSpec
from . import gate, pipeline, publication
from .evaluation import Evaluation
from .ledger import Ledger
from .publication import reports_folder
from .publish_step import (
    CheckStep,
    PublicationInputs,
    PublicationStep,
    check_step,
    publication_step,
)
from .release_names import SOURCE_INPUT, SYNTHETIC_INPUT
from .shown_outcomes import anonymized_entries, ingested_entries, pseudonymized_entries
from .step_storage import spark_folder
from .stored_table import StoredTable


@dataclass
class StepOutput:
    """What a step hands on and shows: ``value`` (a pandas DataFrame on the pandas engine, a
    :class:`~.stored_table.StoredTable` on Spark), its ``entries`` (:mod:`.shown_outcomes`) and
    ``rows``; the anonymized step's ``record_file`` and its ``warning`` (an unreachable policy)."""

    value: Any
    entries: dict[str, Any]
    rows: int
    record_file: Path | None = None
    warning: str | None = None


def on_spark(engine: Any) -> bool:
    """Whether ``engine`` is the Spark engine (anything else runs the pandas pipeline)."""
    return getattr(engine, "name", "pandas") == "spark"


class _Counted:
    """A table's size as the entries of :mod:`.shown_outcomes` read it (``len`` and ``columns``)."""

    def __init__(self, rows: int, columns: Sequence[str]):
        self.rows, self.columns = int(rows), list(columns)

    def __len__(self) -> int:
        return self.rows


@dataclass
class _Shown:
    """A Spark step's result in the shape :mod:`.shown_outcomes` reads."""

    data: _Counted
    source: str = ""
    summary: dict[str, Any] | None = None
    record: Any = None
    suppressed: int = 0
    unreachable: str | None = None


def _store(df: Any, storage: Path, spec: ReleaseSpec, step: str, partition: str | None, **extra: Any) -> StoredTable:
    from ..engine.spark_store import store_table

    return store_table(df, spark_folder(storage, spec.release, step, partition, uuid.uuid4().hex), storage, **extra)


def _load(engine: Any, stored: Any, what: str) -> Any:
    from ..engine.spark_store import load_table
    from ..errors import DataError

    if not isinstance(stored, StoredTable):
        raise DataError(f"the {what} table was stored by the pandas engine: materialize it again on the Spark engine")
    return load_table(engine, stored)


def _published(stored: StoredTable) -> list[str]:
    """The stored table's columns but the engine's internal ones (as the pandas table has them)."""
    from ..engine.spark_frames import internal

    return [c for c in stored.columns if not internal(c)]


# ----- raw, pseudonymized, anonymized ----------------------------------------------------------
def raw_step(engine: Any, spec: ReleaseSpec, partition: str | None, *, keystore: Callable[[], Any],
             storage: Callable[[], Path], table: object = None,
             table_partitioned: Callable[[], bool] = lambda: False) -> StepOutput:
    """The partition's rows of the source, checked against the spec: its file, or for
    ``source.asset`` the asset's value ``table`` (``table_partitioned()``: whether that asset is
    partitioned, its partition the table's own); on Spark a pandas or a Spark DataFrame
    (:meth:`~anon_dagster.engine.SparkEngine.asset_rows`). The key store (``keystore()``) is
    opened first when the release needs one: a key store unfit for use fails before any write.
    ``storage()`` is the release's storage folder (Spark only)."""
    if pipeline.needs_keystore(spec):
        pipeline.check_keystore(spec, keystore())
    if not on_spark(engine):
        ingested = pipeline.ingest_source(spec, partition, table, table_partitioned=table_partitioned)
        return StepOutput(ingested.data, ingested_entries(ingested), len(ingested.data))
    with ExitStack() as scope:
        if spec.source.asset_key is None:
            got = engine.ingest(spec, partition)
        else:  # what the engine staged for Spark is removed once the rows are stored
            got = scope.enter_context(engine.asset_rows(
                spec, partition, table, one_partition=partition is not None and table_partitioned()))
        stored = _store(got.df, storage(), spec, "raw", partition)
    return StepOutput(stored, ingested_entries(_Shown(_Counted(stored.rows, _published(stored)), got.source)),
                      stored.rows)


def pseudonymized_step(engine: Any, spec: ReleaseSpec, raw: Any, *, keystore: Callable[[], Any],
                       partition: str | None, storage: Callable[[], Path]) -> StepOutput:
    """Identifiers pseudonymized (or dropped) as :func:`~.pipeline.pseudonymize` says, on the engine."""
    store = keystore() if pipeline.needs_keystore(spec) else None
    if not on_spark(engine):
        result = pipeline.pseudonymize(spec, raw, store, partition=partition)
        return StepOutput(result.data, pseudonymized_entries(result), len(result.data))
    from ..engine.spark_results import SparkIngested

    pseudo = engine.pseudonymize(spec, SparkIngested(_load(engine, raw, "raw"), raw.location), store,
                                 partition=partition)
    stored = _store(pseudo.df, storage(), spec, "pseudonymized", partition)
    summary = pseudo.summary if spec.pseudonymized else {}  # as the pandas pipeline summarizes
    return StepOutput(stored, pseudonymized_entries(_Shown(_Counted(stored.rows, _published(stored)),
                                                           summary=summary)), stored.rows)


def anonymized_step(engine: Any, spec: ReleaseSpec, pseudonymized: Any, *, partition: str | None,
                    reports_dir: str | None, storage: Callable[[], Path],
                    synthetic_table: pd.DataFrame | None = None) -> StepOutput:
    """The spec's anonymization (:func:`~.pipeline.anonymize`, an unreachable policy relaxed as
    there) on the engine; its record is written to the partition's report folder, and the table
    carries it to the checks and the publication (the pandas table in its ``attrs``, the stored
    one in its value)."""
    reports = reports_folder(spec, reports_dir, partition)
    if not on_spark(engine):
        result = pipeline.anonymize(spec, pseudonymized, synthetic_table=synthetic_table)
        record_file = publication.write_record(result.record, reports)
        return StepOutput(gate.attach_record(result.data, result.record), anonymized_entries(result, record_file),
                          len(result.data), record_file, result.unreachable)
    from ..engine.spark_results import SparkPseudonymized

    result = engine.anonymize(spec, SparkPseudonymized(_load(engine, pseudonymized, "pseudonymized")),
                              synthetic_table=synthetic_table)
    record_file = publication.write_record(result.record, reports)
    stored = _store(result.df, storage(), spec, "anonymized", partition, record=result.record.to_json(),
                    categories=result.categories)
    shown = _Shown(_Counted(stored.rows, _published(stored)), record=result.record, suppressed=result.suppressed,
                   unreachable=result.unreachable)
    return StepOutput(stored, anonymized_entries(shown, record_file), stored.rows, record_file, result.unreachable)


@dataclass(frozen=True)
class RowStep:
    """A step handing on rows: its ``name``, the step whose value it reads (``upstream``; none
    for ``raw``, which reads the source) and whether it may open the key store (``keystore``:
    the orchestrator then binds the key store to it)."""

    name: str
    upstream: str | None
    keystore: bool


ROW_STEPS = (RowStep("raw", None, True), RowStep("pseudonymized", "raw", True),
             RowStep("anonymized", "pseudonymized", False))


@dataclass
class StepCall:
    """What a row step is called with, as an orchestrator supplies it: the ``engine``, the
    ``spec``, the ``partition`` (None: unpartitioned), ``keystore()`` opening the key store,
    ``storage()`` the release's storage folder (Spark only), the step's ``inputs`` by name (the
    upstream step's value under that step's name, an asset of the project under its name in
    :func:`~.release_names.project_inputs`), ``reports_dir``, and ``source_partitioned()``:
    whether the ``source.asset`` the raw step reads is partitioned (its partition the table's own)."""

    engine: Any
    spec: ReleaseSpec
    partition: str | None
    keystore: Callable[[], Any]
    storage: Callable[[], Path]
    inputs: Mapping[str, Any] = field(default_factory=dict)
    reports_dir: str | None = None
    source_partitioned: Callable[[], bool] = lambda: False


def row_step(step: RowStep, call: StepCall) -> StepOutput:
    """The row step ``step`` (one of :data:`ROW_STEPS`) as ``call`` supplies it: :func:`raw_step`,
    :func:`pseudonymized_step` or :func:`anonymized_step`; a ``warning`` is the line to log,
    naming the release and partition."""
    spec, partition, upstream = call.spec, call.partition, call.inputs.get(step.upstream or "")
    if step.name == "raw":
        return raw_step(call.engine, spec, partition, keystore=call.keystore, storage=call.storage,
                        table=call.inputs.get(SOURCE_INPUT), table_partitioned=call.source_partitioned)
    if step.name == "pseudonymized":
        return pseudonymized_step(call.engine, spec, upstream, keystore=call.keystore, partition=partition,
                                  storage=call.storage)
    out = anonymized_step(call.engine, spec, upstream, partition=partition, reports_dir=call.reports_dir,
                          storage=call.storage, synthetic_table=call.inputs.get(SYNTHETIC_INPUT))
    return replace(out, warning=f"{spec.release} {partition or ''}: {out.warning}") if out.warning else out


# ----- the checks and the publication ----------------------------------------------------------
def _spark_evaluation(engine: Any, spec: ReleaseSpec, anonymized: StoredTable, pseudonymized: Any, raw: Any,
                      ledger: Ledger | None, partition: str | None, only: set[str] | None) -> Evaluation:
    """The Spark engine's evaluation of the stored tables, with the record the anonymized one carries."""
    from ..anonymize.record import TransformationRecord
    from ..engine.spark_gate import evaluate
    from ..engine.spark_results import SparkAnonymized
    from ..errors import DataError

    try:
        record = TransformationRecord.from_json(anonymized.record) if anonymized.record is not None else None
    except (ValueError, DataError):  # no record: the checks that need it fail and say why
        record = None
    table = SparkAnonymized(_load(engine, anonymized, "anonymized"), record, 0, categories=dict(anonymized.categories))
    return evaluate(engine, spec, table, original=_load(engine, pseudonymized, "pseudonymized"),
                    raw=_load(engine, raw, "raw"), ledger=ledger, partition=partition, only=only)


def _digests(anonymized: Any, pseudonymized: Any, raw: Any) -> tuple[str, ...]:
    return tuple(t.digest for t in (anonymized, pseudonymized, raw))


def checks_step(engine: Any, spec: ReleaseSpec, *, anonymized: Any, pseudonymized: Any, raw: Any, ledger: Ledger,
                partition: str | None, only: set[str], declared: Collection[str],
                reports_dir: str | None = None) -> CheckStep:
    """:func:`~.publish_step.check_step` on the engine: the same checks (names, severities,
    verdicts), remembered for the publication step and their evidence kept the same way."""
    spark = on_spark(engine)
    return check_step(spec, anonymized=anonymized, pseudonymized=pseudonymized, raw=raw, ledger=ledger,
                      partition=partition, only=only, declared=declared, reports_dir=reports_dir,
                      digests=(lambda: _digests(anonymized, pseudonymized, raw)) if spark else None,
                      evaluate=(lambda: _spark_evaluation(engine, spec, anonymized, pseudonymized, raw, ledger,
                                                          partition, only)) if spark else None)


def published_step(engine: Any, spec: ReleaseSpec, *, anonymized: Any, pseudonymized: Any, raw: Any,
                   ledger: Ledger, partition: str | None, keystore: Any = None, storage: Sequence[str | Path] = (),
                   reports_dir: str | None = None, run_id: str | None = None) -> PublicationStep:
    """:func:`~.publish_step.publication_step` on the engine (see the module docstring): on Spark
    with the stored tables' digests, the Spark evaluation and :func:`_publication_inputs`."""
    step = partial(publication_step, spec, anonymized=anonymized, pseudonymized=pseudonymized, raw=raw, ledger=ledger,
                   partition=partition, keystore=keystore, storage=storage, reports_dir=reports_dir, run_id=run_id)
    if not on_spark(engine):
        return step()
    return step(
        digests=lambda: _digests(anonymized, pseudonymized, raw),
        evaluate=lambda: _spark_evaluation(engine, spec, anonymized, pseudonymized, raw, ledger, partition, None),
        inputs=lambda evaluation: _publication_inputs(engine, spec, evaluation, anonymized, pseudonymized,
                                                      keystore, ledger))


def _publication_inputs(engine: Any, spec: ReleaseSpec, evaluation: Evaluation, anonymized: StoredTable,
                        pseudonymized: StoredTable, keystore: Any, ledger: Ledger) -> PublicationInputs:
    """What :func:`~.publication.publish_release` reads of the stored tables on Spark
    (:func:`~anon_dagster.engine.spark_publication.publication_inputs`)."""
    from ..engine.spark_publication import publication_inputs

    return publication_inputs(engine, spec, evaluation, _load(engine, anonymized, "anonymized"), anonymized.rows,
                              lambda: _load(engine, pseudonymized, "pseudonymized"), keystore, ledger)


__all__ = ["ROW_STEPS", "RowStep", "StepCall", "StepOutput", "anonymized_step", "checks_step", "on_spark",
           "published_step", "pseudonymized_step", "raw_step", "row_step"]
