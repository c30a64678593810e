"""Erased persons dropped on Spark, as the pandas pipeline drops them
(:func:`~anon_dagster.release.governance.suppression.drop_suppressed`).

Definition. A row belongs to an erased person when its person column
(:func:`~anon_dagster.release.governance.suppression.person_column`) names someone
(:func:`~anon_dagster.release.governance.suppression.named_persons`) whose linkage pseudonym
(HMAC-SHA256 under the ``ledger-linkage`` subkey of the value normalized as
:func:`~anon_dagster.release.governance.suppression.person_normalize` says) is on the release's
suppression list. The executors compute that pseudonym with the pandas engine's function
(:func:`~anon_dagster.release.ledger.linkage_pseudonyms`), the key re-derived where they run
(:mod:`.spark_pseudonyms`); the list is broadcast and the rows on it removed by an anti-join. The
list holds pseudonyms only: no identifier reaches Spark's plan.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from .spark_pseudonyms import KeyRequest, executor_key

ERASURE_COLUMN = "__erasure_link"


@dataclass(frozen=True)
class ErasureStep:
    """What the executors add to each batch: the linkage pseudonym of ``person`` in
    :data:`ERASURE_COLUMN` (missing where the row names nobody); ``normalize`` is (trim, case, unicode)."""

    person: str
    key: KeyRequest
    normalize: tuple[bool, str, str]

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        import numpy as np
        import pandas as pd

        from ..pseudonymize.normalization import Normalization
        from ..release.governance.suppression import named_persons
        from ..release.ledger import linkage_pseudonyms

        values = batch.column(batch.schema.get_field_index(self.person)).to_pandas()
        named = named_persons(values)
        out = np.full(len(values), None, dtype=object)
        if named.any():
            trim, case, unicode = self.normalize
            out[named] = linkage_pseudonyms(values[named].reset_index(drop=True), executor_key(self.key),
                                            normalize=Normalization(trim=trim, case=case, unicode=unicode))
        column = pa.array(pd.Series(out, dtype=object), type=pa.string(), from_pandas=True)
        return pa.RecordBatch.from_arrays([*batch.columns, column], names=[*batch.schema.names, ERASURE_COLUMN])


def erasure_batches(step: ErasureStep):
    """The function ``mapInArrow`` runs: ``step`` applied to each batch (it holds no key)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield step.apply(batch)
    return run


def drop_erased(engine: Any, spec: Any, df: Any, keystore: Any | None) -> Any:
    """``df`` without the rows of a person on the release's suppression list (``df`` itself when
    the list is empty or there is no key store to read it with); see the module docstring.

    The list is read, and checked against the custody log, by
    :func:`~anon_dagster.release.governance.suppression.suppressed`: a list altered or lacking an
    erased person refuses the run as on the pandas engine."""
    if keystore is None:
        return df
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from ..errors import DataError
    from ..release.governance.suppression import (
        LINKAGE_PURPOSE,
        person_column,
        person_normalize,
        suppressed,
    )

    listed = suppressed(keystore, spec.release)
    if not listed:
        return df
    person = person_column(spec)
    if person not in df.columns:
        raise DataError(f"{spec.label}: the person column {person!r} is not a column of the data")
    norm = person_normalize(spec)
    step = ErasureStep(person, KeyRequest("internal", LINKAGE_PURPOSE).checked(keystore),
                       (norm.trim, norm.case, norm.unicode))
    schema = T.StructType([*df.schema.fields, T.StructField(ERASURE_COLUMN, T.StringType(), True)])
    linked = df.mapInArrow(erasure_batches(step), schema)
    erased = engine.spark.createDataFrame(pa.table({"__erased": pa.array(sorted(listed), type=pa.string())}))
    kept = linked.join(F.broadcast(erased), on=linked[ERASURE_COLUMN] == erased["__erased"], how="left_anti")
    return kept.drop(ERASURE_COLUMN)


__all__ = ["ERASURE_COLUMN", "ErasureStep", "drop_erased", "erasure_batches"]
