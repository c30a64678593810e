"""The anonymization entry point: ``anonymize(df, spec) -> AnonymizationResult``.

One partition's (already pseudonymized) table goes in; the published rows, the count of
suppressed rows and a JSON transformation record come out. The spec chooses the method
(``anonymization.method``): ``global`` (optimal lattice search + suppression), ``mondrian``,
``microaggregation`` (MDAV on numeric QIs), ``synthetic`` (rows drawn from a sequential CART
model of the table, or a table of another generator: :mod:`.synthetic_method`) or ``none``; ``anonymization.suppression`` chooses
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

This module checks the input, applies PRAM and dispatches to the method: global recoding
(:mod:`.global_method`), Mondrian (:mod:`.mondrian_method`), microaggregation
(:mod:`.microaggregation_method`); the record is built by :mod:`.record_builder`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError, UserError
from .criteria import Policy, sensitive_attributes
from .global_method import run_global
from .lattice import SearchResult
from .microaggregation_method import run_microaggregation
from .mondrian_method import run_mondrian
from .outcome import AnonymizationResult, NoSolution, Progress
from .pram import apply_pram, parse_pram
from .record import table_hash
from .record_builder import build_record, empty_record
from .record_builder import metric_name as _metric_name
from .synthetic_method import run_synthetic

__all__ = ["AnonymizationResult", "NoSolution", "Progress", "_metric_name", "anonymize", "empty_record"]


def anonymize(df: pd.DataFrame, spec, progress: Progress | None = None, *,
              persons: pd.Series | None = None, linked_by: tuple[str, ...] | list[str] = (),
              synthetic_table: pd.DataFrame | None = None) -> AnonymizationResult:
    """Anonymize one partition's table as ``spec`` declares (see module docstring).

    ``persons`` is each row's person (by position) when the published columns ``linked_by``
    link the rows of a person: global recoding with row suppression then targets k per person.
    ``synthetic_table``: the synthetic table a Dagster asset supplies
    (``anonymization.synthetic.table: {asset: key}``, :func:`.synthetic_method.run_synthetic`).
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
    if method == "synthetic":  # rows drawn from a model of the table: nothing suppressed, no class searched
        full, info = run_synthetic(work, spec, input_hash, synthetic_table)
        extra.update(info)
        kept = np.zeros(n, dtype=bool)
        record = build_record(spec, policy, df, full, full, kept, {}, method, None, input_hash, extra, t0)
        return AnonymizationResult(full, record, 0, None, kept)
    if method == "none" or n == 0:
        full = work
    else:
        if policy.k > n:
            raise DataError(
                f"{spec.label}: k={policy.k} is larger than the table ({n} rows): no class can reach it"
            )
        if method == "global":
            linked = persons if an.suppression == "rows" else None
            full, suppressed, cells, search, info = run_global(df, work, spec, policy, sens_coded, progress,
                                                               linked, list(linked_by))
            metric_value = search.loss
            extra.update(info)
        elif method == "mondrian":
            full, suppressed, info = run_mondrian(work, spec, policy, sens_coded, progress)
            metric_value = info["mondrian"]["ncp"]
            extra.update(info)
        elif method == "microaggregation":
            full, suppressed, info = run_microaggregation(work, spec, policy, sens_coded)
            metric_value = info["microaggregation"]["sse_share"]
            extra.update(info)
        else:  # validated by the spec model
            raise UserError(f"unknown anonymization method {method!r}")
    data = full.loc[~suppressed] if suppressed.any() else full
    record = build_record(spec, policy, df, full, data, suppressed, cells, method, metric_value,
                          input_hash, extra, t0)
    return AnonymizationResult(data, record, int(suppressed.sum()), search, suppressed)
