"""A user's Dagster project written to a folder, as ``dg scaffold project`` lays one out (flat:
the package at the root, a ``defs`` folder loaded by ``load_from_defs_folder``), and loaded in
this process."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

from dagster import Definitions


def write_project(root: Path, package: str) -> Path:
    """The files of a scaffolded project: ``pyproject.toml`` with its ``[tool.dg]`` table, the
    package, ``definitions.py`` and ``defs/``; returns the ``defs`` folder."""
    (root / package / "defs").mkdir(parents=True)
    (root / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [project]
        name = "{package}"
        version = "0.1.0"
        requires-python = ">=3.11"

        [tool.dg]
        directory_type = "project"

        [tool.dg.project]
        root_module = "{package}"
        """))
    (root / package / "__init__.py").write_text("")
    (root / package / "defs" / "__init__.py").write_text("")
    (root / package / "definitions.py").write_text(textwrap.dedent("""\
        from pathlib import Path

        import dagster as dg


        @dg.definitions
        def defs():
            return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
        """))
    return root / package / "defs"


def load_project(root: Path, package: str) -> Definitions:
    """The project's Definitions, as ``dg`` and ``dagster dev`` load them (its ``definitions`` module)."""
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(f"{package}.definitions")
        return module.defs()
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == package or n.startswith(f"{package}.")]:
            del sys.modules[name]
