"""The Spark engine: Spark aggregates, the existing code decides, Spark applies.

The rows stay on Spark. Each step that needs to look at them asks Spark for a frequency table
(``groupBy(columns).count()`` with each combination's first row), which the driver reads
(:mod:`.spark_frames`) and hands to the code the pandas engine runs on rows:

- **ingest**: the source (parquet) read by Spark, the partition's window filtered there, the spec
  checked against the schema and each hierarchy against the column's distinct values;
- **pseudonymize**: ``mapInArrow`` calling the project's keyed functions, keys re-derived on the
  executors (:mod:`.spark_pseudonyms`);
- **anonymize** (global recoding): the lattice search on the driver over the bottom frequency
  table (:meth:`~anon_dagster.anonymize.lattice.Lattice.from_frequencies`; its size counted on
  Spark before it is read, built at ``anonymization.min_levels`` when declared), the chosen node
  applied by Spark with broadcast label maps, the failing classes suppressed by an anti-join;
  (Mondrian) each partition-key part cut on an executor by the project's Mondrian with the whole
  table's layout, the parts' cuts joined on the driver into the record (:mod:`.spark_mondrian`),
  the first depths of a part too large for one executor cut on Spark (:mod:`.spark_mondrian_top`);
  (microaggregation) each block of equal partition keys and categorical QIs aggregated on an
  executor by the project's MDAV, its rows in source order, one block on the driver, l and t
  judged on the driver from the aggregated classes (:mod:`.spark_microaggregation`);
- **evaluate**: every risk figure from the published frequency table
  (:func:`~anon_dagster.risk.frequencies.measure_frequencies`), utility queries from two frequency
  tables, the composition from the persons' classes, the data contract by Spark SQL
  (:mod:`.spark_gate`).

The engine's modules, one job each: :mod:`.spark_session` (the session, the scratch folder, the
driver's reads), :mod:`.spark_ingest` (ingest and pseudonymize), :mod:`.spark_anonymize` (the
anonymize step: what is supported, the method, an unreachable policy), :mod:`.spark_recoding`
(global recoding applied), :mod:`.spark_mondrian` (Mondrian per part),
:mod:`.spark_microaggregation` (MDAV per block), :mod:`.spark_record` (the transformation record), :mod:`.spark_gate`
(the measurement and the checks), :mod:`.spark_aggregates` (DP aggregates: the contribution
bound and the groups counted by Spark, the noise drawn on the driver), :mod:`.spark_results`
(what each step hands to the next), :mod:`.spark_store` (a step's table kept between the
release's Dagster steps as a parquet folder, :mod:`anon_dagster.release.engine_steps`),
:mod:`.spark_attacks` and :mod:`.spark_synthetic` (the release's attacks, a synthetic release:
on the driver with the pandas engine's code).

What is not supported yet is refused up front with one line (:func:`check_supported`):
PRAM of a partition key or of a column a utility query groups by (PRAM itself runs:
:mod:`.spark_pram`), a utility query as the search's metric over a bottom table larger than the
driver's budget and csv or Delta sources on object storage (a parquet object is read by the
executors: :mod:`.spark_objects`). Tokens come from the
driver's vault (:mod:`.spark_tokens`), csv sources are typed as pandas types them (:mod:`.spark_csv`).
docs/scale.md says what is exact, what the driver holds and what is left.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError, UserError
from .base import AnonymizeOutcome, MeasuredRelease, UnsupportedOnEngine, record_beside, record_path
from .spark_anonymize import anonymize, check_supported
from .spark_frames import (  # noqa: F401 - re-exported
    COUNT_COLUMN,
    DEFAULT_MAX_DRIVER_CELLS,
    FIRST_COLUMN,
    INTERNAL_PREFIXES,
    internal,
    published_columns,
)
from .spark_ingest import asset_rows, check_data, ingest, pseudonymize, read
from .spark_results import SparkAnonymized, SparkGateRun, SparkIngested, SparkPseudonymized
from .spark_session import SparkDriver, executor_errors  # noqa: F401 - re-exported


class SparkEngine(SparkDriver):
    """The rows on Spark (see the module docstring; the session and the driver's reads:
    :class:`~.spark_session.SparkDriver`)."""

    name = "spark"

    # ----- the steps ----------------------------------------------------------------------------
    def read(self, spec: Any, partition: str | None, input_path: str | None) -> tuple[Any, Path]:
        """:func:`.spark_ingest.read`."""
        return read(self, spec, partition, input_path)

    def check_data(self, spec: Any, df: Any, source: str) -> None:
        """:func:`.spark_ingest.check_data`."""
        check_data(self, spec, df, source)

    def ingest(self, spec: Any, partition: str | None = None, input_path: str | None = None,
               **given: Any) -> SparkIngested:
        """:func:`.spark_ingest.ingest`."""
        return ingest(self, spec, partition, input_path, **given)

    def asset_rows(self, spec: Any, partition: str | None, value: object, *,
                   one_partition: bool = False) -> AbstractContextManager[SparkIngested]:
        """:func:`.spark_ingest.asset_rows`."""
        return asset_rows(self, spec, partition, value, one_partition=one_partition)

    def pseudonymize(self, spec: Any, ingested: SparkIngested, keystore: Any | None, *, linkage: bool = True,
                     partition: str | None = None) -> SparkPseudonymized:
        """:func:`.spark_ingest.pseudonymize`."""
        return pseudonymize(self, spec, ingested, keystore, linkage=linkage, partition=partition)

    def anonymize(self, spec: Any, pseudonymized: SparkPseudonymized, progress: Any = None, *,
                  relax: bool = True, synthetic_table: Any = None) -> SparkAnonymized:
        """:func:`.spark_anonymize.anonymize`."""
        return anonymize(self, spec, pseudonymized, progress, relax=relax, synthetic_table=synthetic_table)

    # ----- the commands -------------------------------------------------------------------------
    def run_gate(self, spec: Any, *, partition: str | None = None, input_path: str | None = None,
                 keystore: Any | None = None, ledger: Any | None = None, only: set[str] | None = None) -> SparkGateRun:
        """Ingest, pseudonymize, anonymize and evaluate one partition on Spark (``check``)."""
        from .spark_gate import evaluate

        check_supported(spec)
        ingested = self.ingest(spec, partition, input_path)
        pseudo = self.pseudonymize(spec, ingested, keystore, partition=partition)
        anon = self.anonymize(spec, pseudo)
        evaluation = evaluate(self, spec, anon, original=pseudo.df, raw=ingested.df, ledger=ledger,
                              partition=partition, only=only)
        return SparkGateRun(ingested, pseudo, anon, evaluation)

    def publication_inputs(self, spec: Any, run: SparkGateRun, *, keystore: Any | None, ledger: Any) -> Any:
        """:func:`.spark_publication.publication_inputs` of the run's tables."""
        from .spark_publication import publication_inputs

        table = run.anonymized.df
        return publication_inputs(self, spec, run.evaluation, table, table.count(), lambda: run.pseudonymized.df,
                                  keystore, ledger)

    def anonymize_release(self, spec: Any, *, output: str | Path, partition: str | None = None,
                          input_path: str | None = None, keystore: Any | None = None,
                          progress: Any = None) -> AnonymizeOutcome:
        """Pseudonymize and anonymize on Spark and write the published rows as a parquet folder
        (part files), the record beside it (``output`` + ``.transformations.json``)."""
        from ..anonymize.record import Source

        out = Path(output)
        if out.suffix.lower() not in (".parquet", ".pq", ""):
            raise UnsupportedOnEngine(f"a {out.suffix} output ({out})", hint="the Spark engine writes parquet folders")
        check_supported(spec)
        ingested = self.ingest(spec, partition, input_path)
        if out.resolve() == Path(ingested.source).resolve():
            raise UserError(f"{out}: the output would overwrite the input")
        if keystore is None and spec.pseudonymized:
            from ..pseudonymize import open_keystore

            keystore = open_keystore()
        pseudo = self.pseudonymize(spec, ingested, keystore, linkage=False, partition=partition)
        result = self.anonymize(spec, pseudo, progress=progress, relax=False)
        record = replace(result.record, source=Source(rows=result.record.rows_in, partition=partition))
        result.df.select(*[f"`{c}`" for c in published_columns(result.df)]).write.mode("overwrite").parquet(str(out))
        record.write(record_path(out))
        return AnonymizeOutcome(record, out, ingested.source)

    def measure_release(self, spec: Any, *, partition: str | None = None, input_path: str | None = None,
                        generalized: bool = False) -> MeasuredRelease:
        """The gate's measurement of a table on Spark (``risk --config``): its frequency table
        over the QIs and sensitive attributes, measured by the existing code."""
        from ..release import gate
        from .spark_gate import measure

        df, path = self.read(spec, partition, input_path)
        for col in [*spec.quasi_identifiers, *spec.sensitive]:
            if col not in df.columns:
                raise DataError(f"{path}: column {col!r} declared in {spec.label} is missing from the data")
        if not generalized:
            for name, hierarchy in spec.hierarchies.items():
                if name in spec.quasi_identifiers:
                    freq, _ = self.frequencies(df, [name], first_row=False, what=f"the distinct values of {name!r}")
                    hierarchy.table(pd.unique(freq[name]))
        record = record_beside(path)
        population = None
        if spec.policy.population is not None:
            population = gate.load_population(spec)
            if record is not None:
                from ..anonymize.population import generalize_population

                population = generalize_population(population, spec, record, None)
        measured = measure(self, spec, df, population, categories={}, empty_message=f"{path}: the table is empty: "
                           "there are no rows to measure")
        return MeasuredRelease(measured, gate.release_figures(spec, measured, population), str(path))


__all__ = ["SparkAnonymized", "SparkEngine", "SparkGateRun", "SparkIngested", "SparkPseudonymized",
           "check_supported"]
