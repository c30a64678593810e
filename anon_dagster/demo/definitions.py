"""The demo's code location (``[tool.dg.project] code_location_target_module``): the project's
defs folder, :mod:`anon_dagster.demo.defs`.

``dg check defs``, ``dg list defs`` and ``dg dev`` load it through this module, ``dagster dev -f
definitions.py`` through the root ``definitions.py``; both call :func:`demo_definitions`, so the
demo's definitions are loaded one way.
"""

from pathlib import Path

from dagster import Definitions, definitions, load_from_defs_folder


def demo_definitions() -> Definitions:
    """Every component of the demo's defs folder (the releases of ``assets_config/``, or of
    ``$ANON_DAGSTER_CONFIG``), read from the repository's ``[tool.dg]`` settings."""
    return load_from_defs_folder(path_within_project=Path(__file__).parent)


@definitions
def defs() -> Definitions:
    return demo_definitions()
