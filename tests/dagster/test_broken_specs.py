"""A broken spec never hides the others: every valid release loads, each broken file is its own group.

The broken file's group holds ``<name>/spec`` with the blocking check ``spec_valid``, which fails
with every problem of the file (file, key, reason); materializing the asset refuses with the same
lines. The command line stays strict (``anon-dagster validate`` exits 2).
"""

from __future__ import annotations

import logging

import pytest
from dagster import (
    AssetCheckKey,
    AssetKey,
    AssetSelection,
    DagsterInstance,
    Definitions,
    define_asset_job,
)

from anon_dagster.cli import main
from anon_dagster.dagster import AnonReleaseComponent
from anon_dagster.errors import SpecError
from anon_dagster.spec.loading import load_spec_files
from tests.support.releases import write_release

LOGGER = "dagster.builtin.anon_dagster"


def write_broken(spec_path, name: str = "broken.yaml", release: str = "other"):
    """A copy of a good spec with two problems: an unknown cadence and a non-integer k."""
    text = spec_path.read_text().replace("release: tiny", f"release: {release}")
    text = text.replace("cadence: yearly", "cadence: fortnightly").replace("k: 2\n", "k: two\n", 1)
    broken = spec_path.parent / name
    broken.write_text(text)
    return broken


def asset_keys(defs: Definitions) -> set[str]:
    return {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}


def check_spec(defs: Definitions, key: AssetKey, name: str):
    specs = [s for c in defs.asset_checks or [] for s in c.check_specs if s.asset_key == key and s.name == name]
    assert len(specs) == 1
    return specs[0]


def test_one_good_and_one_broken_spec_load_the_good_release_and_show_the_broken_one(env, caplog):
    good = write_release(env)
    broken = write_broken(good)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        defs = AnonReleaseComponent(config_dir=str(good.parent)).build_definitions(env)
    keys = asset_keys(defs)
    assert {"tiny/raw", "tiny/pseudonymized", "tiny/anonymized", "tiny/published"} <= keys
    assert defs.resolve_job_def("tiny_release") is not None
    # the broken file is its own group, named by its release, with one asset and one check
    assert {k for k in keys if k.startswith("other/")} == {"other/spec"}
    spec_key = AssetKey(["other", "spec"])
    assert defs.resolve_assets_def(spec_key).group_names_by_key[spec_key] == "other"
    check = check_spec(defs, spec_key, "spec_valid")
    assert check.blocking
    for where in (f"{broken}: partitions.cadence: ", f"{broken}: anonymization.k: "):
        assert where in check.description
    assert len([line for line in check.description.splitlines() if line.startswith("- ")]) == 2
    assert "Traceback" not in check.description
    # one warning per broken file, on one line, naming the file and every problem
    warned = [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warned) == 1 and "\n" not in warned[0]
    assert "partitions.cadence" in warned[0] and "anonymization.k" in warned[0] and str(broken) in warned[0]


def test_the_broken_specs_check_fails_and_its_materialization_refuses_with_every_problem(env):
    good = write_release(env)
    broken = write_broken(good)
    defs = AnonReleaseComponent(config_dir=str(good.parent)).build_definitions(env)
    spec_key = AssetKey(["other", "spec"])
    jobs = [define_asset_job("check_spec", selection=AssetSelection.checks(AssetCheckKey(spec_key, "spec_valid"))),
            define_asset_job("materialize_spec", selection=AssetSelection.assets(spec_key).without_checks())]
    defs = Definitions.merge(defs, Definitions(jobs=jobs))
    instance = DagsterInstance.ephemeral()

    checked = defs.resolve_job_def("check_spec").execute_in_process(instance=instance, raise_on_error=False)
    [evaluation] = [e.event_specific_data for e in checked.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert evaluation.passed is False and evaluation.check_name == "spec_valid"
    assert f"{broken}: partitions.cadence: " in evaluation.description
    assert f"{broken}: anonymization.k: " in evaluation.description
    assert "partitions.cadence" in evaluation.metadata["problems"].value

    refused = defs.resolve_job_def("materialize_spec").execute_in_process(instance=instance, raise_on_error=False)
    assert not refused.success
    [failure] = [e.step_failure_data for e in refused.all_events if e.event_type_value == "STEP_FAILURE"]
    message = failure.user_failure_data.description
    assert message == evaluation.description
    assert not [e for e in refused.all_events if e.event_type_value == "ASSET_MATERIALIZATION"]


def test_a_second_spec_declaring_the_same_release_is_a_broken_spec(env):
    good = write_release(env)
    second = good.parent / "tiny_again.yaml"
    second.write_text(good.read_text())
    files = load_spec_files(good.parent)
    assert [f.spec is not None for f in files] == [True, False]
    assert str(files[1].error) == f"{second}: release: release 'tiny' already declared in {good}"
    defs = AnonReleaseComponent(config_dir=str(good.parent)).build_definitions(env)
    keys = asset_keys(defs)
    assert "tiny/published" in keys
    # the group is named by the file, since the release name is the first file's
    check = check_spec(defs, AssetKey(["tiny_again", "spec"]), "spec_valid")
    assert "already declared in" in check.description and str(good) in check.description


def test_an_unreadable_spec_is_named_by_its_file_and_names_never_collide(env):
    good = write_release(env)
    (good.parent / "bad-yaml.yaml").write_text("release: [tiny\n")
    (good.parent / "tiny.yml").write_text("release: tiny\n")  # stem and release both taken
    defs = AnonReleaseComponent(config_dir=str(good.parent)).build_definitions(env)
    keys = asset_keys(defs)
    assert {"tiny/published", "bad_yaml/spec", "tiny_2/spec"} <= keys
    assert "not valid YAML" in check_spec(defs, AssetKey(["bad_yaml", "spec"]), "spec_valid").description
    assert "required key is missing" in check_spec(defs, AssetKey(["tiny_2", "spec"]), "spec_valid").description


def test_a_config_dir_that_does_not_exist_is_one_line_naming_the_folder(env):
    missing = env / "no_such_specs"
    with pytest.raises(SpecError) as err:
        AnonReleaseComponent(config_dir="no_such_specs").build_definitions(env)
    assert str(err.value) == f"{missing}: config_dir: no such folder of release specs"


def test_the_command_line_stays_strict_on_a_broken_spec(env, capsys):
    broken = write_broken(write_release(env))
    assert main(["validate", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "partitions.cadence" in err and "anonymization.k" in err and "Traceback" not in err
