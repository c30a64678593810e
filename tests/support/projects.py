"""A user's Dagster project, made as users make one: ``create-dagster project`` writes it (the
``src`` layout, a ``defs`` folder loaded by ``load_from_defs_folder``), ``dg scaffold defs``
adds the plugin's component, and the project is loaded in this process as ``dg`` loads it."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from dagster import Definitions

BIN = Path(sys.executable).parent
COMPONENT = "anon_dagster.AnonReleaseComponent"


@dataclass(frozen=True)
class Project:
    """A scaffolded project: its folder, its package, the folder on its import path (``src``)
    and its ``defs`` folder."""

    root: Path
    package: str

    @property
    def src(self) -> Path:
        return self.root / "src"

    @property
    def defs(self) -> Path:
        return self.src / self.package / "defs"


def tool_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment the tools run in: this virtual environment's binaries first, a Dagster
    home of the test's own, no telemetry, none of the caller's anon_dagster or Dagster settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANON_DAGSTER_", "DAGSTER_"))}
    env.update({"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "DAGSTER_HOME": str(home),
                "DAGSTER_DISABLE_TELEMETRY": "1", **extra})
    env.pop("VIRTUAL_ENV", None)
    home.mkdir(parents=True, exist_ok=True)
    return env


def run_tool(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """One command of this environment's tools (``create-dagster``, ``dg``); fails the test with its output."""
    proc = subprocess.run([str(BIN / args[0]), *args[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def scaffold_project(parent: Path, package: str, home: Path) -> Project:
    """``create-dagster project`` in ``parent`` (no environment sync: the project runs in this one)."""
    parent.mkdir(parents=True, exist_ok=True)
    run_tool(parent, tool_env(home), "create-dagster", "project", "--no-uv-sync", package)
    project = Project(parent / package, package)
    assert (project.src / package / "definitions.py").is_file() and project.defs.is_dir()
    return project


def dg(project: Project, home: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess:
    """``dg ARGS`` in the project, its package importable."""
    return run_tool(project.root, tool_env(home, PYTHONPATH=str(project.src), **extra_env), "dg", *args)


def load_project(project: Project) -> Definitions:
    """The project's Definitions, as ``dg`` and ``dagster dev`` load them (its ``definitions`` module)."""
    sys.path.insert(0, str(project.src))
    try:
        module = importlib.import_module(f"{project.package}.definitions")
        return module.defs()
    finally:
        sys.path.remove(str(project.src))
        for name in [n for n in sys.modules if n == project.package or n.startswith(f"{project.package}.")]:
            del sys.modules[name]
