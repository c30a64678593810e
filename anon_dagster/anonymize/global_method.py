"""Global recoding as :func:`anon_dagster.anonymize.anonymize` runs it: the optimal lattice
search (k per person when the rows of a person are linked), the node's recoding, and the failing
classes suppressed whole or, with cell suppression, cell by cell when that publishes more."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ..risk.person import person_codes
from ..risk.utility import joint_label_codes
from .coding import code_qi, combine, factorize, group
from .criteria import Policy, avg_risk_ok, suppression_budget
from .global_recoding import apply_levels, classes_at, failing_rows
from .lattice import Lattice, QuerySpec, SearchResult, qi_above
from .local_suppression import local_suppression
from .outcome import NoSolution
from .record import PersonSuppression, breakdown


def searched_query(spec, columns=None):
    """The utility query the search minimizes (``anonymization.utility: query:<name>``), or None;
    with ``columns`` (the data's), a DataError naming a column it needs that they lack."""
    utility = spec.anonymization.utility
    if not utility.startswith("query:"):
        return None
    q = next(q for q in spec.utility_queries if q.name == utility[6:])
    for c in [*q.group_by, q.target] if columns is not None else []:
        if c not in columns:
            raise DataError(f"{spec.label}: utility query {q.name!r} needs column {c!r}, missing from the data")
    return q


def query_spec(spec, df: pd.DataFrame, work: pd.DataFrame, gen: list[str]) -> QuerySpec | None:
    """The utility query the search minimizes, coded as the gate compares ``df`` (the original)
    with the published table: by label, columns the search does not generalize coded over both
    (``work`` differs from ``df`` by PRAM)."""
    q = searched_query(spec, work.columns)
    if q is None:
        return None
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


def minimum_levels(spec) -> dict[str, int]:
    """``anonymization.min_levels``: the level each generalized QI starts from (0 when it is not
    declared there), in the order of ``spec.generalized_qis``."""
    declared = spec.anonymization.min_levels or {}
    return {c: int(declared.get(c, 0)) for c in spec.generalized_qis}


def run_global(df, work, spec, policy, sens_coded, progress, persons=None, linked_by=()):
    """The recoded table, the rows suppressed whole, the cells suppressed by column, the search
    and the record's entries (``levels``, ``search``, ``cell_suppression``, ``person_suppression``).

    With ``anonymization.min_levels`` the search runs over the sub-lattice above those levels
    (:func:`~.lattice.qi_above`): the lattice of the table generalized to them, as the Spark
    engine builds it; the search's nodes are named by their levels in the whole lattice."""
    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    coded = {c: code_qi(work[c], spec.hierarchies[c]) for c in gen}
    floor = minimum_levels(spec)
    offsets = [floor[c] for c in gen] + [0] * len(pks)
    qis = [qi_above(coded[c], floor[c]) for c in gen] + [code_qi(work[c], None) for c in pks]
    query = query_spec(spec, df, work, gen)

    def run(linked):
        lattice = Lattice(qis, policy, sens_coded, spec.anonymization.utility, query,
                          [True] * len(gen) + [False] * len(pks), persons=linked)
        return lattice, lattice.search(frontier=spec.anonymization.frontier, progress=progress)

    # ``found`` names the nodes in the lattice searched, ``search`` in the whole lattice
    lattice, found = run(persons)
    per_person = found.above(offsets) if persons is not None else None
    if persons is not None and not found.solved:
        # no node reaches k per person within the budget: the row-level optimum, the persons
        # left to the release pipeline's person pass (which says what it would take)
        lattice, found = run(None)
    search = found.above(offsets)
    check_solved(spec, policy, search)
    levels = dict(zip(gen, (int(v) for v in search.levels[: len(gen)]), strict=True))
    row_class, sizes = classes_at(qis, list(found.levels))
    fail, _ = failing_rows(policy, row_class, sizes, sens_coded)
    full = apply_levels(work, spec.hierarchies, levels, coded)
    cells: dict[str, int] = {}
    info: dict[str, Any] = {"levels": levels, "search": search.to_dict()}
    if search.per_person:
        # the persons below k at the node, removed with the failing classes within the budget;
        # counted here: those of them, and their rows, that the failing classes did not remove
        below = lattice.persons_below(lattice.index(found.levels))
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


def check_solved(spec, policy: Policy, search: SearchResult) -> None:
    """Raise :class:`NoSolution` naming the closest node and what it misses when the lattice
    search found no node meeting the policy (on every engine that runs the search)."""
    if search.solved:
        return
    gen = list(spec.generalized_qis)
    closest = search.closest
    where = ", ".join(f"{c}={lv}" for c, lv in zip(gen, closest.levels, strict=False)) if closest else "?"
    misses = "; ".join(closest.missing) if closest and closest.missing else "the policy"
    above = " at or above anonymization.min_levels" if search.min_levels else ""
    raise NoSolution(
        f"{spec.label}: no generalization{above} satisfies {', '.join(policy.names())} within "
        f"max_suppression={policy.max_suppression:g}: the closest node ({where}) misses {misses}",
        search.to_dict(),
    )


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
