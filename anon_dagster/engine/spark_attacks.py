"""The release's attacks (``policy.attacks``) on Spark: the driver attacks the rows Spark hands
it, with the pandas engine's code.

An attack is not an aggregation: each target's record is compared with the release's rows
(:mod:`anon_dagster.risk.attacks`). So the Spark engine brings the rows the attacks read to the
driver, in source order, and refuses a table over ``max_driver_cells`` (rows × columns) in one
line naming its size:

1. **before anonymizing** (:func:`withhold_control`): the pseudonymized partition's publishable
   columns come to the driver; :func:`~anon_dagster.release.attacks.control_split` chooses the
   control records there as on pandas (the same keyed slice of whole persons, or the
   population's records not in the sample); Spark drops the rows withheld (a join on the
   positions Spark keeps, :data:`~.spark_frames.ROW_COLUMN`), and the record's
   ``attack_control`` is the pandas engine's section of that table (counts only);
2. **when the gate evaluates** (:func:`attack_run`): the published rows (their linkage
   pseudonyms included) and the pseudonymized partition come to the driver; each published row's
   position in the partition is read from the positions Spark kept, and
   :func:`~anon_dagster.release.attacks.attack_figures` re-derives the control records, checks
   that no published row is one of them and runs the attacks.

The record's ``output_hash`` on Spark is Spark's digest of the stored table (verified when the
step read it back). The attacks are handed the record with the pandas hash of the rows they are
given instead: they check it against those rows and draw their targets from it, so the same
rows give the same control records, targets and figures on both engines.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from .spark_frames import (
    ROW_COLUMN,
    DriverLimit,
    as_categoricals,
    collect,
    published_columns,
    to_pandas,
)

WAYS_OUT = ("split the release into smaller partitions, raise max_driver_cells on a driver with the memory "
            "for it, or use --engine pandas")


ATTACKS_READ = "policy.attacks: the attacks read every row on the driver"


def driver_rows(engine: Any, df: Any, what: str, why: str = ATTACKS_READ) -> tuple[pd.DataFrame, np.ndarray]:
    """The publishable columns of ``df`` (and the linkage pseudonym, when it carries one) on the
    driver as the pandas engine holds them, in source order, and each row's position
    (:data:`ROW_COLUMN`). Refused over ``max_driver_cells`` before Spark writes anything, the
    error beginning with ``why`` (what reads the rows there)."""
    from ..release.gate import LINKAGE_COLUMN

    columns = [*published_columns(df), *([LINKAGE_COLUMN] if LINKAGE_COLUMN in df.columns else [])]
    width = len(columns) + 1
    rows = int(df.count())
    if rows * width > engine.max_driver_cells:
        raise DriverLimit(f"{why}, and {what} has {rows:,} rows "
                          f"x {width} columns = {rows * width:,} cells, more than the Spark engine holds there "
                          f"(max_driver_cells={engine.max_driver_cells:,}): {WAYS_OUT}")
    table = collect(df.select(*[f"`{c}`" for c in [*columns, ROW_COLUMN]]), scratch=engine.scratch,
                    max_cells=engine.max_driver_cells, what=what).sort_by(ROW_COLUMN)
    positions = table.column(ROW_COLUMN).to_numpy().astype(np.int64)
    return to_pandas(table.drop([ROW_COLUMN])), positions


def withhold_control(engine: Any, spec: Any, pseudonymized: Any) -> tuple[Any, Any]:
    """``pseudonymized`` without the control records the attacks withhold, and the record's
    ``attack_control`` section (:mod:`anon_dagster.release.attacks`); ``(pseudonymized, None)``
    without ``policy.attacks``."""
    from pyspark.sql import functions as F

    from ..release import attacks as gate_attacks

    if not gate_attacks.declares_attacks(spec):
        return pseudonymized, None
    table, positions = driver_rows(engine, pseudonymized.df, "the pseudonymized partition")
    split = gate_attacks.control_split(spec, table)
    section = gate_attacks.control_section(spec, table, split)
    withheld = positions[~np.asarray(split.released, dtype=bool)]
    if not len(withheld):
        return pseudonymized, section
    import pyarrow as pa

    dropped = engine.spark.createDataFrame(pa.table({ROW_COLUMN: pa.array(withheld, type=pa.int64())}))
    kept = pseudonymized.df.join(F.broadcast(dropped), on=ROW_COLUMN, how="left_anti")
    return replace(pseudonymized, df=kept), section


def driver_pair(engine: Any, anonymized: Any, original: Any, *, what: str, needs: str,
                why: str = ATTACKS_READ) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame, np.ndarray]:
    """The released table ``anonymized`` (``what``: what it is called in errors) and the
    pseudonymized partition ``original`` on the driver, each with its rows' positions
    (:func:`driver_rows`, ``why``); ``needs`` (``the attacks need``) begins the DataError when either is missing."""
    if original is None:
        raise DataError(f"{needs} the partition the table was made from")
    if anonymized.record is None:
        raise DataError(f"{needs} the table's transformation record: materialize the anonymized asset again")
    released, at = driver_rows(engine, anonymized.df, what, why)
    partition, positions = driver_rows(engine, original, "the pseudonymized partition", why)
    return released, at, partition, positions


def attack_run(engine: Any, spec: Any, anonymized: Any, original: Any) -> Any:
    """The attacks on the published rows ``anonymized`` (a :class:`~.spark_results.SparkAnonymized`)
    of the pseudonymized partition ``original`` (a Spark DataFrame): an
    :class:`~anon_dagster.release.attacks.AttackRun`, as on pandas (module docstring).

    Raises DataError when the tables do not belong together (as on pandas), DriverLimit when
    either is over ``max_driver_cells``."""
    from ..release import attacks as gate_attacks
    from ..release import gate

    released, at, partition, positions = driver_pair(engine, anonymized, original, what="the published table",
                                                     needs="the attacks need")
    index = np.searchsorted(positions, at)
    if len(at) and (index.max() >= len(positions) or (positions[np.minimum(index, len(positions) - 1)] != at).any()):
        raise DataError("the anonymized rows do not trace to records of the partition: the partition is not the "
                        "one anonymized")
    released = as_categoricals(released, anonymized.categories)
    released[gate.SOURCE_ROW_COLUMN] = index.astype(np.int64)
    record = replace(anonymized.record, output_hash=gate.anonymization_hash(released))
    return gate_attacks.attack_figures(spec, released, record, partition)


__all__ = ["attack_run", "driver_pair", "driver_rows", "withhold_control"]
