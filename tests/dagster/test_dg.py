"""``dg`` works: in a fresh project with the component's scaffolder, and at the repository root.

Every command runs the virtual environment's ``dg`` through a subprocess, with a Dagster home of
its own and none of the caller's ``ANON_DAGSTER_*`` settings.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from anon_dagster.spec import load_spec
from anon_dagster.spec.starter import EXAMPLE_ROWS
from tests.support.projects import BIN, COMPONENT, Project, run_tool, scaffold_project, tool_env
from tests.support.projects import dg as dg_in

STEPS = ("raw", "pseudonymized", "anonymized", "published")

pytestmark = pytest.mark.skipif(not (BIN / "dg").exists(), reason="dg is not installed (dagster-dg-cli, a dev dependency)")


def dg(cwd, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return run_tool(cwd, env, "dg", *args)


def listed_assets(proc: subprocess.CompletedProcess) -> set[str]:
    return {a["asset_key"] for a in json.loads(proc.stdout)["assets"]}


@pytest.mark.slow
def test_scaffolded_defs_in_a_fresh_project_check_and_list_the_starter_release(tmp_path):
    home = tmp_path / "home"
    project: Project = scaffold_project(tmp_path, "clinic_releases", home)  # create-dagster project

    dg_in(project, home, "scaffold", "defs", COMPONENT, "releases")
    folder = project.defs / "releases"
    written = yaml.safe_load((folder / "defs.yaml").read_text())
    assert written == {"type": COMPONENT, "attributes": {"config_dir": "specs"}}
    spec = load_spec(folder / "specs" / "example_release.yaml")  # the starter validates
    assert spec.release == "example_release"
    text = (folder / "specs" / "example_release.yaml").read_text()
    assert "key store" in text and "anon-dagster ledger init" in text
    rows = (folder / "data" / "example.csv").read_text().splitlines()
    assert len(rows) == EXAMPLE_ROWS + 1

    dg_in(project, home, "check", "defs")
    listed = listed_assets(dg_in(project, home, "list", "defs", "--json"))
    assert {f"example_release/{step}" for step in STEPS} <= listed


def test_the_scaffolder_keeps_files_that_exist(tmp_path):
    from dagster import ScaffoldRequest

    from anon_dagster.dagster.components import AnonReleaseScaffolder

    target = tmp_path / "releases"
    (target / "specs").mkdir(parents=True)
    (target / "specs" / "example_release.yaml").write_text("release: mine\n")
    AnonReleaseScaffolder().scaffold(ScaffoldRequest(type_name=COMPONENT, target_path=target, scaffold_format="yaml",
                                                     project_root=tmp_path, params=None))
    assert (target / "specs" / "example_release.yaml").read_text() == "release: mine\n"
    assert (target / "defs.yaml").exists() and (target / "data" / "example.csv").exists()


@pytest.mark.slow
def test_dg_check_and_list_defs_at_the_repository_root(repo_root, tmp_path):
    env = tool_env(tmp_path / "home", ANON_DAGSTER_DEV_KEYSTORE="1")
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
    env = tool_env(tmp_path / "home", ANON_DAGSTER_DEV_KEYSTORE="1", ANON_DAGSTER_CONFIG=str(config))
    dg(repo_root, env, "check", "defs")
    listed = listed_assets(dg(repo_root, env, "list", "defs", "--json"))
    assert "hospital_discharges/published" in listed and "typo/spec" in listed
    assert not any(key.startswith("hospital_discharges_strict/") for key in listed)
