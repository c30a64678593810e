"""The orchestrator's run storage, ``$DAGSTER_HOME``, kept owner-only.

Dagster keeps its run storage and event log (``history/``: ``runs.db`` and a database per run,
holding every check's metadata, which describes personal data), compute logs (``storage/``) and
schedule storage (``schedules/``) under ``$DAGSTER_HOME``, and creates them with the process's
umask: in a home made with a plain ``mkdir`` (umask 022) other users of the machine could read them. :func:`private_dagster_home` closes that: the home and
everything under it lose their group and other permissions, and a warning, once per folder and
process, names each of the home, ``storage/``, ``history/`` and ``schedules/`` that was open.
Files Dagster creates later sit in these 0700 folders, which no other user can enter; the
next call removes their permission bits as well.

A path that cannot be changed (another user owns it) refuses the whole call with one line naming
it and the ``chmod`` to run: the event log is never left readable by others in silence.
"""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path

from ..errors import UserError

HOME_ENV = "DAGSTER_HOME"
# Dagster's storage folders under its home: compute logs, runs and event log, schedules
STORAGE_FOLDERS = ("storage", "history", "schedules")

_warned: set[Path] = set()


class OpenRunStorage(UserWarning):
    """Dagster's home or one of its storage folders was open to other users (and was restricted)."""


def restrict_tree(root: Path) -> list[Path]:
    """Remove the group and other permissions of ``root`` and of everything under it; the paths
    that had any, in walk order. Symbolic links are neither followed nor changed (a link's own
    mode means nothing); a path removed meanwhile is skipped.

    Raises UserError naming the path and the ``chmod`` to run when one cannot be changed.
    """
    root = Path(root)
    opened = _restrict(root, root)
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            opened += _restrict(Path(folder) / name, root)
    return opened


def _restrict(path: Path, root: Path) -> list[Path]:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return []
    if stat.S_ISLNK(mode) or not mode & 0o077:
        return []
    try:
        os.chmod(path, stat.S_IMODE(mode) & ~0o077)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UserError(f"{path}: readable by other users and cannot be made owner-only ({exc.strerror}): "
                        f"run `chmod -R go-rwx {root}` as its owner") from None
    return [path]


def private_dagster_home() -> list[Path]:
    """Make ``$DAGSTER_HOME`` and everything under it owner-only (see the module docstring);
    the paths changed. Nothing happens when the variable is unset or names no folder."""
    value = os.environ.get(HOME_ENV)
    if not value or not Path(value).is_dir():
        return []
    home = Path(value).resolve()
    opened = restrict_tree(home)
    watched = {home, *(home / name for name in STORAGE_FOLDERS)}
    for folder in (p for p in opened if p in watched and p not in _warned):
        _warned.add(folder)
        what = "Dagster's home" if folder == home else f"Dagster's {folder.name}/ folder"
        warnings.warn(f"{folder}: {what} was open to other users; made owner-only (0700) with everything under "
                      "it, since Dagster's event log holds check metadata about personal data",
                      OpenRunStorage, stacklevel=2)
    return opened


__all__ = ["HOME_ENV", "STORAGE_FOLDERS", "OpenRunStorage", "private_dagster_home", "restrict_tree"]
