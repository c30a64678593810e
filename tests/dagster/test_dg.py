"""``dg`` works: in a fresh project with the component's scaffolder, and at the repository root.

Every command runs the virtual environment's ``dg`` through a subprocess, with a Dagster home of
its own and none of the caller's ``ANON_DAGSTER_*`` settings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from anon_dagster.dagster.scaffold import EXAMPLE_ROWS
from anon_dagster.spec import load_spec

BIN = Path(sys.executable).parent
DG = BIN / "dg"
COMPONENT = "anon_dagster.AnonReleaseComponent"
STEPS = ("raw", "pseudonymized", "anonymized", "published")

pytestmark = pytest.mark.skipif(not DG.exists(), reason="dg is not installed (dagster-dg-cli, a dev dependency)")


def dg_env(home: Path, **extra: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANON_DAGSTER_", "DAGSTER_"))}
    env.update({"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "DAGSTER_HOME": str(home),
                "DAGSTER_DISABLE_TELEMETRY": "1", **extra})
    env.pop("VIRTUAL_ENV", None)
    return env


def dg(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(DG), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"dg {' '.join(args)}: {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def listed_assets(proc: subprocess.CompletedProcess) -> set[str]:
    return {a["asset_key"] for a in json.loads(proc.stdout)["assets"]}


def write_project(root: Path, package: str) -> Path:
    """A minimal dg project, as ``dg scaffold project`` lays it out (flat: the package at the root)."""
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


@pytest.mark.slow
def test_scaffolded_defs_in_a_fresh_project_check_and_list_the_starter_release(tmp_path):
    project = tmp_path / "clinic"
    defs = write_project(project, "clinic_releases")
    env = dg_env(tmp_path / "home", PYTHONPATH=str(project))

    dg(project, env, "scaffold", "defs", COMPONENT, "releases")
    folder = defs / "releases"
    written = yaml.safe_load((folder / "defs.yaml").read_text())
    assert written == {"type": COMPONENT, "attributes": {"config_dir": "specs"}}
    spec = load_spec(folder / "specs" / "example_release.yaml")  # the starter validates
    assert spec.release == "example_release"
    text = (folder / "specs" / "example_release.yaml").read_text()
    assert "key store" in text and "anon-dagster ledger init" in text
    rows = (folder / "data" / "example.csv").read_text().splitlines()
    assert len(rows) == EXAMPLE_ROWS + 1

    dg(project, env, "check", "defs")
    listed = listed_assets(dg(project, env, "list", "defs", "--json"))
    assert {f"example_release/{step}" for step in STEPS} <= listed


def test_the_scaffolder_keeps_files_that_exist(tmp_path):
    from dagster import ScaffoldRequest

    from anon_dagster.dagster.scaffold import AnonReleaseScaffolder

    target = tmp_path / "releases"
    (target / "specs").mkdir(parents=True)
    (target / "specs" / "example_release.yaml").write_text("release: mine\n")
    AnonReleaseScaffolder().scaffold(ScaffoldRequest(type_name=COMPONENT, target_path=target, scaffold_format="yaml",
                                                     project_root=tmp_path, params=None))
    assert (target / "specs" / "example_release.yaml").read_text() == "release: mine\n"
    assert (target / "defs.yaml").exists() and (target / "data" / "example.csv").exists()


@pytest.mark.slow
def test_dg_check_and_list_defs_at_the_repository_root(repo_root, tmp_path):
    env = dg_env(tmp_path / "home", ANON_DAGSTER_DEV_KEYSTORE="1")
    dg(repo_root, env, "check", "defs")
    listed = listed_assets(dg(repo_root, env, "list", "defs", "--json"))
    assert {f"hospital_discharges/{step}" for step in STEPS} <= listed
    assert "hospital_discharges_strict/published" in listed


@pytest.mark.slow
def test_dg_at_the_repository_root_shows_a_broken_spec_beside_the_good_ones(repo_root, tmp_path):
    config = tmp_path / "specs"
    config.mkdir()
    good = (repo_root / "assets_config" / "hospital_discharges.yaml").read_text()
    good = good.replace("path: hierarchies/", f"path: {repo_root / 'assets_config' / 'hierarchies'}/")
    (config / "hospital_discharges.yaml").write_text(good)
    (config / "typo.yaml").write_text(good.replace("release: hospital_discharges", "release: typo")
                                      .replace("cadence: yearly", "cadence: fortnightly"))
    env = dg_env(tmp_path / "home", ANON_DAGSTER_DEV_KEYSTORE="1", ANON_DAGSTER_CONFIG=str(config))
    dg(repo_root, env, "check", "defs")
    listed = listed_assets(dg(repo_root, env, "list", "defs", "--json"))
    assert "hospital_discharges/published" in listed and "typo/spec" in listed
    assert not any(key.startswith("hospital_discharges_strict/") for key in listed)
