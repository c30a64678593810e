"""``columns.<name>.pseudonymize.scope`` in the spec: its default, its values, and the specs refused.

Refused, every problem at once with file and key: a reversible method (aes_siv, token) with
scope ``row`` (a per-row random value cannot be reproduced to be reversed), and scope
``population`` without a ``composition`` block (cross-release linkage must be checked).
"""

from __future__ import annotations

import pytest
import yaml

from anon_dagster.cli import main
from anon_dagster.errors import SpecError
from anon_dagster.spec import DEFAULT_PSEUDONYM_SCOPE, load_spec
from tests.support.docs import scope_example

SCOPE_KEY = "columns.{}.pseudonymize.scope"


def spec_with(tmp_path, columns: dict, **sections) -> str:
    """A spec file of ``columns`` (plus an age QI) and ``sections``; returns its path."""
    raw = {"release": "scoped", "source": {"path": "data.csv"},
           "columns": {**columns, "age": {"role": "quasi"}},
           "anonymization": {"method": "none"}, "publication": {"path": "out.parquet"}, **sections}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(path)


def pseudonymized(method: str, scope: str | None = None) -> dict:
    block = {"method": method, "purpose": "research", **({"scope": scope} if scope else {})}
    return {"role": "identifier", "pseudonymize": block}


COMPOSITION = {"composition": {"population": "people", "person": "pid"}}


def test_the_default_scope_is_release(tmp_path):
    spec = load_spec(spec_with(tmp_path, {"pid": pseudonymized("hmac")}))
    assert DEFAULT_PSEUDONYM_SCOPE == "release"
    assert spec.columns["pid"].pseudonymize.scope == "release"


@pytest.mark.parametrize(("method", "scope", "sections"), [
    ("hmac", "row", {}), ("hmac", "release", {}), ("aes_siv", "release", {}), ("token", "release", {}),
    ("hmac", "population", COMPOSITION), ("aes_siv", "population", COMPOSITION),
    ("token", "population", COMPOSITION),
])
def test_the_scopes_each_method_takes(tmp_path, method, scope, sections):
    spec = load_spec(spec_with(tmp_path, {"pid": pseudonymized(method, scope)}, **sections))
    assert spec.columns["pid"].pseudonymize.scope == scope


@pytest.mark.parametrize("method", ["aes_siv", "token"])
def test_a_reversible_method_refuses_scope_row(tmp_path, method):
    path = spec_with(tmp_path, {"pid": pseudonymized(method, "row")})
    with pytest.raises(SpecError) as err:
        load_spec(path)
    [problem] = err.value.problems
    assert problem.file == path and problem.key == SCOPE_KEY.format("pid")
    assert "row" in problem.message and method in problem.message and "reproducible" in problem.message


def test_scope_population_requires_a_composition_block(tmp_path):
    path = spec_with(tmp_path, {"pid": pseudonymized("hmac", "population")})
    with pytest.raises(SpecError) as err:
        load_spec(path)
    [problem] = err.value.problems
    assert problem.file == path and problem.key == SCOPE_KEY.format("pid")
    assert "composition" in problem.message


def test_an_unknown_scope_is_refused_naming_the_key(tmp_path):
    path = spec_with(tmp_path, {"pid": pseudonymized("hmac", "linked")})
    with pytest.raises(SpecError) as err:
        load_spec(path)
    [problem] = err.value.problems
    assert problem.key == SCOPE_KEY.format("pid") and "'row', 'release' or 'population'" in problem.message


def test_every_scope_problem_is_reported_at_once(tmp_path):
    path = spec_with(tmp_path, {"pid": pseudonymized("aes_siv", "row"), "case": pseudonymized("hmac", "population")})
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert sorted(p.key for p in err.value.problems) == [SCOPE_KEY.format("case"), SCOPE_KEY.format("pid")]
    assert all(p.file == path for p in err.value.problems)


def test_validate_reports_a_scope_problem_in_one_line_with_exit_2(tmp_path, capsys):
    path = spec_with(tmp_path, {"pid": pseudonymized("token", "row")})
    assert main(["validate", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and SCOPE_KEY.format("pid") in err and path in err


def test_the_documented_example_loads_with_the_scopes_it_names(tmp_path):
    example = yaml.safe_load(scope_example())
    path = spec_with(tmp_path, example["columns"], composition=example["composition"])
    spec = load_spec(path)
    assert {n: c.pseudonymize.scope for n, c in spec.columns.items() if c.pseudonymize} == {
        "patient_id": "release", "visit_id": "row", "person_id": "population"}
    without = spec_with(tmp_path, example["columns"])  # the comment says composition is required
    with pytest.raises(SpecError, match=r"columns\.person_id\.pseudonymize\.scope"):
        load_spec(without)
