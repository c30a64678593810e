"""Fixtures shared by every test: a clean environment, the repository, the Adult benchmark, keys."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from anon_dagster.objectstore import iter_variables
from tests.support import s3
from tests.support.keys import ENVIRONMENT_VARIABLES, MASTER_KEY

# A store's credentials, region and endpoint, and the variables that would read a profile or an
# instance's metadata instead (a test that needs them sets them: see the s3_bucket fixture).
STORE_VARIABLES = (*iter_variables(), "AWS_EC2_METADATA_DISABLED", "AZURE_STORAGE_CONNECTION_STRING")

# The test gate is deterministic: the same examples on every run and no per-example deadline
# (a loaded CI machine is not a failing test). HYPOTHESIS_PROFILE=explore draws new examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
ADULT_DIR = REPO / "datasets" / "adult"
ADULT_ENV = "ANON_DAGSTER_ADULT_DIR"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts without the key, state, Dagster and object-storage variables of the shell
    running pytest.

    A developer's own key store, Dagster home or cloud credentials must neither satisfy nor break a
    test; tests that need a variable set it with ``monkeypatch``.
    """
    for var in (*ENVIRONMENT_VARIABLES, *STORE_VARIABLES):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[s3.Server]:
    """moto's S3-compatible server on 127.0.0.1 for the session (started on first use, stopped at the end)."""
    server = s3.start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_bucket(s3_server: s3.Server, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory,
              ) -> s3.Bucket:
    """A new bucket of the test server, the environment pointed at it as an installation would be
    (``AWS_ENDPOINT_URL``, credentials, region), for this test only."""
    return s3.use_bucket(s3_server, monkeypatch, tmp_path_factory.mktemp("aws"))


@pytest.fixture
def master_key(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Keys from the environment: ``ANON_DAGSTER_MASTER_KEY`` set to the tests' fixed key (returned),
    and ``ANON_DAGSTER_KEYSTORE_STATE`` to a fresh folder of their own (the ledger's anchor lives there)."""
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", MASTER_KEY)
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(tmp_path_factory.mktemp("keystate")))
    return MASTER_KEY


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository's root folder."""
    return REPO


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    """The Adult benchmark folder: ``datasets/adult`` (ARX's form and hierarchies), or ``$ANON_DAGSTER_ADULT_DIR``.

    The data is part of the repository, so a missing file is an error, never a skipped test.
    """
    folder = Path(os.environ[ADULT_ENV]) if os.environ.get(ADULT_ENV) else ADULT_DIR
    if not (folder / "adult.csv").is_file():
        pytest.fail(f"Adult benchmark not found: {folder / 'adult.csv'} is missing "
                    f"(it ships in datasets/adult; {ADULT_ENV} overrides the folder)")
    return folder
