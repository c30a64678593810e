"""Where and how an orchestrator stores the output of a release's steps between runs.

Each stored step carries its policy (:func:`~.stored.at_rest_policy`) in its definition metadata
under :data:`AT_REST_KEY`; a step without one is stored owner-only. The tables go to
:class:`~anon_dagster.storage.TableStore` under the folder given, else
``$DAGSTER_HOME/anon_dagster/storage``, else the orchestrator's own storage folder: never the
repository or the publication folder. The key comes before any write, so a key store that cannot
be opened leaves nothing on disk; a table that must be encrypted is never read in clear text.

A step run on the Spark engine hands on a :class:`~.stored_table.StoredTable` (its rows in a
parquet folder its executors wrote, under ``<folder>/<release>/<step>/<partition>.spark/``):
the value is stored as a table is, under the step's policy, so the pointer and the digest that
proves the folder are encrypted and authenticated when a key store opens; the folder itself is
owner-only in clear text (Spark cannot read the AES-GCM files), which the note says
(:data:`SPARK_NOTE`) and, for a policy asking for encryption, a warning too (docs/scale.md).
Storing a pointer removes the folders the earlier pointers of the partition named.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .. import storage
from .stored_table import StoredTable, is_marker

AT_REST_KEY = "anon_dagster/at_rest"
ENCRYPTED_NOTE = "encrypted (AES-256-GCM), owner-only"
CLEAR_NOTE = "owner-only"
SPARK_NOTE = "parquet folder owner-only, not encrypted (Spark engine); its pointer and digest {pointer}"
SPARK_FOLDER_SUFFIX = storage.ENGINE_FOLDER_SUFFIX


def spark_folder(folder: Path, release: str, step: str, partition: str | None, run: str) -> Path:
    """Where a Spark step writes the table of ``partition``: one folder per write (``run``), so a
    table being read is never rewritten in place."""
    return storage.TableStore(folder).engine_folder((release, step), partition) / run


def storage_folder(base_dir: str | None, fallback: Callable[[], str | Path]) -> Path:
    """The folder of the stored tables: ``base_dir``, else under ``$DAGSTER_HOME``, else under ``fallback()``."""
    if base_dir:
        return Path(base_dir).expanduser()
    if os.environ.get("DAGSTER_HOME"):
        return Path(os.environ["DAGSTER_HOME"]) / "anon_dagster" / "storage"
    return Path(fallback()) / "anon_dagster"


def step_policy(metadata: Mapping[str, Any] | None) -> str:
    """The policy a step's definition metadata gives (owner-only when it gives none)."""
    return (metadata or {}).get(AT_REST_KEY, storage.OWNER_ONLY)


def write_step(folder: Path, name: Sequence[str], partition: str | None, table: pd.DataFrame | StoredTable,
               policy: str, derive_key: Callable[[str], bytes]) -> tuple[str, str | None]:
    """Store ``table`` as ``policy`` says; returns how it is stored (:data:`ENCRYPTED_NOTE`,
    :data:`CLEAR_NOTE` or, for a :class:`~.stored_table.StoredTable`, :data:`SPARK_NOTE`) and the
    warning to log when it could have been encrypted but was not."""
    key = storage.data_key(policy, derive_key)
    warning = None
    if key is None and policy == storage.ENCRYPTED_IF_AVAILABLE:
        warning = (f"{'/'.join(name)}: no key store configured, personal data stored owner-only without "
                   "encryption at rest")
    if isinstance(table, StoredTable):
        storage.TableStore(folder).write(name, partition, table.as_frame(), key)
        _drop_earlier_folders(table)
        if policy in (storage.ENCRYPTED, storage.ENCRYPTED_IF_AVAILABLE):
            warning = (f"{'/'.join(name)}: the Spark engine keeps this personal data as an owner-only parquet "
                       f"folder in clear text; the at-rest policy {policy!r} covers its pointer and digest only "
                       "(docs/scale.md)")
        return SPARK_NOTE.format(pointer=ENCRYPTED_NOTE if key else CLEAR_NOTE), warning
    storage.TableStore(folder).write(name, partition, table, key)
    return (ENCRYPTED_NOTE if key else CLEAR_NOTE), warning


def _drop_earlier_folders(table: StoredTable) -> None:
    """Remove the folders of the partition other than ``table``'s: their pointer is replaced."""
    here = table.path
    if not here.parent.name.endswith(SPARK_FOLDER_SUFFIX):
        return
    for other in here.parent.iterdir():
        if other.is_dir() and other.name != here.name:
            shutil.rmtree(other, ignore_errors=True)


def read_step(folder: Path, name: Sequence[str], partition: str | None, policy: str,
              derive_key: Callable[[str], bytes]) -> pd.DataFrame | StoredTable:
    """The stored table, decrypted when it is encrypted (never in clear text under ``encrypted``);
    a stored :class:`~.stored_table.StoredTable` is given back as itself (its folder is verified
    by the step that reads it)."""
    table = storage.TableStore(folder).read(name, partition, lambda: derive_key(storage.DATA_AT_REST_PURPOSE),
                                            encrypted_only=policy == storage.ENCRYPTED)
    return StoredTable.from_frame(table) if is_marker(table) else table


__all__ = ["AT_REST_KEY", "CLEAR_NOTE", "ENCRYPTED_NOTE", "SPARK_NOTE", "read_step", "spark_folder", "step_policy",
           "storage_folder", "write_step"]
