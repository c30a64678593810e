"""``anon-dagster risk``: both forms, JSON contract keys, one-line errors with exit code 2."""

from __future__ import annotations

import json
import textwrap

import pandas as pd
import pytest

from anon_dagster.cli import main
from anon_dagster.risk import CONTRACT_KEYS


@pytest.fixture
def table(tmp_path):
    df = pd.DataFrame({
        "age": [30, 30, 40, 40, 50],
        "sex": ["F", "F", "M", "M", "F"],
        "diag": ["flu", "none", "HIV", "none", "none"],
        "n": [1, 2, 3, 4, 5],
    })
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    return path


def run(capsys, *argv):
    code = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_has_contract_keys(capsys, table):
    code, out, err = run(capsys, "risk", table, "--qi", "age,sex", "--sensitive", "diag", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert list(d)[:12] == list(CONTRACT_KEYS)
    assert d["rows"] == 5 and d["classes"] == 3 and d["k"] == 1
    assert d["uniques_fraction"] == pytest.approx(0.2)
    assert d["prosecutor_avg"] == pytest.approx(0.6)
    assert d["l_distinct"] == 1 and d["journalist_max"] is None


def test_population_and_readable_output(capsys, table, tmp_path):
    pop = pd.DataFrame({"age": [30, 40, 50, 60], "sex": ["F", "M", "F", "F"], "count": [10, 4, 2, 99]})
    pop_path = tmp_path / "pop.parquet"
    pop.to_parquet(pop_path)
    code, out, err = run(capsys, "risk", table, "--qi", "age,sex", "--population", pop_path,
                         "--count-column", "count", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["journalist_max"] == pytest.approx(0.5)
    assert d["marketer"] == pytest.approx((2 / 10 + 2 / 4 + 1 / 2) / 5)
    code, out, err = run(capsys, "risk", table, "--qi", "age,sex")
    assert code == 0 and "k (smallest class)" in out and "share of unique rows" in out


@pytest.mark.parametrize("argv, message", [
    (["--qi", "age,nope"], "'nope'"),
    (["--qi", ""], "--qi is empty"),
    (["--qi", "age", "--sensitive", "age"], "both as quasi-identifier and as sensitive"),
    (["--qi", "age", "--sampling-fraction", "0"], "outside (0, 1]"),
    (["--qi", "age", "--sampling-fraction", "1.01"], "outside (0, 1]"),
    (["--qi", "age", "--sampling-fraction", "abc"], "not a number"),
    (["--qi", "age", "--count-column", "n"], "--count-column needs --population"),
])
def test_bad_input_one_line_exit_2(capsys, table, argv, message):
    code, out, err = run(capsys, "risk", table, *argv)
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert out == ""


def test_unreadable_missing_and_empty_files(capsys, tmp_path, table):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    empty = tmp_path / "empty.csv"
    empty.write_text("age,sex\n")
    for path, message in ((bad, "cannot read"), (tmp_path / "none.csv", "no such file"), (empty, "empty")):
        code, _, err = run(capsys, "risk", path, "--qi", "age")
        assert code == 2 and message in err and err.count("\n") == 1


def test_population_lacking_a_class(capsys, table, tmp_path):
    pop_path = tmp_path / "pop.csv"
    pd.DataFrame({"age": [30, 40], "sex": ["F", "M"]}).to_csv(pop_path, index=False)
    code, _, err = run(capsys, "risk", table, "--qi", "age,sex", "--population", pop_path)
    assert code == 2
    assert "no one in the sample class (age=50, sex='F')" in err and err.count("\n") == 1


def write_spec(tmp_path, extra_policy=""):
    (tmp_path / "data").mkdir(exist_ok=True)
    spec = tmp_path / "spec" / "release.yaml"
    spec.parent.mkdir()
    spec.write_text(textwrap.dedent(f"""
        release: r
        source: {{path: ../data/source.csv}}
        columns:
          pid:  {{role: identifier}}
          age:  {{role: quasi, hierarchy: {{type: interval, widths: [10]}}}}
          sex:  {{role: quasi}}
          diag: {{role: sensitive, kind: ordinal, order: [low, mid, high]}}
        anonymization: {{method: none}}
        policy:
          population: {{path: ../data/pop.csv, count_column: n}}
          thresholds: {{k: 2, journalist_max: 0.4}}
          {extra_policy}
        publication: {{path: ../out/{{release}}.parquet}}
    """))
    return spec


def test_config_form_takes_everything_from_the_spec(capsys, tmp_path):
    spec = write_spec(tmp_path)
    pd.DataFrame({"pid": ["a", "b", "c", "d"], "age": [30, 30, 41, 41], "sex": ["F", "F", "M", "M"],
                  "diag": ["low", "high", "mid", "mid"]}).to_csv(tmp_path / "data" / "source.csv", index=False)
    pd.DataFrame({"age": [30, 41], "sex": ["F", "M"], "n": [8, 2]}).to_csv(tmp_path / "data" / "pop.csv", index=False)
    code, out, err = run(capsys, "risk", "--config", spec, "--json")
    assert code == 1, err  # journalist_max fails below
    d = json.loads(out)
    assert d["quasi_identifiers"] == ["age", "sex"] and d["sensitive"] == ["diag"]
    assert d["k"] == 2 and d["journalist_max"] == pytest.approx(0.5)
    # ordinal order from the spec: P = (1/4, 1/2, 1/4); class (30, F): Q = (1/2, 0, 1/2)
    assert d["t_closeness_distance"] == "ordered_emd"
    assert d["t_closeness"] == pytest.approx(0.25)
    assert d["sampling_fraction"] == pytest.approx(0.4)  # 4 rows of 10 people
    assert d["policy_thresholds"] == [
        {"threshold": "k", "value": 2, "comparison": ">=", "limit": 2, "passed": True},
        {"threshold": "journalist_max", "value": 0.5, "comparison": "<=", "limit": 0.4, "passed": False},
    ]
    code, out, err = run(capsys, "risk", "--config", spec)
    assert code == 1 and "journalist_max" in out and "FAIL" in out  # a declared threshold fails


def test_config_form_rejects_text_under_an_interval_hierarchy(capsys, tmp_path):
    spec = write_spec(tmp_path)
    pd.DataFrame({"pid": ["a", "b"], "age": [30, "thirty"], "sex": ["F", "F"],
                  "diag": ["low", "low"]}).to_csv(tmp_path / "data" / "source.csv", index=False)
    code, _, err = run(capsys, "risk", "--config", spec)
    assert code == 2 and "'age'" in err and "'thirty'" in err and err.count("\n") == 1


def test_config_form_input_override_and_missing_population(capsys, tmp_path):
    spec = write_spec(tmp_path)
    other = tmp_path / "other.csv"
    pd.DataFrame({"age": [30, 30], "sex": ["F", "F"], "diag": ["low", "mid"]}).to_csv(other, index=False)
    code, _, err = run(capsys, "risk", "--config", spec, "--input", other)
    assert code == 2 and "pop.csv" in err and "no such file" in err
    code, _, err = run(capsys, "risk", "--config", spec, "--qi", "age")
    assert code == 2 and "--qi cannot be combined with --config" in err
