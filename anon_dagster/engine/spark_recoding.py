"""Global recoding on Spark: Spark aggregates the bottom frequency table, the project's lattice
search decides on the driver, Spark applies the node (broadcast label maps, the failing classes
removed by an anti-join)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import DataError
from .base import UnsupportedOnEngine
from .spark_cells import blank_cells
from .spark_frames import COUNT_COLUMN, arrow_values, lookup_frame, null_safe
from .spark_persons import PERSON_COLUMN, drop_rows, linked_by, with_persons
from .spark_record import record_only, spark_record
from .spark_results import SparkAnonymized, SparkPseudonymized
from .spark_session import SparkDriver


def anonymize_global(engine: SparkDriver, spec: Any, pseudonymized: SparkPseudonymized,
                     progress: Any) -> SparkAnonymized:
    """Optimal global recoding on Spark (method ``global``, or ``none``): the lattice search on
    the driver over the bottom frequency table
    (:meth:`~anon_dagster.anonymize.lattice.Lattice.from_frequencies`), the chosen node applied by
    Spark (:func:`apply_node`).

    The table's size is counted on Spark first (:meth:`~.spark_session.SparkDriver.check_fits`):
    one over ``max_driver_cells`` is refused before it is written. With
    ``anonymization.min_levels`` the table is built at those levels (:func:`at_min_levels`) and
    the search runs over the sub-lattice above them, as the pandas engine runs it
    (:func:`~anon_dagster.anonymize.global_method.run_global`)."""
    from ..anonymize.coding import code_qi
    from ..anonymize.criteria import Policy, sensitive_attributes
    from ..anonymize.global_method import check_solved, minimum_levels
    from ..anonymize.lattice import Lattice, qi_above

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
    # k per person (global recoding, row suppression): the table counts rows per person too
    linked = linked_by(spec, df) if an.method == "global" and an.suppression == "rows" else []
    bottom_columns = list(dict.fromkeys(needed + by_query + linked))
    floor = minimum_levels(spec) if an.method == "global" else {c: 0 for c in gen}
    raised = {c: level for c, level in floor.items() if level > 0}
    source, full = at_min_levels(engine, spec, df, raised) if raised else (df, {})
    budget = ("raise max_driver_cells (SparkEngine(max_driver_cells=...), EngineResource(max_driver_cells=...)) "
              "on a driver with the memory for it, or declare ")
    if raised:
        what = ("the frequency table at anonymization.min_levels (the QIs at those levels, the partition keys "
                "and the sensitive attributes)")
        ways_out = budget + "higher anonymization.min_levels (the search starts from coarser levels)"
    else:
        what = "the bottom frequency table (the QIs at level 0, the partition keys and the sensitive attributes)"
        ways_out = budget + ("anonymization.min_levels (the search starts from those levels and the table is "
                             "built on Spark at them)")
    engine.check_fits(source, bottom_columns, what=what, ways_out=ways_out)
    freq, schema = engine.frequencies(source, bottom_columns, what=what)
    if linked:
        freq = with_persons(engine, spec, freq, linked, what=what)
    counts = freq[COUNT_COLUMN].to_numpy(np.int64) if len(freq) else np.zeros(0, dtype=np.int64)
    n = int(counts.sum())
    input_hash = engine.digest(df)
    if an.method == "none" or n == 0:
        return record_only(engine, spec, policy, df, freq, counts, input_hash, t0, an.method)
    if policy.k > n:
        raise DataError(f"{spec.label}: k={policy.k} is larger than the table ({n} rows): no class can reach it")
    coded = {c: qi_above(full[c], raised[c], freq[c]) if c in raised else code_qi(freq[c], spec.hierarchies[c])
             for c in gen}
    qis = [coded[c] for c in gen] + [code_qi(freq[c], None) for c in pks]
    sens_coded = [a.code(freq[a.name]) for a in sensitive_attributes(spec, policy.sensitive)] if sens else []
    offsets = [floor[c] for c in gen] + [0] * len(pks)

    def run(persons: Any) -> tuple[Any, Any]:
        lattice = Lattice.from_frequencies(qis, counts, policy, sens_coded, an.utility,
                                           generalized=[True] * len(gen) + [False] * len(pks), persons=persons)
        return lattice, lattice.search(frontier=an.frontier, progress=progress)

    # ``found`` names the nodes in the lattice searched, ``search`` in the whole lattice
    lattice, found = run(freq[PERSON_COLUMN] if linked else None)
    if linked and not found.solved:
        # as the pandas engine: the row-level optimum; when it exists, its persons below k go to
        # the person pass after the search, which the Spark engine does not run
        lattice, found = run(None)
        check_solved(spec, policy, found.above(offsets))
        raise UnsupportedOnEngine(
            "k per person when no generalization reaches it within the suppression budget (the persons "
            "below k removed after the search)", hint="raise anonymization.max_suppression, or --engine pandas")
    search = found.above(offsets)
    check_solved(spec, policy, search)
    levels = dict(zip(gen, (int(v) for v in search.levels[: len(gen)]), strict=True))
    row_class, sizes, failing = lattice.failing_classes(found.levels)
    fail_rows = failing[row_class]
    person_section = None
    if search.per_person:
        # the persons below k at the node, removed with the failing classes within the budget
        extra = lattice.persons_below(lattice.index(found.levels)) & ~fail_rows
        person_section = person_suppression(spec, policy, freq, counts, extra, linked, n)
        fail_rows = fail_rows | extra
        source = drop_rows(engine, source, schema, freq, extra, bottom_columns)
    above = dict(zip(gen, (int(v) for v in found.levels[: len(gen)]), strict=True))
    cells = None
    if an.suppression == "cells" and fail_rows.any():
        from .spark_cells import mark_cells, plan_cells

        cells = plan_cells(engine, spec, policy, freq, counts, coded, above, raised, pks, fail_rows, bottom_columns)
    if cells is None:
        published, categories = apply_node(engine, source, schema, coded, above, pks, freq, row_class, failing)
    else:
        # the decision joined on the values before the node's labels replace them
        marked = mark_cells(engine, source, schema, freq, gen + pks, cells)
        published, categories = apply_node(engine, marked, schema, coded, above, pks, freq, row_class,
                                           np.zeros_like(failing))
        published = blank_cells(published, cells)
        fail_rows = cells.still
        for c in cells.starred:
            if c in categories and "*" not in categories[c]:
                categories[c] = [*categories[c], "*"]  # as the pandas engine adds the category
    for c in raised:
        if above[c] == 0:  # published at its minimum level, applied before the frequency table
            categories[c] = [str(v) for v in coded[c].labels[0]]
    published = published.persist()  # read by the record, then by every check of the gate
    kept = sizes[~failing] if cells is None else cells.sizes
    if person_section is not None:
        kept = np.bincount(row_class, weights=np.where(fail_rows, 0, counts), minlength=len(sizes))
        kept = np.rint(kept[kept > 0]).astype(np.int64)
    record = spark_record(engine, spec, policy, freq, counts, fail_rows, kept, search.loss, input_hash, published,
                          t0, original=df, levels=levels, search=search.to_dict(),
                          cells=cells.cells if cells is not None else None,
                          cell_suppression=cells.info if cells is not None else None,
                          person_suppression=person_section)
    return SparkAnonymized(published, record, int(counts[fail_rows].sum()), categories=categories)


def person_suppression(spec: Any, policy: Any, freq: pd.DataFrame, counts: np.ndarray, extra: np.ndarray,
                       linked: list[str], n: int) -> dict[str, Any]:
    """The record's ``person_suppression`` entry of a search that targeted k per person, as
    :func:`~anon_dagster.anonymize.global_method.run_global` writes it: the persons below k, and
    their rows, that the failing classes did not remove (``extra``, by frequency row)."""
    from ..anonymize.criteria import suppression_budget
    from ..anonymize.record import PersonSuppression
    from ..risk.person import person_codes

    persons = int(len(np.unique(person_codes(freq[PERSON_COLUMN])[extra])))
    return PersonSuppression(k=policy.k, linked_by=list(linked), persons=persons, rows=int(counts[extra].sum()),
                             budget_rows=suppression_budget(policy, n), reached=True,
                             search_targeted=True).to_json()


def at_min_levels(engine: SparkDriver, spec: Any, df: Any, raised: dict[str, int]) -> tuple[Any, dict[str, Any]]:
    """``df`` with each column of ``raised`` replaced by its label at the level given (a broadcast
    join with the label map of the column's distinct values, as :func:`apply_node` applies a
    node), and each such column coded over its distinct values
    (:func:`~anon_dagster.anonymize.coding.code_qi`)."""
    from ..anonymize.coding import code_qi

    full: dict[str, Any] = {}
    fields = []
    for c in raised:
        # in the order of their first rows: the labels are then coded in the order the pandas
        # engine codes them from the rows
        values, schema = engine.frequencies(df, [c], what=f"the distinct values of column {c!r}")
        full[c] = code_qi(values[c], spec.hierarchies[c])
        fields.append(schema.field(c))
    out, _ = apply_node(engine, df, pa.schema(fields), full, dict(raised), [], pd.DataFrame(),
                        np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool))
    return out, full


def apply_node(engine: SparkDriver, df: Any, schema: pa.Schema, coded: dict[str, Any], levels: dict[str, int],
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
        lookup = lookup_frame(engine.spark, {"__value": arrow_values(qi.uniques, schema.field(c).type),
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
        failing_keys = lookup_frame(engine.spark, keys, casts)
        out = out.join(F.broadcast(failing_keys), on=null_safe(out, failing_keys, pairs), how="left_anti")
    return out, categories


__all__ = ["anonymize_global", "apply_node", "at_min_levels"]
