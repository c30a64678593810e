"""The transformation record of an anonymization on Spark: the pandas engine's fields
(:func:`~anon_dagster.anonymize.record_builder.build_record`), counted from frequency tables,
the hashes Spark digests (:func:`~.spark_frames.table_digest`)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from .spark_frames import COUNT_COLUMN, weighted_breakdown
from .spark_results import SparkAnonymized
from .spark_session import SparkDriver


def spark_record(engine: SparkDriver, spec: Any, policy: Any, freq: pd.DataFrame, counts: np.ndarray,
                 fail_rows: np.ndarray, kept_sizes: np.ndarray, loss: float | None, input_hash: str,
                 published: Any, t0: float, *, original: Any, levels: dict[str, int] | None = None,
                 search: dict[str, Any] | None = None, method: str = "global",
                 mondrian: dict[str, Any] | None = None, cells: dict[str, int] | None = None,
                 cell_suppression: dict[str, Any] | None = None,
                 person_suppression: dict[str, Any] | None = None) -> Any:
    """The record of an anonymization of ``original`` into ``published``.

    ``freq`` is a frequency table of ``original`` (with ``counts``) holding at least the partition
    keys and the utility queries' group-by columns, ``fail_rows`` its rows suppressed;
    ``kept_sizes`` the published classes' sizes; ``mondrian`` the record's ``mondrian`` entry in
    its JSON form; ``cells`` the cells suppressed per column and ``cell_suppression`` the
    record's entry, with cell suppression; ``person_suppression`` the record's entry of a search
    that targeted k per person.
    """
    from ..anonymize.criteria import suppression_budget
    from ..anonymize.record import (
        MAX_GROUPS,
        RECORD_FORMAT,
        CellSuppression,
        Classes,
        MondrianInfo,
        Parameters,
        PersonSuppression,
        Suppression,
        TransformationRecord,
        Utility,
        class_histogram,
    )
    from ..anonymize.record_builder import metric_name
    from .spark_gate import query_error

    n = int(counts.sum())
    n_sup = int(counts[fail_rows].sum()) if len(fail_rows) else 0
    pks = [c for c in spec.partition_keys if c in freq.columns]
    queries = {}
    for q in spec.utility_queries:
        if all(c in published.columns for c in [*q.group_by, q.target]):
            queries[q.name] = round(query_error(engine, original, published, q.group_by, q.target)
                                    .max_error_points, 6)
    return TransformationRecord(
        format=RECORD_FORMAT, release=spec.release, method=method,
        parameters=Parameters(k=spec.anonymization.k, max_suppression=spec.anonymization.max_suppression,
                              utility=spec.anonymization.utility, suppression=spec.anonymization.suppression,
                              policy=policy.to_dict()),
        seed=spec.anonymization.seed, quasi_identifiers=list(spec.generalized_qis),
        partition_keys=list(spec.partition_keys),
        rows_in=n, rows_out=n - n_sup,
        suppression=Suppression(
            rows=n_sup, share=round(n_sup / n, 6) if n else 0.0, budget_rows=suppression_budget(policy, n),
            cells=dict(cells or {}), cells_total=int(sum((cells or {}).values())),
            by_partition_key=weighted_breakdown(freq, fail_rows, counts, pks, MAX_GROUPS),
            by_query={q.name: weighted_breakdown(freq, fail_rows, counts,
                                                 [c for c in q.group_by if c in freq.columns], MAX_GROUPS)
                      for q in spec.utility_queries}),
        classes=Classes(count=int(len(kept_sizes)), k=int(kept_sizes.min()) if len(kept_sizes) else None,
                        histogram=class_histogram(kept_sizes)),
        utility=Utility(metric=metric_name(method, spec), value=loss, queries=queries),
        levels=levels, search=search,
        cell_suppression=(CellSuppression.from_json(cell_suppression, prefix="cell_suppression.")
                          if cell_suppression is not None else None),
        mondrian=MondrianInfo.from_json(mondrian, prefix="mondrian.") if mondrian is not None else None,
        person_suppression=(PersonSuppression.from_json(person_suppression, prefix="person_suppression.")
                            if person_suppression is not None else None),
        input_hash=input_hash, output_hash=engine.digest(published),
        elapsed_s=round(time.perf_counter() - t0, 4),
    )


def empty_record(engine: SparkDriver, spec: Any, df: Any) -> Any:
    """The record of a table of which nothing is published (every row suppressed)."""
    from ..anonymize.criteria import Policy

    policy = Policy.from_spec(spec)
    t0 = time.perf_counter()
    freq, _ = engine.frequencies(df, [c for c in spec.partition_keys if c in df.columns],
                                 first_row=False, what="the rows per partition key")
    counts = freq[COUNT_COLUMN].to_numpy(np.int64) if len(freq) else np.zeros(0, dtype=np.int64)
    return spark_record(engine, spec, policy, freq, counts, np.ones(len(freq), dtype=bool),
                        np.zeros(0, dtype=np.int64), None, engine.digest(df), df.limit(0), t0,
                        original=df, method=spec.anonymization.method)


def record_only(engine: SparkDriver, spec: Any, policy: Any, df: Any, freq: pd.DataFrame, counts: np.ndarray,
                input_hash: str, t0: float, method: str, *, original: Any = None) -> SparkAnonymized:
    """Method ``none`` (or an empty table): the rows as they are, with their record
    (``original``: the table before PRAM, when PRAM made ``df``)."""
    from ..risk.frequencies import frequency_classes

    qis = [c for c in spec.quasi_identifiers if c in freq.columns]
    sizes = np.zeros(0, dtype=np.int64)
    if len(freq) and qis:
        sizes = frequency_classes(freq, qis, counts.astype(np.float64)).sizes
    record = spark_record(engine, spec, policy, freq, counts, np.zeros(len(freq), dtype=bool), sizes, None,
                          input_hash, df, t0, original=df if original is None else original, method=method)
    return SparkAnonymized(df, record, 0)


__all__ = ["empty_record", "record_only", "spark_record"]
