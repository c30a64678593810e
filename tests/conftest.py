"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ADULT_DIR = REPO.parent / "shared" / "data" / "adult"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    """The Adult benchmark (ARX's copy with its hierarchies); tests skip when it is absent."""
    for candidate in (REPO / "data" / "adult", ADULT_DIR):
        if (candidate / "adult.csv").exists():
            return candidate
    pytest.skip("Adult benchmark data not found (expected ../shared/data/adult)")
