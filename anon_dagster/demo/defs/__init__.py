"""The demo's dg defs folder (``[tool.dg.project] defs_module``): ``releases/defs.yaml`` loads
every release spec of ``assets_config/`` (or of ``$ANON_DAGSTER_CONFIG``) with the
``AnonReleaseComponent``. ``dg check defs``, ``dg list defs``, ``dg dev`` and
``dagster dev -f definitions.py`` all load this folder."""
