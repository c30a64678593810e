"""A governed release: the tiny two-year release with ``approval.required``, its ledger created,
keys from the environment (their state folder holds the ledger's anchor and the custody log)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from anon_dagster.pseudonymize import open_keystore
from anon_dagster.release.governance import RUNNER_ENV
from anon_dagster.release.ledger import Ledger
from anon_dagster.spec import ReleaseSpec, load_spec
from tests.support.ledgers import env_ledger
from tests.support.releases import write_release

APPROVERS = ["dpo", "ciso"]


@dataclass
class Governed:
    """The spec file, its ledger and a way to change the spec."""

    spec_path: Path
    ledger: Ledger

    @property
    def spec(self) -> ReleaseSpec:
        return load_spec(self.spec_path)

    def edit(self, change) -> None:
        """Rewrite the spec file with ``change(raw_dict)`` applied."""
        raw = yaml.safe_load(self.spec_path.read_text())
        change(raw)
        self.spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))


@pytest.fixture(autouse=True)
def no_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    """No runner name inherited from the shell: a test that needs one sets it."""
    monkeypatch.delenv(RUNNER_ENV, raising=False)


@pytest.fixture
def governed(tmp_path: Path, master_key: str, monkeypatch: pytest.MonkeyPatch) -> Governed:
    """The release with ``approval: {required: true, approvers: [dpo, ciso], min_approvals: 1}``;
    the ledger at ``$ANON_DAGSTER_LEDGER`` (so the CLI finds it), the evaluations run as ``pipeline``."""
    spec_path = write_release(tmp_path, thresholds={"k": 2})
    raw = yaml.safe_load(spec_path.read_text())
    raw["approval"] = {"required": True, "approvers": APPROVERS, "min_approvals": 1, "distinct_from_runner": True}
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    ledger_path = tmp_path / "state" / "ledger.sqlite"
    ledger_path.parent.mkdir()
    monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(ledger_path))
    monkeypatch.setenv(RUNNER_ENV, "pipeline")
    open_keystore()  # the keys the environment names
    return Governed(spec_path, env_ledger(ledger_path, create=True))


@dataclass
class Stored:
    """A release (composition by ``pid``, ``retention`` set) whose intermediates are stored as the
    IO manager stores them, encrypted, under ``store``; its ledger and the key store."""

    spec_path: Path
    store: object
    ledger: Ledger
    keystore: object

    @property
    def spec(self) -> ReleaseSpec:
        return load_spec(self.spec_path)


@pytest.fixture
def stored_release(tmp_path: Path, master_key: str, monkeypatch: pytest.MonkeyPatch) -> Stored:
    """The two-year release, ``retention: {raw_days: 7, pseudonymized_days: 30}``, its raw and
    pseudonymized tables of 2023 and 2024 stored (nothing read yet), the ledger created."""
    from anon_dagster import storage
    from anon_dagster.release import pipeline

    spec_path = write_release(tmp_path, thresholds={"k": 2})
    raw = yaml.safe_load(spec_path.read_text())
    raw["retention"] = {"raw_days": 7, "pseudonymized_days": 30}
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    ledger_path = tmp_path / "state" / "ledger.sqlite"
    ledger_path.parent.mkdir()
    monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(ledger_path))
    keystore = open_keystore()
    ledger = env_ledger(ledger_path, create=True)
    spec = load_spec(spec_path)
    store = storage.TableStore(tmp_path / "store")
    kek = keystore.derive_key(storage.DATA_AT_REST_PURPOSE)
    for partition in ("2023", "2024"):
        ingested = pipeline.ingest(spec, partition)
        pseudo = pipeline.pseudonymize(spec, ingested.data, keystore, partition=partition)
        store.write((spec.release, "raw"), partition, ingested.data, kek)
        store.write((spec.release, "pseudonymized"), partition, pseudo.data, kek)
    return Stored(spec_path, store, ledger, keystore)
