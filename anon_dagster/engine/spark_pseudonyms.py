"""Pseudonyms on Spark executors: the project's own keyed functions, keys re-derived where they run.

The Spark engine pseudonymizes with ``mapInArrow``: each Arrow batch of the table goes through
:func:`~anon_dagster.pseudonymize.methods.normalize_identifiers` and
:func:`~anon_dagster.pseudonymize.methods.hmac_column` (or ``siv_column``, or
``random_hex_column`` for scope ``row``), the very functions of the pandas engine, so a pseudonym
is the same bytes on both engines. Spark's built-in ``hmac()`` is never used: its key is a literal
of the query, printed in hex by ``explain()`` and written to the event log with the plan.

How the key reaches the executors. Nothing secret is in the function Spark ships:

- the function ``mapInArrow`` calls is pickled with everything it refers to, and travels inside
  the task binary, which Spark stores as a broadcast block (memory, then the executors' local
  disks under memory pressure); a function over 1 MB, and any ``sc.broadcast`` value, is written
  by PySpark to a file under ``spark.local.dir`` in the clear (unless
  ``spark.io.encryption.enabled``). A subkey in a closure or a broadcast is therefore a key on
  disk, outside the key store's protection;
- so the function carries only a :class:`KeyRequest` per key: which subkey (method, purpose,
  key version, publication label, or an internal purpose) and a *check value*, 64 bits of
  HMAC-SHA256 of a fixed label under the subkey (a one-way function of it, like the key store's
  fingerprint: it tells the same key from another and reveals nothing of it);
- each executor's Python worker opens the key store its own environment configures
  (:func:`~anon_dagster.pseudonymize.keystore.open_keystore`: ``ANON_DAGSTER_MASTER_KEY``, or
  ``ANON_DAGSTER_KEYSTORE`` with its passphrase, or Vault), derives the subkey there once and keeps
  it in the worker's memory only. A derived key whose check value differs from the driver's stops
  the job with one line: the executors' key store is not the driver's, and no pseudonym is made
  with another key.

The master key and the passphrase never enter the plan, the task binaries or the event log. On a
cluster the executors' environment must carry the key store's variables through the cluster's
secret mechanism (a Kubernetes secret, the resource manager's credentials); never through
``spark.executorEnv.*``, which is Spark configuration and is written to the event log (the engine
refuses a session whose configuration names a key-store variable).

This module imports no pyspark: the functions run inside the workers Spark starts.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import SecretError

CHECK_LABEL = b"anon_dagster spark key check"
# The internal purpose whose HMAC counts the distinct identifiers of a scope-row column (the
# pandas engine counts the normalized values; their keyed digests count the same and are never
# published: only their number is read).
DISTINCT_PURPOSE = "distinct-count"
DISTINCT_PREFIX = "__distinct__"


def check_value(key: bytes) -> str:
    """64 bits of HMAC-SHA256(key, :data:`CHECK_LABEL`), hex: tells one key from another, reveals nothing."""
    return hmac.new(bytes(key), CHECK_LABEL, hashlib.sha256).digest()[:8].hex()


@dataclass(frozen=True)
class KeyRequest:
    """Which subkey a batch needs, and the check value of the driver's (no key material).

    ``kind`` is ``pseudonym`` (``method``, ``purpose``, ``version``, ``publication``) or
    ``internal`` (``purpose``, ``version``; None for the purpose's default version).
    """

    kind: str
    purpose: str
    method: str | None = None
    version: int | None = None
    publication: str | None = None
    check: str = ""

    def derive(self, keystore: Any) -> bytes:
        if self.kind == "pseudonym":
            return keystore.pseudonym_key(self.method, self.purpose, self.version, self.publication)
        return keystore.derive_key(self.purpose, self.version)

    def checked(self, keystore: Any) -> KeyRequest:
        """This request with the check value of ``keystore``'s subkey (on the driver)."""
        return KeyRequest(self.kind, self.purpose, self.method, self.version, self.publication,
                          check_value(self.derive(keystore)))


_KEYS: dict[KeyRequest, bytes] = {}
_LOCK = threading.Lock()
_STORE: list[Any] = []


def executor_key(request: KeyRequest) -> bytes:
    """The subkey ``request`` names, from the key store of this process's environment (opened
    and derived once per worker process); SecretError when its check value is not the driver's."""
    with _LOCK:
        key = _KEYS.get(request)
        if key is not None:
            return key
        from ..pseudonymize.keystore import open_keystore

        try:
            if not _STORE:
                _STORE.append(open_keystore(create_dev=False))
            key = request.derive(_STORE[0])
        except SecretError as exc:
            raise SecretError(f"a Spark executor cannot open the key store: {exc}") from None
        if check_value(key) != request.check:
            _STORE.clear()  # opened again next time: the environment may be fixed by then
            raise SecretError(
                "the key store of the Spark executors is not the driver's (the check value of the "
                f"{request.kind} key {request.purpose!r} differs): give the executors the same key store "
                "through their environment; no pseudonym was made with another key")
        _KEYS[request] = key
        return key


@dataclass(frozen=True)
class ColumnStep:
    """One identifier column of a batch: dropped, or replaced by its pseudonyms.

    ``method`` hmac, aes_siv or token (for a token, the executors make the digest its token is found
    by: :mod:`.spark_tokens`), ``scope`` population, release or row, ``key`` the subkey's request
    (None for scope row), ``prefix`` the version prefix, ``normalize`` (trim, case, unicode);
    ``distinct`` the request of the key that counts a scope-row column's identifiers.
    """

    column: str
    drop: bool = False
    method: str = "hmac"
    scope: str = "population"
    purpose: str = "default"
    key: KeyRequest | None = None
    prefix: str = ""
    normalize: tuple[bool, str, str] = (True, "keep", "NFC")
    distinct: KeyRequest | None = None


@dataclass(frozen=True)
class LinkageStep:
    """The ledger's linkage pseudonym of ``person`` (never published), in ``column``."""

    column: str
    person: str
    key: KeyRequest
    normalize: tuple[bool, str, str]


def column_pseudonyms(step: ColumnStep, values: pa.Array) -> pa.Array:
    """The pseudonyms of one identifier column's values (the pandas engine's functions)."""
    from ..pseudonymize.methods import hmac_column, random_hex_column, siv_column

    arr = normalized(values, step.column, step.normalize)
    if step.scope == "row":
        result, _ = random_hex_column(arr, step.prefix)
    elif step.method in ("hmac", "token"):  # a token column: the digest its token is found by
        result, _ = hmac_column(executor_key(step.key), arr, step.prefix, count=False, compiled=True)
    else:
        result, _ = siv_column(executor_key(step.key), step.purpose, arr, step.prefix)
    return result.cast(pa.string())


def distinct_digests(step: ColumnStep, values: pa.Array) -> pa.Array:
    """The keyed digests a scope-row column's identifiers are counted by (never published)."""
    from ..pseudonymize.methods import hmac_column

    digests, _ = hmac_column(executor_key(step.distinct), normalized(values, step.column, step.normalize),
                              count=False, compiled=True)
    return digests.cast(pa.string())


def linkage_pseudonyms(step: LinkageStep, values: pa.Array) -> pa.Array:
    """The ledger's linkage pseudonyms of the person column
    (:func:`~anon_dagster.release.ledger.linkage.keyed_persons`: DataError for a person missing)."""
    from ..release.ledger.linkage import keyed_persons

    text = normalized(values, step.person, step.normalize)
    return keyed_persons(text, executor_key(step.key), compiled=True, count=False).cast(pa.string())


def normalized(values: pa.Array, name: str, how: tuple[bool, str, str]) -> pa.Array:
    """The column's values normalized as declared, from Arrow directly (a pandas Series in
    between would copy every value)."""
    from ..pseudonymize.methods import normalize_identifiers

    trim, case, unicode = how
    return normalize_identifiers(values, trim=trim, case=case, unicode=unicode, column=name)


@dataclass(frozen=True)
class PseudonymPlan:
    """What the executors do to each batch: the columns in order, then the linkage column;
    ``output`` the result's columns in order."""

    columns: tuple[ColumnStep, ...]
    linkage: LinkageStep | None = None
    output: tuple[str, ...] = field(default=())

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        def column(name: str) -> pa.Array:
            return batch.column(batch.schema.get_field_index(name))

        made: dict[str, pa.Array] = {}
        for step in self.columns:
            if step.drop:
                continue
            made[step.column] = column_pseudonyms(step, column(step.column))
            if step.distinct is not None:
                made[DISTINCT_PREFIX + step.column] = distinct_digests(step, column(step.column))
        if self.linkage is not None:
            made[self.linkage.column] = linkage_pseudonyms(self.linkage, column(self.linkage.person))
        return pa.RecordBatch.from_arrays([made[n] if n in made else column(n) for n in self.output],
                                          names=list(self.output))


# Rows per Arrow batch handed to the Python workers while pseudonyms are made. Spark's default
# (10,000) pays the JVM's Arrow framing and each batch's fixed Python work (key lookup,
# normalization kernels, the deduplication estimate) 20 times as often; past about 200,000 rows
# the cost per row no longer falls. On Spark 4, ``maxBytesPerBatch`` (64 MB by default) still
# bounds a batch of a wide table.
PSEUDONYM_BATCH_ROWS = 200_000
BATCH_ROWS_CONF = "spark.sql.execution.arrow.maxRecordsPerBatch"


@contextmanager
def pseudonym_batches(spark: Any, rows: int = PSEUDONYM_BATCH_ROWS) -> Iterator[None]:
    """Within the block, Arrow batches of at least ``rows`` rows (a session set higher keeps its
    setting); the session's setting is restored afterwards. Spark reads the setting when a query
    is planned, so the query must run inside the block."""
    previous = spark.conf.get(BATCH_ROWS_CONF)
    current = int(previous)
    if 0 < current < rows:
        spark.conf.set(BATCH_ROWS_CONF, str(rows))
    try:
        yield
    finally:
        spark.conf.set(BATCH_ROWS_CONF, previous)


def pseudonymize_batches(plan: PseudonymPlan):
    """The function ``mapInArrow`` runs: ``plan`` applied to each batch (it holds no key)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield plan.apply(batch)
    return run


__all__ = [
    "BATCH_ROWS_CONF", "CHECK_LABEL", "DISTINCT_PREFIX", "DISTINCT_PURPOSE", "ColumnStep", "KeyRequest", "LinkageStep",
    "PSEUDONYM_BATCH_ROWS", "PseudonymPlan", "check_value", "executor_key", "pseudonym_batches",
    "pseudonymize_batches",
]
