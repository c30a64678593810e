"""Re-verifying an external job's verdicts from the frequency table it wrote.

When a release's gate runs in an external job (Databricks, EMR: :mod:`anon_dagster.engine.pipes_step`),
the orchestrator does not take the job's word for the checks it can judge itself. The job writes
the published table's *frequency table* (:func:`published_frequencies`: one row per distinct
combination of the QIs, the sensitive attributes and the published columns linking a person's
rows, with its ``count`` and the position of its first row), reports the file's SHA-256 and every
verdict it reached; the orchestrator reads the file once, checks the digest, measures the table
with :func:`~anon_dagster.risk.frequencies.measure_frequencies` and judges the declared
thresholds with the criteria registry (:func:`rejudge`).

Definitions:

- a *frequency-derived* check is a threshold of ``policy.thresholds`` whose figure the frequency
  table alone gives (:func:`frequency_checks`): every threshold but those needing the declared
  population (journalist, marketer), and population uniqueness when a population is declared
  (the external job measured it against the population, which the frequency table does not hold);
- the re-verification *refuses* when the file's digest is not the one reported, when the table
  cannot be read or measured, when a re-judged check blocks (failed with severity ``error``), or
  when a re-judged check's verdict or figure differs from the job's (figures compared within
  the registry's :data:`~anon_dagster.criteria.TOLERANCE`, relative and absolute).
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .. import objectstore
from ..criteria import REGISTRY, TOLERANCE, declared_checks
from ..errors import DataError, UserError
from ..io import write_table_atomic
from ..risk.frequencies import COUNT_COLUMN, frequency_table, measure_frequencies
from ..spec import ReleaseSpec
from . import gate
from .evaluate_step import describe_error
from .evaluation import CheckResult
from .shown_outcomes import ShownCheck
from .shown_values import Shown, markdown, text

FIRST_ROW = "__first"  # the position of a frequency row's first row (orders the classes as the rows do)
PERSON_COLUMN = "__person"  # each frequency row's person, derived from the linking columns


@dataclass(frozen=True)
class FrequencyFile:
    """A frequency table written: where (a local path or an object-storage location), its SHA-256
    (hex) and its number of rows."""

    path: Path | objectstore.ObjectPath
    sha256: str
    rows: int


def frequency_columns(spec: ReleaseSpec, published: Any) -> list[str]:
    """The columns of the published frequency table of ``published`` (a table with ``columns``:
    pandas or Spark): the QIs, the sensitive attributes and the published columns linking a
    person's rows (:func:`~.gate.linking_columns`), once each."""
    return list(dict.fromkeys([*spec.quasi_identifiers, *spec.sensitive, *gate.linking_columns(spec, published)]))


def with_categories(freq: pd.DataFrame, categories: Mapping[str, Sequence[object]]) -> pd.DataFrame:
    """``freq`` with the columns of ``categories`` as categoricals of those categories, in that
    order (the order the pandas engine's table holds a generalized column in)."""
    freq = freq.copy()
    for name, cats in categories.items():
        if name in freq.columns:
            freq[name] = pd.Categorical(freq[name], categories=pd.Index(list(cats), dtype=object))
    return freq


def published_frequencies(spec: ReleaseSpec, anonymized: pd.DataFrame) -> pd.DataFrame:
    """The frequency table of the published view of ``anonymized`` (a pandas table), with
    ``count`` and :data:`FIRST_ROW`; a categorical column keeps its categories."""
    view = gate.publishable_view(anonymized)
    columns = frequency_columns(spec, view)
    freq = frequency_table(view, columns, counts=COUNT_COLUMN, first_row=FIRST_ROW)
    return with_categories(freq, {c: list(view[c].cat.categories) for c in columns
                                  if isinstance(view[c].dtype, pd.CategoricalDtype)})


def write_frequencies(freq: pd.DataFrame, where: str | Path) -> FrequencyFile:
    """Write ``freq`` as parquet to ``where`` (a local path, written atomically and owner-only, or
    an object-storage URI: :mod:`~anon_dagster.objectstore`) and digest the bytes written."""
    loc = objectstore.location(str(where))
    if loc.suffix != ".parquet":
        raise DataError(f"{where}: the frequency table is written as parquet: name a .parquet file")
    if isinstance(loc, objectstore.ObjectPath):
        buffer = io.BytesIO()
        freq.to_parquet(buffer, index=False)
        objectstore.upload(loc, buffer.getvalue())
        return FrequencyFile(loc, hashlib.sha256(buffer.getvalue()).hexdigest(), len(freq))
    loc.parent.mkdir(parents=True, exist_ok=True)
    write_table_atomic(freq, loc)
    return FrequencyFile(loc, hashlib.sha256(loc.read_bytes()).hexdigest(), len(freq))


def read_location(where: str) -> bytes | None:
    """The bytes at ``where`` (a local path or an object-storage URI); None when there is nothing."""
    loc = objectstore.location(where)
    if isinstance(loc, objectstore.ObjectPath):
        return objectstore.read_bytes(loc)
    return loc.read_bytes() if loc.is_file() else None


def frequency_checks(spec: ReleaseSpec) -> list[str]:
    """The names of the declared frequency-derived checks (module docstring), in registry order."""
    declared = {c.name for c in declared_checks(spec)}
    population = spec.policy.population is not None
    return [c.check_name for c in REGISTRY.values() if c.check_name in declared and not c.needs_population
            and not (population and c.key == "population_uniqueness")]


def measure_frequency_file(spec: ReleaseSpec, freq: pd.DataFrame) -> dict[str, Any]:
    """The release's figures (``RiskMeasures.to_dict()``) of a published frequency table, with the
    options the spec decides (:func:`~.gate.risk_options`), the persons linked as on the rows."""
    linking = gate.linking_columns(spec, freq)
    persons = None
    if linking:
        freq = freq.assign(**{PERSON_COLUMN: gate.person_link(spec, freq.reset_index(drop=True)).to_numpy()})
        persons = PERSON_COLUMN
    measured = measure_frequencies(
        freq, spec.quasi_identifiers, spec.sensitive or None, sampling_fraction=spec.policy.sampling_fraction,
        counts=COUNT_COLUMN, first_row=FIRST_ROW if FIRST_ROW in freq.columns else None, persons=persons,
        **gate.risk_options(spec, None))
    return gate.release_figures(spec, measured, None)


def _same(a: Any, b: Any) -> bool:
    """Two figures are the same: both absent, or equal within :data:`TOLERANCE`."""
    if a is None or b is None:
        return a is None and b is None
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=TOLERANCE, abs_tol=TOLERANCE)


@dataclass
class Reverification:
    """The orchestrator's re-verification of an external job's frequency-derived checks.

    ``checks`` are the re-judged results (empty when the table could not be judged),
    ``problems`` one line per reason to refuse (empty: the re-verification passed), ``sha256``
    the digest of the file read.
    """

    checks: list[CheckResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    sha256: str | None = None

    @property
    def passed(self) -> bool:
        return not self.problems

    def shown(self) -> ShownCheck:
        """The publication check's verdict: passed, or failed (ERROR) with one line per problem."""
        metadata: dict[str, Any] = {
            "rejudged_checks": Shown("json", [c.to_json() for c in self.checks]),
            **({"frequency_table_sha256": text(self.sha256)} if self.sha256 else {})}
        if self.passed:
            names = ", ".join(c.name for c in self.checks) or "none declared"
            return ShownCheck(True, "error", f"re-verified from the frequency table: {names}", metadata)
        failed = sorted({c.name for c in self.checks if c.blocks})
        return ShownCheck(False, "error", "\n".join(self.problems),
                          {"reasons": markdown("\n".join(self.problems)), "failed_checks": Shown("json", failed),
                           **metadata})


def rejudge(spec: ReleaseSpec, data: bytes, *, sha256: str, reported: Sequence[Mapping[str, Any]]) -> Reverification:
    """Re-judge the frequency-derived checks from the frequency table file's bytes ``data``.

    ``sha256`` is the digest the external job reported for the file, ``reported`` its checks in
    contract form (``CheckResult.to_json()``). See the module docstring for when it refuses.
    """
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        return Reverification(problems=[f"the frequency table's SHA-256 is {digest}, not the {sha256} the "
                                        "external job reported: the file changed after it was written"],
                              sha256=digest)
    try:
        freq = pd.read_parquet(io.BytesIO(data))
        measures = measure_frequency_file(spec, freq)
    except Exception as exc:  # noqa: BLE001 - any unreadable table refuses, in one line (as a check's error)
        return Reverification(problems=[f"the frequency table could not be measured: {describe_error(exc)}"],
                              sha256=digest)
    wanted = frequency_checks(spec)
    severity = {c.name: c for c in declared_checks(spec)}
    by_name = {str(r.get("name")): r for r in reported if isinstance(r, Mapping)}
    checks, problems = [], []
    for outcome in gate.threshold_outcomes(spec, measures):
        if outcome.name not in wanted:
            continue
        declared = severity[outcome.name]
        result = CheckResult(outcome.name, bool(outcome.passed), declared.severity, outcome.value, outcome.threshold,
                             outcome.comparison, outcome.summary, spec_key=declared.spec_key)
        checks.append(result)
        theirs = by_name.get(result.name)
        if result.blocks:
            problems.append(f"{result.name}: {result.summary} (re-judged from the frequency table)")
        if theirs is None:
            problems.append(f"{result.name}: the external job reported no verdict for it")
        elif bool(theirs.get("passed")) != result.passed or not _same(theirs.get("measured"), result.measured):
            problems.append(f"{result.name}: the external job reported passed={bool(theirs.get('passed'))}, "
                            f"measured {theirs.get('measured')!r}; the frequency table gives passed={result.passed}, "
                            f"measured {result.measured!r}")
    return Reverification(checks, problems, digest)


def read_and_rejudge(spec: ReleaseSpec, message: Mapping[str, Any] | None) -> Reverification:
    """:func:`rejudge` of the frequency table a :data:`~.pipes_values.FREQUENCIES_MESSAGE` names
    (refused when there is no such message, or the file cannot be read)."""
    if message is None:
        return Reverification(problems=["the external job reported no frequency table"])
    path, sha256 = message.get("path"), message.get("sha256")
    if not isinstance(path, str) or not isinstance(sha256, str):
        return Reverification(problems=["the external job's frequency-table message has no path or SHA-256"])
    try:
        data = read_location(path)  # read once: the digest and the figures are of the same bytes
    except (OSError, UserError) as exc:
        return Reverification(problems=[f"{objectstore.shown(path)}: the frequency table could not be read: "
                                        f"{objectstore.describe(exc)}"])
    if data is None:
        return Reverification(problems=[f"{objectstore.shown(path)}: the frequency table could not be read: "
                                        "there is no such file"])
    return rejudge(spec, data, sha256=sha256, reported=list(message.get("checks") or []))


__all__ = ["COUNT_COLUMN", "FIRST_ROW", "PERSON_COLUMN", "FrequencyFile", "Reverification", "frequency_checks",
           "frequency_columns", "measure_frequency_file", "published_frequencies", "read_and_rejudge", "read_location", "rejudge",
           "with_categories", "write_frequencies"]
