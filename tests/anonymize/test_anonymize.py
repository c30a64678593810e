"""anonymize(df, spec): the demo must-shows, global recoding, the record, bad input, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from anon_dagster.anonymize import NoSolution, anonymize, apply_levels, table_hash
from anon_dagster.cli import main
from anon_dagster.errors import DataError, HierarchyError, SpecError
from anon_dagster.hierarchies import IntervalHierarchy, MaskHierarchy, TableHierarchy
from anon_dagster.spec import spec_from_dict
from tests.support.specs import release_spec

REPO = Path(__file__).resolve().parents[2]
DEMO_SPEC = REPO / "assets_config" / "hospital_discharges.yaml"


def make_spec(columns: dict, base: Path | None = None, **anonymization):
    thresholds = anonymization.pop("thresholds", {})
    queries = anonymization.pop("utility_queries", [])
    return release_spec(columns, anonymization={"method": "global", "k": 2, **anonymization},
                        thresholds=thresholds, utility_queries=queries, source="data.csv",
                        publication="out/{partition}.parquet", base=base or REPO)


# ----- demo data: partition keys keep the province query exact ----------------------------------


@pytest.fixture(scope="module")
def demo():
    from anon_dagster.demo import generate_frames

    _, discharges = generate_frames(population=40_000, discharges=4_000, seed=3)
    return discharges.drop(columns=["patient_id", "national_id", "full_name"])


def demo_spec(method: str, province_is_key: bool, **anonymization):
    raw = yaml.safe_load(DEMO_SPEC.read_text())
    for col in ("patient_id", "national_id", "full_name"):
        raw["columns"].pop(col)
    raw["anonymization"].update({"method": method, "k": 5, "max_suppression": 0.0, **anonymization})
    raw["policy"]["thresholds"] = {"k": 5}
    if not province_is_key:
        raw["columns"]["province"] = {"role": "quasi"}
    raw.pop("composition", None)
    return spec_from_dict(raw, DEMO_SPEC)


def _province_error(result) -> float:
    return result.record.utility.queries["prevalence_by_province"]


def _min_class(data: pd.DataFrame, qis: list[str]) -> int:
    return int(data.groupby(qis, observed=True, dropna=False).size().min())


def test_demo_mondrian_with_province_as_partition_key_is_exact(demo):
    spec = demo_spec("mondrian", province_is_key=True)
    result = anonymize(demo, spec)
    assert result.suppressed == 0 and len(result.data) == len(demo)
    assert _min_class(result.data, spec.quasi_identifiers) >= 5
    assert result.record.classes.k >= 5
    assert _province_error(result) == 0.0
    # the province column itself is published unchanged, row for row
    assert result.data["province"].equals(demo["province"])


def test_demo_mondrian_with_province_as_dimension_destroys_the_query(demo):
    spec = demo_spec("mondrian", province_is_key=False)
    result = anonymize(demo, spec)
    assert _min_class(result.data, spec.quasi_identifiers) >= 5
    assert _province_error(result) > 3.0  # percentage points: the query is no longer answerable


def test_demo_global_with_partition_key_never_generalizes_it(demo):
    spec = demo_spec("global", province_is_key=True, max_suppression=0.05)
    result = anonymize(demo, spec)
    assert "province" not in result.record.levels
    kept = result.data.index
    assert result.data["province"].equals(demo.loc[kept, "province"])
    assert _min_class(result.data, spec.quasi_identifiers) >= 5
    assert result.suppressed <= int(0.05 * len(demo))
    assert result.suppressed + len(result.data) == len(demo)


# ----- global recoding on small hand-computed tables ----------------------------------------


def test_apply_levels_hand_computed():
    df = pd.DataFrame({"age": [21, 27, 34, 35], "zip": ["28014", "28015", "28100", "29001"], "x": [1, 2, 3, 4]},
                      index=[10, 11, 12, 13])
    h = {"age": IntervalHierarchy("age", [5, 10]), "zip": MaskHierarchy("zip", [3])}
    out = apply_levels(df, h, {"age": 1, "zip": 1})
    assert out["age"].astype(str).tolist() == ["20-24", "25-29", "30-34", "35-39"]
    assert out["zip"].astype(str).tolist() == ["280**", "280**", "281**", "290**"]
    assert out["x"].tolist() == [1, 2, 3, 4] and list(out.index) == [10, 11, 12, 13]
    out = apply_levels(df, h, {"age": 2, "zip": 0})
    assert out["age"].astype(str).tolist() == ["20-29", "20-29", "30-39", "30-39"]
    assert out["zip"].tolist() == df["zip"].tolist()
    assert apply_levels(df, h, {"age": 3})["age"].astype(str).tolist() == ["*"] * 4


def test_global_suppresses_only_failing_classes_within_budget():
    # ages: four in 20-24, one lone 90 -> at level 1 the 90 is a class of one
    df = pd.DataFrame({"age": [20, 21, 22, 23, 90], "d": list("abcde")})
    cols = {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5]}},
            "d": {"role": "insensitive"}}
    spec = make_spec(cols, k=2, max_suppression=0.2, utility="loss")
    r = anonymize(df, spec)
    assert r.record.levels == {"age": 1}
    assert r.suppressed == 1 and list(r.data.index) == [0, 1, 2, 3]
    assert r.data["age"].astype(str).tolist() == ["20-24"] * 4
    assert r.record.suppression.rows == 1 and r.record.suppression.share == pytest.approx(0.2)
    # without budget the age must go to '*' (level 2)
    r = anonymize(df, make_spec(cols, k=2, max_suppression=0.0, utility="loss"))
    assert r.record.levels == {"age": 2} and r.suppressed == 0


def test_record_hashes_levels_and_breakdowns():
    df = pd.DataFrame({"age": [20, 21, 22, 23, 90, 91], "region": ["N", "N", "N", "N", "S", "S"],
                       "y": ["a", "b", "a", "b", "a", "a"]})
    cols = {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5]}},
            "region": {"role": "quasi", "partition_key": True}, "y": {"role": "sensitive"}}
    q = [{"name": "y_by_region", "group_by": ["region"], "target": "y"}]
    spec = make_spec(cols, k=2, max_suppression=0.5, utility="loss", utility_queries=q,
                     thresholds={"l_distinct": 2})
    r = anonymize(df, spec)
    rec = r.record
    assert rec.method == "global" and rec.levels == {"age": 1}
    # region S (90, 91) has a single y value: suppressed (l-distinct 2), 2 of 6 rows
    assert r.suppressed == 2
    assert rec.suppression.by_partition_key == [{"region": "S", "suppressed": 2, "rows": 2, "share": 1.0}]
    assert rec.suppression.by_query["y_by_region"][0]["region"] == "S"
    assert rec.input_hash == table_hash(df) and rec.output_hash == table_hash(r.data)
    assert rec.input_hash != rec.output_hash
    assert rec.search["nodes_checked"] >= 1
    # the region S prevalence is lost entirely: estimated 0 for 'a' (100 % in the input)
    assert rec.utility.queries["y_by_region"] == pytest.approx(100.0)
    json.dumps(rec.to_json())  # JSON-serializable
    # the same content hashes the same whatever its dtypes' flavour
    assert table_hash(df.astype({"region": "category"})) == table_hash(df)


# ----- bad input ------------------------------------------------------------------------------


def _profession_spec(tmp_path: Path, **anon):
    (tmp_path / "prof.csv").write_text("nurse;health;*\ndoctor;health;*\nclerk;office;*\n")
    cols = {"job": {"role": "quasi", "hierarchy": {"type": "table", "path": "prof.csv"}},
            "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10]}}}
    return make_spec(cols, base=tmp_path, **anon)


@pytest.mark.parametrize("method", ["global", "mondrian", "microaggregation"])
def test_value_not_covered_by_hierarchy_names_value_and_column(tmp_path, method):
    spec = _profession_spec(tmp_path, method=method)
    df = pd.DataFrame({"job": ["nurse", "pilot", "clerk", "doctor"], "age": [30, 31, 32, 33]})
    with pytest.raises(HierarchyError, match=r"'job'.*'pilot'"):
        anonymize(df, spec)


def test_non_monotone_hierarchy_is_refused(tmp_path):
    # 'nurse' and 'doctor' share 'health' at level 1 but split at level 2
    (tmp_path / "bad.csv").write_text("nurse;health;A;*\ndoctor;health;B;*\n")
    cols = {"job": {"role": "quasi", "hierarchy": {"type": "table", "path": "bad.csv"}}}
    with pytest.raises(SpecError, match="does not coarsen"):
        make_spec(cols, base=tmp_path)
    from anon_dagster.anonymize.coding import code_qi

    h = TableHierarchy("job", {"nurse": ["health", "A", "*"], "doctor": ["health", "B", "*"]}, 4)
    with pytest.raises(HierarchyError, match="coarsen"):
        code_qi(pd.Series(["nurse", "doctor"], name="job"), h)


def test_k_larger_than_table(tmp_path):
    spec = _profession_spec(tmp_path, k=10)
    df = pd.DataFrame({"job": ["nurse", "clerk", "doctor"], "age": [30, 31, 32]})
    with pytest.raises(DataError, match="k=10 is larger than the table"):
        anonymize(df, spec)


def test_partition_too_small_is_an_error_or_suppressed_within_budget():
    cols = {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10]}},
            "prov": {"role": "quasi", "partition_key": True}}
    df = pd.DataFrame({"age": [20, 25, 30, 35, 40, 45, 50], "prov": ["A"] * 6 + ["B"]})
    for method in ("mondrian", "global"):
        with pytest.raises(NoSolution, match="prov|closest"):
            anonymize(df, make_spec(cols, method=method, k=3, max_suppression=0.0))
        r = anonymize(df, make_spec(cols, method=method, k=3, max_suppression=0.15))
        assert r.suppressed == 1 and (r.data["prov"] == "A").all()
        assert r.record.suppression.by_partition_key[0]["prov"] == "B"
    with pytest.raises(NoSolution, match=r"prov=B \(1 rows\)"):
        anonymize(df, make_spec(cols, method="mondrian", k=3))


def test_no_solution_names_closest_node_and_criterion():
    cols = {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10]}},
            "y": {"role": "sensitive"}}
    df = pd.DataFrame({"age": [20, 25, 30, 35], "y": ["a", "a", "a", "b"]})
    spec = make_spec(cols, k=2, thresholds={"l_distinct": 3})
    with pytest.raises(NoSolution, match=r"closest node \(age=\d\) misses l_distinct") as exc:
        anonymize(df, spec)
    assert exc.value.details["closest"]["missing"]


# ----- the CLI --------------------------------------------------------------------------------


def _write_cli_case(tmp_path: Path, method: str = "global") -> Path:
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({
        "name": [f"person {i}" for i in range(n)],
        "age": rng.integers(18, 90, n),
        "zip": rng.choice(["28014", "28015", "28100", "28101", "29001"], n),
        "region": rng.choice(["N", "S"], n),
        "dx": rng.choice(["a", "b", "c"], n),
    })
    df.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "cli_case",
        "source": {"path": "data.csv"},
        "columns": {
            "name": {"role": "identifier"},
            "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5, 10, 20]}},
            "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [4, 3, 2]}},
            "region": {"role": "quasi", "partition_key": True},
            "dx": {"role": "sensitive"},
        },
        "anonymization": {"method": method, "k": 5, "max_suppression": 0.05, "utility": "loss"},
        "utility_queries": [{"name": "dx_by_region", "group_by": ["region"], "target": "dx"}],
        "publication": {"path": "pub/{partition}.parquet"},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize("method,suffix", [("global", ".csv"), ("mondrian", ".parquet")])
def test_cli_writes_output_and_record(tmp_path, capsys, method, suffix):
    spec = _write_cli_case(tmp_path, method)
    out = tmp_path / "out" / f"anon{suffix}"
    assert main(["anonymize", str(spec), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "k reached" in printed and "suppressed:" in printed and "dx_by_region" in printed
    if method == "global":
        assert "lattice nodes checked" in printed
    record = json.loads((tmp_path / "out" / f"anon{suffix}.transformations.json").read_text())
    if method == "global":
        done = "complete" if record["search"]["frontier_complete"] else "partial"
        assert f"minimal nodes on the frontier, {done})" in printed
    data = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    assert "name" not in data.columns  # an identifier without a method is dropped
    assert len(data) == record["rows_out"] == 300 - record["suppression"]["rows"]
    assert data.groupby(["age", "zip", "region"]).size().min() >= 5
    assert record["utility"]["queries"]["dx_by_region"] == pytest.approx(
        record["utility"]["queries"]["dx_by_region"])
    if method == "global":
        assert set(record["levels"]) == {"age", "zip"}


def test_cli_bad_input_exits_2_and_writes_nothing(tmp_path, capsys):
    spec = _write_cli_case(tmp_path)
    df = pd.read_csv(tmp_path / "data.csv")
    df["age"] = df["age"].astype(object)
    df.loc[3, "age"] = "old"
    df.to_csv(tmp_path / "bad.csv", index=False)
    out = tmp_path / "anon.csv"
    assert main(["anonymize", str(spec), "--input", str(tmp_path / "bad.csv"), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "'age'" in err and "old" in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not (tmp_path / "anon.csv.transformations.json").exists()


def test_cli_refuses_to_overwrite_its_input(tmp_path, capsys):
    spec = _write_cli_case(tmp_path)
    assert main(["anonymize", str(spec), "--output", str(tmp_path / "data.csv")]) == 2
    assert "overwrite" in capsys.readouterr().err


def test_cli_partition_selects_the_time_window(tmp_path):
    df = pd.DataFrame({
        "age": [30, 31, 32, 33, 34, 35, 50, 51],
        "day": ["2024-01-05", "2024-02-01", "2024-03-01", "2024-04-01", "2024-05-01", "2024-06-01",
                "2025-01-01", "2025-02-01"],
    })
    df.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "release": "p", "source": {"path": "data.csv"},
        "partitions": {"cadence": "yearly", "start": "2024-01-01", "column": "day"},
        "columns": {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10]}},
                    "day": {"role": "insensitive"}},
        "anonymization": {"method": "global", "k": 3},
        "publication": {"path": "pub/{partition}.csv"},
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    out = tmp_path / "2024.csv"
    assert main(["anonymize", str(tmp_path / "spec.yaml"), "--output", str(out), "--partition", "2024", "--quiet"]) == 0
    data = pd.read_csv(out)
    assert len(data) == 6 and data["day"].str.startswith("2024").all()
    assert data["age"].tolist() == ["30-39"] * 6


def _pseudonym_case(tmp_path: Path) -> Path:
    spec_path = _write_cli_case(tmp_path)
    raw = yaml.safe_load(spec_path.read_text())
    raw["columns"]["name"] = {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "t"}}
    spec_path.write_text(yaml.safe_dump(raw))
    return spec_path


def test_cli_pseudonymizes_with_the_key_from_the_environment(tmp_path, master_key, capsys):
    key = master_key
    spec = _pseudonym_case(tmp_path)
    out = tmp_path / "anon.csv"
    assert main(["anonymize", str(spec), "--output", str(out)]) == 0
    data = pd.read_csv(out)
    names = pd.read_csv(tmp_path / "data.csv")["name"]
    assert "name" in data.columns and not data["name"].isin(names).any()
    assert data["name"].is_unique  # one pseudonym per person
    text = out.read_text() + (tmp_path / "anon.csv.transformations.json").read_text() + capsys.readouterr().out
    assert key not in text


def test_cli_without_a_key_store_exits_2_and_writes_nothing(tmp_path, monkeypatch, capsys):
    spec = _pseudonym_case(tmp_path)
    out = tmp_path / "anon.csv"
    assert main(["anonymize", str(spec), "--output", str(out)]) == 2
    assert "key store" in capsys.readouterr().err
    assert not out.exists()


def test_query_error_with_missing_target_values_counts_missing_as_a_value():
    from anon_dagster.risk import utility_query_error

    original = pd.DataFrame({"g": ["x", "x", "y", "y"],
                             "t": pd.Series(["a", None, "a", float("nan")], dtype=object)})
    # nothing generalized, nothing suppressed: exact
    assert utility_query_error(original, original, ["g"], "t").max_error_points == 0.0
    # the group column generalized to *: no input group can be answered (each at 0 %), and the
    # published group * is no input group: x holds a 50 % and missing 50 %, * likewise: 50 points
    merged = original.assign(g="*")
    assert utility_query_error(original, merged, ["g"], "t").max_error_points == pytest.approx(50.0)
    # suppress the missing row of group x: x becomes a 100 %, missing 0 %: 50 points
    assert utility_query_error(original, original.iloc[[0, 2, 3]], ["g"], "t").max_error_points == \
        pytest.approx(50.0)
