"""Dagster entry point: ``dagster dev -f definitions.py``.

Every release spec in ``$ANON_DAGSTER_CONFIG`` (default: ``assets_config/`` beside this file)
becomes a privacy-gated asset group. A broken spec fails loading with its file, key and reason.
"""

import os
from pathlib import Path

from anon_dagster.dagster import load_release_definitions
from anon_dagster.dagster.components import CONFIG_ENV

defs = load_release_definitions(os.environ.get(CONFIG_ENV) or Path(__file__).parent / "assets_config")
