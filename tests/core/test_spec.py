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
