"""Releases whose source and publication are on object storage, against a real S3-compatible server.

The server is moto's (conftest's ``s3_bucket``): the environment points at it as an installation
would (``AWS_ENDPOINT_URL``, credentials, region), and nothing of it is in a spec. A release read
from ``s3://`` and published to ``s3://`` gives the bytes a local one gives; a refused one writes
nothing to the bucket; an upload that fails midway, a copy that fails, a publisher killed at any
step of the protocol or another writer replacing an object leave the ledger and the bucket
agreeing; no credential reaches a message, a report or the ledger.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from anon_dagster import objectstore
from anon_dagster.cli import main
from anon_dagster.errors import DataError
from anon_dagster.io import read_table
from anon_dagster.release import pipeline, portal
from anon_dagster.release.ledger import Ledger
from anon_dagster.release.publication import PublicationRefused, publish, reconcile_pending
from anon_dagster.release.publish import rebuild_report
from anon_dagster.release.report import render
from anon_dagster.release.targets import REPORT_FORMATS, lock_folder, target_of
from anon_dagster.spec import ReleaseSpec, load_spec
from tests.support import s3
from tests.support.ledgers import fixed_keystore, new_ledger, open_test_ledger
from tests.support.publishing import PUBLISHER, Gated
from tests.support.releases import write_release

PUBLISHED = "published/tiny/2023.parquet"
SOURCE = "raw/tiny.csv"


def _spec_on(bucket: s3.Bucket, tmp: Path, *, seed: int = 0, source: bool = True, target: bool = True,
             **release: object) -> Path:
    """The tiny release written under ``tmp``, its source uploaded to the bucket and read from
    there (``source``), its publication going to the bucket (``target``)."""
    tmp.mkdir(parents=True, exist_ok=True)
    path = write_release(tmp, seed=seed, **release)
    raw = yaml.safe_load(path.read_text())
    if source:
        bucket.put(SOURCE, (tmp / "data" / "tiny.csv").read_bytes())
        raw["source"]["path"] = bucket.uri(SOURCE)
    if target:
        raw["publication"]["path"] = bucket.uri("published/{release}/{partition}.parquet")
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _gate(tmp: Path, spec_path: Path, partition: str = "2023") -> Gated:
    spec = load_spec(spec_path)
    state = tmp / "keystate"
    ledger_path = tmp / "ledger" / "ledger.sqlite"
    ledger = open_test_ledger(ledger_path, state) if ledger_path.exists() else new_ledger(ledger_path, state)
    keystore = fixed_keystore(state)
    run = pipeline.run_gate(spec, partition=partition, keystore=keystore, ledger=ledger)
    return Gated(spec, keystore, ledger, run.evaluation, run.anonymized.data)


def _gated(bucket: s3.Bucket, tmp: Path, **kwargs: object) -> Gated:
    gated = _gate(tmp, _spec_on(bucket, tmp, **kwargs))
    assert gated.evaluation.passed, gated.evaluation.refusals
    return gated


def _assert_agree(bucket: s3.Bucket, ledger: Ledger, spec: ReleaseSpec, partition: str = "2023") -> None:
    """The ledger and the bucket agree: nothing pending; the object in place is the current
    entry's (its SHA-256) with that entry's three reports beside it; no entry, no object; no
    staged or kept object left; no upload left unfinished."""
    ledger = open_test_ledger(ledger.path, ledger.seal.anchor_dir.parent)
    assert ledger.pending(spec.release) == []
    objects = bucket.objects()
    target = target_of(spec, partition)
    key = target.path.key
    current = ledger.current(spec.release, partition)
    if current is None:
        assert key not in objects
    else:
        assert hashlib.sha256(objects[key]).hexdigest() == current.file_hash
        report = rebuild_report(current)
        for fmt in REPORT_FORMATS:
            assert objects[target.report_path(fmt).key] == render(report, fmt).encode(), fmt
    folder = key.rsplit("/", 1)[0] + "/"
    left = [k for k in objects if k.startswith(f"{folder}.")]
    assert left == [], left
    assert bucket.uploads() == []


def _published_objects(bucket: s3.Bucket) -> dict[str, bytes]:
    return {k: v for k, v in bucket.objects().items() if k.startswith("published/")}


@pytest.fixture
def republication(s3_bucket, tmp_path):
    """2023 published to the bucket once; a second evaluation of 2023 with other data, ready to publish."""
    first = _gated(s3_bucket, tmp_path, seed=0)
    publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    second = _gated(s3_bucket, tmp_path, seed=1)
    assert second.evaluation.data_hash != first.evaluation.data_hash
    return first, second


# ----- reading and publishing --------------------------------------------------------------------


def test_a_release_read_from_s3_and_published_to_s3_gives_the_bytes_of_a_local_publication(s3_bucket, tmp_path):
    remote = _gated(s3_bucket, tmp_path / "remote")
    local = _gated(s3_bucket, tmp_path / "local", source=False, target=False)
    done = publish(remote.spec, remote.evaluation, remote.anonymized, remote.ledger)
    here = publish(local.spec, local.evaluation, local.anonymized, local.ledger)
    assert str(done.path) == s3_bucket.uri(PUBLISHED)
    assert done.data_hash == here.data_hash
    assert s3_bucket.get(PUBLISHED) == Path(here.path).read_bytes()
    # the ledger records the object's URI, and the reports sit beside it
    entry = remote.ledger.current("tiny", "2023")
    assert entry.published_path == s3_bucket.uri(PUBLISHED)
    assert entry.published_root == s3_bucket.uri("published")
    assert entry.report_path == s3_bucket.uri("published/tiny/2023.report.md")
    assert sorted(_published_objects(s3_bucket)) == [
        "published/tiny/2023.parquet", "published/tiny/2023.report.html", "published/tiny/2023.report.json",
        "published/tiny/2023.report.md"]
    report = rebuild_report(entry)
    assert report["identification"]["published_file"] == s3_bucket.uri(PUBLISHED)
    _assert_agree(s3_bucket, remote.ledger, remote.spec)
    # the lock is a file of this host, in the ledger's folder, not an object
    assert list(lock_folder(remote.ledger.path).glob("*.lock"))
    # publishing the same data again changes nothing
    again = publish(remote.spec, remote.evaluation, remote.anonymized, remote.ledger)
    assert again.ledger_action == "unchanged"


def test_identifiers_read_from_s3_are_the_text_a_local_file_gives(s3_bucket, tmp_path):
    csv = b"pid,age\n00123,30\nNA,40\n12345678901234567890,50\n"
    table = pa.table({"pid": pa.array([123, 12345678901234567], pa.int64()), "age": [30, 40]})
    (tmp_path / "ids.csv").write_bytes(csv)
    pq.write_table(table, tmp_path / "ids.parquet")
    s3_bucket.put("in/ids.csv", csv)
    s3_bucket.put("in/ids.parquet", (tmp_path / "ids.parquet").read_bytes())
    for name in ("ids.csv", "ids.parquet"):
        remote = read_table(s3_bucket.uri(f"in/{name}"), text_columns=["pid"])
        pd.testing.assert_frame_equal(remote, read_table(tmp_path / name, text_columns=["pid"]))
    assert read_table(s3_bucket.uri("in/ids.csv"), text_columns=["pid"])["pid"].tolist() == [
        "00123", "NA", "12345678901234567890"]
    with pytest.raises(DataError, match=r"s3://.*/in/missing.csv: no such object"):
        read_table(s3_bucket.uri("in/missing.csv"))


def test_a_refused_release_writes_nothing_to_the_bucket(s3_bucket, tmp_path):
    gated = _gate(tmp_path, _spec_on(s3_bucket, tmp_path, k=50, thresholds={"k": 50}))
    assert not gated.evaluation.passed
    before = s3_bucket.objects()
    with pytest.raises(PublicationRefused, match="nothing written"):
        publish(gated.spec, gated.evaluation, gated.anonymized, gated.ledger)
    assert s3_bucket.objects() == before == {SOURCE: (tmp_path / "data" / "tiny.csv").read_bytes()}
    assert s3_bucket.uploads() == []


def test_a_target_onto_the_source_on_s3_is_refused_by_publish_and_by_validate(s3_bucket, tmp_path, capsys):
    path = _spec_on(s3_bucket, tmp_path)
    raw = yaml.safe_load(path.read_text())
    # the same object, written with another case of scheme and bucket
    raw["source"]["path"] = raw["source"]["path"].replace("s3://", "S3://").replace("tests-", "TESTS-")
    raw["publication"]["path"] = s3_bucket.uri("raw/tiny.csv")
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    gated = _gate(tmp_path, path, partition="2023")
    before = s3_bucket.objects()
    with pytest.raises(PublicationRefused, match="the release's source"):
        publish(gated.spec, gated.evaluation, gated.anonymized, gated.ledger)
    assert s3_bucket.objects() == before
    assert main(["validate", str(path)]) != 0
    assert "the release's source" in capsys.readouterr().err


# ----- failures midway ---------------------------------------------------------------------------


def test_pyarrow_completes_a_partial_upload_when_its_stream_is_closed(s3_bucket):
    """Why an upload is staged and copied into place: pyarrow's stream cannot be aborted, and
    closing it after a failure (as ``with`` does) publishes the bytes written so far."""
    loc = objectstore.ObjectPath.parse(s3_bucket.uri("naive.bin"))
    fs = objectstore.filesystem(loc)
    with pytest.raises(RuntimeError), fs.open_output_stream(loc.fs_path) as stream:
        stream.write(b"half of it")
        raise RuntimeError("the rest never comes")
    assert s3_bucket.get("naive.bin") == b"half of it"


def test_an_upload_failing_midway_leaves_no_object(s3_bucket, monkeypatch):
    monkeypatch.setattr(objectstore, "CHUNK", 4)
    calls = []

    def failing(stream, chunk):
        calls.append(len(chunk))
        if len(calls) == 3:
            raise OSError("connection reset")
        stream.write(chunk)

    monkeypatch.setattr(objectstore, "write_chunk", failing)
    with pytest.raises(OSError, match="connection reset"):
        objectstore.upload(objectstore.ObjectPath.parse(s3_bucket.uri("x/data.bin")), b"0123456789abcdef")
    assert calls == [4, 4, 4]
    assert s3_bucket.objects() == {}
    assert s3_bucket.uploads() == []


@pytest.mark.parametrize("upload", [1, 2, 3, 4])  # the data, then the md, html and json reports
def test_a_publication_whose_upload_fails_midway_leaves_bucket_and_ledger_as_they_were(republication, monkeypatch,
                                                                                        s3_bucket, upload):
    first, second = republication
    before, current = s3_bucket.objects(), second.ledger.current("tiny", "2023")
    monkeypatch.setattr(objectstore, "CHUNK", 256)  # every upload in several pieces
    streams: list[object] = []
    pieces = [0]
    real = objectstore.write_chunk

    def failing(stream, chunk):
        if stream not in streams:
            streams.append(stream)
            pieces[0] = 0
        pieces[0] += 1
        if len(streams) == upload and pieces[0] == 2:  # the second piece of that upload
            raise OSError("connection reset by peer")
        real(stream, chunk)

    monkeypatch.setattr(objectstore, "write_chunk", failing)
    with pytest.raises(OSError, match="connection reset"):
        publish(second.spec, second.evaluation, second.anonymized, second.ledger)
    monkeypatch.undo()
    assert len(streams) == upload
    assert s3_bucket.objects() == before
    assert second.ledger.current("tiny", "2023").id == current.id
    # staged before any entry: the ledger holds the first publication only
    assert [e.status for e in second.ledger.entries(release="tiny", include_failed=True,
                                                    include_superseded=True)] == ["published"]
    _assert_agree(s3_bucket, second.ledger, second.spec)


@pytest.mark.parametrize("nth", [1, 2, 4])  # copying the data, the md report, the json report into place
def test_a_copy_failing_after_the_pending_entry_puts_the_previous_objects_back(republication, monkeypatch,
                                                                               s3_bucket, nth):
    first, second = republication
    before, current = s3_bucket.objects(), second.ledger.current("tiny", "2023")
    calls = [0]
    real = portal.place

    def failing(*args, **kwargs):
        calls[0] += 1
        if calls[0] == nth:
            raise objectstore.LocationError("the store went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(portal, "place", failing)
    with pytest.raises(objectstore.LocationError, match="went away"):
        publish(second.spec, second.evaluation, second.anonymized, second.ledger)
    monkeypatch.undo()
    assert s3_bucket.objects() == before
    assert second.ledger.current("tiny", "2023").id == current.id
    assert [e.status for e in second.ledger.entries(release="tiny", include_failed=True)] == ["published", "abandoned"]
    _assert_agree(s3_bucket, second.ledger, second.spec)


def test_an_object_replaced_by_another_writer_while_placed_is_never_marked_published(republication, monkeypatch,
                                                                                     s3_bucket):
    first, second = republication
    real = portal.place

    def place_then_overwrite(folder, staged, final, *args, **kwargs):
        real(folder, staged, final, *args, **kwargs)
        if final == "2023.parquet":
            s3_bucket.put(PUBLISHED, b"another host's table")

    monkeypatch.setattr(portal, "place", place_then_overwrite)
    with pytest.raises(PublicationRefused, match="another writer replaced it"):
        publish(second.spec, second.evaluation, second.anonymized, second.ledger)
    entries = second.ledger.entries(release="tiny", include_failed=True)
    assert entries[-1].status == "abandoned"
    assert second.ledger.current("tiny", "2023").data_hash == first.evaluation.data_hash


def _child(gated: Gated, tmp: Path, die_at: str = "", hold: float = 0.0, name: str = "eval") -> subprocess.Popen:
    """A publisher in a child process (the environment, so the server's endpoint, inherited)."""
    dump = gated.dump(tmp / f"{name}.pickle")
    return subprocess.Popen([sys.executable, "-c", PUBLISHER, str(dump), str(gated.ledger.path), str(tmp / "keystate"),
                             die_at, str(hold)], cwd=Path(__file__).resolve().parents[2], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_two_publishers_of_one_target_on_this_host_are_serialized_by_the_lock_file(republication, s3_bucket,
                                                                                   tmp_path):
    first, second = republication
    third = _gated(s3_bucket, tmp_path, seed=2)
    a = _child(third, tmp_path, hold=4.0, name="a")
    assert a.stdout.readline().strip() == "holding"  # a holds the target's lock, its entry pending
    b = _child(second, tmp_path, name="b")
    _, err_a = a.communicate(timeout=300)
    _, err_b = b.communicate(timeout=300)
    assert a.returncode == 0 and b.returncode == 0, (err_a, err_b)
    ledger = open_test_ledger(first.ledger.path, tmp_path / "keystate")
    _assert_agree(s3_bucket, ledger, first.spec)
    # b waited for a: its publication is the current one, a's the one before
    assert ledger.current("tiny", "2023").data_hash == second.evaluation.data_hash
    history = [e.data_hash for e in ledger.entries(release="tiny", include_superseded=True)]
    assert history[-2:] == [third.evaluation.data_hash, second.evaluation.data_hash]


@pytest.mark.parametrize("step", ["staged", "pending", "kept", "data-placed", "report-placed:html", "published"])
def test_a_publisher_killed_at_any_step_leaves_bucket_and_ledger_agreeing_once_reconciled(republication, tmp_path,
                                                                                           s3_bucket, step):
    first, second = republication
    old = first.ledger.current("tiny", "2023")
    child = _child(second, tmp_path, step)
    _, err = child.communicate(timeout=300)
    assert child.returncode == 137, err
    ledger = open_test_ledger(second.ledger.path, tmp_path / "keystate")
    reconcile_pending(ledger, "tiny")
    _assert_agree(s3_bucket, ledger, second.spec)
    placed = step in ("data-placed", "report-placed:html", "published")
    assert ledger.current("tiny", "2023").data_hash == (second.evaluation.data_hash if placed else old.data_hash)
    again = publish(second.spec, second.evaluation, second.anonymized, ledger)
    assert again.ledger_action in ("unchanged", "superseded")
    _assert_agree(s3_bucket, ledger, second.spec)


# ----- credentials -------------------------------------------------------------------------------


def test_no_credential_reaches_a_message_a_report_or_the_ledger(s3_bucket, tmp_path, monkeypatch, capsys):
    gated = _gated(s3_bucket, tmp_path)
    publish(gated.spec, gated.evaluation, gated.anonymized, gated.ledger)
    secrets = (s3.ACCESS_KEY_ID, s3.SECRET_ACCESS_KEY)
    texts = [Path(f"{gated.ledger.path}{suffix}").read_bytes() for suffix in ("", "-wal")
             if Path(f"{gated.ledger.path}{suffix}").exists()]
    texts += list(s3_bucket.objects().values())
    # errors of the store: a missing bucket, a missing object, an error whose text holds the secret
    messages = []
    for uri in ("s3://no-such-bucket-anywhere/x.csv", s3_bucket.uri("missing.csv")):
        with pytest.raises(DataError) as caught:
            read_table(uri)
        messages.append(str(caught.value))
    messages.append(objectstore.describe(OSError(f"signature of {s3.ACCESS_KEY_ID}/{s3.SECRET_ACCESS_KEY} refused")))
    # a spec that writes credentials into its URI: refused without repeating them
    raw = yaml.safe_load(gated.spec.spec_path.read_text())
    raw["publication"]["path"] = f"s3://{s3.ACCESS_KEY_ID}:{s3.SECRET_ACCESS_KEY}@{s3_bucket.name}/x.parquet"
    gated.spec.spec_path.write_text(yaml.safe_dump(raw))
    assert main(["validate", str(gated.spec.spec_path)]) == 2
    captured = capsys.readouterr()
    messages += [captured.out, captured.err]
    assert "never holds credentials" in captured.err
    for secret in secrets:
        for text in texts:
            assert secret.encode() not in text
        for message in messages:
            assert secret not in message, message
