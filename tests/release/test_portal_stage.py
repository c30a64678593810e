"""A staged file streamed by its producer (anon_dagster.release.portal.stage_with): the hash is
that of the bytes in place, the file owner-only, and a producer failing midway leaves nothing,
in a folder and on object storage."""

from __future__ import annotations

import hashlib
import stat

import pytest

from anon_dagster import objectstore
from anon_dagster.release import portal

PIECES = [b"first row group,", b"", b"second,", b"x" * 70_000]


def produce(sink):
    for piece in PIECES:
        sink.write(piece)


def failing_after(count: int):
    def produce(sink):
        for piece in PIECES[:count]:
            sink.write(piece)
        raise OSError("the executors lost a part file")

    return produce


def test_a_streamed_file_is_staged_whole_with_its_hash(tmp_path):
    with portal.open_folder(tmp_path, ["out"], create=True) as folder:
        name, digest = portal.stage_with(folder, "t.parquet", "data", produce)
    path = tmp_path / "out" / name
    assert path.read_bytes() == b"".join(PIECES)
    assert digest == hashlib.sha256(b"".join(PIECES)).hexdigest()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and name.startswith(".t.parquet.") and name.endswith(".data.tmp")


@pytest.mark.parametrize("count", [0, 1, 3])
def test_a_producer_failing_midway_leaves_no_file(tmp_path, count):
    with portal.open_folder(tmp_path, ["out"], create=True) as folder:
        with pytest.raises(OSError, match="lost a part file"):
            portal.stage_with(folder, "t.parquet", "data", failing_after(count))
    assert list((tmp_path / "out").iterdir()) == []


def test_on_object_storage_the_hash_is_the_uploads_and_a_failure_leaves_no_object(s3_bucket, monkeypatch):
    monkeypatch.setattr(objectstore, "CHUNK", 1024)  # the large piece goes up in many chunks
    root = objectstore.ObjectPath.parse(s3_bucket.uri("pub"))
    with portal.open_folder(root, ["2023"], create=True) as folder:
        name, digest = portal.stage_with(folder, "t.parquet", "data", produce)
        assert folder.staged[name] == digest == hashlib.sha256(b"".join(PIECES)).hexdigest()
    assert s3_bucket.get(f"pub/2023/{name}") == b"".join(PIECES)
    with portal.open_folder(root, ["2024"], create=True) as folder:
        with pytest.raises(OSError, match="lost a part file"):
            portal.stage_with(folder, "t.parquet", "data", failing_after(3))
    assert [key for key in s3_bucket.objects() if key.startswith("pub/2024/")] == []
    assert s3_bucket.uploads() == []
