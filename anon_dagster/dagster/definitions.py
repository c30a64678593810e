"""Code location for ``dg`` (``[tool.dg.project] code_location_target_module``).

Loads every release spec of ``$ANON_DAGSTER_CONFIG``, else ``assets_config/`` in the working
directory; a broken spec fails loading with its file, key and reason.
"""

from .components import load_release_definitions

defs = load_release_definitions()
