"""k per person on Spark: the persons a published pseudonym links, read from frequency tables.

When published columns link a person's rows (a pseudonym of scope ``release`` or
``population``), the pandas engine judges k and the risk figures per person
(:mod:`anon_dagster.risk.person`): a person's key is the multiset of the classes of their rows.
A frequency table of (linking columns, QIs, ...) carries that multiset: each of its rows is one
person's combination and its count how many of the person's rows hold it, so the keys are built
from it with the counts as multiplicities (:meth:`~anon_dagster.risk.person.PersonKeys.of_rows`
with weights). A row without any linking value is a person of its own: the frequency rows of
such rows are repeated once per row they count (:func:`~anon_dagster.risk.person.split_unlinked`),
within ``max_driver_cells``.

Methods other than global recoding with row suppression (Mondrian, ``method: none``) reach k
per person afterwards, as the pandas engine does
(:func:`anon_dagster.release.anonymize_step.reach_k_per_person`): :func:`reach_k_per_person`
decides from the frequency table of (linking columns, QIs) of the published rows which persons
to remove, with the pandas engine's functions, and removes their rows on Spark.

The person of a frequency row is :func:`anon_dagster.release.gate.person_link` of its linking
values (with several linking columns, the connected components of shared values): the same
function the pandas engine applies to the rows, since it depends on the values only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .spark_frames import COUNT_COLUMN, DriverLimit

#: the column of a frequency table holding each row's person on the driver
PERSON_COLUMN = "__person"


def linked_by(spec: Any, df: Any) -> list[str]:
    """The published columns of ``df`` that link a person's rows
    (:func:`anon_dagster.release.gate.linking_columns`)."""
    from ..release.gate import linking_columns

    return linking_columns(spec, df)


def with_persons(engine: Any, spec: Any, freq: pd.DataFrame, linked: list[str], *, what: str) -> pd.DataFrame:
    """``freq`` (a frequency table holding the columns ``linked``) with each row's person in
    :data:`PERSON_COLUMN` (missing for a row without a linking value) and the rows without a
    person repeated once per row they count, each then counting one.

    Refused in one line when the repeated table exceeds ``max_driver_cells``."""
    from ..release.gate import person_link
    from ..risk.person import split_unlinked

    if not len(freq):
        return freq.assign(**{PERSON_COLUMN: pd.Series([], dtype=object)})
    person = person_link(spec, freq[linked]).astype(object).reset_index(drop=True)
    person[freq[linked].isna().all(axis=1).to_numpy()] = None  # an unlinked row: a person of its own
    at, weights = split_unlinked(person, freq[COUNT_COLUMN].to_numpy(np.int64))
    if len(at) == len(freq):
        return freq.assign(**{PERSON_COLUMN: person.to_numpy()})
    width = len(freq.columns) + 1
    cells = len(at) * width
    if cells > engine.max_driver_cells:
        raise DriverLimit(
            f"{what}, each row without a linking value repeated as a person of its own, has {len(at):,} rows x "
            f"{width} columns = {cells:,} cells, more than the driver's budget of {engine.max_driver_cells:,} "
            "(max_driver_cells): raise the budget on a driver with the memory for it")
    out = freq.iloc[at].reset_index(drop=True)
    out[COUNT_COLUMN] = weights
    out[PERSON_COLUMN] = person.iloc[at].to_numpy()
    return out


def drop_rows(engine: Any, df: Any, schema: Any, freq: pd.DataFrame, rows: np.ndarray, columns: list[str]) -> Any:
    """``df`` without the rows whose values of ``columns`` are those of a frequency row marked
    in ``rows`` (an anti-join with their keys, broadcast, null-safe)."""
    from pyspark.sql import functions as F

    from .spark_frames import arrow_values, lookup_frame, null_safe

    if not rows.any():
        return df
    marked = freq.loc[rows, columns].drop_duplicates()
    spark_types = {f.name: f.dataType for f in df.schema.fields}
    keys = {f"__drop{i}": arrow_values(marked[c].to_numpy(dtype=object), schema.field(c).type)
            for i, c in enumerate(columns)}
    casts = {f"__drop{i}": spark_types[c] for i, c in enumerate(columns)}
    lookup = lookup_frame(engine.spark, keys, casts)
    pairs = [(c, f"__drop{i}") for i, c in enumerate(columns)]
    return df.join(F.broadcast(lookup), on=null_safe(df, lookup, pairs), how="left_anti")


def reach_k_per_person(engine: Any, spec: Any, anonymized: Any, rows_in: int) -> Any:
    """``anonymized`` (a :class:`~.spark_results.SparkAnonymized`) with the persons below k
    removed, when published columns link a person's rows and their rows fit in what is left of the
    suppression budget; the record rewritten as
    :func:`anon_dagster.release.anonymize_step.reach_k_per_person` rewrites it.

    A person is below k when their person class (the persons whose multisets of classes are
    equal) holds fewer than k persons (:class:`~anon_dagster.risk.person.PersonClasses`, built
    from the frequency table of the published rows over (linking columns, QIs) with its counts as
    multiplicities). Removing a person leaves the others' keys unchanged, so one pass suffices."""
    from dataclasses import replace

    from ..anonymize.criteria import Policy, suppression_budget
    from ..release.anonymize_step import person_pass_record, person_pass_section
    from ..risk.frequencies import frequency_classes
    from ..risk.person import PersonClasses

    df = anonymized.df
    linked = linked_by(spec, df)
    qis = [q for q in spec.quasi_identifiers if q in df.columns]
    if not linked or not qis:
        return anonymized
    columns = list(dict.fromkeys(linked + qis))
    what = "the published rows per linking pseudonym and QIs"
    freq, schema = engine.frequencies(df, columns, first_row=False, what=what)
    if not len(freq):
        return anonymized
    freq = with_persons(engine, spec, freq, linked, what=what)
    counts = freq[COUNT_COLUMN].to_numpy(np.int64)
    policy = Policy.from_spec(spec)
    k = policy.k
    budget = suppression_budget(policy, rows_in)
    classes = frequency_classes(freq, qis, counts.astype(np.float64))
    pc = PersonClasses.build(classes, freq[PERSON_COLUMN], counts)
    small = pc.sizes[pc.person_class] < k
    below = small[pc.person_of_row]
    n_persons = int(small.sum())
    removed = int(counts[below].sum())
    reached = removed <= max(budget - anonymized.suppressed, 0)
    section = person_pass_section(anonymized.record, k=k, linked_by=list(linked), persons=n_persons, rows=removed,
                                  budget=budget, reached=reached)
    record = anonymized.record
    if not (reached and removed):
        return replace(anonymized, record=replace(record, person_suppression=section))
    published = drop_rows(engine, df, schema, freq, below, columns).persist()
    sizes = np.bincount(classes.row_class, weights=np.where(below, 0, counts), minlength=classes.n_classes)
    suppressed = anonymized.suppressed + removed
    record = person_pass_record(record, section, suppressed=suppressed, rows_in=rows_in, sizes=sizes,
                                output_hash=engine.digest(published))
    return replace(anonymized, df=published, record=record, suppressed=suppressed)


__all__ = ["PERSON_COLUMN", "drop_rows", "linked_by", "reach_k_per_person", "with_persons"]
