"""Microaggregation as :func:`anon_dagster.anonymize.anonymize` runs it: MDAV on the numeric
quasi-identifiers within the blocks of equal partition keys and categorical QIs, then the
policy's other criteria judged on the classes kept."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ..errors import UserError
from .coding import combine, factorize, group
from .criteria import avg_risk_ok, suppression_budget
from .global_recoding import failing_rows
from .microaggregation import aggregate, mdav
from .mondrian_method import check_coverage
from .outcome import NoSolution


def run_microaggregation(work, spec, policy, sens_coded):
    """The aggregated table, the rows suppressed and the record's ``microaggregation`` entry."""
    gen, pks = list(spec.generalized_qis), list(spec.partition_keys)
    check_coverage(work, spec, gen)
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
