"""Custody of personal data: who read, deleted, erased or re-keyed what, when, in which run and why.

Every governed action appends one entry to the custody log (the key store's audit log,
:mod:`anon_dagster.pseudonymize.audit`, checked by ``anon-dagster audit verify``, listed by
``anon-dagster audit show``). An entry's event holds:

- ``action``: ``read`` (a stored raw or pseudonymized table loaded: :func:`record_read`, which
  the storage layer calls after every read, :class:`anon_dagster.storage.TableStore`),
  ``retention-delete``, ``erase``, a key operation (``key-init``, ``key-rotate``,
  ``key-bridge``, ``key-rekey``, ``key-reseal``), besides the ``reidentify``, ``approve`` and
  ``reject`` entries the reversal and the decisions write themselves;
- ``actor``: who — the run's launcher when the orchestrator names one (Dagster: the run's
  ``user`` tag, which Dagster+ sets to the launching user), else :func:`~.binding.runner`
  (``$ANON_DAGSTER_RUNNER``, else the OS user);
- ``run``: the orchestrator's run id when the action runs inside one (:func:`custody_context`),
  else ``-``; ``why``: the reason given, or what asked for it;
- what it concerns: ``release``, ``step``, ``partition`` and counts; never a value of the data
  and never an identifier in clear (an erasure names the person by its linkage pseudonym's
  digest only).

A read is the one action that is not refused when it cannot be recorded for want of a log: a
release without any key store stores and reads its tables in clear text and has no custody log
(a warning says so once per process). A custody log that does not verify refuses the read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import SecretError
from ...pseudonymize.audit import RUN, AuditLog
from ...pseudonymize.keystore import (
    ENV_DEV,
    ENV_KEYSTORE,
    ENV_MASTER_KEY,
    ENV_PASSPHRASE,
    ENV_STATE,
    ENV_VAULT_KEY,
    open_keystore,
)
from .binding import runner
from .custody import custody_log

# the stored steps whose reads are in custody: both still hold identifiers or their pseudonyms
READ_GOVERNED_STEPS = ("raw", "pseudonymized")
NO_RUN = "-"

# the variables that decide which key store the environment names (Vault's address and token included)
_KEY_VARIABLES = (ENV_KEYSTORE, ENV_PASSPHRASE, ENV_MASTER_KEY, ENV_VAULT_KEY, ENV_STATE, ENV_DEV, "VAULT_ADDR",
                  "VAULT_TOKEN")

_log = logging.getLogger(__name__)
_warned: set[str] = set()
_environment_store: dict[str, Any] = {}


@dataclass(frozen=True)
class CustodyContext:
    """What a governed action inside an orchestrator's run is recorded with: the key store whose
    custody log it goes to (None: the one the environment names), the run id and the reason."""

    keystore: Any = None
    run: str = NO_RUN
    why: str = ""
    audit_path: str | Path | None = None
    actor: str | None = None  # who launched the run, when the orchestrator knows (else the runner)


_current: ContextVar[CustodyContext | None] = ContextVar("anon_dagster_custody", default=None)


def _context() -> CustodyContext:
    return _current.get() or CustodyContext()


@contextlib.contextmanager
def custody_context(*, keystore: Any = None, run: str | None = None, why: str = "",
                    audit_path: str | Path | None = None, actor: str | None = None) -> Iterator[CustodyContext]:
    """Record the governed actions of the block with this key store, run id, reason and, when
    the orchestrator knows who launched the run, that ``actor`` (an orchestrator wraps a step's
    loads in it)."""
    token = _current.set(CustodyContext(keystore, run or NO_RUN, why, audit_path, actor or None))
    run_token = RUN.set(run or None)  # the reversal's own entries name the run too
    try:
        yield _context()
    finally:
        RUN.reset(run_token)
        _current.reset(token)


def _log_of(keystore: Any, audit_path: str | Path | None) -> AuditLog:
    return custody_log(keystore, audit_path)


def record(action: str, *, keystore: Any = None, why: str = "", run: str | None = None,
           audit_path: str | Path | None = None, **fields: Any) -> dict[str, Any]:
    """Append one governed action to the custody log (verified against its anchor first); the
    entry. ``keystore``, ``run``, ``audit_path`` default to the :func:`custody_context`'s."""
    context = _context()
    event = {"action": action, "actor": context.actor or runner(), "run": run or context.run, "why": why or context.why or "-",
             **fields}
    log = _log_of(keystore if keystore is not None else context.keystore, audit_path or context.audit_path)
    return log.append(event)


def environment_keystore() -> Any:
    """The key store the environment names, opened once per process and set of variables (a key
    file's scrypt unsealing is not repeated at every read); SecretError as :func:`open_keystore`."""
    marker = hashlib.sha256(json.dumps([os.environ.get(n) for n in _KEY_VARIABLES]).encode()).hexdigest()
    if marker not in _environment_store:
        store = open_keystore()
        _environment_store.clear()
        _environment_store[marker] = store
    return _environment_store[marker]


def record_read(name: Sequence[str], partition: str | None) -> dict[str, Any] | None:
    """The custody entry of a read of the stored table ``name`` (``(release, step)``) of
    ``partition``; None for a table whose reads are not governed, or when there is no custody log
    (see the module docstring). AuditTampered (the read is refused) when the log does not verify."""
    if len(name) < 2 or name[-1] not in READ_GOVERNED_STEPS:
        return None
    context = _context()
    try:
        keystore = context.keystore if context.keystore is not None else environment_keystore()
        return record("read", keystore=keystore, release="/".join(name[:-1]), step=name[-1],
                      partition=partition or "", why=context.why or "load of a stored intermediate table")
    except SecretError as exc:
        if "read" not in _warned:
            _warned.add("read")
            _log.warning("reads of stored raw and pseudonymized tables are not in a custody log: %s", exc)
        return None


__all__ = ["NO_RUN", "READ_GOVERNED_STEPS", "CustodyContext", "custody_context", "environment_keystore", "record",
           "record_read"]
