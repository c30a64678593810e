"""The publication protocol: crash-consistent, full-disk safe, one publisher per target, and it never
touches its inputs (symlinks, targets equal to the source, a hierarchy, the population, the storage)."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from anon_dagster.cli import main
from anon_dagster.release import portal, publication
from anon_dagster.release.ledger import LedgerError, publications
from anon_dagster.release.publication import PublicationRefused, publish, reconcile_pending
from anon_dagster.spec import load_spec
from tests.support.ledgers import open_test_ledger
from tests.support.publishing import PUBLISHER, assert_agree, folder_state, gated

STEPS = ["staged", "inside-ledger-transaction", "pending", "kept", "data-placed", "report-placed:md",
         "report-placed:html", "report-placed:json", "published", "cleaned"]


def _child(dump: Path, ledger: Path, state: Path, die_at: str = "", hold: float = 0.0) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", PUBLISHER, str(dump), str(ledger), str(state), die_at, str(hold)],
                            cwd=Path(__file__).resolve().parents[2], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.fixture
def republication(tmp_path):
    """2023 published once; a second evaluation of 2023 with other data, ready to publish."""
    first = gated(tmp_path, seed=0)
    publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    second = gated(tmp_path, seed=1)
    assert second.evaluation.data_hash != first.evaluation.data_hash
    return first, second


# ----- kill -9 at every step --------------------------------------------------------------------


@pytest.mark.parametrize("step", STEPS)
def test_killed_at_any_step_the_next_run_makes_ledger_and_portal_agree(republication, tmp_path, step):
    first, second = republication
    old = first.ledger.current("tiny", "2023")
    child = _child(second.dump(tmp_path / "eval.pickle"), second.ledger.path, tmp_path / "keystate", step)
    _, err = child.communicate(timeout=300)
    assert child.returncode == 137, err
    ledger = open_test_ledger(second.ledger.path, tmp_path / "keystate")
    # until reconciled, a pending entry counts for composition (fail safe: its data may be in place)
    pending = ledger.pending("tiny")
    assert all(p.id in {e.id for e in ledger.entries(population="tiny_people")} for p in pending)
    done = reconcile_pending(ledger, "tiny")
    assert_agree(ledger, second.spec, "2023")
    current = ledger.current("tiny", "2023")
    placed = STEPS.index(step) >= STEPS.index("data-placed")
    # rolled forward once the new data was in place, back before: never a mix
    assert current.data_hash == (second.evaluation.data_hash if placed else old.data_hash)
    assert [d.action for d in done] == ([] if step in ("staged", "inside-ledger-transaction", "published", "cleaned")
                                        else ["published" if placed else "abandoned"])
    # and the next publication goes through
    again = publish(second.spec, second.evaluation, second.anonymized, ledger)
    assert again.ledger_action in ("unchanged", "superseded")
    assert_agree(ledger, second.spec, "2023")


@pytest.mark.parametrize("step", ["pending", "data-placed", "report-placed:html"])
def test_a_first_publication_killed_midway_is_settled_by_the_next_publication(tmp_path, step):
    first = gated(tmp_path)
    child = _child(first.dump(tmp_path / "eval.pickle"), first.ledger.path, tmp_path / "keystate", step)
    assert child.wait(timeout=300) == 137
    ledger = open_test_ledger(first.ledger.path, tmp_path / "keystate")
    assert len(ledger.pending("tiny")) == 1
    # the next publication of the release reconciles before it writes
    done = publish(first.spec, first.evaluation, first.anonymized, ledger)
    assert_agree(ledger, first.spec, "2023")
    assert done.ledger_action == ("unchanged" if step != "pending" else "inserted")


def test_a_pending_entry_of_another_partition_is_reconciled_by_the_next_publication_of_the_release(tmp_path):
    first = gated(tmp_path, partition="2023")
    child = _child(first.dump(tmp_path / "eval.pickle"), first.ledger.path, tmp_path / "keystate", "data-placed")
    assert child.wait(timeout=300) == 137
    other = gated(tmp_path, partition="2024")
    publish(other.spec, other.evaluation, other.anonymized, other.ledger)
    assert other.ledger.pending("tiny") == []
    assert_agree(other.ledger, other.spec, "2023")
    assert_agree(other.ledger, other.spec, "2024")


# ----- a full disk at every write ---------------------------------------------------------------


def _full_disk_at(monkeypatch, target: object, name: str, nth: int) -> list[int]:
    calls = [0]
    real = getattr(target, name)

    def failing(*args, **kwargs):
        calls[0] += 1
        if calls[0] == nth:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, failing)
    return calls


FAILURES = [(portal, "write_all", n) for n in (1, 2, 3, 4)]  # the data, then the md, html, json reports
FAILURES += [(portal.os, "link", n) for n in (1, 2)]          # keeping the files being replaced
FAILURES += [(portal, "place", n) for n in (1, 2, 4)]           # renaming the data, the md, the json
FAILURES += [(portal, "sync", n) for n in (1, 2, 3)]            # flushing the folder after each stage


@pytest.mark.parametrize(("where", "name", "nth"), FAILURES, ids=lambda v: str(getattr(v, "__name__", v)))
def test_a_full_disk_at_any_write_leaves_portal_and_ledger_as_they_were(republication, monkeypatch,
                                                                        where, name, nth):
    first, second = republication
    folder = second.target.path.parent
    before, current = folder_state(folder), second.ledger.current("tiny", "2023")
    _full_disk_at(monkeypatch, where, name, nth)
    with pytest.raises(OSError, match="No space left"):
        publish(second.spec, second.evaluation, second.anonymized, second.ledger)
    monkeypatch.undo()
    assert folder_state(folder) == before
    assert second.ledger.current("tiny", "2023").id == current.id
    assert_agree(second.ledger, second.spec, "2023")


@pytest.mark.parametrize("method", ["record", "mark_published"])
def test_a_full_disk_in_the_ledger_leaves_portal_and_ledger_as_they_were(republication, monkeypatch, method):
    first, second = republication
    folder = second.target.path.parent
    before, current = folder_state(folder), second.ledger.current("tiny", "2023")

    def full(*args, **kwargs):
        raise LedgerError(f"{second.ledger.path}: the ledger could not be written (database or disk is full)")

    monkeypatch.setattr(publications.Ledger, method, full)
    with pytest.raises(LedgerError, match="disk is full"):
        publish(second.spec, second.evaluation, second.anonymized, second.ledger)
    monkeypatch.undo()
    assert folder_state(folder) == before
    assert second.ledger.current("tiny", "2023").id == current.id
    assert_agree(second.ledger, second.spec, "2023")


def test_a_full_disk_everywhere_after_the_pending_entry_still_agrees_after_reconciling(republication, monkeypatch):
    """The rename fails and so does every later ledger write: the entry stays pending, the
    folder is restored, and the next run settles it."""
    first, second = republication
    folder = second.target.path.parent
    before = folder_state(folder)
    _full_disk_at(monkeypatch, portal, "place", 2)

    def full(*args, **kwargs):
        raise LedgerError("database or disk is full")

    monkeypatch.setattr(publications.Ledger, "abandon", full)
    with pytest.raises(OSError):
        publish(second.spec, second.evaluation, second.anonymized, second.ledger)
    monkeypatch.undo()
    assert folder_state(folder) == before
    assert len(second.ledger.pending("tiny")) == 1
    assert [d.action for d in reconcile_pending(second.ledger)] == ["abandoned"]
    assert_agree(second.ledger, second.spec, "2023")


# ----- two publishers of one partition at once --------------------------------------------------


def test_two_publishers_of_one_partition_at_once_end_with_file_report_and_ledger_agreeing(republication, tmp_path):
    first, second = republication
    third = gated(tmp_path, seed=2)  # a third version of the same partition
    a = _child(third.dump(tmp_path / "a.pickle"), first.ledger.path, tmp_path / "keystate", hold=4.0)
    assert a.stdout.readline().strip() == "holding"  # a holds the target's lock, its entry pending
    b = _child(second.dump(tmp_path / "b.pickle"), first.ledger.path, tmp_path / "keystate")
    out_a, err_a = a.communicate(timeout=300)
    out_b, err_b = b.communicate(timeout=300)
    assert a.returncode == 0 and b.returncode == 0, (err_a, err_b)
    ledger = open_test_ledger(first.ledger.path, tmp_path / "keystate")
    assert_agree(ledger, first.spec, "2023")
    # b waited for a: its publication is the current one, a's the one before (same partition, ordered)
    assert ledger.current("tiny", "2023").data_hash == second.evaluation.data_hash
    history = [e.data_hash for e in ledger.entries(release="tiny", include_superseded=True)]
    assert history[-2:] == [third.evaluation.data_hash, second.evaluation.data_hash]


# ----- never the inputs -------------------------------------------------------------------------


def test_a_symlink_at_the_target_pointing_at_the_source_is_refused_and_the_source_unchanged(tmp_path):
    first = gated(tmp_path)
    source = tmp_path / "data" / "tiny.csv"
    original = source.read_bytes()
    target = first.target.path
    target.parent.mkdir(parents=True)
    target.symlink_to(source)
    with pytest.raises(PublicationRefused, match="symlink"):
        publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    assert source.read_bytes() == original and target.is_symlink()
    assert first.ledger.entries(include_failed=True) == []
    code = main(["validate", str(first.spec.spec_path)])
    assert code == 2


def test_a_symlinked_folder_below_the_publication_folder_is_refused(tmp_path):
    first = gated(tmp_path)
    elsewhere = tmp_path / "data"
    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "tiny").symlink_to(elsewhere, target_is_directory=True)
    before = folder_state(elsewhere)
    with pytest.raises(PublicationRefused, match="symlink"):
        publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    assert folder_state(elsewhere) == before


def test_a_symlink_planted_after_the_check_is_replaced_never_followed(tmp_path, monkeypatch):
    first = gated(tmp_path)
    source = tmp_path / "data" / "tiny.csv"
    original = source.read_bytes()
    target = first.target.path

    def plant(step: str) -> None:  # the race: every check passed, then a link appears at the target
        if step == "kept":
            target.symlink_to(source)

    monkeypatch.setattr(publication, "_step_hook", plant)
    publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    assert source.read_bytes() == original
    assert not target.is_symlink()
    assert_agree(first.ledger, first.spec, "2023")


def _retarget(spec_path: Path, publication_path: str, **extra: object) -> Path:
    raw = yaml.safe_load(spec_path.read_text())
    raw["publication"]["path"] = publication_path
    raw.update(extra)
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return spec_path


@pytest.mark.parametrize("case", ["source", "hierarchy", "population", "spec"])
def test_a_target_onto_an_input_is_refused_by_publish_and_by_validate(tmp_path, case, capsys):
    first = gated(tmp_path)
    spec_path = Path(first.spec.spec_path)
    (tmp_path / "data" / "regions.csv").write_text("North;*\nSouth;*\n")
    (tmp_path / "data" / "population.csv").write_text("age,sex,region\n30,F,North\n")
    paths = {"source": "../data/tiny.csv", "hierarchy": "../data/regions.csv",
             "population": "../data/population.csv", "spec": "tiny.csv"}
    raw = yaml.safe_load(spec_path.read_text())
    if case == "hierarchy":
        raw["columns"]["region"] = {"role": "quasi", "hierarchy": {"type": "table", "path": "../data/regions.csv"}}
    if case == "population":
        raw["policy"]["population"] = {"path": "../data/population.csv"}
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    if case == "spec":  # a spec file written as the target's name
        spec_path = spec_path.rename(spec_path.with_name("tiny.csv"))
    _retarget(spec_path, paths[case])
    spec = load_spec(spec_path)
    before = {p: p.read_bytes() for p in (tmp_path / "data").iterdir()}
    with pytest.raises(PublicationRefused, match="never overwrites"):
        publish(spec, first.evaluation, first.anonymized, first.ledger)
    assert {p: p.read_bytes() for p in (tmp_path / "data").iterdir()} == before
    assert spec_path.exists() and first.ledger.entries() == []
    assert main(["validate", str(spec_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(spec_path) in err and "never overwrites" in err


def test_a_target_inside_the_storage_or_the_key_store_is_refused(tmp_path, monkeypatch, capsys):
    first = gated(tmp_path)
    spec_path = _retarget(Path(first.spec.spec_path), "../state/storage/{release}/{partition}.parquet")
    spec = load_spec(spec_path)
    with pytest.raises(PublicationRefused, match="storage folder"):
        publish(spec, first.evaluation, first.anonymized, first.ledger, storage=[tmp_path / "state" / "storage"])
    _retarget(spec_path, "../keystate/{partition}.parquet")
    with pytest.raises(PublicationRefused, match="key store"):
        publish(load_spec(spec_path), first.evaluation, first.anonymized, first.ledger, keystore=first.keystore)
    assert not (tmp_path / "keystate" / "2023.parquet").exists()
    # validate sees the IO manager's default storage and the key store the environment names
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    _retarget(spec_path, "../home/anon_dagster/storage/{partition}.parquet")
    assert main(["validate", str(spec_path)]) == 2
    assert "storage folder" in capsys.readouterr().err
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(tmp_path / "keystate"))
    _retarget(spec_path, "../keystate/{partition}.parquet")
    assert main(["validate", str(spec_path)]) == 2
    assert "key store" in capsys.readouterr().err


def test_validate_compares_every_partition_of_a_pattern(tmp_path, capsys):
    first = gated(tmp_path)
    spec_path = Path(first.spec.spec_path)
    # the source of one partition is named like another partition's publication
    raw = yaml.safe_load(spec_path.read_text())
    raw["source"]["path"] = "../data/2024.csv"
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    _retarget(spec_path, "../data/{partition}.csv")
    assert main(["validate", str(spec_path)]) == 2
    assert "the release's source" in capsys.readouterr().err
    _retarget(spec_path, "../published/{release}/{partition}.parquet")
    assert main(["validate", str(spec_path)]) == 0


# ----- what is published, and what is kept private ----------------------------------------------


def test_republishing_the_same_data_changes_nothing_and_restores_a_deleted_report(tmp_path):
    first = gated(tmp_path)
    done = publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    target = done.path
    inode, mtime = target.stat().st_ino, target.stat().st_mtime_ns
    first.target.report_path("html").unlink()
    again = publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    assert (again.ledger_action, again.ledger_entry) == ("unchanged", done.ledger_entry)
    assert (target.stat().st_ino, target.stat().st_mtime_ns) == (inode, mtime)
    assert_agree(first.ledger, first.spec, "2023")


def test_an_edited_file_in_place_is_replaced_by_a_new_entry(tmp_path):
    first = gated(tmp_path)
    done = publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    done.path.write_bytes(b"tampered")
    again = publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    assert again.ledger_action == "superseded" and again.ledger_entry != done.ledger_entry
    assert_agree(first.ledger, first.spec, "2023")


def test_removing_composition_from_a_spec_with_publications_is_refused(tmp_path, capsys, monkeypatch, master_key):
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(tmp_path / "keystate"))  # the CLI finds the anchor
    first = gated(tmp_path)
    publish(first.spec, first.evaluation, first.anonymized, first.ledger)
    spec_path = Path(first.spec.spec_path)
    raw = yaml.safe_load(spec_path.read_text())
    del raw["composition"]
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    spec = load_spec(spec_path)
    second = gated(tmp_path, partition="2024", composition=False)
    with pytest.raises(PublicationRefused, match="release 'tiny' has publications of population 'tiny_people'"):
        publish(spec, second.evaluation, second.anonymized, second.ledger)
    assert not second.target.path.exists()
    code = main(["compose", str(spec_path), "--ledger", str(first.ledger.path)])
    assert code == 1 and "tiny_people" in capsys.readouterr().out


def test_reports_kept_in_private_folders_are_owner_only(tmp_path):
    first = gated(tmp_path)
    folder = tmp_path / "reports" / "tiny" / "2023"
    publication.write_evaluation_report(first.spec, first.evaluation, folder)
    for path in (folder, folder.parent, *folder.iterdir()):
        assert oct(path.stat().st_mode & 0o777) == (oct(0o700) if path.is_dir() else oct(0o600)), path


def test_without_hard_links_the_replaced_files_are_kept_as_copies(republication, monkeypatch):
    first, second = republication
    folder = second.target.path.parent
    before = folder_state(folder)

    def no_links(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(portal.os, "link", no_links)
    _full_disk_at(monkeypatch, publications.Ledger, "mark_published", 1)  # fails once the files are in place
    with pytest.raises(OSError):
        publish(second.spec, second.evaluation, second.anonymized, second.ledger)
    assert folder_state(folder) == before  # the copies put the previous files back
    monkeypatch.undo()
    monkeypatch.setattr(portal.os, "link", no_links)
    publish(second.spec, second.evaluation, second.anonymized, second.ledger)
    assert_agree(second.ledger, second.spec, "2023")
