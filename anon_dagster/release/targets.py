"""Where a publication may go: never onto what the release reads, nor where it keeps private state.

Definitions.

- The *target* of a partition is ``publication.path`` with ``{release}`` and ``{partition}``
  filled in, split into the publication folder (see :mod:`anon_dagster.release.portal`), the
  folders below it and the file name. Below the publication folder the path is taken as
  written: an empty, ``.`` or ``..`` component is refused, and nothing is resolved through a
  symlink (:mod:`.portal` refuses one there when the file is written).
- The *protected* paths of a release: its source (the partition's file), its hierarchy
  tables, its population file, its spec file, the ledger — and folders: the IO manager's
  storage (``$DAGSTER_HOME/anon_dagster`` by default), Dagster's ``$DAGSTER_HOME/storage``, the
  key store's folder and its state folder.
- A target is *refused* when its real path (the publication folder with symlinks resolved,
  then the components as written) equals a protected file's real path, or lies inside a
  protected folder. :func:`check_target` refuses before anything is written;
  :func:`publication_problems` says the same of a spec for every partition at once (``anon-dagster
  validate``): paths holding ``{partition}`` are compared as patterns.
- A target on object storage (``publication.path`` an ``s3://``, ``gs://``, ``az://`` or
  ``abfs[s]://`` URI) has a bucket prefix for its publication folder; it is refused when its
  normalized URI (:class:`~anon_dagster.objectstore.ObjectPath`) equals the source's (the one
  input a spec may keep on object storage) or that of its reports. There are no symlinks to
  follow there. Its lock is a file of this host, in the ledger's folder (:func:`lock_folder`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..objectstore import ObjectPath, is_remote
from ..partitions import UNPARTITIONED
from ..spec import ReleaseSpec, TableSpec
from .ledger import default_ledger_path

REPORT_FORMATS = ("md", "html", "json")
# stands for every partition key when a spec's paths are compared as patterns
_ANY_PARTITION = "__any_partition__"


class TargetRefused(UserError):
    """A publication target that would overwrite an input or private state: nothing was written."""


@dataclass(frozen=True)
class Target:
    """Where one partition's publication goes: ``root / parts... / name`` (see the module docstring)."""

    root: Path | ObjectPath
    parts: tuple[str, ...]
    name: str

    @property
    def remote(self) -> bool:
        """Whether the target is on object storage."""
        return isinstance(self.root, ObjectPath)

    @property
    def path(self) -> Path | ObjectPath:
        return self.root.joinpath(*self.parts, self.name)

    @property
    def report_stem(self) -> str:
        """``<stem>.report``: the report files add ``.md``, ``.html``, ``.json``."""
        return f"{Path(self.name).stem}.report"

    def report_name(self, fmt: str) -> str:
        return f"{self.report_stem}.{fmt}"

    def report_path(self, fmt: str = "md") -> Path | ObjectPath:
        return self.root.joinpath(*self.parts, self.report_name(fmt))

    @classmethod
    def of_entry(cls, published_root: str, published_path: str, *, locks: Path | None = None) -> Target:
        """The target a ledger entry recorded (``locks``: the lock folder of a target on object
        storage, :func:`lock_folder`)."""
        if is_remote(published_root):
            remote, where = ObjectPath.parse(published_root).with_locks(locks), ObjectPath.parse(published_path)
            rel = where.relative_to(remote).parts
            return cls(remote, tuple(rel[:-1]), rel[-1])
        root, path = Path(published_root), Path(published_path)
        rel = path.relative_to(root).parts
        return cls(root, tuple(rel[:-1]), rel[-1])


def lock_folder(ledger_path: str | Path | None) -> Path:
    """Where this host keeps the locks of targets on object storage: ``publication-locks`` in the
    folder of the ledger (``ledger_path``, default :func:`default_ledger_path`)."""
    ledger = Path(ledger_path) if ledger_path is not None else default_ledger_path()
    return ledger.expanduser().absolute().parent / "publication-locks"


@dataclass(frozen=True)
class Protected:
    """A path a publication may never be written onto (a file) or into (a folder)."""

    label: str
    path: Path | ObjectPath
    folder: bool = False


def _real(path: str | Path | ObjectPath) -> Path | ObjectPath:
    if isinstance(path, ObjectPath):  # normalized already; nothing to resolve
        return path
    return Path(os.path.realpath(Path(path).expanduser()))


def target_of(spec: ReleaseSpec, partition: str | None) -> Target:
    """The target of ``partition`` (see the module docstring); UserError for a malformed path."""
    text = spec.publication.path
    fixed = text.split("{", 1)[0]
    cut = max(fixed.rfind("/"), fixed.rfind(os.sep))
    root_text, rest = (text[: cut + 1], text[cut + 1:]) if cut >= 0 else ("", text)
    if is_remote(text):
        root: Path | ObjectPath = ObjectPath.parse(root_text)
    else:
        base = Path(root_text).expanduser()
        root = _real(base if base.is_absolute() else spec.base_dir / base)
    filled = rest.format(release=spec.release, partition=partition or UNPARTITIONED)
    parts = filled.split("/")
    if any(p in ("", ".", "..") for p in parts) or "\\" in filled:
        raise TargetRefused(f"{spec.label}: publication.path {text!r} gives {filled!r} below the publication "
                            f"folder {root}: empty, '.' and '..' components are refused")
    return Target(root, tuple(parts[:-1]), parts[-1])


def protected_paths(spec: ReleaseSpec, partition: str | None, *, storage: Iterable[str | Path] = (),
                    keystore: Any = None, ledger_path: str | Path | None = None) -> list[Protected]:
    """Every path a publication of ``partition`` may not touch (see the module docstring).

    ``keystore``: the opened key store (its folder and state folder), else the key store the
    environment names; ``storage``: the IO manager's storage folders; ``ledger_path``: the ledger
    (default: :func:`default_ledger_path`).
    """
    fill = {"partition": partition or UNPARTITIONED}
    out = []
    if spec.source.path is not None:  # a source that is a Dagster asset is kept by its own IO manager
        out.append(Protected("the release's source", _real(spec.resolve(spec.source.path, **fill))))
    for name, col in spec.columns.items():
        if isinstance(col.hierarchy, TableSpec):
            out.append(Protected(f"the hierarchy table of column {name!r}", _real(spec.resolve(col.hierarchy.path))))
    if spec.policy.population is not None:
        out.append(Protected("the population file", _real(spec.resolve(spec.policy.population.path, **fill))))
    if spec.spec_path is not None:
        out.append(Protected("the release spec", _real(spec.spec_path)))
    ledger = Path(ledger_path) if ledger_path is not None else default_ledger_path()
    out += [Protected("the ledger", _real(f"{ledger}{suffix}")) for suffix in ("", "-wal", "-shm")]
    for folder in storage:
        out.append(Protected("the IO manager's storage folder", _real(folder), folder=True))
    if os.environ.get("DAGSTER_HOME"):  # the IO manager's default storage and Dagster's run storage
        home = Path(os.environ["DAGSTER_HOME"])
        out.append(Protected("the IO manager's storage folder", _real(home / "anon_dagster"), folder=True))
        out.append(Protected("Dagster's storage folder", _real(home / "storage"), folder=True))
    out += [Protected(label, _real(p), folder=True) for label, p in _keystore_folders(keystore)]
    return out


def _keystore_folders(keystore: Any) -> list[tuple[str, Path]]:
    """The key store's folders: from the opened store, else where the environment puts it."""
    from ..pseudonymize.keystore import (
        ENV_KEYSTORE,
        ENV_STATE,
        dev_keystore_path,
        dev_keystore_requested,
    )

    folders: list[tuple[str, Path]] = []
    if keystore is not None:
        store = keystore.open() if not hasattr(keystore, "state_dir") else keystore
        if store.state_dir is not None:
            folders.append(("the key store's folder", Path(store.state_dir)))
        return folders
    if os.environ.get(ENV_KEYSTORE):
        folders.append(("the key store's folder", Path(os.environ[ENV_KEYSTORE]).expanduser().parent))
    if os.environ.get(ENV_STATE):
        folders.append(("the key store's state folder", Path(os.environ[ENV_STATE])))
    if dev_keystore_requested():
        folders.append(("the development key store", dev_keystore_path()))
    return folders


def _collides(target: Path, item: Protected) -> bool:
    return target == item.path or (item.folder and item.path in target.parents)


def target_problems(spec: ReleaseSpec, target: Target, protected: Sequence[Protected]) -> list[str]:
    """What is wrong with ``target``: each protected path it would overwrite or enter."""
    real = target.root.joinpath(*target.parts, target.name)
    reports = [target.root.joinpath(*target.parts, target.report_name(f)) for f in REPORT_FORMATS]
    problems = []
    for item in protected:
        for path, what in ((real, "publication.path"), *((r, "its report") for r in reports)):
            if _collides(path, item):
                where = "inside" if item.folder and path != item.path else "onto"
                problems.append(f"{spec.label}: {what} {path} is {where} {item.label} ({item.path}): a publication "
                                "never overwrites what the release reads or keeps private")
    return problems


def check_target(spec: ReleaseSpec, partition: str | None, **protected: Any) -> Target:
    """The target of ``partition``, refused (:class:`TargetRefused`, nothing written) when it would
    touch a protected path (``protected``: the arguments of :func:`protected_paths`)."""
    target = target_of(spec, partition)
    problems = target_problems(spec, target, protected_paths(spec, partition, **protected))
    if problems:
        raise TargetRefused(problems[0])
    if isinstance(target.root, ObjectPath):
        target = replace(target, root=target.root.with_locks(lock_folder(protected.get("ledger_path"))))
    return target


def _hits(path: Path, item: Protected) -> bool:
    """Whether ``path`` (which may stand for every partition) touches ``item`` for some partition."""
    p, q = str(path), str(item.path)
    if item.folder and p.startswith(q.rstrip(os.sep) + os.sep):
        return True
    if _ANY_PARTITION in p or _ANY_PARTITION in q:
        return bool(_pattern(path).match(q) or _pattern(item.path).match(p))
    return p == q


def _pattern(path: Path) -> re.Pattern[str]:
    return re.compile(re.escape(str(path)).replace(re.escape(_ANY_PARTITION), r"[^/]+") + r"\Z")


def _symlink_problem(spec: ReleaseSpec, link: Path, target: Target) -> str:
    return (f"{spec.label}: {link} is a symlink below the publication folder {target.root}: a publication never "
            "writes through one")


def publication_problems(spec: ReleaseSpec, *, storage: Iterable[str | Path] = (),
                         ledger_path: str | Path | None = None) -> list[str]:
    """Every problem of the spec's publication target, for all partitions at once: a protected
    path it would touch for some partition key, or a symlink below the publication folder.

    Key store folders come from the environment (nothing is opened).
    """
    partition = _ANY_PARTITION if spec.partitions is not None else None
    try:
        target = target_of(spec, partition)
    except TargetRefused as exc:
        return [str(exc)]
    real = target.root.joinpath(*target.parts, target.name)
    mine = [real, *(target.root.joinpath(*target.parts, target.report_name(f)) for f in REPORT_FORMATS)]
    problems = []
    for item in protected_paths(spec, partition, storage=storage, ledger_path=ledger_path):
        hit = next((p for p in mine if _hits(p, item)), None)
        if hit is not None:
            shown = str(hit).replace(_ANY_PARTITION, "{partition}")
            problems.append(f"{spec.label}: publication.path {shown} would be written onto or into "
                            f"{item.label} ({str(item.path).replace(_ANY_PARTITION, '{partition}')}): a "
                            "publication never overwrites what the release reads or keeps private")
    if target.remote:  # no symlinks on object storage
        return problems
    finals = (target.name, *(target.report_name(f) for f in REPORT_FORMATS))
    here = target.root
    for i, part in enumerate((*target.parts, target.name)):
        last = i == len(target.parts)
        if _ANY_PARTITION in part:  # every existing name the pattern stands for
            patterns = [_pattern(Path(n)) for n in (finals if last else (part,))]
            names = os.listdir(here) if here.is_dir() and not here.is_symlink() else []
            link = next((here / n for n in sorted(names) if any(p.match(n) for p in patterns)
                         and (here / n).is_symlink()), None)
            if link is not None:
                problems.append(_symlink_problem(spec, link, target))
            break
        here = here / part
        link = next((here.with_name(n) for n in (finals if last else (part,)) if here.with_name(n).is_symlink()), None)
        if link is not None:
            problems.append(_symlink_problem(spec, link, target))
            break
    return problems


__all__ = ["REPORT_FORMATS", "Protected", "Target", "TargetRefused", "check_target", "lock_folder", "protected_paths",
           "publication_problems", "target_of", "target_problems"]
