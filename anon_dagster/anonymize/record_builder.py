"""The transformation record of one anonymization run (:func:`build_record`), and of a table of
which nothing is published (:func:`empty_record`)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from ..risk.classes import EquivalenceClasses
from ..risk.utility import utility_query_error
from .criteria import Policy, suppression_budget
from .record import (
    RECORD_FORMAT,
    CellSuppression,
    Classes,
    MicroaggregationInfo,
    MondrianInfo,
    Parameters,
    PersonSuppression,
    PramInfo,
    Suppression,
    SyntheticInfo,
    TransformationRecord,
    Utility,
    breakdown,
    class_histogram,
    table_hash,
)


def build_record(spec, policy: Policy, df, full, data, suppressed, cells, method, metric_value,
            input_hash, extra: dict[str, Any], t0: float) -> TransformationRecord:
    """The record of one run; ``extra`` holds the method's entries in their JSON form, ``t0``
    the run's start (``elapsed_s``)."""
    n = len(df)
    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    qis = [c for c in spec.quasi_identifiers if c in data.columns]
    classes = EquivalenceClasses.from_frame(data, qis) if len(data) and qis else None
    sizes = classes.sizes if classes is not None else np.zeros(0, dtype=np.int64)
    n_sup = int(suppressed.sum())
    queries = {}
    for q in spec.utility_queries:
        cols = [*q.group_by, q.target]
        if any(c not in df.columns or c not in full.columns for c in cols):
            continue
        # the gate's figure: the question asked of the original and of the published table
        queries[q.name] = round(utility_query_error(df, data, q.group_by, q.target).max_error_points, 6)

    def entry(section, name: str):
        return section.from_json(extra[name], prefix=name + ".") if extra.get(name) is not None else None

    # a table the anonymization never ran on (see empty_record) may lack the partition keys
    present_pks = [c for c in pks if c in df.columns]
    return TransformationRecord(
        format=RECORD_FORMAT,
        release=spec.release,
        method=method,
        parameters=Parameters(
            k=spec.anonymization.k,
            max_suppression=spec.anonymization.max_suppression,
            utility=spec.anonymization.utility,
            suppression=spec.anonymization.suppression,
            policy=policy.to_dict(),
        ),
        seed=spec.anonymization.seed,
        quasi_identifiers=gen,
        partition_keys=pks,
        rows_in=n,
        rows_out=len(data),
        suppression=Suppression(
            rows=n_sup,
            share=round(n_sup / n, 6) if n else 0.0,
            budget_rows=suppression_budget(policy, n),
            cells=cells,
            cells_total=int(sum(cells.values())),
            by_partition_key=breakdown(df, suppressed, present_pks),
            by_query={q.name: breakdown(df, suppressed, [c for c in q.group_by if c in df.columns])
                      for q in spec.utility_queries},
        ),
        classes=Classes(
            count=int(len(sizes)),
            k=int(sizes.min()) if len(sizes) else None,
            histogram=class_histogram(sizes),
        ),
        utility=Utility(metric=metric_name(method, spec), value=metric_value, queries=queries),
        pram=entry(PramInfo, "pram"),
        levels=extra.get("levels"),
        search=extra.get("search"),
        cell_suppression=entry(CellSuppression, "cell_suppression"),
        mondrian=entry(MondrianInfo, "mondrian"),
        microaggregation=entry(MicroaggregationInfo, "microaggregation"),
        synthetic=entry(SyntheticInfo, "synthetic"),
        person_suppression=entry(PersonSuppression, "person_suppression"),
        input_hash=input_hash,
        output_hash=table_hash(data),
        elapsed_s=round(time.perf_counter() - t0, 4),
        # entries a method adds that the record does not declare are kept, not dropped
        extra={k: v for k, v in extra.items() if k not in _METHOD_ENTRIES},
    )


_METHOD_ENTRIES = ("pram", "levels", "search", "cell_suppression", "mondrian", "microaggregation",
                   "person_suppression", "synthetic")


def empty_record(df: pd.DataFrame, spec) -> TransformationRecord:
    """The record of a table of which nothing is published: every row of ``df`` suppressed.

    For a partition no anonymization (not even a relaxed one) can produce: the release pipeline
    publishes an empty table, and the gate and the report still read a complete record.
    """
    t0 = time.perf_counter()
    policy = Policy.from_spec(spec)
    suppressed = np.ones(len(df), dtype=bool)
    return build_record(spec, policy, df, df, df.iloc[0:0], suppressed, {}, spec.anonymization.method, None,
                        table_hash(df), {}, t0)


def metric_name(method: str, spec) -> str:
    """The name of the utility figure ``method`` reports."""
    if method == "global":
        return spec.anonymization.utility
    if method == "mondrian":
        return "ncp"
    if method == "microaggregation":
        return "sse_share"
    return "none"
