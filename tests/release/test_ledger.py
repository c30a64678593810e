"""The publication ledger: idempotence, supersession, concurrency, crash safety, budget."""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from anon_dagster.errors import DataError, UserError
from anon_dagster.release.composition import class_assignment
from anon_dagster.release.ledger import (
    SCHEMA_VERSION,
    BudgetExceeded,
    Ledger,
    LedgerError,
    compose_epsilons,
    dataset_hash,
    default_ledger_path,
    linkage_pseudonyms,
)
from tests.support.ledgers import new_ledger, open_test_ledger

KEY = b"k" * 32


def _assignment(n_persons: int, n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.integers(0, n_classes, n_persons).astype(str)})
    return class_assignment(df, ["age"], [f"p{i}" for i in range(n_persons)], linkage_key=KEY)


def _record(ledger: Ledger, data_hash: str, partition: str = "2024", status: str = "published", **kw):
    return ledger.record(
        release="r", partition=partition, population="patients", spec_hash="s", data_hash=data_hash,
        qis={"age": 1}, k=5, rows=10, status=status, **kw,
    )


def test_schema_is_versioned_and_in_wal_mode(tmp_path):
    ledger = new_ledger(tmp_path / "l.sqlite")
    assert ledger.schema_version == SCHEMA_VERSION
    conn = sqlite3.connect(ledger.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(LedgerError, match="schema version 99"):
        open_test_ledger(tmp_path / "l.sqlite")


def test_not_a_database_is_a_user_error(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(LedgerError, match="bad.sqlite"):
        open_test_ledger(bad)


def test_default_path_follows_env(monkeypatch, tmp_path):
    monkeypatch.delenv("ANON_DAGSTER_LEDGER", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    assert default_ledger_path() == tmp_path / "anon_dagster" / "ledger.sqlite"
    monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(tmp_path / "x.sqlite"))
    assert default_ledger_path() == tmp_path / "x.sqlite"
    monkeypatch.delenv("ANON_DAGSTER_LEDGER")
    monkeypatch.delenv("DAGSTER_HOME")
    assert str(default_ledger_path()) == os.path.join(".anon_dagster", "ledger.sqlite")


def test_same_data_hash_is_idempotent_and_new_hash_supersedes(tmp_path):
    ledger = new_ledger(tmp_path / "l.sqlite")
    a = _assignment(20, 3)
    first = _record(ledger, "h1", assignment=a)
    assert first.action == "inserted"
    again = _record(ledger, "h1", assignment=a)
    assert (again.action, again.publication_id) == ("unchanged", first.publication_id)
    assert ledger.counts()["publications"] == 1
    assert ledger.counts()["members"] == 20

    second = _record(ledger, "h2", assignment=_assignment(10, 2, seed=1))
    assert second.action == "superseded" and second.superseded_id == first.publication_id
    current = ledger.entries(population="patients")
    assert [p.id for p in current] == [second.publication_id]
    history = ledger.entries(population="patients", include_superseded=True)
    assert [p.id for p in history] == [first.publication_id, second.publication_id]
    assert ledger.get(first.publication_id).superseded_by == second.publication_id
    # the superseded entry keeps its own class assignment
    assert len(ledger.assignment(first.publication_id).members) == 20
    assert len(ledger.assignment(second.publication_id).members) == 10


def test_failed_evaluations_are_kept_but_do_not_count(tmp_path):
    ledger = new_ledger(tmp_path / "l.sqlite")
    ok = _record(ledger, "h1")
    failed = _record(ledger, "h2", status="failed", report_json='{"verdict": "not publishable"}')
    assert failed.action == "inserted"
    assert [p.id for p in ledger.entries(population="patients")] == [ok.publication_id]
    assert ledger.get(ok.publication_id).superseded_by is None
    latest = ledger.latest("r", "2024")
    assert latest.id == failed.publication_id and latest.status == "failed"
    assert ledger.latest("r", "2024", include_failed=False).id == ok.publication_id
    with pytest.raises(UserError, match="status"):
        _record(ledger, "h3", status="draft")


def test_linkage_pseudonyms_are_keyed_and_refuse_missing():
    a = linkage_pseudonyms(pd.Series(["123", "456", "123"]), KEY)
    assert a[0] == a[2] and a[0] != a[1] and len(a[0]) == 32
    assert "123" not in a[0]
    b = linkage_pseudonyms(pd.Series(["123"]), b"j" * 32)
    assert b[0] != a[0]
    with pytest.raises(DataError, match="missing"):
        linkage_pseudonyms(pd.Series(["1", None]), KEY)
    with pytest.raises(DataError, match="16 bytes"):
        linkage_pseudonyms(pd.Series(["1"]), b"short")


def test_dataset_hash_sees_values_and_columns():
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    assert dataset_hash(df) == dataset_hash(df.copy())
    assert dataset_hash(df) != dataset_hash(df.assign(a=[1, 3]))
    assert dataset_hash(df) != dataset_hash(df.rename(columns={"b": "c"}))
    assert dataset_hash(df) != dataset_hash(df.iloc[::-1].reset_index(drop=True))


# ----- concurrency --------------------------------------------------------------------------


def _publisher(path: str, worker: int, n: int) -> None:
    ledger = open_test_ledger(path)
    for i in range(n):
        # every worker also republishes one shared partition with its own data
        ledger.record(release="r", partition="shared", population="patients", spec_hash="s",
                      data_hash=f"w{worker}-{i}", qis={}, k=5, assignment=_assignment(30, 3, seed=i))
        ledger.record(release="r", partition=f"w{worker}-{i}", population="patients", spec_hash="s",
                      data_hash="h", qis={}, k=5, assignment=_assignment(30, 3, seed=i))


def test_concurrent_publishers_are_safe(tmp_path):
    path = str(tmp_path / "l.sqlite")
    new_ledger(path)
    ctx = mp.get_context("spawn")
    workers, n = 3, 6
    procs = [ctx.Process(target=_publisher, args=(path, w, n)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    ledger = open_test_ledger(path)
    counts = ledger.counts()
    assert counts["publications"] == 2 * workers * n
    assert counts["members"] == 30 * 2 * workers * n
    shared = ledger.entries(release="r", partition="shared", include_superseded=True)
    current = [p for p in shared if p.superseded_by is None]
    assert len(current) == 1 and current[0].id == max(p.id for p in shared)
    # the supersession chain is linear: each entry is superseded by exactly the next one
    ids = [p.id for p in shared]
    assert [p.superseded_by for p in shared[:-1]] == ids[1:]


# ----- crash safety ---------------------------------------------------------------------------

_KILLED_CHILD = textwrap.dedent(
    """
    import sys, time
    import numpy as np, pandas as pd
    from anon_dagster.release.ledger import publications as L
    from anon_dagster.release.composition import class_assignment
    from tests.support.ledgers import open_test_ledger

    def hook():
        print("inside", flush=True)
        time.sleep(120)

    L._in_transaction_hook = hook
    df = pd.DataFrame({"age": np.arange(500) % 7})
    a = class_assignment(df, ["age"], [f"q{i}" for i in range(500)], linkage_key=b"k" * 32)
    open_test_ledger(sys.argv[1]).record(release="r", partition="2024", population="patients",
        spec_hash="s", data_hash="h-new", qis={}, k=5, assignment=a,
        epsilon_spend=(0.5, 10.0, "basic", None))
    """
)


def test_publication_killed_midway_leaves_previous_intact(tmp_path):
    path = tmp_path / "l.sqlite"
    ledger = new_ledger(path)
    before = _record(ledger, "h-old", assignment=_assignment(40, 4))
    counts = ledger.counts()
    child = subprocess.Popen([sys.executable, "-c", _KILLED_CHILD, str(path)],
                             stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.strip() == "inside"
        # the child is inside its transaction: the old entry has not been superseded yet
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(30)
    assert child.returncode == -signal.SIGKILL
    ledger = open_test_ledger(path)
    assert ledger.counts() == counts
    current = ledger.entries(population="patients")
    assert [p.id for p in current] == [before.publication_id]
    assert ledger.get(before.publication_id).superseded_by is None
    assert len(ledger.assignment(before.publication_id).members) == 40
    # the ledger is writable again afterwards (no stale lock)
    assert _record(ledger, "h-after").action == "superseded"


# ----- epsilon budget -------------------------------------------------------------------------


def test_basic_composition_refuses_the_release_past_the_budget(tmp_path):
    ledger = new_ledger(tmp_path / "l.sqlite")
    spend = (0.4, 1.0, "basic", None)
    _record(ledger, "a", partition="1", epsilon_spend=spend)
    _record(ledger, "b", partition="2", epsilon_spend=spend)
    with pytest.raises(BudgetExceeded, match=r"1\.2.*total_epsilon=1"):
        _record(ledger, "c", partition="3", epsilon_spend=spend)
    assert ledger.counts()["publications"] == 2  # nothing written for the refused one
    state = ledger.budget("patients", epsilon=0.2, total=1.0)
    assert state.allowed and math.isclose(state.composed_before, 0.8)
    # a failed evaluation spends nothing
    _record(ledger, "d", partition="4", status="failed", epsilon_spend=spend)
    assert ledger.counts()["epsilon_spend"] == 2


def test_advanced_composition_matches_drv_formula():
    eps, k, delta = 0.1, 100, 1e-6
    expected = math.sqrt(2 * k * math.log(1 / delta)) * eps + k * eps * math.expm1(eps)
    assert math.isclose(compose_epsilons([eps] * k, "advanced", delta), expected, rel_tol=1e-12)
    assert expected < k * eps
    # with few releases the basic bound is smaller and is the one returned
    assert compose_epsilons([0.5, 0.5], "advanced", 1e-6) == 1.0
    with pytest.raises(UserError, match="delta"):
        compose_epsilons([0.1], "advanced", None)
