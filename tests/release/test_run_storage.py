"""Making a folder tree owner-only: every group and other bit removed, no link followed, a path
that cannot be changed refused in one line with the chmod to run."""

from __future__ import annotations

import os
import stat

import pytest

from anon_dagster.errors import UserError
from anon_dagster.release import run_storage
from anon_dagster.release.run_storage import private_dagster_home, restrict_tree


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_every_group_and_other_bit_goes_and_links_are_not_followed(tmp_path):
    root = tmp_path / "home"
    (root / "storage" / "run").mkdir(parents=True)
    (root / "storage" / "run" / "events.db").write_text("x")
    (root / "private").mkdir(mode=0o700)
    (root / "private" / "kept.txt").write_text("y")
    os.chmod(root / "private" / "kept.txt", 0o600)
    outside = tmp_path / "portal.csv"
    outside.write_text("published")
    os.chmod(outside, 0o644)
    (root / "link").symlink_to(outside)
    for p in (root, root / "storage", root / "storage" / "run"):
        os.chmod(p, 0o755)
    os.chmod(root / "storage" / "run" / "events.db", 0o664)

    changed = restrict_tree(root)
    assert changed[0] == root  # the home first: closed before anything under it is looked at
    assert sorted(changed) == [root, root / "storage", root / "storage" / "run", root / "storage" / "run" / "events.db"]
    assert [mode(p) for p in sorted(changed)] == [0o700, 0o700, 0o700, 0o600]
    assert mode(root / "private") == 0o700 and mode(root / "private" / "kept.txt") == 0o600
    assert mode(outside) == 0o644  # the link's target is not the home's
    assert restrict_tree(root) == []


def test_a_path_that_cannot_be_changed_is_refused_with_the_chmod_to_run(tmp_path, monkeypatch):
    root = tmp_path / "home"
    root.mkdir()
    os.chmod(root, 0o750)

    def refused(path, new_mode):
        raise PermissionError(1, "Operation not permitted", str(path))

    monkeypatch.setattr(run_storage.os, "chmod", refused)
    with pytest.raises(UserError) as err:
        restrict_tree(root)
    assert str(err.value) == (f"{root}: readable by other users and cannot be made owner-only (Operation not "
                              f"permitted): run `chmod -R go-rwx {root}` as its owner")


def test_the_dagster_home_is_restricted_only_when_it_is_set_and_a_folder(tmp_path, monkeypatch):
    home = tmp_path / "dh"
    home.mkdir()
    os.chmod(home, 0o755)
    assert private_dagster_home() == []  # unset
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "missing"))
    assert private_dagster_home() == []
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with pytest.warns(run_storage.OpenRunStorage, match="Dagster's home was open to other users"):
        assert private_dagster_home() == [home.resolve()]
    assert mode(home) == 0o700
