"""Dagster entry point of the demo: ``dagster dev -f definitions.py`` (or ``dg dev``).

Loads the project's dg defs folder (``anon_dagster/demo/defs``): every release spec in
``$ANON_DAGSTER_CONFIG`` (default: ``assets_config/`` beside this file) becomes a privacy-gated
asset group. A broken spec is shown as its own group with a failing ``spec_valid`` check listing
every problem (file, key, reason); the other releases load as usual.
"""

from anon_dagster.demo.definitions import demo_definitions

defs = demo_definitions()
