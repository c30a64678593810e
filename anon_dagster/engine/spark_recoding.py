"""Global recoding on Spark: Spark aggregates the bottom frequency table, the project's lattice
search decides on the driver, Spark applies the node (broadcast label maps, the failing classes
removed by an anti-join)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import DataError
from .base import UnsupportedOnEngine
from .spark_cells import blank_cells
from .spark_frames import COUNT_COLUMN, DriverLimit
from .spark_labels import apply_node
from .spark_persons import PERSON_COLUMN, drop_rows, linked_by, with_persons
from .spark_record import record_only, spark_record
from .spark_results import SparkAnonymized, SparkPseudonymized
from .spark_session import SparkDriver


@dataclass
class _Table:
    """The search's frequency table at ``floor`` (levels of the generalized QIs) and its coding:
    ``source`` the rows with the raised QIs at their labels, ``qis`` the lattice's QIs."""

    floor: dict[str, int]
    raised: dict[str, int]
    source: Any
    schema: pa.Schema
    freq: pd.DataFrame
    counts: np.ndarray
    coded: dict[str, Any]
    qis: list[Any]
    sens_coded: list[Any]
    offsets: list[int]
    whole: list[Any] | None


def anonymize_global(engine: SparkDriver, spec: Any, pseudonymized: SparkPseudonymized,
                     progress: Any) -> SparkAnonymized:
    """Optimal global recoding on Spark (method ``global``, or ``none``): the lattice search on
    the driver over the bottom frequency table
    (:meth:`~anon_dagster.anonymize.lattice.Lattice.from_frequencies`), the chosen node applied by
    Spark (:func:`apply_node`).

    The table's size is counted on Spark first (:meth:`~.spark_session.SparkDriver.check_fits`).
    With ``anonymization.min_levels`` the table is built at those levels (:func:`at_min_levels`) and
    the search runs over the sub-lattice above them, as the pandas engine runs it
    (:func:`~anon_dagster.anonymize.global_method.run_global`); one over ``max_driver_cells`` is
    refused before it is written. Without them, a bottom table over ``max_driver_cells`` has the
    lattice's nodes judged on Spark (:mod:`.spark_node_judging`): the search runs over the
    sub-lattices whose tables fit, and chooses the node the search over the rows chooses."""
    from ..anonymize.criteria import Policy
    from ..anonymize.global_method import check_solved, minimum_levels, searched_query

    t0 = time.perf_counter()
    df = pseudonymized.df
    original = pseudonymized.original  # before PRAM: what the record compares with and hashes
    an = spec.anonymization
    policy = Policy.from_spec(spec)
    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    sens = list(policy.sensitive) if policy.needs_sensitive else []
    needed = gen + pks + sens
    absent = [c for c in needed if c not in df.columns]
    if absent:
        raise DataError(f"{spec.label}: column {absent[0]!r} is declared but missing from the data")
    by_query = [c for q in spec.utility_queries for c in q.group_by if c in df.columns]
    metric_query = searched_query(spec, df.columns) if an.method == "global" else None
    if metric_query is not None:  # the search's metric: its prevalences counted from the table
        by_query += [*metric_query.group_by, metric_query.target]
    # k per person (global recoding, row suppression): the table counts rows per person too
    linked = linked_by(spec, df) if an.method == "global" and an.suppression == "rows" else []
    bottom_columns = list(dict.fromkeys(needed + by_query + linked))
    floor = minimum_levels(spec) if an.method == "global" else {c: 0 for c in gen}
    raised = {c: level for c, level in floor.items() if level > 0}
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
    judged = None
    if raised:
        source, full = at_min_levels(engine, spec, df, raised)
        engine.check_fits(source, bottom_columns, what=what, ways_out=ways_out)
        tables = [_table_at(engine, spec, policy, source, full, floor, bottom_columns, linked, sens, what)]
    else:
        try:
            engine.check_fits(df, bottom_columns, what=what, ways_out=ways_out)
        except DriverLimit as refused:
            if an.method != "global":
                raise
            if metric_query is not None:
                raise UnsupportedOnEngine(
                    f"anonymization.utility: {an.utility} (a utility query as the search's metric) over a bottom "
                    f"frequency table larger than max_driver_cells ({refused})",
                    hint="declare anonymization.min_levels, raise max_driver_cells, or use --engine pandas") from None
            judged, tables = _judged_tables(engine, spec, policy, df, bottom_columns, linked, sens, what, refused)
        else:
            tables = [_table_at(engine, spec, policy, df, {}, floor, bottom_columns, linked, sens, what)]
    first = tables[0]
    n = int(first.counts.sum())
    input_hash = engine.digest(original)
    if an.method == "none" or n == 0:
        return record_only(engine, spec, policy, df, first.freq, first.counts, input_hash, t0, an.method,
                           original=original)
    if policy.k > n:
        raise DataError(f"{spec.label}: k={policy.k} is larger than the table ({n} rows): no class can reach it")

    def run(per_person: bool) -> tuple[_Table, Any, Any, Any]:
        found = [(t, *_search(t, policy, an, gen, pks, linked if per_person else [], progress, spec))
                 for t in tables]
        if judged is None:
            t, lattice, result = found[0]
            return t, lattice, result, result.above(t.offsets)
        from .spark_node_judging import best_of

        size = int(np.prod([float(first.whole[j][0].n_levels) if first.whole[j] else float(q.n_levels)
                            for j, q in enumerate(first.qis)]))
        win, search = best_of([(lattice, result, t.offsets) for t, lattice, result in found], size)
        return found[win][0], found[win][1], found[win][2], search

    # ``found`` names the nodes in the lattice searched, ``search`` in the whole lattice
    table, lattice, found, search = run(bool(linked))
    per_person = search if linked else None
    if linked and not found.solved:
        # as the pandas engine: the row-level optimum, its persons below k left to the person
        # pass after the method (spark_anonymize), which says what it would take
        table, lattice, found, search = run(False)
    check_solved(spec, policy, search)
    search_entry = search.to_dict()
    if per_person is not None and not search.per_person:
        search_entry["k_per_person"] = False
        if per_person.closest is not None:
            search_entry["k_per_person_closest"] = per_person.closest.to_dict(per_person.qis)
    if judged is not None:
        search_entry["judged_on_spark"] = judged.to_json(list(search.qis), gen)
    freq, counts, coded, raised, source, schema = (table.freq, table.counts, table.coded, table.raised,
                                                   table.source, table.schema)
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
                          t0, original=original, levels=levels, search=search_entry,
                          cells=cells.cells if cells is not None else None,
                          cell_suppression=cells.info if cells is not None else None,
                          person_suppression=person_section)
    return SparkAnonymized(published, record, int(counts[fail_rows].sum()), categories=categories)


def _table_at(engine: SparkDriver, spec: Any, policy: Any, source: Any, full: dict[str, Any],
              floor: dict[str, int], columns: list[str], linked: list[str], sens: list[str], what: str,
              whole: bool = False) -> _Table:
    """The search's frequency table of ``source`` (the rows with the QIs raised in ``floor`` at
    their labels, ``full`` those QIs coded over their values) and the lattice's QIs over it;
    ``whole``: the metric's figures of the whole lattice carried by the raised QIs."""
    from ..anonymize.coding import code_qi
    from ..anonymize.criteria import sensitive_attributes
    from ..anonymize.lattice import qi_above

    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    raised = {c: level for c, level in floor.items() if level > 0}
    freq, schema = engine.frequencies(source, columns, what=what)
    if linked:
        freq = with_persons(engine, spec, freq, linked, what=what)
    counts = freq[COUNT_COLUMN].to_numpy(np.int64) if len(freq) else np.zeros(0, dtype=np.int64)
    coded = {c: qi_above(full[c], raised[c], freq[c]) if c in raised else code_qi(freq[c], spec.hierarchies[c])
             for c in gen}
    qis = [coded[c] for c in gen] + [code_qi(freq[c], None) for c in pks]
    sens_coded = [a.code(freq[a.name]) for a in sensitive_attributes(spec, policy.sensitive)] if sens else []
    offsets = [floor.get(c, 0) for c in gen] + [0] * len(pks)
    carried = ([(full[c], raised[c]) if c in raised else None for c in gen] + [None] * len(pks)) if whole else None
    return _Table(floor, raised, source, schema, freq, counts, coded, qis, sens_coded, offsets, carried)


def _search(table: _Table, policy: Any, an: Any, gen: list[str], pks: list[str], linked: list[str],
            progress: Any, spec: Any = None) -> tuple[Any, Any]:
    """The lattice over ``table`` and its search (k per person with ``linked``); with a utility
    query as the metric, the query coded over the table's rows (:func:`~anon_dagster.anonymize.
    global_method.query_spec`, the frequency rows standing for the original and the published
    rows alike: the method perturbs no column here)."""
    from ..anonymize.global_method import query_spec
    from ..anonymize.lattice import Lattice

    persons = table.freq[PERSON_COLUMN] if linked else None
    query = query_spec(spec, table.freq, table.freq, gen) if spec is not None else None
    lattice = Lattice.from_frequencies(table.qis, table.counts, policy, table.sens_coded, an.utility,
                                       generalized=[True] * len(gen) + [False] * len(pks), persons=persons,
                                       whole=table.whole, query=query)
    return lattice, lattice.search(frontier=an.frontier, progress=progress)


def _judged_tables(engine: SparkDriver, spec: Any, policy: Any, df: Any, columns: list[str], linked: list[str],
                   sens: list[str], what: str, refused: DriverLimit) -> tuple[Any, list[_Table]]:
    """The nodes judged on Spark (:func:`~.spark_node_judging.judge_nodes`) and the search's table
    at each minimal node whose table fits."""
    from .spark_frames import ROW_COLUMN
    from .spark_node_judging import judge_nodes

    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    full, fields = coded_values(engine, spec, df, gen)
    width = len(columns) + 1 + (1 if ROW_COLUMN in df.columns else 0)  # the count and the first row
    judged = judge_nodes(engine, policy, df, gen, pks, columns, full, fields, width, refused)
    if not judged.minimal:
        from ..anonymize.outcome import NoSolution

        # every node is over the budget, so each has more classes than a node meeting the policy
        raise NoSolution(
            f"{spec.label}: no generalization satisfies {', '.join(policy.names())} within "
            f"max_suppression={policy.max_suppression:g}: every node, the top's included, has more than "
            f"{judged.bound:,} classes, the most a node meeting it can have over {judged.rows:,} rows "
            "(nodes judged on Spark)", {"judged_on_spark": judged.to_json([*gen, *pks], gen)})
    tables = []
    for node in judged.minimal:
        floor = dict(zip(gen, node, strict=True))
        raised = {c: level for c, level in floor.items() if level > 0}
        source, _ = at_min_levels(engine, spec, df, raised, known=(full, fields))
        tables.append(_table_at(engine, spec, policy, source, full, floor, columns, linked, sens,
                                f"the frequency table at the node ({', '.join(f'{c}={v}' for c, v in floor.items())})",
                                whole=True))
    return judged, tables


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


def coded_values(engine: SparkDriver, spec: Any, df: Any, columns: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each of ``columns`` coded over its distinct values (:func:`~anon_dagster.anonymize.coding.code_qi`,
    its value counts the rows of each) and its Arrow field."""
    from ..anonymize.coding import code_qi

    full: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    for c in columns:
        # in the order of their first rows: the labels are then coded in the order the pandas
        # engine codes them from the rows
        values, schema = engine.frequencies(df, [c], what=f"the distinct values of column {c!r}")
        qi = code_qi(values[c], spec.hierarchies[c])
        weights = values[COUNT_COLUMN].to_numpy(np.float64) if len(values) else np.zeros(0)
        qi._counts = np.rint(np.bincount(qi.codes, weights=weights, minlength=len(qi.uniques))).astype(np.int64)
        full[c] = qi
        fields[c] = schema.field(c)
    return full, fields


def at_min_levels(engine: SparkDriver, spec: Any, df: Any, raised: dict[str, int],
                  known: tuple[dict[str, Any], dict[str, Any]] | None = None) -> tuple[Any, dict[str, Any]]:
    """``df`` with each column of ``raised`` replaced by its label at the level given (a broadcast
    join with the label map of the column's distinct values, as :func:`apply_node` applies a
    node), and each such column coded over its distinct values (:func:`coded_values`, or
    ``known``: those already coded, and their fields)."""
    full, fields = known if known is not None else coded_values(engine, spec, df, list(raised))
    out, _ = apply_node(engine, df, pa.schema([fields[c] for c in raised]), full, dict(raised), [], pd.DataFrame(),
                        np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool))
    return out, {c: full[c] for c in raised} if known is None else full


__all__ = ["anonymize_global", "apply_node", "at_min_levels", "coded_values"]
