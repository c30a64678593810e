"""The Spark engine: Spark aggregates, the existing code decides, Spark applies.

The rows stay on Spark. Each step that needs to look at them asks Spark for a frequency table
(``groupBy(columns).count()`` with each combination's first row), which the driver reads
(:mod:`.spark_frames`) and hands to the code the pandas engine runs on rows:

- **ingest**: the source (parquet) read by Spark, the partition's window filtered there, the spec
  checked against the schema and each hierarchy against the column's distinct values;
- **pseudonymize**: ``mapInArrow`` calling the project's keyed functions, keys re-derived on the
  executors (:mod:`.spark_pseudonyms`);
- **anonymize** (global recoding): the lattice search on the driver over the bottom frequency
  table (:meth:`~anon_dagster.anonymize.lattice.Lattice.from_frequencies`), the chosen node
  applied by Spark with broadcast label maps, the failing classes suppressed by an anti-join;
- **evaluate**: every risk figure from the published frequency table
  (:func:`~anon_dagster.risk.frequencies.measure_frequencies`), utility queries from two frequency
  tables, the composition from the persons' classes, the data contract by Spark SQL
  (:mod:`.spark_gate`).

What is not supported yet is refused up front with one line (:func:`check_supported`):
Mondrian, microaggregation, PRAM, cell suppression, differential privacy, a utility query as the
search's metric, tokens, k per person (pseudonyms that link a person's rows), the release's
attacks, csv sources and sources on object storage. docs/scale.md says what is exact, what the
driver holds and what is left.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import DataError, UserError
from .base import (
    DEFAULT_SPARK_MASTER,
    AnonymizeOutcome,
    MeasuredRelease,
    UnsupportedOnEngine,
    record_beside,
    record_path,
)
from .spark_frames import (  # noqa: E402,F401 - re-exported
    COUNT_COLUMN,
    DEFAULT_MAX_DRIVER_CELLS,
    FIRST_COLUMN,
    INTERNAL_PREFIXES,
    arrow_values,
    collect,
    frequency_frame,
    internal,
    lookup_frame,
    null_safe,
    published_columns,
    read_parquet,
    scratch_folder,
    start_session,
    table_digest,
    to_pandas,
    weighted_breakdown,
)
from .spark_pseudonyms import DISTINCT_PREFIX


@dataclass
class SparkIngested:
    """A partition's rows on Spark, checked against the spec, and where they came from."""

    df: Any
    source: str

    @property
    def data(self) -> Any:
        return self.df


@dataclass
class SparkPseudonymized:
    """The table with identifiers pseudonymized (or dropped), materialized once on the executors
    (a scope-row pseudonym is random: the table must not be computed twice)."""

    df: Any
    columns: list[Any] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    backend: str | None = None
    planned: Any = None  # the mapInArrow query, before it was materialized (what explain() shows)

    @property
    def data(self) -> Any:
        return self.df

    @cached_property
    def summary(self) -> dict[str, Any]:
        """The pandas engine's pseudonymization summary: rows, nulls and distinct identifiers per
        column, counted by Spark (one pass)."""
        from pyspark.sql import functions as F

        from ..io import plain_json
        from ..pseudonymize.table import PseudonymizationSummary

        summary = PseudonymizationSummary(dropped=list(self.dropped), backend=self.backend)
        if self.columns:
            aggs = [F.count(F.lit(1)).alias("__rows")]
            for c in self.columns:
                aggs.append(F.count(F.col(f"`{c.column}`")).alias(f"p_{c.column}"))
                counted = DISTINCT_PREFIX + c.column if c.scope == "row" else c.column
                aggs.append(F.countDistinct(F.col(f"`{counted}`")).alias(f"d_{c.column}"))
            got = self.df.agg(*aggs).collect()[0]
            for c in self.columns:
                rows = int(got["__rows"])
                summary.columns.append(replace(c, rows=rows, nulls_kept=rows - int(got[f"p_{c.column}"]),
                                               distinct=int(got[f"d_{c.column}"])))
        return plain_json(summary.to_dict())


@dataclass
class SparkAnonymized:
    """The published rows on Spark (internal columns included), their record and what was given up.

    ``categories`` gives each column generalized above level 0 its labels in the order the
    pandas engine's categorical holds them (it numbers the classes: :mod:`anon_dagster.risk.frequencies`).
    """

    df: Any
    record: Any
    suppressed: int
    unreachable: str | None = None
    categories: dict[str, list[object]] = field(default_factory=dict)

    @property
    def data(self) -> Any:
        return self.df


@dataclass
class SparkGateRun:
    """A partition taken through the whole gate on Spark: every step's output and the evaluation."""

    ingested: SparkIngested
    pseudonymized: SparkPseudonymized
    anonymized: SparkAnonymized
    evaluation: Any


def executor_errors(action: Any) -> Any:
    """``action()``, with an error the project raised on an executor (a key store that is not the
    driver's, identifiers that cannot be read) raised again on the driver as itself, in one line
    (Spark wraps it in a Python traceback of the worker)."""
    import re

    from .. import errors

    try:
        return action()
    except Exception as exc:
        if type(exc).__name__ != "PythonException":
            raise
        found = re.findall(r"anon_dagster\.errors\.(\w+): (.+)", str(exc))
        if not found:
            raise
        name, message = found[-1]
        kind = getattr(errors, name, None)
        if not (isinstance(kind, type) and issubclass(kind, errors.UserError)) or kind is errors.SpecError:
            kind = errors.UserError
        raise kind(message.strip()) from None


def check_supported(spec: Any) -> None:
    """Refuse, in one line, what the Spark engine does not carry out yet (module docstring)."""
    an = spec.anonymization
    if an.method in ("mondrian", "microaggregation"):
        name = "Mondrian" if an.method == "mondrian" else "microaggregation (MDAV)"
        raise UnsupportedOnEngine(f"anonymization.method: {an.method} ({name})",
                                  hint="use method: global (optimal global recoding) or --engine pandas")
    if an.suppression == "cells":
        raise UnsupportedOnEngine("anonymization.suppression: cells (cell suppression)",
                                  hint="use suppression: rows or --engine pandas")
    if an.pram is not None:
        raise UnsupportedOnEngine("anonymization.pram (PRAM)", hint="use --engine pandas")
    if an.utility.startswith("query:"):
        raise UnsupportedOnEngine(f"anonymization.utility: {an.utility} (a utility query as the search's metric)",
                                  hint="use entropy, loss, discernibility or aecs, or --engine pandas")
    if spec.publication.mode == "aggregates":
        raise UnsupportedOnEngine("publication.mode: aggregates (differential privacy)", hint="use --engine pandas")
    if getattr(spec.policy, "attacks", None) is not None:
        raise UnsupportedOnEngine("policy.attacks (the release's attacks)", hint="use --engine pandas")
    for name in spec.pseudonymized:
        how = spec.columns[name].pseudonymize
        if how.method.lower() == "token":
            raise UnsupportedOnEngine(f"columns.{name}.pseudonymize.method: token (the token vault)",
                                      hint="use hmac or aes_siv, or --engine pandas")
        if how.scope != "row" and name in spec.published_columns:
            raise UnsupportedOnEngine(
                f"k per person (columns.{name}.pseudonymize.scope: {how.scope} links a person's published rows)",
                hint="use scope: row, or --engine pandas")


class SparkEngine:
    """The rows on Spark (see the module docstring).

    ``spark``: a SparkSession to use (the engine then never stops it); without one the engine
    starts one on ``master`` (``local[2]`` by default) with ``conf`` and stops it on
    :meth:`close`. ``max_driver_cells``: the largest frequency table (rows × columns) the driver
    reads; a larger one is refused naming its size. ``scratch_dir``: where Spark writes the
    frequency tables the driver reads (a fresh temporary folder by default: a local master; on a
    cluster, a folder the driver and the executors share).
    """

    name = "spark"

    def __init__(self, spark: Any = None, *, master: str = DEFAULT_SPARK_MASTER,
                 max_driver_cells: int = DEFAULT_MAX_DRIVER_CELLS, scratch_dir: str | Path | None = None,
                 conf: dict[str, str] | None = None, app_name: str = "anon_dagster"):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            raise UserError("the Spark engine needs pyspark: pip install 'anon_dagster[spark]'") from None
        self._spark = spark
        self._own = spark is None
        self.master = master
        self.max_driver_cells = int(max_driver_cells)
        self._scratch_dir = scratch_dir
        self._scratch: Path | None = None
        self._conf = dict(conf or {})
        self._app_name = app_name
        self._digests: dict[int, tuple[Any, str]] = {}

    # ----- the session --------------------------------------------------------------------------
    @property
    def spark(self) -> Any:
        """The session: the one given, else the process's active one (never stopped by the
        engine), else one started on ``master``."""
        if self._spark is None:
            from pyspark.sql import SparkSession

            active = SparkSession.getActiveSession()
            if active is not None:
                self._spark, self._own = active, False
            else:
                self._spark = start_session(self.master, self._app_name, self._conf)
        return self._spark

    @property
    def scratch(self) -> Path:
        if self._scratch is None:
            self._scratch = scratch_folder(self._scratch_dir)
        return self._scratch

    def close(self) -> None:
        """Stop the session the engine started (never one it was given); remove its scratch folder."""
        import shutil

        if self._own and self._spark is not None:
            self._spark.stop()
            self._spark = None
        if self._scratch is not None and self._scratch_dir is None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def digest(self, df: Any) -> str:
        """:func:`~.spark_frames.table_digest` of ``df``'s published columns, computed once per table."""
        known = self._digests.get(id(df))
        if known is not None and known[0] is df:
            return known[1]
        value = table_digest(df, published_columns(df))
        self._digests[id(df)] = (df, value)
        return value

    # ----- frequency tables ---------------------------------------------------------------------
    def frequencies(self, df: Any, columns: list[str], *, first_row: bool = True,
                    what: str = "a frequency table") -> tuple[pd.DataFrame, pa.Schema]:
        """The frequency table of ``df`` over ``columns`` on the driver (counts in
        ``count``, first rows in ``__first``) and its Arrow schema."""
        table = collect(frequency_frame(df, columns, first_row=first_row), scratch=self.scratch,
                        max_cells=self.max_driver_cells, what=what)
        freq = to_pandas(table)
        if first_row and FIRST_COLUMN in freq.columns:
            freq = freq.sort_values(FIRST_COLUMN, kind="stable").reset_index(drop=True)
        return freq, table.schema

    # ----- ingest -------------------------------------------------------------------------------
    def read(self, spec: Any, partition: str | None, input_path: str | None) -> tuple[Any, Path]:
        """The partition's rows of ``input_path`` or the spec's source, identifiers as text."""
        from pyspark.sql import functions as F

        from ..io import table_format
        from ..objectstore import ObjectPath
        from ..partitions import check_partition, partition_window, source_path, text_columns

        check_partition(spec, partition)
        path = Path(input_path) if input_path is not None else source_path(spec, partition)
        if isinstance(path, ObjectPath) or "://" in str(input_path or ""):
            raise UnsupportedOnEngine("a source on object storage", hint="read it with a Spark path on a cluster "
                                      "filesystem, or use --engine pandas")
        if not path.exists():
            raise DataError(f"{path}: no such file")
        fmt = "parquet" if path.is_dir() else (spec.source.format if input_path is None and spec.source.format
                                                else table_format(path))
        if fmt != "parquet":
            raise UnsupportedOnEngine(f"a {fmt} source ({path})", hint="convert it to parquet, or use --engine pandas")
        df = read_parquet(self.spark, path)
        types = dict(df.dtypes)
        for name in text_columns(spec):
            kind = types.get(name)
            if kind is None or kind == "string":
                continue
            if kind in ("float", "double") or kind.startswith("decimal"):
                raise DataError(
                    f"{path}: identifier column {name!r} is stored as floating-point numbers ({kind}): a float "
                    "does not hold an identifier exactly (digits past the 16th are lost, 1.0 and 1 would be "
                    "one person); store it as text or integers")
            if kind not in ("tinyint", "smallint", "int", "bigint"):
                raise DataError(f"{path}: identifier column {name!r} is stored as {kind}: store identifiers "
                                "as text or integers")
            df = df.withColumn(name, F.col(f"`{name}`").cast("string"))
        for name, column in spec.columns.items():
            from ..spec import DateSpec

            if isinstance(column.hierarchy, DateSpec) and types.get(name) == "string":
                raise UnsupportedOnEngine(f"dates stored as text (column {name!r})",
                                          hint="store them as parquet dates or timestamps, or use --engine pandas")
        if partition is not None and spec.partitions is not None:
            column = spec.partitions.column
            if column not in types:
                raise DataError(f"{path}: partition column {column!r} is missing from the data")
            if not (types[column].startswith("timestamp") or types[column] == "date"):
                raise UnsupportedOnEngine(f"a partition column stored as {types[column]} ({column!r})",
                                          hint="store it as a parquet date or timestamp, or use --engine pandas")
            start, end = partition_window(spec, partition)
            kind = types[column]
            lo = F.lit(start.to_pydatetime()).cast(kind)
            hi = F.lit(end.to_pydatetime()).cast(kind)
            inside = df.filter((F.col(f"`{column}`") >= lo) & (F.col(f"`{column}`") < hi))
            if input_path is None and "{partition}" in spec.source.path:
                total, kept = df.count(), inside.count()
                if kept < total:
                    raise DataError(
                        f"{path}: {total - kept} rows fall outside partition {partition!r} "
                        f"[{start.date()}, {end.date()}) of column {column!r}: fix the file or the spec")
            df = inside
        return df, path

    def check_data(self, spec: Any, df: Any, source: str) -> None:
        """:func:`~anon_dagster.spec.check_data` on what it reads: the columns, and the distinct
        values of each column with a hierarchy (collected, one frequency table per column)."""
        from ..spec import check_data

        values: dict[str, pd.Series] = {}
        for name in spec.hierarchies:
            if name in df.columns:
                freq, _ = self.frequencies(df, [name], first_row=False,
                                           what=f"the distinct values of column {name!r}")
                values[name] = freq[name]
        length = max([len(v) for v in values.values()] + [1])
        frame = {}
        for name in published_columns(df):
            if name in values and len(values[name]):
                v = values[name].reset_index(drop=True)
                frame[name] = pd.concat([v, v.iloc[[0] * (length - len(v))]], ignore_index=True)
            else:
                frame[name] = pd.Series([None] * length, dtype=object)
        check_data(spec, pd.DataFrame(frame), source=source)

    def ingest(self, spec: Any, partition: str | None = None, input_path: str | None = None) -> SparkIngested:
        """The rows of ``partition`` read and checked against the spec (as the pandas ingest)."""
        df, path = self.read(spec, partition, input_path)
        self.check_data(spec, df, str(path))
        return SparkIngested(df, str(path))

    # ----- pseudonymize -------------------------------------------------------------------------
    def pseudonymize(self, spec: Any, ingested: SparkIngested, keystore: Any | None, *, linkage: bool = True,
                     partition: str | None = None) -> SparkPseudonymized:
        """Identifiers pseudonymized as declared, the others dropped, and with ``linkage`` and a
        composition block the ledger's linkage pseudonym (:func:`~anon_dagster.release.pipeline.pseudonymize`)."""
        from pyspark.sql import types as T

        from ..pseudonymize.methods import pseudonym_pattern, publication_label
        from ..pseudonymize.table import ColumnSummary
        from ..release import gate
        from ..release.ledger.linkage import person_normalization
        from ..release.pipeline import LINKAGE_PURPOSE, check_keystore
        from .spark_pseudonyms import (
            DISTINCT_PURPOSE,
            ColumnStep,
            KeyRequest,
            LinkageStep,
            PseudonymPlan,
            pseudonymize_batches,
        )

        df = ingested.df
        wants_linkage = linkage and spec.composition is not None
        if spec.pseudonymized or wants_linkage:
            check_keystore(spec, keystore)
        steps, summaries, dropped = [], [], []
        for name in spec.identifiers:
            if name not in df.columns:
                raise DataError(f"{spec.label}: identifier column {name!r} is declared but missing from the data")
            how = spec.columns[name].pseudonymize
            if how is None:
                steps.append(ColumnStep(name, drop=True))
                dropped.append(name)
                continue
            method = how.method.lower()
            version = keystore.current_version
            publication = publication_label(spec.release, partition) if how.scope == "release" else None
            prefix = f"v{version}:" if how.prefix_version else ""
            norm = (how.normalize.trim, how.normalize.case, how.normalize.unicode)
            if how.scope == "row":
                key, distinct = None, KeyRequest("internal", DISTINCT_PURPOSE).checked(keystore)
            else:
                key = KeyRequest("pseudonym", how.purpose, method, version, publication).checked(keystore)
                distinct = None
            steps.append(ColumnStep(name, method=method, scope=how.scope, purpose=how.purpose, key=key,
                                    prefix=prefix, normalize=norm, distinct=distinct))
            summaries.append(ColumnSummary(
                column=name, method=method, purpose=how.purpose,
                key_version=None if how.scope == "row" else version, rows=0, nulls_kept=0, distinct=0,
                reversible=method != "hmac", prefix_version=how.prefix_version,
                pattern=pseudonym_pattern(method, how.prefix_version), scope=how.scope, publication=publication))
        link = None
        if wants_linkage:
            norm = person_normalization(spec)
            person = spec.composition.person
            if person not in df.columns:
                raise DataError(f"{spec.label}: composition.person {person!r} is not a column of the data")
            link = LinkageStep(gate.LINKAGE_COLUMN, person,
                               KeyRequest("internal", LINKAGE_PURPOSE).checked(keystore),
                               (norm.trim, norm.case, norm.unicode))
        kept = {s.column for s in steps if s.drop}
        fields, names = [], []
        changed = {s.column for s in steps if not s.drop}
        for f in df.schema.fields:
            if f.name in kept:
                continue
            fields.append(T.StructField(f.name, T.StringType(), True) if f.name in changed else f)
            names.append(f.name)
        for s in steps:
            if s.scope == "row" and not s.drop:
                fields.append(T.StructField(DISTINCT_PREFIX + s.column, T.StringType(), True))
                names.append(DISTINCT_PREFIX + s.column)
        if link is not None:
            fields.append(T.StructField(link.column, T.StringType(), True))
            names.append(link.column)
        plan = PseudonymPlan(tuple(steps), link, tuple(names))
        out = planned = df
        if spec.identifiers or link is not None:
            planned = df.mapInArrow(pseudonymize_batches(plan), T.StructType(fields))
            out = planned
            if summaries or link is not None:
                # computed once: a scope-row pseudonym is random, and the keyed ones cost a pass
                out = executor_errors(lambda: planned.localCheckpoint(eager=True))
        backend = keystore.backend.kind if keystore is not None else None
        return SparkPseudonymized(out, summaries, dropped, backend, planned)

    # ----- anonymize ----------------------------------------------------------------------------
    def anonymize(self, spec: Any, pseudonymized: SparkPseudonymized, progress: Any = None, *,
                  relax: bool = True) -> SparkAnonymized:
        """The spec's anonymization on Spark; an unreachable policy as the pandas pipeline shows it
        (:func:`~anon_dagster.release.pipeline.anonymize`): with ``relax``, the anonymization at
        the spec's k without the attribute-disclosure and average-risk criteria, measured against
        the full policy by the gate."""
        from ..errors import SpecError

        check_supported(spec)
        try:
            return self._anonymize(spec, pseudonymized, progress)
        except (SpecError, UnsupportedOnEngine):
            raise
        except UserError as exc:
            from .spark_frames import DriverLimit

            if not relax or isinstance(exc, DriverLimit):
                raise
            reason = f"the declared policy is unreachable: {exc}"
        thresholds = spec.policy.thresholds.model_copy(update={
            "l_distinct": None, "l_entropy": None, "recursive_cl": None, "t_closeness": None,
            "prosecutor_avg": None})
        relaxed = spec.model_copy(update={"policy": spec.policy.model_copy(update={"thresholds": thresholds})})
        try:
            result = self._anonymize(relaxed, pseudonymized, progress)
        except UserError as exc2:
            empty = pseudonymized.df.limit(0)
            rows = pseudonymized.df.count()
            return SparkAnonymized(empty, self._empty_record(spec, pseudonymized.df, rows), rows,
                                   reason + f". No relaxed anonymization exists either ({exc2}): the table is "
                                   "empty and every check fails.")
        unreachable = (reason + f". Shown instead: the anonymization at k={spec.anonymization.k} without the "
                       "attribute-disclosure and average-risk criteria, measured against the full policy by "
                       "the checks; it cannot be published.")
        return replace(result, record=replace(result.record, policy_unreachable=unreachable), unreachable=unreachable)

    def _anonymize(self, spec: Any, pseudonymized: SparkPseudonymized, progress: Any) -> SparkAnonymized:
        from ..anonymize.coding import code_qi
        from ..anonymize.core import NoSolution
        from ..anonymize.criteria import Policy, sensitive_attributes
        from ..anonymize.lattice import Lattice

        t0 = time.perf_counter()
        df = pseudonymized.df
        an = spec.anonymization
        policy = Policy.from_spec(spec)
        gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
        sens = list(policy.sensitive) if policy.needs_sensitive else []
        needed = gen + pks + sens
        absent = [c for c in needed if c not in df.columns]
        if absent:
            raise DataError(f"{spec.label}: column {absent[0]!r} is declared but missing from the data")
        by_query = [c for q in spec.utility_queries for c in q.group_by if c in df.columns]
        bottom_columns = list(dict.fromkeys(needed + by_query))
        freq, schema = self.frequencies(df, bottom_columns, what="the bottom frequency table (the QIs at "
                                        "level 0, the partition keys and the sensitive attributes)")
        counts = freq[COUNT_COLUMN].to_numpy(np.int64) if len(freq) else np.zeros(0, dtype=np.int64)
        n = int(counts.sum())
        input_hash = self.digest(df)
        if an.method == "none" or n == 0:
            return self._record_only(spec, policy, df, freq, counts, input_hash, t0, an.method)
        if policy.k > n:
            raise DataError(f"{spec.label}: k={policy.k} is larger than the table ({n} rows): no class can reach it")
        coded = {c: code_qi(freq[c], spec.hierarchies[c]) for c in gen}
        qis = [coded[c] for c in gen] + [code_qi(freq[c], None) for c in pks]
        sens_coded = [a.code(freq[a.name]) for a in sensitive_attributes(spec, policy.sensitive)] if sens else []
        lattice = Lattice.from_frequencies(qis, counts, policy, sens_coded, an.utility,
                                           generalized=[True] * len(gen) + [False] * len(pks))
        search = lattice.search(frontier=an.frontier, progress=progress)
        if not search.solved:
            closest = search.closest
            where = ", ".join(f"{c}={lv}" for c, lv in zip(gen, closest.levels, strict=False)) if closest else "?"
            misses = "; ".join(closest.missing) if closest and closest.missing else "the policy"
            raise NoSolution(
                f"{spec.label}: no generalization satisfies {', '.join(policy.names())} within "
                f"max_suppression={policy.max_suppression:g}: the closest node ({where}) misses {misses}",
                search.to_dict())
        levels = dict(zip(gen, (int(v) for v in search.levels[: len(gen)]), strict=True))
        row_class, sizes, failing = lattice.failing_classes(search.levels)
        fail_rows = failing[row_class]
        published, categories = self._apply(df, schema, coded, levels, pks, freq, row_class, failing)
        published = published.persist()  # read by the record, then by every check of the gate
        kept = sizes[~failing]
        return SparkAnonymized(published, self._record(
            spec, policy, freq, counts, fail_rows, kept, search.loss, input_hash, published, t0,
            original=df, levels=levels, search=search.to_dict()), int(counts[fail_rows].sum()), categories=categories)

    def _apply(self, df: Any, schema: pa.Schema, coded: dict[str, Any], levels: dict[str, int],
               pks: list[str], freq: pd.DataFrame, row_class: np.ndarray,
               failing: np.ndarray) -> tuple[Any, dict[str, list[object]]]:
        """The node applied on Spark: each column generalized above level 0 replaced by its label
        (a broadcast join with the column's label map), the failing classes removed (an anti-join
        with their keys)."""
        from pyspark.sql import functions as F

        spark_types = {f.name: f.dataType for f in df.schema.fields}
        out = df
        categories: dict[str, list[object]] = {}
        for c, level in levels.items():
            if level == 0:
                continue
            qi = coded[c]
            labels = qi.labels[level][qi.level_maps[level]]
            lookup = lookup_frame(self.spark, {"__value": arrow_values(qi.uniques, schema.field(c).type),
                                               "__label": pa.array([str(v) for v in labels], type=pa.string())},
                                  {"__value": spark_types[c]})
            out = (out.join(F.broadcast(lookup), on=null_safe(out, lookup, [(c, "__value")]), how="left")
                   .withColumn(c, F.col("__label")).drop("__value", "__label"))
            categories[c] = [str(v) for v in qi.labels[level]]
        if failing.any():
            first = np.full(len(failing), -1, dtype=np.int64)
            first[row_class[::-1]] = np.arange(len(row_class) - 1, -1, -1)
            reps = first[np.flatnonzero(failing)]
            keys: dict[str, pa.Array] = {}
            casts: dict[str, Any] = {}
            pairs = []
            for i, c in enumerate([*levels, *pks]):
                name = f"__key{i}"
                level = levels.get(c, 0)
                if level > 0:
                    qi = coded[c]
                    codes0 = qi.codes[reps]
                    keys[name] = pa.array([str(v) for v in qi.labels[level][qi.level_maps[level][codes0]]],
                                          type=pa.string())
                else:
                    keys[name] = arrow_values(freq[c].to_numpy(dtype=object)[reps], schema.field(c).type)
                    casts[name] = spark_types[c]
                pairs.append((c, name))
            failing_keys = lookup_frame(self.spark, keys, casts)
            out = out.join(F.broadcast(failing_keys), on=null_safe(out, failing_keys, pairs), how="left_anti")
        return out, categories

    def _record(self, spec: Any, policy: Any, freq: pd.DataFrame, counts: np.ndarray, fail_rows: np.ndarray,
                kept_sizes: np.ndarray, loss: float | None, input_hash: str, published: Any, t0: float, *,
                original: Any, levels: dict[str, int] | None, search: dict[str, Any] | None,
                method: str = "global") -> Any:
        """The transformation record of an anonymization on Spark (the pandas engine's fields;
        the hashes are Spark digests, :func:`~.spark_frames.table_digest`)."""
        from ..anonymize.core import _metric_name
        from ..anonymize.criteria import suppression_budget
        from ..anonymize.record import (
            MAX_GROUPS,
            RECORD_FORMAT,
            Classes,
            Parameters,
            Suppression,
            TransformationRecord,
            Utility,
            class_histogram,
        )

        n = int(counts.sum())
        n_sup = int(counts[fail_rows].sum()) if len(fail_rows) else 0
        pks = [c for c in spec.partition_keys if c in freq.columns]
        queries = {}
        for q in spec.utility_queries:
            if all(c in published.columns for c in [*q.group_by, q.target]):
                from .spark_gate import query_error

                queries[q.name] = round(query_error(self, original, published, q.group_by, q.target)
                                        .max_error_points, 6)
        return TransformationRecord(
            format=RECORD_FORMAT, release=spec.release, method=method,
            parameters=Parameters(k=spec.anonymization.k, max_suppression=spec.anonymization.max_suppression,
                                  utility=spec.anonymization.utility, suppression=spec.anonymization.suppression,
                                  policy=policy.to_dict()),
            seed=spec.anonymization.seed, quasi_identifiers=list(spec.generalized_qis), partition_keys=list(spec.partition_keys),
            rows_in=n, rows_out=n - n_sup,
            suppression=Suppression(
                rows=n_sup, share=round(n_sup / n, 6) if n else 0.0, budget_rows=suppression_budget(policy, n),
                cells={}, cells_total=0,
                by_partition_key=weighted_breakdown(freq, fail_rows, counts, pks, MAX_GROUPS),
                by_query={q.name: weighted_breakdown(freq, fail_rows, counts,
                                                     [c for c in q.group_by if c in freq.columns], MAX_GROUPS)
                          for q in spec.utility_queries}),
            classes=Classes(count=int(len(kept_sizes)), k=int(kept_sizes.min()) if len(kept_sizes) else None,
                            histogram=class_histogram(kept_sizes)),
            utility=Utility(metric=_metric_name(method, spec), value=loss, queries=queries),
            levels=levels, search=search, input_hash=input_hash,
            output_hash=self.digest(published),
            elapsed_s=round(time.perf_counter() - t0, 4),
        )

    def _record_only(self, spec: Any, policy: Any, df: Any, freq: pd.DataFrame, counts: np.ndarray,
                     input_hash: str, t0: float, method: str) -> SparkAnonymized:
        """Method ``none`` (or an empty table): the rows as they are, with their record."""
        from ..risk.frequencies import frequency_classes

        qis = [c for c in spec.quasi_identifiers if c in freq.columns]
        sizes = np.zeros(0, dtype=np.int64)
        if len(freq) and qis:
            sizes = frequency_classes(freq, qis, counts.astype(np.float64)).sizes
        record = self._record(spec, policy, freq, counts, np.zeros(len(freq), dtype=bool), sizes, None,
                              input_hash, df, t0, original=df, levels=None, search=None, method=method)
        return SparkAnonymized(df, record, 0)

    def _empty_record(self, spec: Any, df: Any, rows: int) -> Any:
        """The record of a table of which nothing is published (every row suppressed)."""
        from ..anonymize.criteria import Policy

        policy = Policy.from_spec(spec)
        t0 = time.perf_counter()
        freq, _ = self.frequencies(df, [c for c in spec.partition_keys if c in df.columns],
                                   first_row=False, what="the rows per partition key")
        counts = freq[COUNT_COLUMN].to_numpy(np.int64) if len(freq) else np.zeros(0, dtype=np.int64)
        return self._record(spec, policy, freq, counts, np.ones(len(freq), dtype=bool), np.zeros(0, dtype=np.int64),
                            None, self.digest(df), df.limit(0), t0,
                            original=df, levels=None, search=None, method=spec.anonymization.method)

    # ----- the commands -------------------------------------------------------------------------
    def run_gate(self, spec: Any, *, partition: str | None = None, input_path: str | None = None,
                 keystore: Any | None = None, ledger: Any | None = None, only: set[str] | None = None) -> SparkGateRun:
        """Ingest, pseudonymize, anonymize and evaluate one partition on Spark (``check``)."""
        from .spark_gate import evaluate

        check_supported(spec)
        ingested = self.ingest(spec, partition, input_path)
        pseudo = self.pseudonymize(spec, ingested, keystore, partition=partition)
        anon = self.anonymize(spec, pseudo)
        evaluation = evaluate(self, spec, anon, original=pseudo.df, raw=ingested.df, ledger=ledger,
                              partition=partition, only=only)
        return SparkGateRun(ingested, pseudo, anon, evaluation)

    def anonymize_release(self, spec: Any, *, output: str | Path, partition: str | None = None,
                          input_path: str | None = None, keystore: Any | None = None,
                          progress: Any = None) -> AnonymizeOutcome:
        """Pseudonymize and anonymize on Spark and write the published rows as a parquet folder
        (part files), the record beside it (``output`` + ``.transformations.json``)."""
        from ..anonymize.record import Source

        out = Path(output)
        if out.suffix.lower() not in (".parquet", ".pq", ""):
            raise UnsupportedOnEngine(f"a {out.suffix} output ({out})", hint="the Spark engine writes parquet folders")
        check_supported(spec)
        ingested = self.ingest(spec, partition, input_path)
        if out.resolve() == Path(ingested.source).resolve():
            raise UserError(f"{out}: the output would overwrite the input")
        if keystore is None and spec.pseudonymized:
            from ..pseudonymize import open_keystore

            keystore = open_keystore()
        pseudo = self.pseudonymize(spec, ingested, keystore, linkage=False, partition=partition)
        result = self.anonymize(spec, pseudo, progress=progress, relax=False)
        record = replace(result.record, source=Source(rows=result.record.rows_in, partition=partition))
        result.df.select(*[f"`{c}`" for c in published_columns(result.df)]).write.mode("overwrite").parquet(str(out))
        record.write(record_path(out))
        return AnonymizeOutcome(record, out, ingested.source)

    def measure_release(self, spec: Any, *, partition: str | None = None, input_path: str | None = None,
                        generalized: bool = False) -> MeasuredRelease:
        """The gate's measurement of a table on Spark (``risk --config``): its frequency table
        over the QIs and sensitive attributes, measured by the existing code."""
        from ..release import gate
        from .spark_gate import measure

        df, path = self.read(spec, partition, input_path)
        for col in [*spec.quasi_identifiers, *spec.sensitive]:
            if col not in df.columns:
                raise DataError(f"{path}: column {col!r} declared in {spec.label} is missing from the data")
        if not generalized:
            for name, hierarchy in spec.hierarchies.items():
                if name in spec.quasi_identifiers:
                    freq, _ = self.frequencies(df, [name], first_row=False, what=f"the distinct values of {name!r}")
                    hierarchy.table(pd.unique(freq[name]))
        record = record_beside(path)
        population = None
        if spec.policy.population is not None:
            population = gate.load_population(spec)
            if record is not None:
                from ..anonymize.population import generalize_population

                population = generalize_population(population, spec, record, None)
        measured = measure(self, spec, df, population, categories={}, empty_message=f"{path}: the table is empty: "
                           "there are no rows to measure")
        return MeasuredRelease(measured, gate.release_figures(spec, measured, population), str(path))


__all__ = ["SparkAnonymized", "SparkEngine", "SparkGateRun", "SparkIngested", "SparkPseudonymized",
           "check_supported"]
