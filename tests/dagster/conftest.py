"""Fixtures of the Dagster tests: a folder for a release, its keys and its ledger."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, master_key: str) -> Path:
    """``tmp_path``, with keys from the environment and the ledger at ``state/ledger.sqlite`` in it."""
    monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(tmp_path / "state" / "ledger.sqlite"))
    return tmp_path
