"""Release spec v1: loading, every problem reported at once, data checks."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path

import pandas as pd
import pytest
import yaml

from anon_dagster.errors import SpecError
from anon_dagster.spec import check_data, load_spec, load_specs

MINIMAL = {
    "release": "survey",
    "source": {"path": "data.csv"},
    "columns": {
        "pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}},
        "name": {"role": "identifier"},
        "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5, 10]}},
        "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [3]}},
        "region": {"role": "quasi", "partition_key": True},
        "diag": {"role": "sensitive"},
        "los": {"role": "insensitive"},
    },
    "anonymization": {"method": "global", "k": 5, "max_suppression": 0.05},
    "policy": {"thresholds": {"k": 5, "l_distinct": 2}},
    "publication": {"path": "../published/{release}/{partition}.parquet"},
}


def write_spec(folder: Path, content: dict | str, name: str = "spec.yaml") -> Path:
    path = folder / name
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False))
    return path


def test_minimal_spec_loads_with_roles(tmp_path):
    spec = load_spec(write_spec(tmp_path, MINIMAL))
    assert spec.release == "survey"
    assert spec.quasi_identifiers == ["age", "zip", "region"]
    assert spec.generalized_qis == ["age", "zip"]
    assert spec.partition_keys == ["region"]
    assert spec.pseudonymized == ["pid"]
    assert "name" not in spec.published_columns and "pid" in spec.published_columns
    assert spec.resolve("data.csv") == (tmp_path / "data.csv").resolve()
    assert spec.resolve(spec.publication.path, partition="2024") == (
        tmp_path.parent / "published" / "survey" / "2024.parquet"
    ).resolve()


def test_demo_spec_is_valid(repo_root):
    spec = load_spec(repo_root / "assets_config" / "hospital_discharges.yaml")
    assert spec.partition_keys == ["province"]
    assert "province" not in spec.hierarchies


def test_every_problem_is_reported_at_once(tmp_path):
    bad = copy.deepcopy(MINIMAL)
    bad["columns"]["age"]["hierarchy"]["widths"] = [5, 7]          # does not nest
    bad["columns"]["zip"]["hierarchy"]["keep"] = [3, 4]            # does not coarsen
    bad["columns"]["diag"]["partition_key"] = True                 # not a QI
    bad["columns"]["pid"]["pseudonymize"]["method"] = "sha256"     # unsafe
    bad["utility_queries"] = [{"name": "q", "group_by": ["nope"], "target": "diag"}]
    path = write_spec(tmp_path, bad)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    keys = {p.key for p in info.value.problems}
    assert {"columns.age.hierarchy.widths", "columns.zip.hierarchy.keep",
            "columns.diag.partition_key", "columns.pid.pseudonymize.method",
            "utility_queries.0.group_by"} <= keys
    assert all(p.file == str(path) for p in info.value.problems)
    assert "enumeration" in str(info.value)


def test_structural_errors_name_the_key(tmp_path):
    bad = copy.deepcopy(MINIMAL)
    bad["columns"]["age"]["role"] = "quasy"
    bad["anonymization"]["k"] = 0
    bad["unexpected"] = 1
    with pytest.raises(SpecError) as info:
        load_spec(write_spec(tmp_path, bad))
    keys = {p.key for p in info.value.problems}
    assert "columns.age.role" in keys
    assert "anonymization.k" in keys
    assert "unexpected" in keys


@pytest.mark.parametrize("method", ["sha256", "md5", "salted_sha256", "plain_hash"])
def test_unsafe_hashes_refused_with_reason(tmp_path, method):
    bad = copy.deepcopy(MINIMAL)
    bad["columns"]["pid"]["pseudonymize"]["method"] = method
    with pytest.raises(SpecError, match="enumeration"):
        load_spec(write_spec(tmp_path, bad))


def test_invalid_yaml_names_the_line(tmp_path):
    path = write_spec(tmp_path, "release: x\ncolumns: [a\n")
    with pytest.raises(SpecError, match=r"line \d+"):
        load_spec(path)


def test_missing_table_hierarchy_file_is_reported(tmp_path):
    bad = copy.deepcopy(MINIMAL)
    bad["columns"]["zip"]["hierarchy"] = {"type": "table", "path": "hierarchies/none.csv"}
    with pytest.raises(SpecError, match="none.csv"):
        load_spec(write_spec(tmp_path, bad))


def test_check_data_reports_undeclared_missing_and_uncovered(tmp_path):
    spec = load_spec(write_spec(tmp_path, MINIMAL))
    df = pd.DataFrame({
        "pid": ["a"], "name": ["n"], "age": ["forty"], "zip": ["28014"], "region": ["r"],
        "diag": ["x"], "extra": [1],
    })
    with pytest.raises(SpecError) as info:
        check_data(spec, df, source="batch.csv")
    text = str(info.value)
    assert "'extra'" in text and "not declared" in text
    assert "'los'" in text and "missing from the data" in text
    assert "'forty'" in text
    assert all(p.file == "batch.csv" for p in info.value.problems)


def test_spec_hash_changes_with_content(tmp_path):
    a = load_spec(write_spec(tmp_path, MINIMAL, "a.yaml"))
    changed = copy.deepcopy(MINIMAL)
    changed["anonymization"]["k"] = 10
    changed["policy"]["thresholds"]["k"] = 10
    b = load_spec(write_spec(tmp_path, changed, "b.yaml"))
    again = load_spec(write_spec(tmp_path, MINIMAL, "c.yaml"))
    assert a.spec_hash() != b.spec_hash()
    assert a.spec_hash() == again.spec_hash()


def test_load_specs_rejects_duplicate_release_names(tmp_path):
    write_spec(tmp_path, MINIMAL, "a.yaml")
    write_spec(tmp_path, MINIMAL, "b.yaml")
    with pytest.raises(SpecError, match="also used by"):
        load_specs(tmp_path)


def test_k_below_policy_threshold_is_rejected(tmp_path):
    bad = copy.deepcopy(MINIMAL)
    bad["anonymization"]["k"] = 3
    with pytest.raises(SpecError, match="could never pass"):
        load_spec(write_spec(tmp_path, bad))


def test_validate_cli_exit_code_and_one_line(tmp_path, capsys):
    from anon_dagster.cli import main

    bad = copy.deepcopy(MINIMAL)
    bad["columns"]["pid"]["pseudonymize"]["method"] = "md5"
    path = write_spec(tmp_path, bad)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    good = write_spec(tmp_path, MINIMAL, "good.yaml")
    assert main(["validate", str(good)]) == 0
    assert "valid" in capsys.readouterr().out


def test_the_contract_example_in_flow_style_loads(tmp_path):
    (tmp_path / "hierarchies").mkdir()
    (tmp_path / "hierarchies" / "profession.csv").write_text("Nurse;Health;*\n")
    text = textwrap.dedent("""
        release: hospital_discharges
        source: {path: ../data/discharges.csv, separator: ","}
        partitions: {cadence: yearly, start: "2024-01-01", column: admission_date}
        columns:
          patient_id:     {role: identifier, pseudonymize: {method: hmac, purpose: research}}
          full_name:      {role: identifier}
          age:            {role: quasi, hierarchy: {type: interval, widths: [5, 10, 20]}}
          sex:            {role: quasi}
          postal_code:    {role: quasi, hierarchy: {type: mask, keep: [4, 3, 2]}}
          province:       {role: quasi, partition_key: true}
          profession:     {role: quasi, hierarchy: {type: table, path: hierarchies/profession.csv}}
          admission_date: {role: quasi, hierarchy: {type: date, levels: [month, quarter, year]}}
          diagnosis:      {role: sensitive}
          length_of_stay: {role: insensitive}
        anonymization: {method: global, k: 5, max_suppression: 0.05, utility: entropy}
        policy:
          adversary: prosecutor
          population: {path: ../data/population.parquet}
          sampling_fraction: 1.0
          thresholds: {k: 5, prosecutor_avg: 0.05, prosecutor_max: 0.2, l_entropy: 2, t_closeness: 0.3}
          severity: high
          review_after_days: 180
        utility_queries:
          - {name: prevalence_by_province, group_by: [province], target: diagnosis, max_error_points: 1.0}
        composition: {population: patients, person: patient_id, min_k: 5}
        publication: {path: ../published/{release}/{partition}.parquet}
    """)
    spec = load_spec(write_spec(tmp_path, text))
    assert spec.hierarchies["age"].n_levels == 5
    assert spec.policy.thresholds.l_entropy == 2


def test_a_column_declared_twice_is_refused_naming_it(tmp_path):
    text = yaml.safe_dump(MINIMAL, sort_keys=False).replace(
        "  los:\n", "  age:\n    role: sensitive\n  los:\n"
    )
    with pytest.raises(SpecError, match=r"'age' is given twice"):
        load_spec(write_spec(tmp_path, text))


# ----- booleans are not numbers; every spelling of an unkeyed hash gets the reason -------------

@pytest.mark.parametrize("where,value", [
    (("anonymization", "k"), True), (("anonymization", "k"), False),
    (("anonymization", "max_suppression"), True), (("policy", "thresholds", "k"), True),
    (("policy", "thresholds", "l_distinct"), True), (("policy", "thresholds", "prosecutor_avg"), True),
    (("policy", "thresholds", "l_entropy"), False), (("policy", "review_after_days"), True),
    (("composition", "min_k"), True),
])
def test_a_boolean_is_not_a_number(tmp_path, where, value):
    bad = copy.deepcopy(MINIMAL)
    bad["composition"] = {"population": "people", "person": "pid", "min_k": 5}
    node = bad
    for part in where[:-1]:
        node = node.setdefault(part, {})
    node[where[-1]] = value
    with pytest.raises(SpecError) as info:
        load_spec(write_spec(tmp_path, bad))
    problems = {p.key: p.message for p in info.value.problems}
    key = ".".join(where)
    assert key in problems and f"not the boolean {str(value).lower()}" in problems[key]


def test_recursive_cl_refuses_booleans_and_integers_are_numbers(tmp_path):
    bad = copy.deepcopy(MINIMAL)
    bad["policy"]["thresholds"] = {"recursive_cl": {"c": True, "l": 2}}
    with pytest.raises(SpecError, match="recursive_cl"):
        load_spec(write_spec(tmp_path, bad))
    good = copy.deepcopy(MINIMAL)
    good["policy"]["thresholds"] = {"k": 5, "l_entropy": 2, "recursive_cl": {"c": 2, "l": 2}}
    assert load_spec(write_spec(tmp_path, good)).policy.thresholds.l_entropy == 2


@pytest.mark.parametrize("method", ["SHA-256", "sha-256", "Sha256", "sha_256", "SHA256", "sha 256", "SHA3-256",
                                    "sha-512/256", "MD-5", "Blake2b", "sha2"])
def test_every_spelling_of_an_unkeyed_hash_gets_the_reason(tmp_path, method):
    bad = copy.deepcopy(MINIMAL)
    bad["columns"]["pid"]["pseudonymize"]["method"] = method
    with pytest.raises(SpecError) as info:
        load_spec(write_spec(tmp_path, bad))
    assert f"{method!r} is refused" in str(info.value) and "enumeration" in str(info.value)


def test_an_unknown_method_is_not_called_a_hash(tmp_path):
    bad = copy.deepcopy(MINIMAL)
    bad["columns"]["pid"]["pseudonymize"]["method"] = "rot13"
    with pytest.raises(SpecError, match="unknown method 'rot13'"):
        load_spec(write_spec(tmp_path, bad))


# ----- partitions.format and a date hierarchy's format -----------------------------------------

def dated(**partitions) -> dict:
    spec = copy.deepcopy(MINIMAL)
    spec["columns"]["day"] = {"role": "quasi", "hierarchy": {"type": "date", "levels": ["month", "year"]}}
    spec["partitions"] = {"cadence": "monthly", "start": "2024-01-01", "column": "day", **partitions}
    return spec


def test_partitions_format_is_checked(tmp_path):
    assert load_spec(write_spec(tmp_path, dated(format="%d/%m/%Y"))).partitions.format == "%d/%m/%Y"
    with pytest.raises(SpecError, match=r"partitions.format: format '%Y' has no month"):
        load_spec(write_spec(tmp_path, dated(format="%Y")))
    with pytest.raises(SpecError, match=r"partitions.format: format 'mixed' has no year"):
        load_spec(write_spec(tmp_path, dated(format="mixed")))


def test_the_partition_columns_hierarchy_reads_with_partitions_format(tmp_path):
    spec = load_spec(write_spec(tmp_path, dated(format="%m/%d/%Y")))
    assert spec.hierarchies["day"].generalize(pd.Series(["05/01/2024"]), 1).tolist() == ["2024-05"]
    clash = dated(format="%m/%d/%Y")
    clash["columns"]["day"]["hierarchy"]["format"] = "%d/%m/%Y"
    with pytest.raises(SpecError, match="one column has one date format"):
        load_spec(write_spec(tmp_path, clash))


def test_check_data_names_the_row_of_a_bad_date(tmp_path):
    spec = load_spec(write_spec(tmp_path, dated()))
    df = pd.DataFrame({"pid": ["a", "b"], "name": ["n", "m"], "age": [30, 31], "zip": ["28014", "28015"],
                       "region": ["r", "r"], "diag": ["x", "y"], "los": [1, 2], "day": ["2024-01-05", "24-01-06"]})
    with pytest.raises(SpecError, match=r"columns.day.hierarchy: .*column 'day', row 2: value '24-01-06'"):
        check_data(spec, df, source="batch.csv")


@pytest.mark.parametrize("value", [float("inf"), float("-inf")])
def test_an_infinite_value_under_an_interval_hierarchy_is_named(tmp_path, value):
    spec = load_spec(write_spec(tmp_path, MINIMAL))
    df = pd.DataFrame({"pid": ["a", "b"], "name": ["n", "m"], "age": [30.0, value], "zip": ["28014", "28015"],
                       "region": ["r", "r"], "diag": ["x", "y"], "los": [1, 2]})
    with pytest.raises(SpecError) as info:
        check_data(spec, df, source="batch.csv")
    text = str(info.value)
    assert "columns.age.hierarchy" in text and "finite numbers" in text and repr(value) in text
