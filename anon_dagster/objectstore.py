"""Locations on object storage (``s3://``, ``gs://``, ``az://``, ``abfs[s]://``), through ``pyarrow.fs``.

Definitions.

- A *location* is what a spec writes for ``source.path`` or ``publication.path``: a local path
  (no scheme; relative to the spec's folder) or an object-storage URI. A URI is
  ``<scheme>://<bucket>/<key>``: ``s3://`` (Amazon S3 and S3-compatible servers), ``gs://``
  (Google Cloud Storage; ``gcs://`` is read as ``gs://``), ``az://<container>/<key>`` (Azure
  Blob Storage, the account from ``AZURE_STORAGE_ACCOUNT_NAME``) and
  ``abfs[s]://<container>@<account host>/<key>`` (Azure Data Lake Storage). Anything else with a
  scheme (``ftp://``, ``http://``, ``file://``, the typo ``s3:/bucket``) is refused: a location
  that is not understood is never taken for a local folder named ``s3:``.
- A URI never holds credentials, query parameters or a fragment: credentials and endpoints come
  only from the standard environment of each store (:data:`ENVIRONMENT`), and no error message
  ever shows their values (:func:`redact`).
- The *normalized* form of a URI (:class:`ObjectPath`, its ``str``) has the scheme and the
  bucket in lower case and the key as written; two locations are the same object when their
  normalized forms are equal.

The core of the package reads and writes through this module only; it never imports Dagster.
"""

from __future__ import annotations

import functools
import hashlib
import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from .byte_sink import ByteSink, Produce
from .errors import UserError

# scheme as written → the store it names
SCHEMES = {"s3": "s3", "gs": "gs", "gcs": "gs", "az": "az", "abfs": "abfs", "abfss": "abfss"}
SUPPORTED = "a local path, s3://, gs://, az:// or abfs[s]://"

# The environment each store reads (credentials, region, endpoint); nothing else configures it.
ENVIRONMENT = {
    "s3": ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
           "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE",
           "AWS_CONFIG_FILE"),
    "gs": ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT"),
    "az": ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_ID",
           "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET"),
}
# The variables whose values are secrets: never shown in an error, a report or the ledger.
SECRET_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AZURE_STORAGE_ACCOUNT_KEY",
                    "AZURE_STORAGE_SAS_TOKEN", "AZURE_CLIENT_SECRET", "AZURE_STORAGE_CONNECTION_STRING")

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_BUCKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# uploads are written in pieces of this size, each through write_chunk
CHUNK = 8 << 20


class LocationError(UserError):
    """A location that is not a supported one, or an object store that cannot be used."""


def scheme_of(text: str | os.PathLike[str] | ObjectPath) -> str | None:
    """The scheme ``text`` starts with (lower case), None for a local path.

    One letter before ``:`` is a drive (``C:\\data``), not a scheme.
    """
    if isinstance(text, ObjectPath):
        return text.scheme
    if not isinstance(text, str):
        return None
    match = _SCHEME.match(text)
    if match is None or len(match.group(1)) < 2:
        return None
    return match.group(1).lower()


def is_remote(location: Any) -> bool:
    """Whether ``location`` (a string, a path or an :class:`ObjectPath`) is on object storage."""
    return isinstance(location, ObjectPath) or (isinstance(location, str) and scheme_of(location) is not None)


def shown(text: str) -> str:
    """``text`` with whatever a URI holds before an ``@`` that could be credentials replaced by
    ``***``: ``key:secret@`` (a secret may hold ``/``), or any user-info of an s3, gs or az URI
    (an abfs URI's ``container@account`` is kept)."""
    if "@" not in text and ":" not in text.partition("://")[2].partition("/")[0]:
        return text
    text = re.sub(r"://[^@\s]*:[^@\s]*@", "://***@", text)
    text = re.sub(r"\b(s3|gs|gcs|az)://[^@\s]*@", r"\1://***@", text, flags=re.IGNORECASE)
    return re.sub(r"://[^/@\s]*:[^/@\s]*(?=/|$)", "://***", text)


def location_problem(text: str, *, needs_key: bool = True) -> str | None:
    """What is wrong with ``text`` as a location, None when it is local or a supported URI.

    ``needs_key``: the location names an object (a key that does not end with ``/``), not a
    bucket or a folder. The message never repeats credentials written in the URI.
    """
    scheme = scheme_of(text)
    if scheme is None:
        return None
    written = text.split(":", 1)[0]
    if scheme == "file":
        return f"{shown(text)!r}: write a local file as a path, without file://"
    if scheme not in SCHEMES:
        return f"{shown(text)!r}: unsupported scheme {written!r}: use {SUPPORTED}"
    if not text[len(written) + 1:].startswith("//"):
        return f"{shown(text)!r} is not a location: write {written}://<bucket>/<key>"
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        return f"{shown(text)!r} is not a location: {exc}"
    store = SCHEMES[scheme]
    user, at, host = parts.netloc.rpartition("@")
    azure_dfs = store in ("abfs", "abfss")
    if (not azure_dfs and "@" in text) or ":" in parts.netloc or (at and not user):
        return (f"{shown(text)!r}: a location never holds credentials nor a port: credentials and "
                "endpoints come from the environment (see docs/contracts.md)")
    if parts.query or parts.fragment or "?" in text or "#" in text:
        return (f"{shown(text)!r}: query parameters and fragments are not part of a location (credentials, "
                "regions and endpoints come from the environment)")
    bucket = user if at else host
    if not bucket or (azure_dfs and not (at and host)):
        what = "a container and an account (abfs://<container>@<account host>/<key>)" if store.startswith("abfs") \
            else "a bucket"
        return f"{shown(text)!r} names no {what}"
    if "{" in parts.netloc:
        return f"{shown(text)!r}: placeholders go in the key, never in the bucket"
    if not _BUCKET.fullmatch(bucket):
        return f"{shown(text)!r}: {bucket!r} is not a bucket name (letters, digits, '.', '-' and '_')"
    key = parts.path[1:] if parts.path.startswith("/") else parts.path
    if needs_key and (not key or key.endswith("/")):
        return f"{shown(text)!r} names no object: give the key of a file (<bucket>/<folders>/<name>)"
    if key and any(p in ("", ".", "..") for p in key.rstrip("/").split("/")):
        return f"{shown(text)!r}: empty, '.' and '..' components are refused in a key"
    return None


@dataclass(frozen=True)
class ObjectPath:
    """A normalized object-storage location: ``scheme://bucket/key`` (see the module docstring).

    It behaves like a :class:`~pathlib.Path` where the release code needs one (``/``,
    ``joinpath``, ``name``, ``stem``, ``suffix``, ``parent``, ``with_name``, ``relative_to``),
    never like a local file: it has no ``__fspath__``, so it is never opened as one.
    ``locks`` is the host-local folder of the publication locks of targets under it (not part
    of the location: two paths are equal whatever their lock folder).
    """

    scheme: str
    bucket: str
    key: str = ""
    account: str = ""  # abfs[s]: the account host after the container's "@"
    locks: Path | None = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, text: str | ObjectPath, *, needs_key: bool = False) -> ObjectPath:
        """The location ``text`` names; LocationError when it is not a supported URI."""
        if isinstance(text, ObjectPath):
            return text
        problem = location_problem(text, needs_key=needs_key)
        if problem is None and scheme_of(text) is None:
            problem = f"{text!r} is a local path, not an object-storage location"
        if problem is not None:
            raise LocationError(problem)
        parts = urlsplit(text)
        store = SCHEMES[scheme_of(text)]
        user, at, host = parts.netloc.rpartition("@")
        bucket, account = (user, host.lower()) if at else (host.lower(), "")
        return cls(store, bucket.lower(), parts.path.lstrip("/").rstrip("/"), account)

    def __str__(self) -> str:
        where = f"{self.bucket}@{self.account}" if self.account else self.bucket
        return f"{self.scheme}://{where}" + (f"/{self.key}" if self.key else "")

    def __fspath__(self) -> str:  # an object is never opened as a local file
        raise TypeError(f"{self} is on object storage, not a local file")

    # ----- the Path-like view -------------------------------------------------------------------
    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.key.split("/")) if self.key else ()

    @property
    def name(self) -> str:
        return self.parts[-1] if self.key else ""

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name).suffix if self.name else ""

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name).stem if self.name else ""

    @property
    def parent(self) -> ObjectPath:
        return self._with_key(posixpath.dirname(self.key))

    @property
    def parents(self) -> list[ObjectPath]:
        out, here = [], self
        while here.key:
            here = here.parent
            out.append(here)
        return out

    def joinpath(self, *parts: str) -> ObjectPath:
        key = "/".join([p for p in (self.key, *(str(x).strip("/") for x in parts)) if p])
        return self._with_key(key)

    def __truediv__(self, part: str) -> ObjectPath:
        return self.joinpath(part)

    def with_name(self, name: str) -> ObjectPath:
        return self.parent.joinpath(name)

    def relative_to(self, other: ObjectPath) -> PurePosixPath:
        other = ObjectPath.parse(other) if isinstance(other, str) else other
        if (other.scheme, other.bucket, other.account) != (self.scheme, self.bucket, self.account) or not (
                not other.key or self.key == other.key or self.key.startswith(other.key + "/")):
            raise ValueError(f"{self} is not under {other}")
        return PurePosixPath(self.key[len(other.key):].lstrip("/") or ".")

    def with_locks(self, folder: Path | None) -> ObjectPath:
        """The same location, its targets' locks kept in ``folder`` on this host."""
        return ObjectPath(self.scheme, self.bucket, self.key, self.account, folder)

    def _with_key(self, key: str) -> ObjectPath:
        return ObjectPath(self.scheme, self.bucket, key, self.account, self.locks)

    @property
    def fs_path(self) -> str:
        """The path of this location inside its :func:`filesystem`: ``bucket/key``."""
        return f"{self.bucket}/{self.key}" if self.key else self.bucket


def location(text: str | os.PathLike[str] | ObjectPath) -> Path | ObjectPath:
    """``text`` as an :class:`ObjectPath` when it is a URI (LocationError when not a supported
    one), else as a local :class:`~pathlib.Path`."""
    if isinstance(text, ObjectPath):
        return text
    if isinstance(text, str) and scheme_of(text) is not None:
        return ObjectPath.parse(text)
    return Path(text)


# ----- the file system of a location -------------------------------------------------------------


def filesystem(loc: ObjectPath) -> Any:
    """The ``pyarrow.fs`` file system that holds ``loc``, configured from the environment only.

    S3: credentials from the AWS SDK's default chain (``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, profiles, instance roles); the region
    from ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``, else the bucket's own); the endpoint of an
    S3-compatible server from ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``, passed to
    pyarrow as ``endpoint_override`` (pyarrow reads them itself from version 15 on; passing
    them makes every supported version agree). GCS: Google's default credentials
    (``GOOGLE_APPLICATION_CREDENTIALS``). Azure: the account from the URI (abfs) or
    ``AZURE_STORAGE_ACCOUNT_NAME`` (az), the key from ``AZURE_STORAGE_ACCOUNT_KEY`` or a SAS
    token from ``AZURE_STORAGE_SAS_TOKEN``, else Azure's default credential chain.
    """
    names = ENVIRONMENT["az" if loc.scheme.startswith("abfs") else loc.scheme]
    fingerprint = hashlib.sha256("\0".join(os.environ.get(n, "") for n in names).encode()).hexdigest()
    try:
        return _filesystem(loc.scheme, loc.bucket, loc.account, fingerprint)
    except (OSError, ValueError, TypeError) as exc:
        raise LocationError(f"{loc}: cannot reach the store: {describe(exc)}") from None


@functools.lru_cache(maxsize=32)
def _filesystem(scheme: str, bucket: str, account: str, fingerprint: str) -> Any:
    import pyarrow.fs as pafs

    env = os.environ.get
    if scheme == "s3":
        endpoint = env("AWS_ENDPOINT_URL_S3") or env("AWS_ENDPOINT_URL")
        region = env("AWS_REGION") or env("AWS_DEFAULT_REGION")
        if endpoint or region:
            return pafs.S3FileSystem(**({"endpoint_override": endpoint} if endpoint else {}),
                                     **({"region": region} if region else {}))
        return pafs.FileSystem.from_uri(f"s3://{bucket}")[0]  # resolves the bucket's region
    if scheme == "gs":
        return pafs.GcsFileSystem()
    if scheme == "az":
        name = env("AZURE_STORAGE_ACCOUNT_NAME")
        if not name:
            raise LocationError("az:// locations take their account from AZURE_STORAGE_ACCOUNT_NAME, which is not set")
        return pafs.AzureFileSystem(name, **_azure_secret())
    host = account.split(".", 1)
    options: dict[str, Any] = _azure_secret()
    if len(host) == 2 and host[1] not in ("dfs.core.windows.net", "blob.core.windows.net"):
        options.update(blob_storage_authority=host[1], dfs_storage_authority=host[1])
    return pafs.AzureFileSystem(host[0], **options)


def _azure_secret() -> dict[str, str]:
    key, sas = os.environ.get("AZURE_STORAGE_ACCOUNT_KEY"), os.environ.get("AZURE_STORAGE_SAS_TOKEN")
    return {"account_key": key} if key else {"sas_token": sas} if sas else {}


def redact(text: str) -> str:
    """``text`` with the value of every secret variable of :data:`SECRET_VARIABLES` replaced by ``***``."""
    for name in SECRET_VARIABLES:
        value = os.environ.get(name)
        if value and len(value) >= 4:
            text = text.replace(value, "***")
    return shown(text)


def describe(exc: BaseException) -> str:
    """The first line of a store's error, credentials redacted."""
    lines = str(exc).strip().splitlines()
    return redact(lines[0] if lines else type(exc).__name__)


# ----- reading and writing objects ---------------------------------------------------------------


def info(loc: ObjectPath) -> Any:
    """The ``pyarrow.fs.FileInfo`` of ``loc`` (its type: a file, a prefix holding objects, or none)."""
    return _call(loc, "look up", lambda fs: fs.get_file_info(loc.fs_path))


def read_bytes(loc: ObjectPath) -> bytes | None:
    """The bytes of the object at ``loc``; None when there is none."""
    def read(fs: Any) -> bytes | None:
        try:
            with fs.open_input_stream(loc.fs_path) as stream:
                return stream.read()
        except FileNotFoundError:
            return None

    return _call(loc, "read", read)


def write_chunk(stream: Any, chunk: memoryview) -> None:
    """Write one piece of an upload (the one writer of uploaded content: tests make it fail)."""
    stream.write(chunk)


def upload(loc: ObjectPath, data: bytes) -> None:
    """Upload ``data`` as the object ``loc``: one upload, whose object appears when it completes
    (:func:`upload_with`)."""
    upload_with(loc, lambda sink: sink.write(data))


def upload_with(loc: ObjectPath, produce: Produce) -> str:
    """Upload as the object ``loc`` what ``produce`` writes into the sink it is given (streamed,
    in pieces of at most :data:`CHUNK` bytes); returns the SHA-256 (hex) of the bytes written.

    pyarrow's output stream cannot be aborted: closed after a failure midway (or dropped), it
    completes the upload with what was written so far. So a failure removes that partial
    object before the error is raised, and an upload that holds fewer bytes than were written
    is removed too; a reader could still see the partial object meanwhile, which is why a
    publication uploads under a staged name no reader looks at and copies it into place (a
    server-side copy appears whole or not at all).
    """
    fs = filesystem(loc)
    try:
        stream = fs.open_output_stream(loc.fs_path)
    except (OSError, ValueError) as exc:
        raise LocationError(f"{loc}: cannot write: {describe(exc)}") from None

    def emit(view: memoryview) -> None:
        for start in range(0, len(view), CHUNK):
            write_chunk(stream, view[start:start + CHUNK])

    sink = ByteSink(emit)
    try:
        produce(sink)
        stream.close()
    except BaseException:
        try:
            stream.close()  # completes what was written: removed below
        except Exception:  # noqa: BLE001 - the upload had failed already
            pass
        remove(loc)
        raise
    done = info(loc)
    if done.size != sink.size:
        remove(loc)
        raise LocationError(f"{loc}: the upload holds {done.size} bytes, not {sink.size}: removed")
    return sink.sha256()


def copy(source: ObjectPath, target: ObjectPath) -> None:
    """Copy an object inside its store (server side: the copy appears whole or not at all)."""
    _call(target, "copy onto", lambda fs: fs.copy_file(source.fs_path, target.fs_path))


def remove(loc: ObjectPath) -> None:
    """Remove the object at ``loc`` (nothing when there is none)."""
    def delete(fs: Any) -> None:
        try:
            fs.delete_file(loc.fs_path)
        except FileNotFoundError:
            pass

    _call(loc, "remove", delete)


def names(loc: ObjectPath) -> list[str]:
    """The names of the objects directly under the prefix ``loc``."""
    import pyarrow.fs as pafs

    selector = pafs.FileSelector(loc.fs_path, recursive=False, allow_not_found=True)
    found = _call(loc, "list", lambda fs: fs.get_file_info(selector))
    return sorted(posixpath.basename(f.path) for f in found if f.type == pafs.FileType.File)


def _call(loc: ObjectPath, what: str, operation: Any) -> Any:
    fs = filesystem(loc)
    try:
        return operation(fs)
    except (OSError, ValueError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise FileNotFoundError(f"{loc}: no such object") from None
        raise LocationError(f"{loc}: cannot {what} it: {describe(exc)}") from None


def iter_variables() -> Iterator[str]:
    """Every environment variable a store reads (for documentation and tests)."""
    seen: set[str] = set()
    for group in ENVIRONMENT.values():
        for name in group:
            if name not in seen:
                seen.add(name)
                yield name


__all__ = [
    "CHUNK", "ENVIRONMENT", "SCHEMES", "SECRET_VARIABLES", "LocationError", "ObjectPath", "copy", "describe",
    "filesystem", "info", "is_remote", "iter_variables", "location", "location_problem", "names", "read_bytes",
    "redact", "remove", "scheme_of", "shown", "upload", "upload_with", "write_chunk",
]
