"""The command-line contract on specs and data that are not the repository's.

* the Adult benchmark (``;``-separated, CRLF, ARX hierarchies) as a release spec with global
  recoding: ``anonymize SPEC --output OUT`` writes OUT and ``OUT.transformations.json`` whose
  ``levels`` reproduce OUT exactly, and the output re-measured independently meets k;
* a monthly survey with a csv source holding ``{partition}`` and missing values in QIs and in
  the sensitive column;
* the annotated example spec of docs/contracts.md, verbatim (flow-style ``{path: ../published/...}``);
* a spec with no pseudonymized column runs without any key store;
* bad input: one line on stderr, exit status 2, nothing written.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anon_dagster import measure_risk
from anon_dagster.cli import main
from anon_dagster.pseudonymize import pseudonym_pattern
from anon_dagster.spec import load_spec
from tests.support.docs import contract_example_spec

ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country",
             "workclass", "occupation"]
def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def adult_spec(tmp: Path, adult_dir: Path, *, k: int = 5, max_suppression: float = 0.0,
               extra_policy: str = "") -> Path:
    columns = "\n".join(
        f"  {q}: {{role: quasi, hierarchy: {{type: table, path: {adult_dir / f'adult_hierarchy_{q}.csv'}}}}}"
        for q in ADULT_QIS
    )
    text = f"""release: adult_census
source: {{path: {adult_dir / 'adult.csv'}, separator: ";"}}
columns:
{columns}
  salary-class: {{role: sensitive}}
anonymization: {{method: global, k: {k}, max_suppression: {max_suppression}, utility: loss}}
policy:
  thresholds: {{k: {k}{extra_policy}}}
publication: {{path: out/{{release}}.parquet}}
"""
    path = tmp / "adult.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("max_suppression", [0.0, 0.05])
def test_adult_global_recoding_levels_reproduce_the_output(tmp_path, adult_dir, capsys,
                                                           max_suppression):
    spec_path = adult_spec(tmp_path, adult_dir, max_suppression=max_suppression)
    out = tmp_path / "adult_out.csv"
    code, stdout, err = cli(capsys, "anonymize", spec_path, "--output", out, "--quiet")
    assert code == 0, err
    record = json.loads((tmp_path / "adult_out.csv.transformations.json").read_text())
    assert record["method"] == "global"
    levels = record["levels"]
    assert set(levels) == set(ADULT_QIS)

    source = pd.read_csv(adult_dir / "adult.csv", sep=";")
    assert "salary-class" in source.columns  # CRLF did not leak into the last column's name
    published = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(published.columns) == [*ADULT_QIS, "salary-class"]
    assert record["rows_in"] == len(source) == 30162
    suppressed = record["suppression"]["rows"]
    assert record["rows_out"] == len(published) == len(source) - suppressed
    assert suppressed <= max_suppression * len(source)

    # the declared levels, applied to the source with the spec's hierarchies, give the output:
    # reproduce the published multiset of QI combinations (suppressed rows taken out)
    spec = load_spec(spec_path)
    recoded = pd.DataFrame({
        q: spec.hierarchies[q].generalize(source[q], levels[q]).astype(str).to_numpy()
        for q in ADULT_QIS
    })
    expected = recoded.value_counts()
    got = published[ADULT_QIS].value_counts()
    if suppressed == 0:
        assert got.sort_index().equals(expected.sort_index())
    else:
        # every published class is a recoded class, never larger; the rest was suppressed
        joined = got.to_frame("pub").join(expected.to_frame("rec"), how="left")
        assert joined["rec"].notna().all()
        assert (joined["pub"] <= joined["rec"]).all()
        assert int((joined["rec"] - joined["pub"]).sum()) + int(
            expected[~expected.index.isin(got.index)].sum()) == suppressed
    # the output re-measured independently meets k
    measured = measure_risk(published, ADULT_QIS, sensitive="salary-class").to_dict()
    assert measured["k"] >= 5
    assert measured["rows"] == len(published)
    # minimality on one QI: one level lower on any single QI breaks k without suppression
    if max_suppression == 0.0:
        for q in ADULT_QIS:
            if levels[q] == 0:
                continue
            lower = recoded.copy()
            lower[q] = spec.hierarchies[q].generalize(source[q], levels[q] - 1).astype(str).to_numpy()
            assert lower.value_counts().min() < 5, q


def test_adult_risk_json_keys_and_values(tmp_path, adult_dir, capsys):
    code, stdout, err = cli(capsys, "risk", adult_dir / "adult.csv", "--qi", "sex,age,race",
                            "--sensitive", "salary-class", "--json")
    assert code == 0, err
    out = json.loads(stdout)
    for key in ("rows", "classes", "k", "uniques_fraction", "prosecutor_max", "prosecutor_avg",
                "journalist_max", "journalist_avg", "marketer", "l_distinct", "l_entropy",
                "t_closeness"):
        assert key in out, key
    df = pd.read_csv(adult_dir / "adult.csv", sep=";")
    sizes = df.groupby(["sex", "age", "race"]).size()
    assert out["rows"] == 30162
    assert out["classes"] == len(sizes)
    assert out["k"] == sizes.min()
    assert out["uniques_fraction"] == pytest.approx((sizes == 1).sum() / len(df))
    assert out["prosecutor_avg"] == pytest.approx(len(sizes) / len(df))
    assert out["journalist_max"] is None and out["marketer"] is None


# ----- a monthly survey, csv source with {partition}, missing values --------------------------


def write_survey(tmp: Path, *, utility_query: bool = False) -> Path:
    rng = np.random.default_rng(11)
    (tmp / "raw").mkdir()
    for month in ("2025-01", "2025-02"):
        n = 300
        df = pd.DataFrame({
            "resp_id": [f"R{month}-{i:05d}" for i in range(n)],
            "email": [f"u{i}@example.org" for i in range(n)],
            "interview_date": (pd.Timestamp(f"{month}-01")
                               + pd.to_timedelta(rng.integers(0, 28, n), unit="D")).strftime("%Y-%m-%d"),
            "age": rng.integers(18, 90, n).astype(float),
            "region": rng.choice(["N", "S", "E"], n),
            "zip": rng.choice(["10001", "10002", "10017", "20001", "20002"], n),
            "smoker": rng.choice(["yes", "no", "unknown"], n).astype(object),
            "income": rng.integers(1000, 5000, n),
        })
        df.loc[rng.choice(n, 15, replace=False), "age"] = np.nan
        df.loc[rng.choice(n, 15, replace=False), "smoker"] = None
        df.loc[rng.choice(n, 10, replace=False), "zip"] = None
        df.to_csv(tmp / "raw" / f"survey_{month}.csv", index=False)
    query = ("utility_queries:\n  - {name: smoking_by_region, group_by: [region], target: smoker}\n"
             if utility_query else "")
    spec = tmp / "survey.yaml"
    spec.write_text(f"""release: health_survey
source: {{path: raw/survey_{{partition}}.csv}}
partitions: {{cadence: monthly, start: "2025-01-01", column: interview_date}}
columns:
  resp_id: {{role: identifier}}
  email: {{role: identifier}}
  interview_date: {{role: quasi, hierarchy: {{type: date, levels: [month, year]}}}}
  age: {{role: quasi, hierarchy: {{type: interval, widths: [10, 20, 40]}}}}
  region: {{role: quasi, partition_key: true}}
  zip: {{role: quasi, hierarchy: {{type: mask, keep: [3, 1]}}}}
  smoker: {{role: sensitive}}
  income: {{role: insensitive}}
anonymization: {{method: global, k: 5, max_suppression: 0.05}}
policy:
  thresholds: {{k: 5, l_distinct: 2}}
{query}publication: {{path: published/{{release}}/{{partition}}.parquet}}
""")
    return spec


QIS = ["interview_date", "age", "region", "zip"]


@pytest.mark.parametrize("month", ["2025-01", "2025-02"])
def test_monthly_csv_partition_with_missing_values(tmp_path, capsys, month):
    spec = write_survey(tmp_path)
    out = tmp_path / "out" / f"{month}.parquet"
    code, _, err = cli(capsys, "anonymize", spec, "--partition", month, "--output", out, "--quiet")
    assert code == 0, err
    published = pd.read_parquet(out)
    source = pd.read_csv(tmp_path / "raw" / f"survey_{month}.csv")
    record = json.loads(out.with_name(out.name + ".transformations.json").read_text())
    # identifiers without a method are dropped; nothing undeclared appears
    assert list(published.columns) == ["interview_date", "age", "region", "zip", "smoker", "income"]
    assert record["rows_out"] + record["suppression"]["rows"] == len(source)
    assert len(published) == record["rows_out"]
    # partition key never generalized: the published regions are source values, row for row
    kept = source.loc[source.index.isin(range(len(source)))]
    assert set(published["region"]) <= set(kept["region"])
    assert published["region"].value_counts().le(source["region"].value_counts()).all()
    # every published row belongs to the month
    assert set(published["interview_date"].astype(str)) <= {month, month[:4], "*"} | set(
        source["interview_date"])
    # re-measured: k and l hold, missing values counted as their own value
    measured = measure_risk(published, QIS, sensitive="smoker").to_dict()
    assert measured["k"] >= 5
    assert measured["l_distinct"] >= 2
    # missing sensitive values are published as missing, not dropped or replaced
    assert published["smoker"].isna().sum() > 0


def test_risk_config_with_partition_counts_missing_values(tmp_path, capsys):
    spec = write_survey(tmp_path)
    code, stdout, err = cli(capsys, "risk", "--config", spec, "--partition", "2025-01", "--json")
    out = json.loads(stdout)
    # the raw partition is measured against the declared thresholds: exit 1 when one fails
    assert code == (0 if all(v["passed"] for v in out["policy_thresholds"]) else 1), err
    source = pd.read_csv(tmp_path / "raw" / "survey_2025-01.csv")
    assert out["rows"] == len(source)
    sizes = source[QIS].astype(object).fillna("<NA>").value_counts()
    assert out["classes"] == len(sizes)
    assert out["k"] == sizes.min()


def test_utility_query_on_a_target_with_missing_values(tmp_path, capsys):
    spec = write_survey(tmp_path, utility_query=True)
    out = tmp_path / "q.parquet"
    code, _, err = cli(capsys, "anonymize", spec, "--partition", "2025-01", "--output", out, "--quiet")
    assert code == 0, err
    record = json.loads(out.with_name(out.name + ".transformations.json").read_text())
    assert record["utility"]["queries"]["smoking_by_region"] >= 0


# ----- the example spec of docs/contracts.md, verbatim ---------------------------------------

PROFESSIONS = {"nurse": "health", "doctor": "health", "teacher": "education",
               "professor": "education", "clerk": "office", "manager": "office"}


def write_contract_release(tmp: Path, provinces=("28", "18", "41"), n_pop: int = 20000,
                           n: int = 3000) -> Path:
    """The contract's example spec verbatim, with data of our own (population microdata, a 15 % sample)."""
    cfg, data = tmp / "cfg", tmp / "data"
    (cfg / "hierarchies").mkdir(parents=True)
    data.mkdir()
    (cfg / "hierarchies" / "profession.csv").write_text(
        "".join(f"{p};{g};*\n" for p, g in PROFESSIONS.items()))
    rng = np.random.default_rng(5)
    prov = rng.choice(list(provinces), n_pop, p=[0.5, 0.3, 0.2])
    pop = pd.DataFrame({
        "age": rng.integers(0, 100, n_pop),
        "sex": rng.choice(["F", "M"], n_pop),
        "postal_code": [p + f"{x:03d}" for p, x in zip(prov, rng.integers(0, 20, n_pop), strict=True)],
        "province": prov,
        "profession": rng.choice(list(PROFESSIONS), n_pop),
        "admission_date": (pd.Timestamp("2024-01-01")
                           + pd.to_timedelta(rng.integers(0, 730, n_pop), unit="D")).strftime("%Y-%m-%d"),
    })
    pop.to_parquet(data / "population.parquet")
    idx = rng.choice(n_pop, n, replace=False)
    sample = pop.iloc[idx].reset_index(drop=True)
    sample.insert(0, "patient_id", [f"P{i:07d}" for i in idx])
    sample.insert(1, "full_name", [f"Name {i}" for i in idx])
    sample["diagnosis"] = rng.choice(["A00", "B20", "C50", "E11", "I10", "J45"], n)
    sample["length_of_stay"] = rng.integers(1, 30, n)
    sample.to_csv(data / "discharges.csv", index=False)
    spec = cfg / "release.yaml"
    spec.write_text(contract_example_spec())
    return spec


def test_contract_example_verbatim_validates_and_resolves(tmp_path, capsys):
    spec_path = write_contract_release(tmp_path)
    code, stdout, err = cli(capsys, "validate", spec_path)
    assert code == 0, err
    spec = load_spec(spec_path)
    assert spec.publication.path == "../published/{release}/{partition}.parquet"
    assert spec.resolve(spec.publication.path, partition="2024") == (
        tmp_path / "published" / "hospital_discharges" / "2024.parquet").resolve()
    assert spec.partition_keys == ["province"]
    assert "province" not in spec.generalized_qis
    assert spec.published_columns == ["patient_id", "age", "sex", "postal_code", "province",
                                      "profession", "admission_date", "diagnosis", "length_of_stay"]


def test_contract_example_verbatim_anonymize_partition(tmp_path, capsys, master_key):
    spec_path = write_contract_release(tmp_path)
    out = tmp_path / "out" / "2024.parquet"
    code, _, err = cli(capsys, "anonymize", spec_path, "--partition", "2024", "--output", out, "--quiet")
    assert code == 0, err
    published = pd.read_parquet(out)
    source = pd.read_csv(tmp_path / "data" / "discharges.csv", dtype={"postal_code": str, "province": str})
    in_2024 = source[source["admission_date"].str.startswith("2024")]
    record = json.loads(out.with_name(out.name + ".transformations.json").read_text())
    assert record["rows_in"] == len(in_2024)
    assert record["rows_out"] == len(published) == len(in_2024) - record["suppression"]["rows"]
    assert record["suppression"]["rows"] <= 0.05 * len(in_2024)
    assert set(record["levels"]) == {"age", "sex", "postal_code", "profession", "admission_date"}
    assert list(published.columns) == ["patient_id", "age", "sex", "postal_code", "province",
                                       "profession", "admission_date", "diagnosis", "length_of_stay"]
    assert "full_name" not in published.columns
    pattern = re.compile(pseudonym_pattern("hmac"))
    assert published["patient_id"].map(lambda v: bool(pattern.match(v))).all()
    assert not set(published["patient_id"]) & set(source["patient_id"])
    assert published["patient_id"].is_unique
    # no key material anywhere in what was written
    key = base64.b64decode(master_key)
    for path in (out, out.with_name(out.name + ".transformations.json")):
        blob = path.read_bytes()
        for form in (key, key.hex().encode(), base64.b64encode(key)):
            assert form not in blob
    # re-measured independently: k holds over every QI, partition key included
    qis = ["age", "sex", "postal_code", "province", "profession", "admission_date"]
    measured = measure_risk(published, qis, sensitive="diagnosis").to_dict()
    assert measured["k"] >= 5
    # the partition key is unchanged: per-province counts are the source's minus suppressed rows
    pub_counts = published["province"].astype(str).value_counts()
    src_counts = in_2024["province"].value_counts()
    assert (pub_counts <= src_counts.reindex(pub_counts.index)).all()


def test_contract_example_csv_codes_with_leading_zeros_survive(tmp_path, capsys, master_key):
    spec_path = write_contract_release(tmp_path, provinces=("28", "08", "41"))
    out = tmp_path / "out" / "2024.parquet"
    code, _, err = cli(capsys, "anonymize", spec_path, "--partition", "2024", "--output", out, "--quiet")
    assert code == 0, err
    published = pd.read_parquet(out)
    assert set(published["province"].astype(str)) == {"28", "08", "41"}
    assert all(v == "*" * 5 or v[:2] in {"28", "08", "41"} for v in published["postal_code"].astype(str))


def test_contract_example_pseudonymizing_needs_a_key_store(tmp_path, capsys):
    spec_path = write_contract_release(tmp_path)
    out = tmp_path / "out" / "2024.parquet"
    code, stdout, err = cli(capsys, "anonymize", spec_path, "--partition", "2024", "--output", out)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "ANON_DAGSTER_KEYSTORE" in err
    assert not out.exists()
    assert not out.with_name(out.name + ".transformations.json").exists()


def test_spec_without_pseudonymized_column_needs_no_key_store(tmp_path, capsys, monkeypatch):
    # a key store path that cannot exist: opening it would fail the run
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE", str(tmp_path / "missing" / "keys.store"))
    spec = write_survey(tmp_path)
    out = tmp_path / "o.csv"
    code, _, err = cli(capsys, "anonymize", spec, "--partition", "2025-02", "--output", out, "--quiet")
    assert code == 0, err
    assert out.exists()
    assert not (tmp_path / "missing").exists()


# ----- bad input: one line, exit 2, nothing written ------------------------------------------


def small_spec(tmp: Path, name: str, body: str, data: str = "a,b,s\n1,x,p\n2,y,q\n3,x,q\n") -> Path:
    (tmp / f"{name}.csv").write_text(data)
    path = tmp / f"{name}.yaml"
    path.write_text(f"release: {name}\nsource: {{path: {name}.csv}}\n{body}"
                    "publication: {path: out.parquet}\n")
    return path


BAD_SPECS = {
    # name: (columns + anonymization + policy, data or None, words the message must hold)
    "nonnumeric": ("columns:\n  a: {role: quasi, hierarchy: {type: interval, widths: [10]}}\n"
                   "  b: {role: quasi}\n  s: {role: sensitive}\nanonymization: {k: 1}\n",
                   "a,b,s\n1,x,p\nabc,y,q\n", ["'a'", "abc"]),
    "uncovered": ("columns:\n  a: {role: quasi, hierarchy: {type: table, path: h_uncovered.csv}}\n"
                  "  b: {role: quasi}\n  s: {role: sensitive}\nanonymization: {k: 1}\n",
                  None, ["'3'", "a"]),
    "nonmonotone": ("columns:\n  a: {role: quasi, hierarchy: {type: table, path: h_nonmonotone.csv}}\n"
                    "  b: {role: quasi}\n  s: {role: sensitive}\nanonymization: {k: 1}\n",
                    None, ["coarsen", "'A'"]),
    "k_too_large": ("columns:\n  a: {role: quasi}\n  b: {role: quasi}\n  s: {role: sensitive}\n"
                    "anonymization: {k: 10}\n", None, ["k=10", "3 rows"]),
    "no_solution": ("columns:\n  a: {role: quasi}\n  b: {role: quasi}\n  s: {role: sensitive}\n"
                    "anonymization: {method: global, k: 1, max_suppression: 0}\n"
                    "policy: {thresholds: {k: 1, l_distinct: 3}}\n", None, ["l_distinct"]),
    "undeclared": ("columns:\n  a: {role: quasi}\n  s: {role: sensitive}\nanonymization: {k: 1}\n",
                   None, ["'b'", "not declared"]),
    "sha256": ("columns:\n  a: {role: identifier, pseudonymize: {method: sha256}}\n  b: {role: quasi}\n"
               "  s: {role: sensitive}\n", None, ["sha256", "enumeration"]),
    "unknown_key": ("columns:\n  a: {role: quasi, hierachy: {type: mask, keep: [1]}}\n  b: {role: quasi}\n"
                    "  s: {role: sensitive}\n", None, ["hierachy"]),
    "partition_too_small": ("columns:\n  a: {role: quasi}\n  b: {role: quasi, partition_key: true}\n"
                            "  s: {role: sensitive}\n"
                            "anonymization: {method: mondrian, k: 2, max_suppression: 0}\n",
                            "a,b,s\n1,x,p\n2,x,q\n3,y,q\n", ["k=2"]),
}


@pytest.mark.parametrize("name", sorted(BAD_SPECS))
def test_bad_spec_or_data_is_one_line_exit_2_nothing_written(tmp_path, capsys, name):
    body, data, words = BAD_SPECS[name]
    (tmp_path / "h_uncovered.csv").write_text("1;A;*\n2;B;*\n")
    (tmp_path / "h_nonmonotone.csv").write_text("1;A;X;*\n2;A;Y;*\n3;B;Y;*\n")
    spec = small_spec(tmp_path, name, body, data) if data else small_spec(tmp_path, name, body)
    out = tmp_path / "result.parquet"
    code, stdout, err = cli(capsys, "anonymize", spec, "--output", out, "--quiet")
    assert code == 2, (stdout, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not out.exists()
    assert not out.with_name(out.name + ".transformations.json").exists()


RISK_BAD = [
    (["--qi", "a,zz"], ["'zz'"]),
    (["--qi", ""], ["--qi"]),
    (["--qi", "a,b", "--sensitive", "a"], ["'a'"]),
    (["--qi", "a", "--sampling-fraction", "0"], ["(0, 1]"]),
    (["--qi", "a", "--sampling-fraction", "1.5"], ["(0, 1]"]),
    (["--qi", "a", "--sampling-fraction", "nan"], ["nan"]),
    (["--qi", "a,b", "--population", "POP", "--count-column", "n"], ["population"]),
]


@pytest.mark.parametrize("args,words", RISK_BAD)
def test_risk_bad_options_one_line_exit_2(tmp_path, capsys, args, words):
    data = tmp_path / "t.csv"
    data.write_text("a,b,s\n1,x,p\n2,y,q\n")
    (tmp_path / "pop.csv").write_text("a,b,n\n1,x,3\n")
    args = [str(tmp_path / "pop.csv") if a == "POP" else a for a in args]
    code, stdout, err = cli(capsys, "risk", data, *args)
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1
    for word in words:
        assert word in err


@pytest.mark.parametrize("content,name,word", [
    ("a,b\n", "empty.csv", "empty"),
    ("\x00\x01garbage", "bad.parquet", "bad.parquet"),
    (None, "missing.csv", "missing.csv"),
])
def test_risk_unreadable_or_empty_table(tmp_path, capsys, content, name, word):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content.encode())
    code, stdout, err = cli(capsys, "risk", path, "--qi", "a")
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and word in err


def test_existing_output_is_not_overwritten_on_failure(tmp_path, capsys):
    spec = small_spec(tmp_path, "keep", "columns:\n  a: {role: quasi}\n  b: {role: quasi}\n"
                      "  s: {role: sensitive}\nanonymization: {k: 10}\n")
    out = tmp_path / "previous.csv"
    out.write_text("earlier,publication\n1,2\n")
    code, _, _ = cli(capsys, "anonymize", spec, "--output", out, "--quiet")
    assert code == 2
    assert out.read_text() == "earlier,publication\n1,2\n"


def test_the_installed_command_exits_2_without_traceback(tmp_path):
    """Through a real process: exit status and stderr as a shell user sees them."""
    spec = small_spec(tmp_path, "proc", "columns:\n  a: {role: quasi}\n  s: {role: sensitive}\n")
    proc = subprocess.run([sys.executable, "-m", "anon_dagster.cli", "anonymize", str(spec),
                           "--output", str(tmp_path / "o.csv")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "'b'" in proc.stderr


# ----- regressions: a key given twice, numeric QIs with missing values under Mondrian -----------


def test_a_column_declared_twice_is_refused(tmp_path, capsys):
    spec = small_spec(tmp_path, "twice", "columns:\n  a: {role: quasi}\n  a: {role: sensitive}\n"
                      "  b: {role: quasi}\n  s: {role: sensitive}\n")
    code, _, err = cli(capsys, "validate", spec)
    assert code == 2 and "'a'" in err


def test_mondrian_numeric_qi_with_a_missing_value_is_published_as_intervals():
    from anon_dagster.anonymize import anonymize
    from anon_dagster.spec import spec_from_dict

    spec = spec_from_dict({
        "release": "m", "source": {"path": "x.csv"},
        "columns": {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10, 20]}},
                    "s": {"role": "sensitive"}},
        "anonymization": {"method": "mondrian", "k": 3}, "publication": {"path": "o.parquet"},
    })
    rng = np.random.default_rng(0)
    age = rng.integers(20, 80, 60).astype(float)
    age[:4] = np.nan
    published = anonymize(pd.DataFrame({"age": age, "s": rng.choice(["a", "b"], 60)}), spec).data
    labels = set(published["age"].dropna().astype(str)) - {"<missing>"}
    assert all(re.fullmatch(r"\d+(-\d+)?", label) for label in labels), sorted(labels)
