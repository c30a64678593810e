"""Dagster's run storage and event log under a user's own ``$DAGSTER_HOME`` stay owner-only.

The home is made as a user makes it, ``mkdir`` under umask 022 (0755), with what an earlier
``dagster dev`` leaves there (a 0644 ``dagster.yaml``, a 0755 ``storage/``); the definitions are
loaded and a release is materialized against the real instance of that home, as the demo and
scripts do. Afterwards no file or folder under the home may be readable by group or others.
"""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path

import pytest
from dagster import DagsterInstance

from anon_dagster.dagster import AnonReleaseComponent
from anon_dagster.dagster.runner import materialize_release
from anon_dagster.errors import UserError
from anon_dagster.release import run_storage
from anon_dagster.release.run_storage import OpenRunStorage
from anon_dagster.spec import load_spec
from tests.support.ledgers import env_ledger
from tests.support.releases import write_release


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def open_to_others(home: Path) -> list[str]:
    """Every path under ``home`` (and ``home`` itself) with a group or other permission bit."""
    paths = [home, *home.rglob("*")]
    return [f"{p} {stat.S_IMODE(p.lstat().st_mode):o}" for p in paths
            if not p.is_symlink() and stat.S_IMODE(p.lstat().st_mode) & 0o077]


def users_home(tmp: Path) -> Path:
    """A Dagster home made with ``mkdir`` under umask 022, with what an earlier run left in it."""
    home = tmp / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    (home / "storage").mkdir()
    assert stat.S_IMODE(home.stat().st_mode) == 0o755
    assert stat.S_IMODE((home / "dagster.yaml").stat().st_mode) == 0o644
    return home


def test_a_users_dagster_home_is_owner_only_after_loading_and_a_run(env, monkeypatch, umask_022):
    home = users_home(env)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.delenv("ANON_DAGSTER_LEDGER")  # the default ledger, under the home, as a user would keep it
    ledger = env_ledger(home / "anon_dagster" / "ledger.sqlite", create=True)
    spec_path = write_release(env)
    component = AnonReleaseComponent(specs=[str(spec_path)])
    with pytest.warns(OpenRunStorage) as caught:
        defs = component.build_definitions(env)
    said = [str(w.message) for w in caught]
    assert any(m.startswith(f"{home}: Dagster's home was open to other users") for m in said), said
    assert any(m.startswith(f"{home / 'storage'}: Dagster's storage/ folder") for m in said), said
    assert open_to_others(home) == []
    with warnings.catch_warnings():  # once: loading again says nothing more
        warnings.simplefilter("error", OpenRunStorage)
        component.build_definitions(env)

    # the instance of that home creates its run, event and schedule storage under umask 022
    with DagsterInstance.get() as instance:
        [outcome] = materialize_release(defs, load_spec(spec_path), instance, ["2023"])
        assert outcome.success and outcome.published is not None
        # the event log holds the checks' metadata: what must stay private
        [run] = instance.get_runs()
        checks = [r for r in instance.all_logs(run.run_id) if r.dagster_event
                  and r.dagster_event.event_type_value == "ASSET_CHECK_EVALUATION"]
        assert checks
    assert ledger.latest("tiny", "2023").status == "published"
    for folder in ("storage", "history", "schedules"):
        assert (home / folder).is_dir(), folder
    assert (home / "history" / "runs" / f"{run.run_id}.db").is_file()  # the run's event log
    assert open_to_others(home) == []


def test_a_dagster_home_that_cannot_be_made_owner_only_refuses_loading(env, monkeypatch, umask_022):
    home = users_home(env)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    spec_path = write_release(env)

    def refused(path, mode):  # another user's folder: its owner alone may change it
        raise PermissionError(1, "Operation not permitted", str(path))

    monkeypatch.setattr(run_storage.os, "chmod", refused)
    with pytest.raises(UserError) as err:
        AnonReleaseComponent(specs=[str(spec_path)]).build_definitions(env)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{home}: readable by other users and cannot be made owner-only")
    assert f"chmod -R go-rwx {home}" in message


def test_without_a_dagster_home_nothing_is_touched(env, umask_022):
    beside = env / "shared"
    beside.mkdir()
    spec_path = write_release(env)
    AnonReleaseComponent(specs=[str(spec_path)]).build_definitions(env)
    assert stat.S_IMODE(beside.stat().st_mode) == 0o755
