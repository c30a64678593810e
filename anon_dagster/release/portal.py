"""Files in a publication folder: reached without following symlinks, written aside, renamed into place.

Definitions.

- The *publication folder* is ``publication.path`` up to the last ``/`` before its first
  placeholder (``../published/`` for ``../published/{release}/{partition}.parquet``); symlinks
  above it and at it are the operator's (a mount, a share). Below it, every folder and the final
  file are reached relative to an open folder descriptor with ``O_NOFOLLOW``: a symlink there
  is refused, so a link planted at the final path cannot redirect a write onto a file it points
  at (the raw source, a key file).
- A *staged* file is written under a unique hidden name ``.<target>.<random>.<part>.tmp`` in
  the target's folder, created ``O_EXCL`` with mode 0600, written in full, fsynced; it takes
  its published mode (0644) just before it is renamed onto its final name. A *backup* is a hard
  link ``.<target>.<entry>.<part>.bak`` to a file about to be replaced (no data is copied; a
  copy where the file system has no hard links).
- The *lock* of a target is ``fcntl.flock`` on ``.<target>.lock`` beside it (0600): one
  publisher of a target at a time; the lock goes with the process if it dies.

Every write of file content goes through :func:`write_all`, so tests can make any of them fail
as a full disk would.

On object storage (a target whose publication folder is an ``s3://``, ``gs://``, ``az://`` or
``abfs[s]://`` prefix, :class:`StoreFolder`) the same operations keep the same protocol with
the store's own primitives, through :mod:`anon_dagster.objectstore`:

- there is no rename, but a server-side copy of an object appears whole or not at all: a
  *staged* object ``.<target>.<random>.<part>.tmp`` is uploaded (one upload; a failed one is
  removed, and one holding fewer bytes than given too), then *placed* by copying it onto its
  final name and removing it; a *backup* is a server-side copy ``.<target>.<entry>.<part>.bak``;
- :func:`sync` reads back every object placed since the last one and refuses (PortalError) when
  it is not the bytes this publisher placed: the ledger never marks published what is not in
  place. A completed upload or copy is durable once the store acknowledges it;
- the *lock* of a target is ``fcntl.flock`` on a file of this host, in the ledger's folder
  (``publication-locks/<SHA-256 of the target's URI>.lock``, 0600): it serializes the
  publishers of this host that share the ledger; the store has no lock of its own, so two
  hosts are not serialized (see docs/security.md);
- objects carry no file mode: who reads them is the bucket's access policy.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import objectstore
from ..byte_sink import ByteSink, Produce
from ..errors import UserError
from ..objectstore import ObjectPath

PUBLISHED_MODE = 0o644


class PortalError(UserError):
    """A publication folder or file that cannot be used safely (a symlink, not a regular file)."""


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write all of ``data`` to ``fd`` (the one writer of staged content)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


@dataclass
class Folder:
    """An open folder below (or at) the publication folder, reached without following symlinks."""

    path: Path
    fd: int

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class StoreFolder:
    """A folder of a publication on object storage: the prefix ``path`` of a bucket (a prefix is
    never missing: objects below it make it). It remembers what this publisher staged and
    placed, so that :func:`sync` can check the objects in place are those."""

    def __init__(self, path: ObjectPath):
        from .targets import lock_folder

        self.path = path
        self.locks = path.locks if path.locks is not None else lock_folder(None)
        self.staged: dict[str, str] = {}  # staged name → SHA-256 of the bytes uploaded
        self.placed: dict[str, str | None] = {}  # final name → SHA-256 of the bytes copied onto it

    def at(self, name: str) -> ObjectPath:
        return self.path / name

    def close(self) -> None:
        pass


AnyFolder = Folder | StoreFolder


@contextmanager
def open_folder(root: Path | ObjectPath, parts: Sequence[str], *, create: bool) -> Iterator[AnyFolder | None]:
    """The folder ``root/parts...`` (None when it is missing and ``create`` is False).

    ``root`` is the publication folder (created when missing and ``create``); each part is opened
    with ``O_NOFOLLOW`` relative to its parent, created 0755 when missing and ``create``. On
    object storage the folder is the prefix ``root/parts...``: nothing is created.
    """
    if isinstance(root, ObjectPath):
        yield StoreFolder(root.joinpath(*parts))
        return
    fd, here = _walk(Path(root), parts, create)
    if fd < 0:
        yield None
        return
    folder = Folder(here, fd)
    try:
        yield folder
    finally:
        folder.close()


def _walk(root: Path, parts: Sequence[str], create: bool) -> tuple[int, Path]:
    if create:
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PortalError(f"{root}: cannot create the publication folder: {exc.strerror}") from None
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return -1, root
    except OSError as exc:
        raise PortalError(f"{root}: cannot open the publication folder: {exc.strerror}") from None
    here = root
    try:
        for part in parts:
            here = here / part
            try:
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return -1, here
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                child = _open_child_folder(part, fd, here)
            except OSError as exc:
                raise _not_a_folder(here, exc) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, here


def _open_child_folder(part: str, fd: int, here: Path) -> int:
    try:
        return os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        raise _not_a_folder(here, exc) from None


def _not_a_folder(here: Path, exc: OSError) -> PortalError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return PortalError(f"{here}: refused: a symlink or a file where the publication expects a folder; "
                           "nothing was written")
    return PortalError(f"{here}: cannot open the folder: {exc.strerror}")


def check_regular(folder: AnyFolder, name: str) -> None:
    """Refuse a final name that is a symlink or anything but a regular file (a missing one is fine)."""
    if isinstance(folder, StoreFolder):
        import pyarrow.fs as pafs

        if objectstore.info(folder.at(name)).type == pafs.FileType.Directory:
            raise PortalError(f"{folder.at(name)}: refused: a prefix holding objects where the publication "
                              "expects an object (nothing was written)")
        return
    try:
        st = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise PortalError(f"{folder.path / name}: refused: it is a symlink; a publication never writes through one "
                          "(nothing was written)")
    if not stat.S_ISREG(st.st_mode):
        raise PortalError(f"{folder.path / name}: refused: not a regular file (nothing was written)")


def read_bytes(folder: AnyFolder, name: str) -> bytes | None:
    """The content of ``name`` in ``folder`` (None when missing); a symlink is refused."""
    if isinstance(folder, StoreFolder):
        return objectstore.read_bytes(folder.at(name))
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder.fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PortalError(f"{folder.path / name}: refused: it is a symlink") from None
        raise
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def file_hash(folder: AnyFolder | None, name: str) -> str | None:
    """SHA-256 (hex) of the bytes of ``name`` in ``folder``; None when it (or the folder) is missing."""
    if folder is None:
        return None
    data = read_bytes(folder, name)
    return None if data is None else hashlib.sha256(data).hexdigest()


def stage(folder: AnyFolder, target: str, part: str, data: bytes) -> str:
    """Write ``data`` under a new hidden name for ``target``'s ``part`` (:func:`stage_with`); returns the name."""
    return stage_with(folder, target, part, lambda sink: sink.write(data))[0]


def stage_with(folder: AnyFolder, target: str, part: str, produce: Produce) -> tuple[str, str]:
    """Write what ``produce`` streams into its sink under a new hidden name for ``target``'s
    ``part`` (0600, fsynced); returns the name and the SHA-256 (hex) of the bytes written.

    A failure (a full disk, an upload that fails midway, an error of ``produce``) removes the
    partial file and raises.
    """
    name = f".{target}.{secrets.token_hex(8)}.{part}.tmp"
    if isinstance(folder, StoreFolder):
        folder.staged[name] = objectstore.upload_with(folder.at(name), produce)
        return name, folder.staged[name]
    return name, _write_new(folder, name, produce, 0o600)


def _write_new(folder: Folder, name: str, produce: Produce, mode: int) -> str:
    """Create ``name`` (never an existing file, never through a symlink) with ``mode`` whatever
    the umask, write what ``produce`` streams and fsync it; on any failure the partial file is
    removed. Returns the SHA-256 (hex) of the bytes written."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=folder.fd)
    sink = ByteSink(lambda view: write_all(fd, view))
    try:
        try:
            os.fchmod(fd, mode)
            produce(sink)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        remove(folder, name)
        raise
    return sink.sha256()


def place(folder: AnyFolder, staged: str, final: str, mode: int = PUBLISHED_MODE) -> None:
    """Give ``staged`` its published ``mode`` and rename it onto ``final`` (atomically: readers see
    the old file or the new one; a symlink at ``final`` is replaced, never followed).

    On object storage: a server-side copy onto ``final`` (readers see the old object or the
    whole new one), then the staged object is removed (left for :func:`clean` if that fails)."""
    if isinstance(folder, StoreFolder):
        objectstore.copy(folder.at(staged), folder.at(final))
        folder.placed[final] = folder.staged.pop(staged, None)
        try:
            objectstore.remove(folder.at(staged))
        except objectstore.LocationError:
            pass  # a leftover: swept under the target's lock
        return
    fd = os.open(staged, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder.fd)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    os.rename(staged, final, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)


def backup(folder: AnyFolder, final: str, name: str) -> bool:
    """Keep ``final`` (if it exists) as ``name``: a hard link, or a copy where the file system
    has none (a server-side copy on object storage); whether there was a file to keep."""
    if isinstance(folder, StoreFolder):
        import pyarrow.fs as pafs

        if objectstore.info(folder.at(final)).type != pafs.FileType.File:
            return False
        objectstore.copy(folder.at(final), folder.at(name))
        return True
    try:
        os.link(final, name, src_dir_fd=folder.fd, dst_dir_fd=folder.fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        data = read_bytes(folder, final)
        if data is None:
            return False
        _write_new(folder, name, lambda sink: sink.write(data), PUBLISHED_MODE)  # the published file keeps its published mode
    return True


def restore(folder: AnyFolder, kept: str | None, final: str) -> None:
    """Put the kept file back onto ``final``, or remove ``final`` when there was none before."""
    if isinstance(folder, StoreFolder):
        folder.placed.pop(final, None)
        if kept is not None:
            objectstore.copy(folder.at(kept), folder.at(final))
            objectstore.remove(folder.at(kept))
        else:
            objectstore.remove(folder.at(final))
        return
    if kept is not None:
        os.rename(kept, final, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)
    else:
        remove(folder, final)


def remove(folder: AnyFolder, name: str) -> None:
    """Remove ``name`` from ``folder`` (nothing when it is missing)."""
    if isinstance(folder, StoreFolder):
        objectstore.remove(folder.at(name))
        return
    try:
        os.unlink(name, dir_fd=folder.fd)
    except FileNotFoundError:
        pass


def sync(folder: AnyFolder) -> None:
    """Flush the folder's entries (creations, renames) to disk.

    On object storage: every object placed since the last call is read back, and a PortalError
    raised when one is not the bytes placed (another writer replaced it meanwhile)."""
    if isinstance(folder, StoreFolder):
        placed, folder.placed = folder.placed, {}
        for final, digest in placed.items():
            if digest is not None and file_hash(folder, final) != digest:
                raise PortalError(f"{folder.at(final)}: the object in place is not the one this publication "
                                  "placed: another writer replaced it meanwhile (the store serializes no "
                                  "publishers: publish a target from one host)")
        return
    os.fsync(folder.fd)


def names(folder: AnyFolder) -> list[str]:
    """The names of the files (objects) in ``folder``."""
    if isinstance(folder, StoreFolder):
        return objectstore.names(folder.path)
    return sorted(os.listdir(folder.fd))


def leftovers(folder: AnyFolder, target: str) -> list[str]:
    """The staged and backup files of ``target`` in ``folder`` (left by a publisher that died)."""
    prefix = f".{target}."
    return sorted(n for n in names(folder)
                  if n.startswith(prefix) and (n.endswith(".tmp") or n.endswith(".bak")))


def clean(folder: AnyFolder, target: str) -> None:
    """Remove ``target``'s leftovers. Only under the target's lock: then no publisher is using them."""
    for name in leftovers(folder, target):
        remove(folder, name)
    sync(folder)


@contextmanager
def lock(folder: AnyFolder, target: str, *, wait: bool = True) -> Iterator[bool]:
    """Hold ``target``'s lock (``.<target>.lock`` beside it; for object storage a file of this
    host, see the module docstring); yields False when ``wait`` is False and another process
    holds it."""
    if isinstance(folder, StoreFolder):
        folder.locks.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = hashlib.sha256(str(folder.at(target)).encode("utf-8")).hexdigest()
        fd = os.open(folder.locks / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    else:
        fd = os.open(f".{target}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600, dir_fd=folder.fd)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock


def write_in_place(folder: AnyFolder, target: str, final: str, data: bytes, mode: int = PUBLISHED_MODE) -> None:
    """Replace ``final`` with ``data`` atomically (staged, fsynced, renamed, folder synced)."""
    staged = stage(folder, target, final.rsplit(".", 1)[-1], data)
    try:
        place(folder, staged, final, mode)
    except BaseException:
        remove(folder, staged)
        raise
    sync(folder)


__all__ = [
    "PUBLISHED_MODE", "AnyFolder", "Folder", "PortalError", "StoreFolder", "backup", "check_regular", "clean",
    "file_hash", "leftovers", "lock", "names", "open_folder", "place", "read_bytes", "remove", "restore", "stage",
    "stage_with", "sync", "write_all", "write_in_place",
]
