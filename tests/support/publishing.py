"""A small release taken through the gate and published, and what "the ledger and the portal agree" means.

:func:`gated` builds the release of :func:`tests.support.releases.write_release` (keys: the tests'
fixed key store with its state under ``tmp/keystate``; ledger under ``tmp/ledger``) and runs the
gate on one partition. :func:`assert_agree` is the property every kill point, full disk and race
must leave behind. :data:`PUBLISHER` is a child process that publishes a pickled evaluation and
can be killed (``os._exit``) at a named step of the protocol.
"""

from __future__ import annotations

import hashlib
import pickle
import stat
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from anon_dagster.pseudonymize.keystore import KeyStore
from anon_dagster.release import pipeline
from anon_dagster.release.evaluation import Evaluation
from anon_dagster.release.ledger import Ledger
from anon_dagster.release.publish import rebuild_report
from anon_dagster.release.report import render
from anon_dagster.release.targets import REPORT_FORMATS, Target, target_of
from anon_dagster.spec import ReleaseSpec, load_spec

from .ledgers import fixed_keystore, new_ledger, open_test_ledger
from .releases import write_release


@dataclass
class Gated:
    """One partition of a small release, through the gate: what :func:`publish` takes."""

    spec: ReleaseSpec
    keystore: KeyStore
    ledger: Ledger
    evaluation: Evaluation
    anonymized: pd.DataFrame

    @property
    def target(self) -> Target:
        return target_of(self.spec, self.evaluation.partition)

    def dump(self, path: Path) -> Path:
        """The evaluation and table, pickled for a child process."""
        path.write_bytes(pickle.dumps((str(self.spec.spec_path), self.evaluation, self.anonymized)))
        return path


def gated(tmp: Path, *, seed: int = 0, partition: str = "2023", **release: object) -> Gated:
    """The release written (data drawn with ``seed``) and ``partition`` taken through the gate."""
    spec = load_spec(write_release(tmp, seed=seed, **release))
    state = tmp / "keystate"
    keystore = fixed_keystore(state)
    ledger_path = tmp / "ledger" / "ledger.sqlite"
    ledger = open_test_ledger(ledger_path, state) if ledger_path.exists() else new_ledger(ledger_path, state)
    run = pipeline.run_gate(spec, partition=partition, keystore=keystore, ledger=ledger)
    assert run.evaluation.passed, run.evaluation.refusals
    return Gated(spec, keystore, ledger, run.evaluation, run.anonymized.data)


def folder_state(folder: Path) -> dict[str, bytes]:
    """Every file of a publication folder (the targets' lock files aside), byte for byte."""
    if not folder.exists():
        return {}
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.name.endswith(".lock")}


def assert_agree(ledger: Ledger, spec: ReleaseSpec, partition: str) -> None:
    """The ledger and the portal agree: nothing pending; the file in place is the current
    publication's (its SHA-256), its three reports are that entry's (rebuilt from the ledger),
    all 0644; no entry means no file; no staged or kept file is left beside it."""
    ledger = open_test_ledger(ledger.path, ledger.seal.anchor_dir.parent)  # opened afresh: verified again
    assert ledger.pending(spec.release) == []
    target = target_of(spec, partition)
    folder = target.path.parent
    current = ledger.current(spec.release, partition)
    if current is None:
        assert not target.path.exists()
    else:
        assert hashlib.sha256(target.path.read_bytes()).hexdigest() == current.file_hash
        report = rebuild_report(current)
        for fmt in REPORT_FORMATS:
            path = target.report_path(fmt)
            assert path.read_bytes() == render(report, fmt).encode(), fmt
            assert stat.S_IMODE(path.stat().st_mode) == 0o644
        assert stat.S_IMODE(target.path.stat().st_mode) == 0o644
    names = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
    left = [n for n in names if n.startswith(f".{target.name}.") and n != f".{target.name}.lock"]
    assert left == [], left


# A publisher in a child process: argv = pickled evaluation, ledger path, key store state, the
# step to die at ("" for none), seconds to sleep at "pending" (to hold the target's lock).
PUBLISHER = """
import os, pickle, sys, time
from pathlib import Path
from anon_dagster.release import publication
from anon_dagster.release.ledger import publications as ledger_rows
from anon_dagster.spec import load_spec
from tests.support.ledgers import open_test_ledger

dump, ledger_path, state, die_at, hold = sys.argv[1:6]
spec_path, evaluation, anonymized = pickle.loads(Path(dump).read_bytes())

def step(name):
    if name == die_at:
        os._exit(137)
    if name == "pending" and float(hold):
        print("holding", flush=True)
        time.sleep(float(hold))

publication._step_hook = step
if die_at == "inside-ledger-transaction":
    ledger_rows._in_transaction_hook = lambda: os._exit(137)
ledger = open_test_ledger(Path(ledger_path), Path(state))
done = publication.publish(load_spec(spec_path), evaluation, anonymized, ledger)
print("published", done.ledger_entry, flush=True)
"""
