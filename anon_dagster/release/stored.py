"""The gate's evaluation of a stored anonymized table: what the checks and the publication judge.

An orchestrator that keeps each step's output between runs (the Dagster assets) evaluates the
anonymized table as it was stored, with the tables it came from: the pseudonymized one (what the
utility queries compare with) and the raw one (whose identifier values must never be published).
The anonymized table carries its own transformation record (:func:`~.gate.attach_record`),
stored, encrypted and authenticated with it, so the record that places the population into the
classes is the one of this very table; a copy in a report folder is for reading only and is
never read here.

A record that cannot be read is no record: the checks that need it then fail and say why, and
every other check is still judged.

Every stored table is still personal data (the anonymized one holds the linkage pseudonyms and
carries the record the gate reads): :func:`at_rest_policy` says how each is kept.
"""

from __future__ import annotations

import pandas as pd

from .. import storage
from ..anonymize.record import TransformationRecord
from ..errors import DataError
from ..spec import ReleaseSpec
from . import gate, pipeline
from .evaluation import Evaluation
from .ledger import Ledger

# the steps whose output is stored for the next one (the publication stores nothing)
STORED_STEPS = ("raw", "pseudonymized", "anonymized")


def at_rest_policy(spec: ReleaseSpec, step: str) -> str | None:
    """How the output of ``step`` is stored (:mod:`anon_dagster.storage`): encrypted and
    authenticated when the release opens a key store anyway, else encrypted if one is configured
    (owner-only in clear otherwise, with a warning); None for a step that stores nothing."""
    if step not in STORED_STEPS:
        return None
    return storage.ENCRYPTED if pipeline.needs_keystore(spec) else storage.ENCRYPTED_IF_AVAILABLE


def stored_record(table: pd.DataFrame) -> TransformationRecord | None:
    """The record ``table`` carries; None when it carries none, or one this version cannot read."""
    try:
        return gate.attached_record(table)
    except (ValueError, DataError):
        return None


def evaluate_stored(spec: ReleaseSpec, anonymized: pd.DataFrame, *, pseudonymized: pd.DataFrame,
                    raw: pd.DataFrame, ledger: Ledger | None, partition: str | None,
                    only: set[str] | None = None) -> Evaluation:
    """:func:`~.pipeline.evaluate` of the stored ``anonymized`` table with the record it carries,
    ``pseudonymized`` as the original and ``raw`` as the ingested table (every declared check,
    or those named in ``only``)."""
    return pipeline.evaluate(spec, anonymized, record=stored_record(anonymized), original=pseudonymized, raw=raw,
                             ledger=ledger, partition=partition, only=only)


__all__ = ["STORED_STEPS", "at_rest_policy", "evaluate_stored", "stored_record"]
