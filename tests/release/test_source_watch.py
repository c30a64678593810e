"""The source watch: which partitions a sequence of file appearances and changes asks for."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

from anon_dagster.release.source_watch import file_signature, source_runs


def watched(folder: Path, path: str) -> SimpleNamespace:
    """A stand-in spec whose source is ``path`` (may hold ``{partition}``) under ``folder``."""
    return SimpleNamespace(source=SimpleNamespace(path=path),
                           resolve=lambda p, **fmt: folder / p.format(**fmt))


def write(path: Path, text: str, mtime_ns: int) -> str:
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return f"{mtime_ns}:{len(text)}"


def test_a_signature_is_mtime_and_size_and_none_for_a_missing_file(tmp_path):
    assert write(tmp_path / "a.csv", "abc", 10**18) == file_signature(tmp_path / "a.csv") == f"{10**18}:3"
    assert file_signature(tmp_path / "missing.csv") is None


def test_unpartitioned_one_run_per_version_of_the_file(tmp_path):
    spec = watched(tmp_path, "src.csv")
    assert source_runs(spec, None, None) == ([], "{}")  # nothing there yet
    sig = write(tmp_path / "src.csv", "x", 1_000)
    runs, cursor = source_runs(spec, "{}", None)
    assert runs == [(None, f"all@{sig}")] and json.loads(cursor) == {"file": sig}
    assert source_runs(spec, cursor, None) == ([], cursor)
    changed = write(tmp_path / "src.csv", "xy", 2_000)
    assert source_runs(spec, cursor, None)[0] == [(None, f"all@{changed}")]


def test_one_file_per_partition_runs_each_file_that_appears_or_changes(tmp_path):
    spec = watched(tmp_path, "src_{partition}.csv")
    a = write(tmp_path / "src_2023.csv", "a", 1_000)
    runs, cursor = source_runs(spec, None, ["2023", "2024"])
    assert runs == [("2023", f"2023@{a}")]
    b = write(tmp_path / "src_2024.csv", "bb", 2_000)  # 2024's file appears
    runs, cursor = source_runs(spec, cursor, ["2023", "2024"])
    assert runs == [("2024", f"2024@{b}")]
    a2 = write(tmp_path / "src_2023.csv", "a", 3_000)  # 2023's changes (same size, later time)
    runs, cursor = source_runs(spec, cursor, ["2023", "2024"])
    assert runs == [("2023", f"2023@{a2}")]
    assert json.loads(cursor) == {"partitions": {"2023": a2, "2024": b}}
    assert source_runs(spec, cursor, ["2023", "2024"])[0] == []


def test_one_file_for_every_partition_runs_each_once_then_the_latest_on_a_change(tmp_path):
    spec = watched(tmp_path, "src.csv")
    assert source_runs(spec, None, ["2023"]) == ([], "{}")  # no file: nothing asked, nothing remembered
    sig = write(tmp_path / "src.csv", "x", 1_000)
    runs, cursor = source_runs(spec, None, ["2023", "2024"])
    assert runs == [("2023", f"2023@{sig}"), ("2024", f"2024@{sig}")]
    assert source_runs(spec, cursor, ["2023", "2024"])[0] == []
    # 2025's period ends: only it is new, the file did not change
    assert source_runs(spec, cursor, ["2023", "2024", "2025"])[0] == [("2025", f"2025@{sig}")]
    changed = write(tmp_path / "src.csv", "xyz", 2_000)
    runs, cursor = source_runs(spec, cursor, ["2023", "2024"])
    assert runs == [("2024", f"2024@{changed}")]  # the latest period is the one filled in
    assert json.loads(cursor) == {"file": changed, "requested": ["2023", "2024"]}


def test_partitions_are_asked_for_in_the_order_of_the_keys(tmp_path):
    spec = watched(tmp_path, "src.csv")
    sig = write(tmp_path / "src.csv", "x", 1_000)
    cursor = json.dumps({"file": "old", "requested": ["2024"]})
    runs, _ = source_runs(spec, cursor, ["2022", "2023", "2024"])
    assert [key for key, _ in runs] == ["2022", "2023", "2024"] and runs[0][1] == f"2022@{sig}"
