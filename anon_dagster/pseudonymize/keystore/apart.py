"""Keeping keys apart from the data: where a key store may not live.

:func:`check_location` refuses locations that travel with the data or the code (a repository,
a data or publication folder, ``$DAGSTER_HOME``); :func:`check_apart_from` refuses a store
inside the folders one particular release reads or publishes.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import SecretError
from .base import ENV_DEV, KeyStore

# Folder names that hold data or what is published from it: a key store there would travel with
# the data it protects (backups, copies, shares), which defeats keeping the key apart.
FORBIDDEN_FOLDER_NAMES = frozenset({
    "data", "dataset", "datasets", "raw", "published", "publication", "publications", "public",
    "export", "exports", "output", "outputs",
})


def project_root(start: Path | None = None) -> Path:
    """The nearest folder above ``start`` (default: cwd) holding ``pyproject.toml`` or ``.git``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").exists() or (folder / ".git").exists():
            return folder
    return here


def check_location(path: str | Path, dev: bool = False) -> None:
    """Refuse a key store location that travels with the data or the code.

    The rule: no folder containing the key file (its own folder included) may be a git
    repository (hold ``.git``), be named like a data or publication folder
    (:data:`FORBIDDEN_FOLDER_NAMES`, case-insensitive), or be ``$DAGSTER_HOME`` (where Dagster
    keeps run storage and materialized data). ``dev=True`` is for the git-ignored development
    store ``.anon_dagster/dev-keystore``: it waives the repository rule, and checks folder names
    only inside the repository (a checkout under, say, ``/data/src/`` is not a data folder of the
    project's own); it warns.
    """
    file = Path(path).expanduser().resolve()
    dagster_home = os.environ.get("DAGSTER_HOME")
    home = Path(dagster_home).expanduser().resolve() if dagster_home else None
    inside_repo = True
    for folder in file.parents:
        if folder.name.lower() in FORBIDDEN_FOLDER_NAMES and (inside_repo or not dev):
            raise SecretError(
                f"{file}: refused: the key store is inside {folder}, a data or publication folder; "
                "keep keys apart from the data they protect (another place, other access control)"
            )
        if home is not None and folder == home:
            raise SecretError(f"{file}: refused: the key store is inside DAGSTER_HOME ({home}), where run data is stored")
        if (folder / ".git").exists():
            inside_repo = False  # folders from here up hold the repository, not its data
            if dev:
                continue
            raise SecretError(
                f"{file}: refused: the key store is inside the repository {folder}; put it outside "
                f"(e.g. ~/.config/anon_dagster/keystore.json), or set {ENV_DEV}=1 for the development store"
            )


def check_apart_from(keystore: KeyStore, folders: list[Path], owner: str) -> None:
    """Refuse a key store whose files sit inside one of ``folders`` (a release's data folders).

    The folder names :func:`check_location` refuses cannot know where a particular release
    reads and publishes; this check, made when a release opens the store, does.
    """
    if keystore.state_dir is None:  # keys from the environment or an external service
        return
    where = Path(keystore.state_dir).expanduser().resolve()
    for folder in folders:
        folder = Path(folder).expanduser().resolve()
        if where == folder or folder in where.parents:
            raise SecretError(
                f"the key store lives inside {folder}, a data or publication folder of {owner}: "
                "keep keys apart from the data they protect (set ANON_DAGSTER_KEYSTORE elsewhere)"
            )
