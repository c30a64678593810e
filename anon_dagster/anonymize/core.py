"""The anonymization entry point: ``anonymize(df, spec) -> AnonymizationResult``.

One partition's (already pseudonymized) table goes in; the published rows, the count of
suppressed rows and a JSON transformation record come out. The spec chooses the method
(``anonymization.method``): ``global`` (optimal lattice search + suppression), ``mondrian``,
``microaggregation`` (MDAV on numeric QIs) or ``none``; ``anonymization.suppression`` chooses
whole-row or cell suppression; ``anonymization.pram`` adds PRAM of one categorical column.

A policy no transformation can reach raises :class:`NoSolution` (a UserError naming the
closest node or the parts at fault, and the criterion missed): never a silently weaker output.

When the published rows of a person are linked (``persons``), global recoding with row
suppression searches for k per person: the lattice search picks the optimal node among those
where the persons below k and the failing classes fit in the suppression budget together
(:mod:`anon_dagster.anonymize.lattice`), and removes both; the record's ``person_suppression``
says so. When no node reaches it, the row-level optimum is published and the persons are left
to the release pipeline's person pass (:mod:`anon_dagster.anonymize.persons`), as for the other
methods and for cell suppression, which reach k per person after the fact.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError, HierarchyError, UserError
from ..hierarchies import _as_label
from ..risk.classes import EquivalenceClasses
from ..risk.person import person_codes
from ..risk.utility import joint_label_codes, utility_query_error
from .coding import code_qi, combine, factorize, group
from .criteria import (
    Policy,
    avg_risk_ok,
    sensitive_attributes,
    suppression_budget,
)
from .global_recoding import apply_levels, classes_at, failing_rows
from .lattice import Lattice, QuerySpec, SearchResult
from .local_suppression import local_suppression
from .microaggregation import aggregate, mdav
from .mondrian import MondrianNoSolution, mondrian
from .pram import apply_pram, parse_pram
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
    TransformationRecord,
    Utility,
    breakdown,
    class_histogram,
    table_hash,
)

Progress = Callable[[int, int], None]


class NoSolution(UserError):
    """No transformation reaches the policy within the suppression budget.

    ``details`` names the closest candidate and the criteria it misses (JSON-serializable).
    """

    def __init__(self, message: str, details: dict | None = None):
        super().__init__(message)
        self.details = details or {}


@dataclass
class AnonymizationResult:
    """Published rows, suppressed-row count and transformation record of one anonymization.

    ``data`` keeps the index labels of the kept input rows and every column it was given
    (columns not declared in the spec pass through untouched); suppressed rows are removed.
    """

    data: pd.DataFrame
    record: TransformationRecord
    suppressed: int
    search: SearchResult | None = None
    suppressed_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))


def anonymize(df: pd.DataFrame, spec, progress: Progress | None = None, *,
              persons: pd.Series | None = None, linked_by: tuple[str, ...] | list[str] = ()) -> AnonymizationResult:
    """Anonymize one partition's table as ``spec`` declares (see module docstring).

    ``persons`` is each row's person (by position) when the published columns ``linked_by``
    link the rows of a person: global recoding with row suppression then targets k per person.
    """
    t0 = time.perf_counter()
    an = spec.anonymization
    method = an.method
    policy = Policy.from_spec(spec)
    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    needed = gen + pks + (list(policy.sensitive) if policy.needs_sensitive else [])
    absent = [c for c in needed if c not in df.columns]
    if absent:
        raise DataError(f"{spec.label}: column {absent[0]!r} is declared in the spec but missing from the data")
    n = len(df)
    input_hash = table_hash(df)
    work = df
    extra: dict[str, Any] = {}
    if an.pram is not None:
        pram = parse_pram(an.pram, spec.label)
        if pram.column not in df.columns:
            raise DataError(f"{spec.label}: PRAM column {pram.column!r} is missing from the data")
        work = df.copy()
        work[pram.column], changed = apply_pram(df[pram.column], pram, an.seed)
        extra["pram"] = {**pram.to_dict(), "rows_changed": changed, "seed": an.seed}

    # coded as the risk kernel codes them, with the kind, order and hierarchy the gate measures by
    sens_coded = ([a.code(work[a.name]) for a in sensitive_attributes(spec, policy.sensitive)]
                  if policy.needs_sensitive else [])
    suppressed = np.zeros(n, dtype=bool)
    cells: dict[str, int] = {}
    search: SearchResult | None = None
    metric_value: float | None = None
    if method == "none" or n == 0:
        full = work
    else:
        if policy.k > n:
            raise DataError(
                f"{spec.label}: k={policy.k} is larger than the table ({n} rows): no class can reach it"
            )
        if method == "global":
            linked = persons if an.suppression == "rows" else None
            full, suppressed, cells, search, info = _global(df, work, spec, policy, sens_coded, progress,
                                                            linked, list(linked_by))
            metric_value = search.loss
            extra.update(info)
        elif method == "mondrian":
            full, suppressed, info = _mondrian(work, spec, policy, sens_coded, progress)
            metric_value = info["mondrian"]["ncp"]
            extra.update(info)
        elif method == "microaggregation":
            full, suppressed, info = _microaggregation(work, spec, policy, sens_coded)
            metric_value = info["microaggregation"]["sse_share"]
            extra.update(info)
        else:  # validated by the spec model
            raise UserError(f"unknown anonymization method {method!r}")
    data = full.loc[~suppressed] if suppressed.any() else full
    record = _record(spec, policy, df, full, data, suppressed, cells, method, metric_value,
                     input_hash, extra, t0)
    return AnonymizationResult(data, record, int(suppressed.sum()), search, suppressed)


# ----- methods ----------------------------------------------------------------------------------


def _query_spec(spec, df: pd.DataFrame, work: pd.DataFrame, gen: list[str]) -> QuerySpec | None:
    """The utility query the search minimizes, coded as the gate compares ``df`` (the original)
    with the published table: by label, columns the search does not generalize coded over both
    (``work`` differs from ``df`` by PRAM)."""
    utility = spec.anonymization.utility
    if not utility.startswith("query:"):
        return None
    q = next(q for q in spec.utility_queries if q.name == utility[6:])
    for c in [*q.group_by, q.target]:
        if c not in work.columns:
            raise DataError(f"{spec.label}: utility query {q.name!r} needs column {c!r}, missing from the data")
    n = len(df)

    def both(c: str) -> tuple[np.ndarray, np.ndarray]:
        codes, _ = joint_label_codes(df[c], work[c])
        return codes[:n], codes[n:]

    fixed = [both(c) for c in q.group_by if c not in gen]
    target = both(q.target) if q.target not in gen else (None, None)
    return QuerySpec(
        group_qi=[gen.index(c) for c in q.group_by if c in gen],
        group_fixed=[f[0] for f in fixed],
        target=target[0],
        target_qi=gen.index(q.target) if q.target in gen else None,
        group_fixed_published=[f[1] for f in fixed],
        target_published=target[1],
    )


def _global(df, work, spec, policy, sens_coded, progress, persons=None, linked_by=()):
    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    coded = {c: code_qi(work[c], spec.hierarchies[c]) for c in gen}
    qis = [coded[c] for c in gen] + [code_qi(work[c], None) for c in pks]
    query = _query_spec(spec, df, work, gen)

    def run(linked):
        lattice = Lattice(qis, policy, sens_coded, spec.anonymization.utility, query,
                          [True] * len(gen) + [False] * len(pks), persons=linked)
        return lattice, lattice.search(frontier=spec.anonymization.frontier, progress=progress)

    lattice, search = run(persons)
    per_person = search if persons is not None else None
    if persons is not None and not search.solved:
        # no node reaches k per person within the budget: the row-level optimum, the persons
        # left to the release pipeline's person pass (which says what it would take)
        lattice, search = run(None)
    if not search.solved:
        closest = search.closest
        where = ", ".join(f"{c}={lv}" for c, lv in zip(gen, closest.levels, strict=False)) if closest else "?"
        misses = "; ".join(closest.missing) if closest and closest.missing else "the policy"
        raise NoSolution(
            f"{spec.label}: no generalization satisfies {', '.join(policy.names())} within "
            f"max_suppression={policy.max_suppression:g}: the closest node ({where}) misses {misses}",
            search.to_dict(),
        )
    levels = dict(zip(gen, (int(v) for v in search.levels[: len(gen)]), strict=True))
    row_class, sizes = classes_at(qis, list(search.levels))
    fail, _ = failing_rows(policy, row_class, sizes, sens_coded)
    full = apply_levels(work, spec.hierarchies, levels, coded)
    cells: dict[str, int] = {}
    info: dict[str, Any] = {"levels": levels, "search": search.to_dict()}
    if search.per_person:
        # the persons below k at the node, removed with the failing classes within the budget;
        # counted here: those of them, and their rows, that the failing classes did not remove
        below = lattice.persons_below(lattice.index(search.levels))
        extra = below & ~fail
        info["person_suppression"] = PersonSuppression(
            k=policy.k, linked_by=list(linked_by), persons=int(len(np.unique(person_codes(persons)[extra]))),
            rows=int(extra.sum()), budget_rows=suppression_budget(policy, len(work)), reached=True,
            search_targeted=True).to_json()
        fail = fail | below
    elif per_person is not None:
        info["search"]["k_per_person"] = False
        if per_person.closest is not None:
            info["search"]["k_per_person_closest"] = per_person.closest.to_dict(per_person.qis)
    if spec.anonymization.suppression == "cells" and fail.any():
        importance = {c: spec.columns[c].importance for c in gen}
        # judged as the search judged the node: the attributes with their kind, order or
        # hierarchy, t against the rows published
        celled, celled_counts, still = local_suppression(full, gen, pks, importance, policy, sens_coded,
                                                         candidates=fail)
        if _cells_publish_more(policy, celled, gen + pks, fail, still):
            touched = np.zeros(len(full), dtype=bool)
            for c in gen:
                touched |= (celled[c].astype(str).to_numpy() == "*") & (full[c].astype(str).to_numpy() != "*")
            touched &= ~still
            full, cells, fail = celled, celled_counts, still
            info["cell_suppression"] = {
                "rows_with_cells_suppressed": int(touched.sum()),
                "by_partition_key": breakdown(work, touched, pks),
                "by_query": {q.name: breakdown(work, touched, [c for c in q.group_by if c in work.columns])
                             for q in spec.utility_queries},
            }
    return full, fail, cells, search, info


def _published_classes(table: pd.DataFrame, columns: list[str], rows: np.ndarray) -> int:
    """The number of classes over ``columns`` of the rows ``rows`` of ``table``."""
    if not len(rows):
        return 0
    if not columns:
        return 1
    codes = [factorize(table[c].iloc[rows])[0] for c in columns]
    key, space = combine(codes, [int(c.max()) + 1 for c in codes])
    return len(group(key, space)[2])


def _cells_publish_more(policy: Policy, celled: pd.DataFrame, columns: list[str], counted: np.ndarray,
                        still: np.ndarray) -> bool:
    """Whether cell suppression's table replaces the node's whole-row suppression.

    Every class it publishes meets the policy as the gate measures it (local suppression judges
    against the rows it publishes). Publishing more rows moves the t-closeness reference, so a
    class the search passed may then fail and go whole; and the classes it forms move
    prosecutor_avg. The table replaces the node's row suppression only when it suppresses no
    more rows whole than the search counted (so it stays within the budget) and prosecutor_avg
    holds on it; otherwise the node's rows are suppressed whole, as the search verified.
    """
    if int(still.sum()) > int(counted.sum()):
        return False
    if policy.prosecutor_avg is None:
        return True
    kept = np.flatnonzero(~still)
    return avg_risk_ok(policy, _published_classes(celled, columns, kept), len(kept))


def _check_coverage(work, spec, columns) -> None:
    for c in columns:
        try:
            spec.hierarchies[c].table(pd.unique(work[c]))
        except HierarchyError as exc:
            raise HierarchyError(f"{spec.label}: {exc}") from None


def _mondrian(work, spec, policy, sens_coded, progress):
    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    _check_coverage(work, spec, gen)
    pcodes = [factorize(work[c])[0] for c in pks]

    def part_label(row: int) -> str:
        return ", ".join(f"{c}={work[c].iloc[row]}" for c in pks) or "whole table"

    def run(pol: Policy):
        try:
            return mondrian([(work[c], spec.hierarchies[c]) for c in gen], pol, pcodes, sens_coded,
                            partition_labels=part_label, progress=progress)
        except MondrianNoSolution as exc:
            raise NoSolution(f"{spec.label}: {exc}") from None

    def avg_ok(m) -> bool:
        return avg_risk_ok(policy, m.n_classes, int((~m.suppressed).sum()))

    m = run(policy)
    min_part = policy.k
    if not avg_ok(m):
        # prosecutor_avg is a table-level criterion Mondrian cannot check per cut: raise the
        # minimum part size until it holds (parts of ceil(1/threshold) rows always satisfy it),
        # binary-searching the smallest such size.
        lo, hi = policy.k + 1, max(math.ceil(1.0 / policy.prosecutor_avg - 1e-9), policy.k + 1)
        best = None
        while lo <= hi:
            mid = (lo + hi) // 2
            cand = run(replace(policy, k=mid))
            if avg_ok(cand):
                best, hi = (mid, cand), mid - 1
            else:
                lo = mid + 1
        if best is None:
            raise NoSolution(
                f"{spec.label}: Mondrian cannot reach prosecutor_avg={policy.prosecutor_avg:g} "
                f"(best {m.n_classes / max(int((~m.suppressed).sum()), 1):.4g} with parts of at least {policy.k} rows)"
            )
        min_part, m = best
    full = work.copy()
    for c in gen:
        full[c] = pd.Series(m.columns[c], index=work.index)
    # each class's partition-key values (from its first row), so the boxes can be replayed
    kept = np.flatnonzero(m.row_class >= 0)
    _, first = np.unique(m.row_class[kept], return_index=True)
    reps = kept[first]
    boxes = {"classes": m.n_classes,
             "partition_keys": {c: [_as_label(v) for v in work[c].iloc[reps].tolist()] for c in pks},
             "columns": m.boxes,
             # the cut tree, so a large population is placed by replaying it (cut_tree.py)
             "tree": m.tree.to_json() if m.tree is not None else None}
    info = {"mondrian": {
        "ncp": round(m.ncp, 6), "cuts": m.cuts, "classes": m.n_classes, "min_part_size": min_part,
        "parts_suppressed": m.too_small_parts, "ranges": m.ranges,
        "ranges_truncated": max(m.n_classes - len(m.ranges), 0), "boxes": boxes,
    }}
    return full, m.suppressed, info


def _microaggregation(work, spec, policy, sens_coded):
    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    _check_coverage(work, spec, gen)
    numeric = [c for c in gen if pd.api.types.is_numeric_dtype(work[c].dtype)
               and not pd.api.types.is_bool_dtype(work[c].dtype) and not work[c].isna().any()]
    if not numeric:
        raise UserError(f"{spec.label}: microaggregation needs at least one numeric quasi-identifier without missing values")
    n = len(work)
    k = policy.k
    block_cols = pks + [c for c in gen if c not in numeric]
    if block_cols:
        cols = [factorize(work[c])[0] for c in block_cols]
        key, space = combine(cols, [int(c.max()) + 1 for c in cols])
        _, block, bsizes = group(key, space)
    else:
        block, bsizes = np.zeros(n, dtype=np.int64), np.array([n])
    budget = suppression_budget(policy, n)
    small = bsizes < k
    suppressed = small[block]
    if int(suppressed.sum()) > budget:
        raise NoSolution(
            f"{spec.label}: {int(small.sum())} group(s) of equal {', '.join(block_cols)} have fewer "
            f"than k={k} rows ({int(suppressed.sum())} rows, over the suppression budget of {budget})"
        )
    x = work[numeric].to_numpy(dtype=float)
    groups = np.full(n, -1, dtype=np.int64)
    next_id = 0
    order = np.argsort(block, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(bsizes)])
    for b in np.flatnonzero(~small):
        rows = order[bounds[b]:bounds[b + 1]]
        g = mdav(x[rows], k)
        groups[rows] = g + next_id
        next_id += int(g.max()) + 1
    full = work.copy()
    keep = groups >= 0
    agg = aggregate(work.loc[keep, numeric], numeric, groups[keep] - 0)
    for c in numeric:
        full.loc[keep, c] = agg[c].to_numpy()
    # the policy's other criteria (l, t) on the classes of the rows kept, judged as the lattice
    # search judges a node and the gate measures the published table: the attributes with their
    # kind, order or hierarchy, t against the rows published (the small blocks left out, the
    # failing classes set aside until none more fails)
    rows = np.flatnonzero(keep)
    fail = np.zeros(n, dtype=bool)
    kept_classes = 0
    if len(rows):
        codes = [factorize(full[c].iloc[rows])[0] for c in gen + pks]
        key, space = combine(codes, [int(c.max()) + 1 for c in codes])
        _, row_class, sizes = group(key, space)
        kept_sens = [replace(a, codes=a.codes[rows]) for a in sens_coded]
        fail_kept, ev = failing_rows(policy, row_class, sizes, kept_sens)
        fail[rows] = fail_kept
        kept_classes = len(sizes) - int(ev.failing.sum())
    suppressed = suppressed | fail
    if int(suppressed.sum()) > budget:
        raise NoSolution(
            f"{spec.label}: after microaggregation {int(suppressed.sum())} rows miss "
            f"{', '.join(policy.names())}, over the suppression budget of {budget}"
        )
    if not avg_risk_ok(policy, kept_classes, n - int(suppressed.sum())):
        raise NoSolution(
            f"{spec.label}: after microaggregation prosecutor_avg is "
            f"{kept_classes / max(n - int(suppressed.sum()), 1):.4g} > {policy.prosecutor_avg:g} "
            f"(groups of k={k} to {2 * k - 1} rows)"
        )
    xs = (x - x.mean(axis=0)) / np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
    xa = full[numeric].to_numpy(dtype=float)
    xa = (xa - x.mean(axis=0)) / np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
    sst = float((xs[keep] ** 2).sum())
    sse = float(((xs[keep] - xa[keep]) ** 2).sum())
    info = {"microaggregation": {
        "algorithm": "MDAV", "columns": numeric, "blocks_by": block_cols,
        "groups": next_id, "sse_share": round(sse / sst, 6) if sst else 0.0,
    }}
    return full, suppressed, info


# ----- record -----------------------------------------------------------------------------------


def _record(spec, policy: Policy, df, full, data, suppressed, cells, method, metric_value,
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
        utility=Utility(metric=_metric_name(method, spec), value=metric_value, queries=queries),
        pram=entry(PramInfo, "pram"),
        levels=extra.get("levels"),
        search=extra.get("search"),
        cell_suppression=entry(CellSuppression, "cell_suppression"),
        mondrian=entry(MondrianInfo, "mondrian"),
        microaggregation=entry(MicroaggregationInfo, "microaggregation"),
        person_suppression=entry(PersonSuppression, "person_suppression"),
        input_hash=input_hash,
        output_hash=table_hash(data),
        elapsed_s=round(time.perf_counter() - t0, 4),
        # entries a method adds that the record does not declare are kept, not dropped
        extra={k: v for k, v in extra.items() if k not in _METHOD_ENTRIES},
    )


_METHOD_ENTRIES = ("pram", "levels", "search", "cell_suppression", "mondrian", "microaggregation",
                   "person_suppression")


def empty_record(df: pd.DataFrame, spec) -> TransformationRecord:
    """The record of a table of which nothing is published: every row of ``df`` suppressed.

    For a partition no anonymization (not even a relaxed one) can produce: the release pipeline
    publishes an empty table, and the gate and the report still read a complete record.
    """
    t0 = time.perf_counter()
    policy = Policy.from_spec(spec)
    suppressed = np.ones(len(df), dtype=bool)
    return _record(spec, policy, df, df, df.iloc[0:0], suppressed, {}, spec.anonymization.method, None,
                   table_hash(df), {}, t0)


def _metric_name(method: str, spec) -> str:
    if method == "global":
        return spec.anonymization.utility
    if method == "mondrian":
        return "ncp"
    if method == "microaggregation":
        return "sse_share"
    return "none"
