"""What an execution engine is: where a release's rows are read, transformed and measured.

The release spec is the privacy contract: what is pseudonymized, how it is generalized, which
thresholds the gate enforces. The *engine* is how the rows are processed, and the caller chooses
it (``--engine`` on the command line, the :class:`~anon_dagster.dagster.resources.EngineResource`
in Dagster), never the spec: the same spec gives the same verdicts on every engine.

- :class:`~anon_dagster.engine.pandas_engine.PandasEngine` (the default, and the reference): the
  rows in one process, :mod:`anon_dagster.release.pipeline` as it is;
- :class:`~anon_dagster.engine.spark_engine.SparkEngine`: the rows stay on Spark; Spark
  aggregates them into frequency tables, the existing code decides on those (risk figures, the
  lattice search, the gate), and Spark applies the decision (pseudonyms, labels, suppression).

An engine offers what the commands need: :meth:`Engine.run_gate` (``check``),
:meth:`Engine.anonymize_release` (``anonymize``) and :meth:`Engine.measure_release` (``risk
--config``). A feature an engine does not support yet is refused with one line naming it
(:class:`UnsupportedOnEngine`), never carried out differently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import UserError

if TYPE_CHECKING:
    from ..anonymize.record import TransformationRecord
    from ..release.ledger import Ledger
    from ..risk import RiskMeasures
    from ..spec import ReleaseSpec

ENGINES = ("pandas", "spark")
DEFAULT_ENGINE = "pandas"
DEFAULT_SPARK_MASTER = "local[2]"
RECORD_SUFFIX = ".transformations.json"


class UnsupportedOnEngine(UserError):
    """A feature of the spec or of the call that this engine does not carry out (yet)."""

    def __init__(self, feature: str, engine: str = "Spark", hint: str = ""):
        self.feature = feature
        super().__init__(f"{feature} is not supported on the {engine} engine yet"
                         + (f": {hint}" if hint else ""))


@dataclass
class AnonymizeOutcome:
    """What :meth:`Engine.anonymize_release` wrote: the record, the output and the input read."""

    record: TransformationRecord
    output: Path
    source: str


@dataclass
class MeasuredRelease:
    """What :meth:`Engine.measure_release` measured: the measures, the release's figures
    (``RiskMeasures.to_dict()`` with the population note) and the table measured."""

    measures: RiskMeasures
    figures: dict[str, Any]
    source: str


@runtime_checkable
class Engine(Protocol):
    """An execution engine (see the module docstring)."""

    name: str

    def run_gate(self, spec: ReleaseSpec, *, partition: str | None = None, input_path: str | None = None,
                 keystore: Any | None = None, ledger: Ledger | None = None,
                 only: set[str] | None = None) -> Any:
        """Ingest, pseudonymize, anonymize and evaluate one partition; the result's
        ``evaluation`` is the gate's :class:`~anon_dagster.release.evaluation.Evaluation`."""
        ...

    def publication_inputs(self, spec: ReleaseSpec, run: Any, *, keystore: Any | None,
                           ledger: Ledger) -> Any:
        """What the publication protocol reads of a :meth:`run_gate` result ``run`` (a
        :class:`~anon_dagster.release.publish_step.PublicationInputs`)."""
        ...

    def anonymize_release(self, spec: ReleaseSpec, *, output: str | Path, partition: str | None = None,
                          input_path: str | None = None, keystore: Any | None = None,
                          progress: Any = None) -> AnonymizeOutcome:
        """Pseudonymize and anonymize one partition and write the published rows to ``output``
        with the transformation record beside it (``output`` + :data:`RECORD_SUFFIX`)."""
        ...

    def measure_release(self, spec: ReleaseSpec, *, partition: str | None = None,
                        input_path: str | None = None, generalized: bool = False) -> MeasuredRelease:
        """The gate's measurement of a table as it is (``risk --config``)."""
        ...

    def close(self) -> None:
        """Release what the engine holds (a Spark session it started)."""
        ...


def record_path(output: str | Path) -> Path:
    """Where the transformation record of an anonymized ``output`` is written."""
    output = Path(output)
    return output.with_name(output.name + RECORD_SUFFIX)


def record_beside(path: str | Path) -> TransformationRecord | None:
    """The transformation record ``anonymize`` wrote beside an anonymized output, if any."""
    from ..anonymize.record import TransformationRecord

    found = record_path(path)
    return TransformationRecord.read(found) if found.exists() else None


__all__ = [
    "DEFAULT_ENGINE", "DEFAULT_SPARK_MASTER", "ENGINES", "RECORD_SUFFIX", "AnonymizeOutcome", "Engine",
    "MeasuredRelease", "UnsupportedOnEngine", "record_beside", "record_path",
]
