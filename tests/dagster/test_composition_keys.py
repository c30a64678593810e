"""Composition in Dagster: persons re-spelled in a later partition are found, and the key store
resource follows the one key-source rule of the CLI.
"""

from __future__ import annotations

import pytest
from dagster import DagsterInstance

from anon_dagster.dagster import KeyStoreResource
from anon_dagster.errors import SecretError
from anon_dagster.pseudonymize import init_keystore
from tests.support.keys import MASTER_KEY
from tests.support.linkage import composing_release, two_years
from tests.support.releases import check_evaluations, load, materialized, run

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

PASS = "correct horse battery staple"
FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def _failure(result) -> str:
    return "\n".join(e.message or "" for e in result.all_events if e.event_type_value == "STEP_FAILURE")


@pytest.mark.parametrize(("spell", "normalize"), [
    (lambda p: f" {p}  ", None),
    (lambda p: p.lower().translate(FULL_WIDTH), {"case": "upper", "unicode": "NFKC"}),
], ids=["spaces", "case and full-width digits"])
def test_a_respelled_second_year_is_refused_by_composition(env, spell, normalize):
    spec = composing_release(env, two_years(spell), normalize=normalize)
    defs, instance = load(env, spec), DagsterInstance.ephemeral()
    first = run(defs, "yearly", "2023", instance)
    assert first.success, _failure(first)
    second = run(defs, "yearly", "2024", instance)
    evaluation = check_evaluations(second)["composition"]
    assert not second.success and evaluation.passed is False
    assert evaluation.metadata["measured"].value == 1
    assert not (env / "published" / "yearly" / "2024.parquet").exists()


def test_the_same_second_year_of_other_people_is_published(env):
    """The control: without persons in common the composition passes, so the refusal above is the linkage."""
    defs, instance = load(env, composing_release(env, two_years(other_people=True))), DagsterInstance.ephemeral()
    assert run(defs, "yearly", "2023", instance).success
    assert run(defs, "yearly", "2024", instance).success
    assert (env / "published" / "yearly" / "2024.parquet").exists()


@pytest.fixture
def key_file(tmp_path, monkeypatch):
    path = tmp_path / "keys" / "keystore.json"
    init_keystore(path, PASS, scrypt_n=2**10)
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE", str(path))
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_PASSPHRASE", PASS)
    return path


def test_the_resource_refuses_two_key_sources(env, key_file):
    """``env`` sets ANON_DAGSTER_MASTER_KEY; the key file is a second source, named by the variable
    or by the resource's own path (the definitions' ``keystore_from_env``: the run below)."""
    for resource in (KeyStoreResource(), KeyStoreResource(path=str(key_file), passphrase=PASS)):
        with pytest.raises(SecretError, match="ANON_DAGSTER_MASTER_KEY and ") as exc:
            resource.open()
        assert MASTER_KEY not in str(exc.value) and PASS not in str(exc.value)
        with pytest.raises(SecretError):
            resource.derive_key("ledger-linkage")


def test_a_run_with_two_key_sources_fails_before_anything_is_written(env, key_file):
    defs = load(env, composing_release(env, two_years()))
    result = run(defs, "yearly", "2023", DagsterInstance.ephemeral())
    assert not result.success
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    described = failures[0].step_failure_data.user_failure_data.description  # the key store's one line
    assert failures[0].event_specific_data.error.cls_name == "Failure"
    assert "ANON_DAGSTER_MASTER_KEY and ANON_DAGSTER_KEYSTORE" in described and "\n" not in described
    assert MASTER_KEY not in _failure(result) and PASS not in _failure(result)
    assert materialized(result) == set()
    assert not (env / "published").exists()


def test_a_resource_with_one_source_opens_the_cli_keys(env, key_file, monkeypatch):
    """One source: the resource and the CLI's open_keystore derive the same linkage key."""
    from anon_dagster.pseudonymize import open_keystore

    monkeypatch.delenv("ANON_DAGSTER_MASTER_KEY")
    resource = KeyStoreResource(path=str(key_file), passphrase=PASS)
    assert resource.derive_key("ledger-linkage") == open_keystore().derive_key("ledger-linkage")
