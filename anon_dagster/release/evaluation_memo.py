"""The checks' evaluation, taken up again by the publication step when nothing it depends on changed.

The publication step evaluates the gate itself (it never reads a check result from Dagster's
storage). In a run on the in-process executor the checks have, moments before, evaluated the
very same stored tables: when everything that evaluation depends on is unchanged, the
publication step takes it up instead of computing it a second time. An evaluation depends on

- the spec (its hash: content and table hierarchies) and the partition;
- the three stored tables, byte for byte as loaded: the anonymized one with the record it
  carries, the pseudonymized one and the raw one (a digest of every value, dtype and column);
- the population file of ``policy.population`` (size and modification time);
- the ledger: its file, and every entry the composition, the ε budget and the sequential-release
  check read (ids, statuses, supersessions);

and is kept only when it judged every declared check. Anything else (another process, another
run's tables, a publication of the population in between) is a miss, and the step evaluates
again. The memo lives in this process only and holds the last few evaluations.
"""

from __future__ import annotations

import hashlib
import json
import os

import pandas as pd

from ..spec import ReleaseSpec
from .evaluation import Evaluation
from .ledger import Ledger
from .recent import Recent
from .refusals import recorded_population

_KEPT = 8
_MEMO: Recent[Evaluation] = Recent(_KEPT)


def table_digest(table: pd.DataFrame) -> str:
    """SHA-256 of a table's columns, dtypes, values (row order and index included) and attrs."""
    digest = hashlib.sha256(json.dumps([[str(c), str(t)] for c, t in table.dtypes.items()]).encode())
    digest.update(pd.util.hash_pandas_object(table, index=True).to_numpy().tobytes())
    digest.update(json.dumps(table.attrs, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _population_file(spec: ReleaseSpec) -> tuple | None:
    if spec.policy.population is None:
        return None
    try:
        st = os.stat(spec.resolve(spec.policy.population.path))
    except (OSError, TypeError):
        return ("missing",)
    return (st.st_size, st.st_mtime_ns)


def table_digests(*, anonymized: pd.DataFrame, pseudonymized: pd.DataFrame, raw: pd.DataFrame) -> tuple[str, ...]:
    """The digests of the three stored tables an evaluation reads (computed once per step)."""
    return table_digest(anonymized), table_digest(pseudonymized), table_digest(raw)


def evaluation_key(spec: ReleaseSpec, partition: str | None, digests: tuple[str, ...], ledger: Ledger) -> tuple:
    """Everything an evaluation of ``partition`` depends on (see the module docstring);
    ``digests`` are the tables' (:func:`table_digests`)."""
    population = recorded_population(spec)
    entries = ledger.entries(population=population) if population is not None else []
    versions = ledger.entries(release=spec.release, include_superseded=True)
    return (spec.spec_hash(), partition, *digests, _population_file(spec), str(ledger.path),
            tuple((e.id, e.status, e.superseded_by) for e in [*entries, *versions]))


def remember(key: tuple, evaluation: Evaluation) -> None:
    """Keep a complete evaluation under ``key``."""
    _MEMO.put(key, evaluation)


def recall(key: tuple) -> Evaluation | None:
    """The evaluation kept under ``key``, if any."""
    return _MEMO.get(key)


def forget() -> None:
    """Drop every kept evaluation."""
    _MEMO.clear()


__all__ = ["evaluation_key", "forget", "recall", "remember", "table_digest", "table_digests"]
