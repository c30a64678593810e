"""The release pipeline, written once: ingest → pseudonymize → anonymize → evaluate → publish.

Plain functions over DataFrames and plain values (no Dagster): the Dagster assets and checks,
``anon-dagster check``, ``anonymize``, ``compose`` and ``risk --config`` all call these, so
every figure and every verdict has one computation. A step never re-derives what an earlier
step computed: :func:`evaluate` builds the published view's equivalence classes once and hands
them to every figure (risk, class sizes, small classes, composition).

- :func:`ingest` reads the partition's rows of the spec's source and checks them against the spec
  (:func:`ingest_frame`: of a table given as a DataFrame, a Dagster asset's; :func:`ingest_source`
  either, as the spec's source says);
- :func:`pseudonymize` replaces identifiers by keyed pseudonyms (or drops them) and, when the
  spec composes releases, adds the ledger's linkage pseudonym (never published);
- :func:`anonymize` generalizes and suppresses as the spec declares; a policy no transformation
  reaches gives the closest evidence instead (see :func:`anonymize`), never a crash without
  check results. With ``policy.attacks`` it first sets the attacks' control records aside
  (:mod:`anon_dagster.release.attacks`): a withheld slice is never published;
- :func:`evaluate` judges the anonymized table against every declared check
  (:class:`~anon_dagster.release.evaluation.Evaluation`), the attacks included;
- :func:`~anon_dagster.release.publication.publish` writes a passing evaluation's publication
  (the protocol is in :mod:`anon_dagster.release.publication`);
  :func:`~anon_dagster.release.publication.record_refusal` keeps a failing one's report.

This module holds ingest, pseudonymize and :func:`run_gate`; the anonymize step is in
:mod:`.anonymize_step`, the evaluate step in :mod:`.evaluate_step` (their names stay
importable from here).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..criteria import DeclaredCheck
from ..errors import UserError
from ..io import plain_json
from ..partitions import frame_rows, read_release_data
from ..spec import ReleaseSpec, check_data
from ..spec.catalog import pandas_refusal
from . import gate
from .anonymize_step import Anonymized, anonymize, reach_k_per_person
from .evaluate_step import composition_assignment, declared_checks, describe_error, evaluate
from .evaluation import Evaluation
from .governance.suppression import drop_suppressed
from .ledger import Ledger, linkage_pseudonyms
from .ledger.linkage import person_normalization

LINKAGE_PURPOSE = "ledger-linkage"


@dataclass
class Ingested:
    """A partition's rows of the source, checked against the spec, and where they came from."""

    data: pd.DataFrame
    source: str


def ingest(spec: ReleaseSpec, partition: str | None = None, input_path: str | None = None) -> Ingested:
    """The rows of ``partition`` (all rows when None) of ``input_path`` or the spec's source.

    Raises a UserError naming the file and column for data that does not match the spec, and
    for a source only the Spark engine reads (``source.table``, a Delta table) without
    ``input_path``: the one line of :func:`~anon_dagster.spec.catalog.pandas_refusal`.
    """
    refusal = pandas_refusal(spec) if input_path is None else None
    if refusal is not None:
        raise UserError(refusal)
    df, path = read_release_data(spec, partition, input_path)
    check_data(spec, df, source=path)
    return Ingested(df, str(path))


def ingest_frame(spec: ReleaseSpec, data: object, partition: str | None = None, *, source: str,
                 one_partition: bool = False) -> Ingested:
    """:func:`ingest` of a table given as a value (a Dagster asset's, ``source.asset``) instead of
    a file: the rows of ``partition``, checked against the spec by the same rules.

    ``source`` names the table in errors and in the result (``the Dagster asset 'a/b'``);
    ``one_partition``: the table is the partition's own, so a row outside its window is refused
    (:func:`~anon_dagster.partitions.release_rows`). A value that is not a pandas DataFrame is
    a UserError naming ``source``.
    """
    if not isinstance(data, pd.DataFrame):
        raise UserError(f"{spec.label}: {source} gave a {type(data).__module__}.{type(data).__qualname__}, not a "
                        "pandas DataFrame: its IO manager must load it as one")
    df = frame_rows(spec, data, partition, source, one_partition=one_partition)
    check_data(spec, df, source=source)
    return Ingested(df, source)


def ingest_source(spec: ReleaseSpec, partition: str | None, table: object = None, *,
                  table_partitioned: Callable[[], bool] = lambda: False) -> Ingested:
    """The partition's rows of the release's source: :func:`ingest` of its file or, for
    ``source.asset``, :func:`ingest_frame` of ``table`` (that asset's value);
    ``table_partitioned()``: whether that asset is partitioned (its partition the table's own)."""
    if spec.source.asset_key is None:
        return ingest(spec, partition)
    return ingest_frame(spec, table, partition, source=spec.source.described,
                        one_partition=partition is not None and table_partitioned())


def needs_keystore(spec: ReleaseSpec) -> bool:
    """Whether the release opens the key store: it pseudonymizes a column or composes releases."""
    return bool(spec.pseudonymized) or spec.composition is not None


def check_keystore(spec: ReleaseSpec, keystore: Any | None) -> None:
    """Refuse a missing key store, or one kept among the release's data (source, publication,
    population folders): the key must be kept apart from what it protects."""
    from ..pseudonymize.keystore import check_apart_from

    if keystore is None:
        raise UserError(f"{spec.label}: the release needs the key store, and none was given")
    check_apart_from(keystore, spec.data_folders(), f"release {spec.release!r}")


@dataclass
class Pseudonymized:
    """The table with identifiers replaced (or dropped); still personal data."""

    data: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)


def pseudonymize(spec: ReleaseSpec, raw: pd.DataFrame, keystore: Any | None, *,
                 linkage: bool = True, partition: str | None = None) -> Pseudonymized:
    """Identifiers pseudonymized as declared, the others dropped.

    ``partition`` is the partition ``raw`` holds (None: the whole release): a column of scope
    ``release`` (the default) is bound to that one publication, so another partition's
    pseudonyms of the same person differ.

    With ``linkage`` (the default) and a ``composition`` block, the column
    :data:`~anon_dagster.release.gate.LINKAGE_COLUMN` holds each row's linkage pseudonym of
    ``composition.person`` under the key store's ``ledger-linkage`` subkey: it links a person
    across releases in the ledger and is never published. The key store must sit apart from
    the release's data (checked here, before anything is written).

    The rows of a person on the release's suppression list (erased,
    :mod:`~anon_dagster.release.governance.suppression`) are dropped first.
    """
    from ..pseudonymize import pseudonymize as pseudonymize_columns

    wants_linkage = linkage and spec.composition is not None
    if spec.pseudonymized or wants_linkage:
        check_keystore(spec, keystore)
    # persons erased from the release go no further than the raw table (the one step every path takes)
    raw = drop_suppressed(spec, raw, keystore)
    if spec.pseudonymized:
        out, summary = pseudonymize_columns(raw, spec, keystore, partition=partition)
        info = summary.to_dict()
    else:
        out, info = raw.drop(columns=[c for c in spec.identifiers if c in raw.columns]), {}
    if wants_linkage:
        out = out.copy()
        out[gate.LINKAGE_COLUMN] = linkage_column(spec, raw, keystore)
    return Pseudonymized(out, plain_json(info))


def linkage_column(spec: ReleaseSpec, table: pd.DataFrame, keystore: Any) -> Any:
    """Each row's linkage pseudonym of ``composition.person``: the identifier spelled as the
    published pseudonym spells it (:func:`~.ledger.linkage.person_normalization`), keyed with the
    ``ledger-linkage`` subkey, which key rotation does not change (see the key store)."""
    key = keystore.derive_key(LINKAGE_PURPOSE)
    return linkage_pseudonyms(table[spec.composition.person].reset_index(drop=True), key,
                              normalize=person_normalization(spec))


@dataclass
class GateRun:
    """A release partition taken through the whole gate: every step's output and the evaluation."""

    ingested: Ingested
    pseudonymized: Pseudonymized
    anonymized: Anonymized
    evaluation: Evaluation


def run_gate(spec: ReleaseSpec, *, partition: str | None = None, input_path: str | None = None,
             keystore: Any | None = None, ledger: Ledger | None = None, only: set[str] | None = None) -> GateRun:
    """Ingest, pseudonymize, anonymize and evaluate one partition, as the Dagster assets and
    checks do in turn (``anon-dagster check``): the same functions, so the same outcomes."""
    ingested = ingest(spec, partition, input_path)
    pseudo = pseudonymize(spec, ingested.data, keystore, partition=partition)
    anon = anonymize(spec, pseudo.data)
    evaluation = evaluate(spec, anon.data, record=anon.record, original=pseudo.data, raw=ingested.data,
                          ledger=ledger, partition=partition, only=only)
    return GateRun(ingested, pseudo, anon, evaluation)


__all__ = [
    "LINKAGE_PURPOSE", "Anonymized", "DeclaredCheck", "GateRun", "Ingested", "Pseudonymized", "anonymize",
    "check_keystore", "composition_assignment", "declared_checks", "describe_error", "evaluate", "ingest",
    "ingest_frame", "ingest_source", "linkage_column", "needs_keystore", "pseudonymize", "reach_k_per_person",
    "run_gate",
]
