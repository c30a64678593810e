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

from ..errors import UserError

PUBLISHED_MODE = 0o644


class PortalError(UserError):
    """A publication folder or file that cannot be used safely (a symlink, not a regular file)."""


def write_all(fd: int, data: bytes) -> None:
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


@contextmanager
def open_folder(root: Path, parts: Sequence[str], *, create: bool) -> Iterator[Folder | None]:
    """The folder ``root/parts...`` (None when it is missing and ``create`` is False).

    ``root`` is the publication folder (created when missing and ``create``); each part is opened
    with ``O_NOFOLLOW`` relative to its parent, created 0755 when missing and ``create``.
    """
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


def check_regular(folder: Folder, name: str) -> None:
    """Refuse a final name that is a symlink or anything but a regular file (a missing one is fine)."""
    try:
        st = os.stat(name, dir_fd=folder.fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise PortalError(f"{folder.path / name}: refused: it is a symlink; a publication never writes through one "
                          "(nothing was written)")
    if not stat.S_ISREG(st.st_mode):
        raise PortalError(f"{folder.path / name}: refused: not a regular file (nothing was written)")


def read_bytes(folder: Folder, name: str) -> bytes | None:
    """The content of ``name`` in ``folder`` (None when missing); a symlink is refused."""
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


def file_hash(folder: Folder | None, name: str) -> str | None:
    """SHA-256 (hex) of the bytes of ``name`` in ``folder``; None when it (or the folder) is missing."""
    if folder is None:
        return None
    data = read_bytes(folder, name)
    return None if data is None else hashlib.sha256(data).hexdigest()


def stage(folder: Folder, target: str, part: str, data: bytes) -> str:
    """Write ``data`` under a new hidden name for ``target``'s ``part`` (0600, fsynced); returns the name.

    A failure (a full disk) removes the partial file and raises.
    """
    name = f".{target}.{secrets.token_hex(8)}.{part}.tmp"
    _write_new(folder, name, data, 0o600)
    return name


def _write_new(folder: Folder, name: str, data: bytes, mode: int) -> None:
    """Create ``name`` (never an existing file, never through a symlink) with ``mode`` whatever
    the umask, write ``data`` and fsync it; on any failure the partial file is removed."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=folder.fd)
    try:
        try:
            os.fchmod(fd, mode)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        remove(folder, name)
        raise


def place(folder: Folder, staged: str, final: str, mode: int = PUBLISHED_MODE) -> None:
    """Give ``staged`` its published ``mode`` and rename it onto ``final`` (atomically: readers see
    the old file or the new one; a symlink at ``final`` is replaced, never followed)."""
    fd = os.open(staged, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=folder.fd)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    os.rename(staged, final, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)


def backup(folder: Folder, final: str, name: str) -> bool:
    """Keep ``final`` (if it exists) as ``name``: a hard link, or a copy where the file system
    has none; whether there was a file to keep."""
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
        _write_new(folder, name, data, PUBLISHED_MODE)  # the published file keeps its published mode
    return True


def restore(folder: Folder, kept: str | None, final: str) -> None:
    """Put the kept file back onto ``final``, or remove ``final`` when there was none before."""
    if kept is not None:
        os.rename(kept, final, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)
    else:
        remove(folder, final)


def remove(folder: Folder, name: str) -> None:
    """Remove ``name`` from ``folder`` (nothing when it is missing)."""
    try:
        os.unlink(name, dir_fd=folder.fd)
    except FileNotFoundError:
        pass


def sync(folder: Folder) -> None:
    """Flush the folder's entries (creations, renames) to disk."""
    os.fsync(folder.fd)


def leftovers(folder: Folder, target: str) -> list[str]:
    """The staged and backup files of ``target`` in ``folder`` (left by a publisher that died)."""
    prefix = f".{target}."
    return sorted(n for n in os.listdir(folder.fd)
                  if n.startswith(prefix) and (n.endswith(".tmp") or n.endswith(".bak")))


def clean(folder: Folder, target: str) -> None:
    """Remove ``target``'s leftovers. Only under the target's lock: then no publisher is using them."""
    for name in leftovers(folder, target):
        remove(folder, name)
    sync(folder)


@contextmanager
def lock(folder: Folder, target: str, *, wait: bool = True) -> Iterator[bool]:
    """Hold ``target``'s lock (``.<target>.lock`` beside it); yields False when ``wait`` is False
    and another process holds it."""
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


def write_in_place(folder: Folder, target: str, final: str, data: bytes, mode: int = PUBLISHED_MODE) -> None:
    """Replace ``final`` with ``data`` atomically (staged, fsynced, renamed, folder synced)."""
    staged = stage(folder, target, final.rsplit(".", 1)[-1], data)
    try:
        place(folder, staged, final, mode)
    except BaseException:
        remove(folder, staged)
        raise
    sync(folder)


__all__ = [
    "PUBLISHED_MODE", "Folder", "PortalError", "backup", "check_regular", "clean", "file_hash", "leftovers", "lock",
    "open_folder", "place", "read_bytes", "remove", "restore", "stage", "sync", "write_all", "write_in_place",
]
