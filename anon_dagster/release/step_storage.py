"""Where and how an orchestrator stores the output of a release's steps between runs.

Each stored step carries its policy (:func:`~.stored.at_rest_policy`) in its definition metadata
under :data:`AT_REST_KEY`; a step without one is stored owner-only. The tables go to
:class:`~anon_dagster.storage.TableStore` under the folder given, else
``$DAGSTER_HOME/anon_dagster/storage``, else the orchestrator's own storage folder: never the
repository or the publication folder. The key comes before any write, so a key store that cannot
be opened leaves nothing on disk; a table that must be encrypted is never read in clear text.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .. import storage

AT_REST_KEY = "anon_dagster/at_rest"
ENCRYPTED_NOTE = "encrypted (AES-256-GCM), owner-only"
CLEAR_NOTE = "owner-only"


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


def write_step(folder: Path, name: Sequence[str], partition: str | None, table: pd.DataFrame, policy: str,
               derive_key: Callable[[str], bytes]) -> tuple[str, str | None]:
    """Store ``table`` as ``policy`` says; returns how it is stored (:data:`ENCRYPTED_NOTE` or
    :data:`CLEAR_NOTE`) and the warning to log when it could have been encrypted but was not."""
    key = storage.data_key(policy, derive_key)
    warning = None
    if key is None and policy == storage.ENCRYPTED_IF_AVAILABLE:
        warning = (f"{'/'.join(name)}: no key store configured, personal data stored owner-only without "
                   "encryption at rest")
    storage.TableStore(folder).write(name, partition, table, key)
    return (ENCRYPTED_NOTE if key else CLEAR_NOTE), warning


def read_step(folder: Path, name: Sequence[str], partition: str | None, policy: str,
              derive_key: Callable[[str], bytes]) -> pd.DataFrame:
    """The stored table, decrypted when it is encrypted (never in clear text under ``encrypted``)."""
    return storage.TableStore(folder).read(name, partition, lambda: derive_key(storage.DATA_AT_REST_PURPOSE),
                                           encrypted_only=policy == storage.ENCRYPTED)


__all__ = ["AT_REST_KEY", "CLEAR_NOTE", "ENCRYPTED_NOTE", "read_step", "step_policy", "storage_folder", "write_step"]
