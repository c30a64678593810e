"""The two steps of ``benchmarks/spark.py`` that are not one engine call: the release end to end
on either engine, and DuckDB's GROUP BY of the table as the peer of the risk figures.

**The release** (:func:`release`): the partition's stored steps as the Dagster assets run them
on the engine the deployment chooses (:mod:`anon_dagster.release.engine_steps`: ``raw_step``,
``pseudonymized_step``, ``anonymized_step``, then ``published_step``, which evaluates the gate
and publishes a passing evaluation through the publication protocol). These are the one
end-to-end path both engines offer: ``anon-dagster publish`` runs the pandas pipeline only
(``publish_partition``), and the Spark engine has no single call that publishes
(``anonymize_release`` writes the anonymized table, ``run_gate`` evaluates without publishing).
On Spark each of the first three steps writes its table as a parquet folder under the storage
folder and the next reads it back, as in Dagster; Spark writes the published rows and the driver
streams them into the file of record one row group at a time. Each run publishes into a folder
of its own with a ledger of its own, so a repeated run is a first publication again.

**DuckDB** (:func:`duckdb_groups`): ``SELECT <QIs and sensitive>, count(*) FROM read_parquet(..)
GROUP BY ALL`` fetched as an Arrow table, on a connection with ``threads`` threads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from anon_dagster.release import engine_steps
from anon_dagster.release.ledger import LedgerSeal, init_ledger
from anon_dagster.spec import load_spec


@dataclass
class Released:
    """A release's outcome: ``outcome`` (published, awaiting or refused), the gate's evaluation
    as JSON without its id (which differs per run), and the published file (None unless published)."""

    outcome: str
    evaluation: dict[str, Any]
    published: Path | None

    def same_outcome(self, other: Released) -> bool:
        return self.outcome == other.outcome and self.evaluation == other.evaluation


def release(engine: Any, write_spec: Callable[[Path], Path], folder: Path, keystore: Any) -> Released:
    """The whole release on ``engine`` (see the module docstring) into ``folder``, created new:
    ``write_spec(folder)`` writes the spec (its publication under ``folder``) and returns its path."""
    folder.mkdir(parents=True)
    spec = load_spec(write_spec(folder))
    ledger = init_ledger(folder / "ledger.db", LedgerSeal.from_keystore(keystore)).ledger
    reports = str(folder / "reports")
    raw = engine_steps.raw_step(engine, spec, None,
                                keystore=lambda: keystore, storage=lambda: folder / "storage")
    pseudo = engine_steps.pseudonymized_step(engine, spec, raw.value, keystore=lambda: keystore, partition=None,
                                             storage=lambda: folder / "storage")
    anonymized = engine_steps.anonymized_step(engine, spec, pseudo.value, partition=None, reports_dir=reports,
                                              storage=lambda: folder / "storage")
    step = engine_steps.published_step(engine, spec, anonymized=anonymized.value, pseudonymized=pseudo.value,
                                       raw=raw.value, ledger=ledger, partition=None, keystore=keystore,
                                       reports_dir=reports)
    evaluation = {k: v for k, v in step.evaluation.to_json().items() if k != "evaluation"}
    path = Path(step.published.published.path) if step.published is not None else None
    return Released(step.outcome, evaluation, path)


def published_rows(path: Path) -> pd.DataFrame:
    """The published file's rows in a deterministic order (sorted by every column), the index
    dropped. Dictionary-encoded columns (the pandas engine writes its generalized QIs as
    categoricals, Spark as plain strings) are read as their values, and every string as
    ``large_string``, so the comparison is of values, not of encodings."""
    table = pq.read_table(path)
    for i, column in enumerate(table.schema):
        kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
        kind = pa.large_string() if pa.types.is_string(kind) else kind
        if kind != column.type:
            table = table.set_column(i, column.name, table.column(i).cast(kind))
    frame = table.to_pandas()
    return frame.sort_values(list(frame.columns), kind="mergesort").reset_index(drop=True)


def same_release(left: Released, right: Released) -> bool:
    """Equal gate outcomes and, when published, the same rows (as multisets) in the same columns."""
    if not left.same_outcome(right):
        return False
    if left.published is None or right.published is None:
        return left.published is right.published
    return published_rows(left.published).equals(published_rows(right.published))


def duckdb_groups(path: Path, columns: list[str], threads: int) -> int:
    """DuckDB's GROUP BY of the parquet file over ``columns`` fetched to Arrow; its number of groups."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"SET threads = {int(threads)}")
        names = ", ".join(f'"{c}"' for c in columns)
        escaped = str(path).replace("'", "''")
        table = con.sql(f"SELECT {names}, count(*) AS n FROM read_parquet('{escaped}') GROUP BY ALL").to_arrow_table()
        return table.num_rows
    finally:
        con.close()
