"""Where a project's release specs are, and which of them build.

The specs are the files listed, else every ``*.yaml`` / ``*.yml`` file directly in the spec
folder (sub-folders are not entered; a symbolic link to a file counts as that file): the folder
given, else ``$ANON_DAGSTER_CONFIG``, else ``assets_config``. A relative path is anchored at the
project's folder, an absolute one (or ``~/...``) is taken as it is, inside the project or not.

Building is all-or-nothing per file, never per folder: a file that does not validate, or that
validates but cannot be built, is set aside as broken with every problem of the file
(:mod:`.broken` shows it), and the others build.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from ..errors import Problem, SpecError, UserError
from .loading import SpecFile, load_spec_files
from .models import ReleaseSpec

CONFIG_ENV = "ANON_DAGSTER_CONFIG"
DEFAULT_FOLDER = "assets_config"

T = TypeVar("T")


def anchor(path: str | Path, base: Path) -> Path:
    """``path`` with ``~`` expanded; relative to ``base`` unless it is absolute."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else base / p


def spec_location(base: Path, config_dir: str | None = None,
                  specs: Sequence[str] | None = None) -> list[Path] | Path:
    """The spec files (``specs``), or the folder holding them, anchored at ``base``."""
    if specs:
        return [anchor(s, base) for s in specs]
    return anchor(config_dir or os.environ.get(CONFIG_ENV) or DEFAULT_FOLDER, base)


def find_spec_files(base: Path, config_dir: str | None = None,
                    specs: Sequence[str] | None = None) -> list[SpecFile]:
    """Every spec file, each loaded on its own (a broken one with every problem of the file).

    A folder that does not exist is one :class:`~anon_dagster.errors.SpecError` naming it and the
    setting it came from: ``config_dir``, or ``ANON_DAGSTER_CONFIG`` when that chose it.
    """
    where = spec_location(base, config_dir, specs)
    if isinstance(where, Path) and not where.is_dir():
        key = CONFIG_ENV if not config_dir and os.environ.get(CONFIG_ENV) else "config_dir"
        raise SpecError([Problem(str(where), key, "no such folder of release specs")])
    return load_spec_files(where)


def build_each(files: Iterable[SpecFile], build: Callable[[ReleaseSpec], T]) -> tuple[list[T], list[SpecFile]]:
    """``build`` applied to every valid spec, and the files set aside as broken: those that do
    not validate, and those whose build raised a :class:`~anon_dagster.errors.UserError` (its
    message becomes the file's one problem, unless it already lists the file's problems)."""
    built: list[T] = []
    broken: list[SpecFile] = []
    for f in files:
        if f.spec is None:
            broken.append(f)
            continue
        try:
            built.append(build(f.spec))
        except UserError as exc:
            error = exc if isinstance(exc, SpecError) else SpecError([Problem(str(f.path), "", str(exc))])
            broken.append(SpecFile(f.path, error=error, release=f.release))
    return built, broken


__all__ = ["CONFIG_ENV", "DEFAULT_FOLDER", "anchor", "build_each", "find_spec_files", "spec_location"]
