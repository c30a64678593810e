"""The pandas engine: the release pipeline in one process, the reference every engine matches.

Each method is one of today's code paths (:mod:`anon_dagster.release.pipeline`, the gate's
measurement), wrapped so that the commands and Dagster can choose an engine without knowing
which one runs.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError, UserError
from .base import AnonymizeOutcome, MeasuredRelease, record_beside, record_path


class PandasEngine:
    """The rows as pandas DataFrames (see the module docstring)."""

    name = "pandas"

    def run_gate(self, spec: Any, *, partition: str | None = None, input_path: str | None = None,
                 keystore: Any | None = None, ledger: Any | None = None, only: set[str] | None = None) -> Any:
        """:func:`anon_dagster.release.pipeline.run_gate`."""
        from ..release.pipeline import run_gate

        return run_gate(spec, partition=partition, input_path=input_path, keystore=keystore, ledger=ledger,
                        only=only)

    def publication_inputs(self, spec: Any, run: Any, *, keystore: Any | None, ledger: Any) -> Any:
        """The run's anonymized and pseudonymized tables themselves."""
        from ..release.publish_step import PublicationInputs

        return PublicationInputs(run.anonymized.data, run.pseudonymized.data)

    def anonymize_release(self, spec: Any, *, output: str | Path, partition: str | None = None,
                          input_path: str | None = None, keystore: Any | None = None,
                          progress: Any = None) -> AnonymizeOutcome:
        """Ingest, pseudonymize (no linkage column: the output is not composed with the ledger)
        and anonymize with the policy as declared (an unreachable one raises ``NoSolution``);
        write the published view and its record, both atomically. Without ``keystore`` the key
        store is opened from the environment once the data has been checked, when the spec
        pseudonymizes a column."""
        from ..anonymize.record import Source
        from ..io import table_format, write_table_atomic
        from ..release import pipeline
        from ..release.gate import publishable_view

        out = Path(output)
        table_format(out)  # fail early on an unknown suffix
        ingested = pipeline.ingest(spec, partition, input_path)
        if out.resolve() == Path(ingested.source).resolve():
            raise UserError(f"{out}: the output would overwrite the input")
        if keystore is None and spec.pseudonymized:
            from ..pseudonymize import open_keystore

            keystore = open_keystore()
        pseudo = pipeline.pseudonymize(spec, ingested.data, keystore, linkage=False, partition=partition)
        result = pipeline.anonymize(spec, pseudo.data, progress=progress, relax=False)
        record = replace(result.record, source=Source(rows=len(ingested.data), partition=partition))
        write_table_atomic(publishable_view(result.data), out)
        record.write(record_path(out))
        return AnonymizeOutcome(record, out, ingested.source)

    def measure_release(self, spec: Any, *, partition: str | None = None, input_path: str | None = None,
                        generalized: bool = False) -> MeasuredRelease:
        """The release gate's own measurement of the data as it is (``risk --config``): the
        population placed with the record ``anonymize`` wrote beside the data, when there is one."""
        from ..partitions import read_release_data
        from ..release import gate
        from ..spec.catalog import pandas_refusal

        refusal = pandas_refusal(spec) if input_path is None else None
        if refusal is not None:  # a catalog or Delta table: the Spark engine's
            raise UserError(refusal)
        df, path = read_release_data(spec, partition, input_path)
        check_measurable(spec, df, path, generalized)
        population = gate.population_for(spec, df, record_beside(Path(path)))
        measures = gate.risk_measures(spec, df, population)
        return MeasuredRelease(measures, gate.release_figures(spec, measures, population), str(path))

    def close(self) -> None:
        """Nothing to release."""


def check_measurable(spec: Any, df: pd.DataFrame, path: str, generalized: bool) -> None:
    """The checks ``risk --config`` makes before measuring: every QI and sensitive column is there,
    the table has rows and (unless ``generalized``) every QI value is placed by its hierarchy."""
    for col in [*spec.quasi_identifiers, *spec.sensitive]:
        if col not in df.columns:
            raise DataError(f"{path}: column {col!r} declared in {spec.label} is missing from the data")
    if len(df) == 0:
        raise DataError(f"{path}: the table is empty: there are no rows to measure")
    if not generalized:
        # a value the hierarchy cannot place (text under an interval hierarchy, an unknown code)
        # would make the release fail later: say so now, naming column and value
        for name, hierarchy in spec.hierarchies.items():
            if name in spec.quasi_identifiers:
                hierarchy.table(pd.unique(df[name]))


__all__ = ["PandasEngine", "check_measurable"]
