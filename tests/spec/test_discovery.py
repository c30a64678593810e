"""Where the release specs are found, and which of them build."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from anon_dagster.errors import SpecError, UserError
from anon_dagster.spec.discovery import (
    CONFIG_ENV,
    anchor,
    build_each,
    find_spec_files,
    spec_location,
)
from anon_dagster.spec.loading import SpecFile
from tests.support.releases import write_release


def test_a_relative_path_is_anchored_at_the_project_and_an_absolute_one_is_kept(tmp_path):
    project = tmp_path / "project"
    assert anchor("specs", project) == project / "specs"
    assert anchor("../common/specs", project) == project / "../common/specs"  # outside the project: as given
    assert anchor(str(tmp_path / "elsewhere"), project) == tmp_path / "elsewhere"
    assert anchor("~/specs", project) == Path(os.path.expanduser("~")) / "specs"


def test_the_folder_is_the_setting_else_the_variable_else_assets_config(tmp_path, monkeypatch):
    assert spec_location(tmp_path) == tmp_path / "assets_config"
    monkeypatch.setenv(CONFIG_ENV, "from_env")
    assert spec_location(tmp_path) == tmp_path / "from_env"
    assert spec_location(tmp_path, "given") == tmp_path / "given"
    assert spec_location(tmp_path, "given", ["a.yaml", "/abs/b.yaml"]) == [tmp_path / "a.yaml", Path("/abs/b.yaml")]


def test_only_yaml_files_directly_in_the_folder_are_specs_and_a_link_counts(tmp_path):
    folder = tmp_path / "specs"
    (folder / "nested").mkdir(parents=True)
    for name in ("b.yaml", "a.yml", "notes.txt", "c.yaml.bak", "nested/d.yaml"):
        (folder / name).write_text("release: [unclosed\n")
    outside = tmp_path / "outside.yaml"
    outside.write_text("release: [unclosed\n")
    (folder / "linked.yaml").symlink_to(outside)
    (folder / "dangling.yaml").symlink_to(tmp_path / "missing.yaml")  # a link to nothing is no file
    files = find_spec_files(tmp_path, "specs")
    assert [f.path.name for f in files] == ["a.yml", "b.yaml", "linked.yaml"]
    assert all(f.spec is None and f.error is not None for f in files)  # each broken on its own


def test_a_missing_folder_names_the_setting_it_came_from(tmp_path, monkeypatch):
    with pytest.raises(SpecError) as given:
        find_spec_files(tmp_path, "nowhere")
    assert str(given.value.problems[0]) == f"{tmp_path / 'nowhere'}: config_dir: no such folder of release specs"
    monkeypatch.setenv(CONFIG_ENV, "absent")
    with pytest.raises(SpecError) as from_env:
        find_spec_files(tmp_path)
    assert from_env.value.problems[0].key == CONFIG_ENV


def test_a_spec_that_does_not_build_is_set_aside_with_the_build_error_as_its_problem(tmp_path):
    good = find_spec_files(tmp_path, specs=[str(write_release(tmp_path, name="good"))])
    other = find_spec_files(tmp_path, specs=[str(write_release(tmp_path, name="other"))])
    invalid = SpecFile(tmp_path / "bad.yaml", error=SpecError([]), release="bad")

    def build(spec):
        if spec.release == "other":
            raise UserError("cannot be built: no such table")
        return spec.release.upper()

    built, broken = build_each([*good, invalid, *other], build)
    assert built == ["GOOD"]
    assert [b.path.name for b in broken] == ["bad.yaml", "other.yaml"]
    assert broken[0] is invalid
    assert [str(p) for p in broken[1].error.problems] == [f"{other[0].path}: cannot be built: no such table"]
    assert broken[1].release == "other"
