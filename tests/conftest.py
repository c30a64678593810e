"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# The test gate is deterministic: the same examples on every run and no per-example deadline
# (a loaded CI machine is not a failing test). HYPOTHESIS_PROFILE=explore draws new examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
ADULT_DIR = REPO.parent / "shared" / "data" / "adult"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    """The Adult benchmark (ARX's copy with its hierarchies); tests skip when it is absent."""
    candidates = [REPO / "data" / "adult", ADULT_DIR]
    if os.environ.get("ANON_DAGSTER_ADULT_DIR"):
        candidates.insert(0, Path(os.environ["ANON_DAGSTER_ADULT_DIR"]))
    for candidate in candidates:
        if (candidate / "adult.csv").exists():
            return candidate
    pytest.skip("Adult benchmark data not found (expected ../shared/data/adult)")
