"""Local (cell) suppression with per-column importance, in the manner of sdcMicro's
``localSuppression``.

Definition. Instead of removing the rows of classes that miss the policy, some of their QI
cells are replaced by ``*`` until their classes satisfy it. Columns are taken in increasing
``importance`` (``columns.<name>.importance`` in the spec; a higher importance is suppressed
later; ties: the column with more distinct values first, as it splits classes most): in each
step, the cells of that column are suppressed in the rows whose class still misses the policy,
then classes are recomputed. A suppressed cell is the value ``*`` (equal to ``*`` anywhere else
in that column, as an analyst would read it). Rows still failing once every generalizable QI is
suppressed are returned so the caller can suppress them whole (within the budget). Partition
keys are never suppressed.

Criteria. "Misses the policy" is judged exactly as the lattice search judges a node and as the
release gate measures the published table
(:func:`~anon_dagster.anonymize.global_recoding.failing_rows`, the risk kernel's figures): the
l variants on each class's sensitive values, t-closeness with the distance of the attribute's
kind (total variation for a nominal attribute, ordered EMD for an ordinal or numeric one,
hierarchical EMD with a sensitive hierarchy) against the distribution of the rows that would be
published, the rows still failing set aside
(:func:`~anon_dagster.anonymize.criteria.published_evaluation`). So the rows returned as
passing are the table the gate measures, and every class of them meets the policy there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..hierarchies import TOP
from ..risk.sensitive import CodedSensitive
from .coding import combine, factorize, group
from .criteria import Policy
from .global_recoding import failing_rows


def local_suppression(df: pd.DataFrame, qis: Sequence[str], fixed: Sequence[str],
                      importance: Mapping[str, float], policy: Policy,
                      sensitive: Sequence[CodedSensitive | np.ndarray] = (),
                      candidates: np.ndarray | None = None
                      ) -> tuple[pd.DataFrame, dict[str, int], np.ndarray]:
    """Suppress cells of ``qis`` until classes over ``qis`` + ``fixed`` satisfy ``policy`` as
    the gate measures the published table (see the module docstring).

    ``sensitive`` are the policy's sensitive attributes coded as the gate measures them
    (:meth:`~anon_dagster.anonymize.criteria.SensitiveAttribute.code`: their kind, order or
    hierarchy choose the t-closeness distance; plain codes are a nominal attribute), one row
    each of ``df``'s rows. Returns the table, the cells suppressed per column in the rows that
    now pass, and the mask of rows still failing (the caller suppresses those whole; the rows
    left are the published table the criteria were judged on). ``candidates`` restricts which
    rows may have cells suppressed (default: any failing row).
    """
    codes: dict[str, np.ndarray] = {}
    cards: dict[str, int] = {}
    star: dict[str, int] = {}
    for col in list(qis) + list(fixed):
        c, uniques = factorize(df[col])
        labels = [str(u) for u in uniques]
        codes[col] = c.copy()
        cards[col] = len(uniques) + 1
        star[col] = labels.index(TOP) if TOP in labels else len(uniques)
    sens = list(sensitive) if policy.needs_sensitive else []
    n = len(df)

    def failing() -> np.ndarray:
        cols = [codes[c] for c in list(qis) + list(fixed)]
        key, space = combine(cols, [cards[c] for c in list(qis) + list(fixed)])
        _, row_class, sizes = group(key, space)
        # the lattice search's verdict on a node: the same figures, distances and reference
        return failing_rows(policy, row_class, sizes, sens)[0]

    order = sorted(qis, key=lambda c: (importance.get(c, 1.0), -cards[c], list(qis).index(c)))
    suppressed = {c: np.zeros(n, dtype=bool) for c in qis}
    allowed = np.ones(n, dtype=bool) if candidates is None else candidates
    fail = failing() if n else np.zeros(0, dtype=bool)
    for col in order:
        target = fail & allowed & (codes[col] != star[col])
        if not fail.any():
            break
        if not target.any():
            continue
        codes[col][target] = star[col]
        suppressed[col] |= target
        fail = failing()
    out = df.copy()
    counts = {}
    for col in qis:
        mask = suppressed[col] & ~fail  # rows still failing are suppressed whole by the caller
        counts[col] = int(mask.sum())
        if not mask.any():
            continue
        s = out[col]
        if isinstance(s.dtype, pd.CategoricalDtype):
            if TOP not in s.cat.categories:
                s = s.cat.add_categories([TOP])
            s = s.copy()
            s[mask] = TOP
        else:
            s = s.astype(object).copy()
            s[mask] = TOP
        out[col] = s
    return out, counts, fail
