"""What another generator of a synthetic release may learn from (:func:`generator_rows`).

Its own module: it runs the release's first steps (:mod:`.pipeline`), whose evaluation imports
the synthetic audit (:mod:`.synthetic`), so neither of those may import it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..spec import ReleaseSpec
from ..spec.synthetic import synthetic_columns
from . import gate, pipeline
from .attacks import control_split


def generator_rows(spec: ReleaseSpec, source: object, partition: str | None = None, *,
                   keystore: Any | None = None) -> pd.DataFrame:
    """The records another generator of the release may learn from: the partition's rows of the
    source table ``source`` (a DataFrame, as the release's raw step reads it), pseudonymized as the
    release does (erased persons dropped, identifiers not kept), without the control records the
    audit holds back (:func:`~.attacks.control_split`, a pure function of that table and the spec),
    in the columns of :func:`~anon_dagster.spec.synthetic.synthetic_columns`.

    The audit can only see what a generator copies of the records it learnt from when the control
    records are not among them; a generator trained on these leaves them out."""
    ingested = pipeline.ingest_frame(spec, source, partition, source="the generator's source table")
    pseudonymized = pipeline.pseudonymize(spec, ingested.data, keystore, partition=partition).data
    base = gate.publishable_view(pseudonymized).reset_index(drop=True)
    split = control_split(spec, pseudonymized)
    kept = base[np.asarray(split.released, dtype=bool)] if split is not None else base
    return kept[[c for c in synthetic_columns(spec) if c in kept.columns]].reset_index(drop=True)


__all__ = ["generator_rows"]
