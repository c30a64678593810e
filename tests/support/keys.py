"""Key material for tests: fixed, so a failing run can be replayed; never used outside tests."""

from __future__ import annotations

import base64

MASTER_KEY_BYTES = bytes(range(32))
MASTER_KEY = base64.b64encode(MASTER_KEY_BYTES).decode()  # the form ANON_DAGSTER_MASTER_KEY takes

# Variables that select or unlock keys, locate state, or point at a Dagster home or a spec folder.
# A test that needs one sets it itself; none is inherited from the shell that runs pytest.
ENVIRONMENT_VARIABLES = (
    "ANON_DAGSTER_MASTER_KEY",
    "ANON_DAGSTER_KEYSTORE",
    "ANON_DAGSTER_KEYSTORE_PASSPHRASE",
    "ANON_DAGSTER_DEV_KEYSTORE",
    "ANON_DAGSTER_KEYSTORE_STATE",
    "ANON_DAGSTER_VAULT_KEY",
    "ANON_DAGSTER_VAULT_MOUNT",
    "ANON_DAGSTER_AUDIT_LOG",
    "ANON_DAGSTER_CONFIG",
    "ANON_DAGSTER_LEDGER",
    "DAGSTER_HOME",
    "VAULT_ADDR",
    "VAULT_TOKEN",
)
