"""Pieces of the Dagster layer on their own: partitions, the key store resource, verdicts, contract."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anon_dagster.dagster.partitions import partitions_def_for
from anon_dagster.dagster.resources import KeyStoreResource
from anon_dagster.errors import DataError, SecretError
from anon_dagster.partitions import CRONS, partition_window, rows_in_window
from anon_dagster.release import gate as policy
from anon_dagster.release import pipeline
from anon_dagster.spec import spec_from_dict


def make_spec(**overrides) -> object:
    raw = {
        "release": "unit",
        "source": {"path": "data.csv"},
        "partitions": {"cadence": "yearly", "start": "2023-01-01", "end": "2025-01-01", "column": "day"},
        "columns": {
            "pid": {"role": "identifier", "pseudonymize": {"method": "hmac"}},
            "name": {"role": "identifier"},
            "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10, 20]}},
            "region": {"role": "quasi", "partition_key": True},
            "day": {"role": "insensitive"},
            "dx": {"role": "sensitive"},
        },
        "anonymization": {"method": "global", "k": 2, "max_suppression": 0.0},
        "policy": {"thresholds": {"k": 2}},
        "publication": {"path": "out/{partition}.parquet"},
    }
    raw.update(overrides)
    return spec_from_dict(raw)


# ----- partitions ------------------------------------------------------------------------------


@pytest.mark.parametrize("cadence,start,end,keys", [
    ("yearly", "2023-01-01", "2025-01-01", ["2023", "2024"]),
    ("monthly", "2024-11-01", "2025-02-01", ["2024-11", "2024-12", "2025-01"]),
    ("quarterly", "2024-01-01", "2024-10-01", ["2024-01-01", "2024-04-01", "2024-07-01"]),
])
def test_partition_keys_follow_the_cadence(cadence, start, end, keys):
    spec = make_spec(partitions={"cadence": cadence, "start": start, "end": end, "column": "day"})
    assert partitions_def_for(spec).get_partition_keys() == keys


@pytest.mark.parametrize("cadence,start,end", [
    ("daily", "2024-02-27", "2024-03-02"), ("weekly", "2024-01-01", "2024-02-05"),
    ("monthly", "2024-11-01", "2025-03-01"), ("quarterly", "2024-01-01", "2025-01-01"),
    ("yearly", "2021-01-01", "2025-01-01"),
])
def test_dagsters_windows_are_the_cores_windows(cadence, start, end):
    # the cron of the core's cadence bounds Dagster's windows where partition_window bounds them
    spec = make_spec(partitions={"cadence": cadence, "start": start, "end": end, "column": "day"})
    pdef = partitions_def_for(spec)
    assert pdef.cron_schedule == CRONS[cadence]
    keys = pdef.get_partition_keys()
    assert len(keys) >= 3
    for key in keys:
        window = pdef.time_window_for_partition_key(key)
        assert (window.start.replace(tzinfo=None), window.end.replace(tzinfo=None)) == partition_window(spec, key)


def test_unpartitioned_release_has_no_partitions():
    spec = make_spec(partitions=None)
    assert partitions_def_for(spec) is None


def test_window_is_half_open():
    start, end = partition_window(make_spec(), "2023")
    df = pd.DataFrame({"day": ["2022-12-31", "2023-01-01", "2023-12-31 23:59", "2024-01-01"], "v": [1, 2, 3, 4]})
    assert rows_in_window(df, "day", start, end)["v"].tolist() == [2, 3]


def test_a_value_that_is_not_a_date_is_named():
    df = pd.DataFrame({"day": ["2023-01-05", "soon"]})
    with pytest.raises(DataError) as err:
        rows_in_window(df, "day", pd.Timestamp("2023-01-01"), pd.Timestamp("2024-01-01"), source="f.csv")
    assert "f.csv" in str(err.value) and "'day'" in str(err.value) and "'soon'" in str(err.value)


# ----- key store resource ------------------------------------------------------------------------


def test_a_key_store_error_never_quotes_the_passphrase(tmp_path, monkeypatch):
    for var in ("ANON_DAGSTER_MASTER_KEY", "ANON_DAGSTER_KEYSTORE", "ANON_DAGSTER_DEV_KEYSTORE"):
        monkeypatch.delenv(var, raising=False)
    secret = "hunter2-passphrase-xyz"
    resource = KeyStoreResource(path=str(tmp_path / "missing.json"), passphrase=secret)
    with pytest.raises(SecretError) as err:
        resource.open()
    assert secret not in str(err.value) and secret not in repr(err.value)


# ----- verdicts ------------------------------------------------------------------------------------


def test_threshold_outcomes_compare_in_the_declared_direction():
    spec = make_spec(anonymization={"k": 3}, policy={"thresholds": {
        "k": 3, "prosecutor_max": 0.25, "l_distinct": 2, "t_closeness": 0.2, "population_uniqueness": 0.1}})
    measures = {"rows": 12, "k": 3, "prosecutor_max": 1 / 3, "l_distinct": 2, "t_closeness": 0.2,
                "population_uniqueness": {"min": 0.02, "max": 0.15}}
    got = {o.name: o.passed for o in policy.threshold_outcomes(spec, measures)}
    # k 3 >= 3 passes; 1/3 > 0.25 fails; l 2 >= 2 passes; t 0.2 <= 0.2 passes;
    # uniqueness judged on the most pessimistic estimator: 0.15 > 0.1 fails
    assert got == {"k_anonymity": True, "prosecutor_risk_max": False, "l_diversity_distinct": True,
                   "t_closeness": True, "population_uniqueness": False}


def test_a_missing_measure_or_an_empty_release_never_passes():
    spec = make_spec(policy={"thresholds": {"k": 2, "marketer": 0.5}, "sampling_fraction": 0.5})
    by_name = {o.name: o for o in policy.threshold_outcomes(spec, {"rows": 10, "k": 4})}
    assert by_name["k_anonymity"].passed and not by_name["marketer_risk"].passed
    assert "not measured" in by_name["marketer_risk"].summary
    empty = policy.threshold_outcomes(spec, {"rows": 0, "k": 99, "marketer": 0.0})
    assert not any(o.passed for o in empty)


def test_measure_on_a_hand_computed_table():
    spec = make_spec(policy={"thresholds": {"k": 2, "l_distinct": 2}})
    df = pd.DataFrame({"pid": ["a", "b", "c", "d", "e"], "age": ["[20-30[", "[20-30[", "[30-40[", "[30-40[", "[30-40["],
                       "region": ["N"] * 5, "day": ["2023-01-01"] * 5, "dx": ["x", "y", "x", "x", "x"]})
    m = policy.measure(spec, df)
    assert (m["rows"], m["classes"], m["k"], m["l_distinct"]) == (5, 2, 2, 1)
    assert m["prosecutor_avg"] == pytest.approx(2 / 5)


def test_class_sizes_count_missing_values_as_a_value():
    spec = make_spec(policy={"thresholds": {"k": 1}})
    # classes over (age, region): (A,N) x2, (B,None) x1, (A,None) x2, (B,S) x1
    df = pd.DataFrame({"pid": list("abcdef"), "age": ["A", "A", "B", "A", "A", "B"],
                       "region": ["N", "N", None, None, None, "S"], "day": ["2023-01-01"] * 6,
                       "dx": list("xyxyxy")})
    assert sorted(policy.class_sizes(spec, df)) == [1, 1, 2, 2]
    assert policy.class_sizes(spec, df.iloc[0:0]) == []


# ----- contract --------------------------------------------------------------------------------------


def published_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "pid": ["v1:" + "a" * 32, "v1:" + "b" * 32],  # the hmac pseudonym format
        "age": ["[20-30[", "[20-30["], "region": ["N", "S"], "day": ["2023-01-01"] * 2, "dx": ["x", "y"],
    })


def test_contract_problems_name_each_violation_without_values():
    spec = make_spec()
    good = published_frame()
    assert policy.contract_problems(spec, good, {}) == []
    raw = pd.DataFrame({"pid": ["P-00017", "P-00018"], "name": ["Ada Lovelace", "Alan Turing"]})
    values = policy.raw_identifier_values(spec, raw)
    bad = good.assign(name=["Ada Lovelace", "x"], region=["N", None], dx=["Alan Turing", "y"])
    bad["pid"] = ["P-00017", good["pid"][1]]
    problems = policy.contract_problems(spec, bad, values)
    text = " | ".join(problems)
    assert "extra ['name']" in text
    assert "identifier column 'name'" in text
    assert "partition key 'region' has 1 null" in text
    assert "column 'dx': 1 values equal a raw value of identifier 'name'" in text
    assert "column 'pid': 1 values equal a raw value of identifier 'pid'" in text
    assert "column 'pid': 1 values do not match the hmac pseudonym format" in text
    for raw_value in ("P-00017", "Ada Lovelace", "Alan Turing"):
        assert raw_value not in text


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["alpha1", "beta22", "ab", "gamma333", "zz"]), min_size=1, max_size=12),
       st.sets(st.sampled_from(["alpha1", "beta22", "ab", "delta4444"]), max_size=4))
def test_raw_value_hits_equal_a_brute_force_search(cells, raw_names):
    spec = make_spec()
    published = pd.DataFrame({"dx": cells, "age": ["1"] * len(cells), "n": np.arange(len(cells))})
    hits = policy.raw_value_hits(spec, published, {"name": set(raw_names)}, min_length=5)
    expected_dx = [c in raw_names and len(c) >= 5 for c in cells]
    assert hits.get(("dx", "name"), np.zeros(len(cells), bool)).tolist() == expected_dx
    assert ("n", "name") not in hits  # numeric columns are not searched


def test_the_ge_contract_fails_with_counts_only():
    from anon_dagster.release.contract import validate_contract

    spec = make_spec()
    bad = published_frame().assign(name=["Ada Lovelace", "Bob Stone"])
    raw = pd.DataFrame({"pid": ["P-00017"], "name": ["Ada Lovelace"]})
    outcome = validate_contract(spec, bad, policy.raw_identifier_values(spec, raw))
    assert not outcome.passed
    assert "extra ['name']" in outcome.summary
    assert "name: holds no raw value of identifier name: 1 rows violate it" in outcome.summary
    assert "Ada Lovelace" not in outcome.summary and "Ada Lovelace" not in repr(outcome.details)
    ok = validate_contract(spec, published_frame(), policy.raw_identifier_values(spec, raw))
    assert ok.passed, ok.summary
    wrong_format = validate_contract(spec, published_frame().assign(pid=["v1:short", "v1:" + "c" * 32]), {})
    assert "pid: pseudonyms match the hmac format: 1 rows violate it" in wrong_format.summary


# ----- unreachable policies ------------------------------------------------------------------------


def test_an_unreachable_policy_gives_evidence_instead_of_a_crash():
    # one diagnosis per region: no generalization of age can give l = 2 inside a region
    spec = make_spec(policy={"thresholds": {"k": 2, "l_distinct": 2}})
    df = pd.DataFrame({"pid": [f"p{i}" for i in range(8)], "name": ["n"] * 8,
                       "age": [21, 22, 23, 24, 31, 32, 33, 34], "region": ["N"] * 4 + ["S"] * 4,
                       "day": ["2023-05-05"] * 8, "dx": ["x"] * 4 + ["y"] * 4}).drop(columns=["name"])
    result = pipeline.anonymize(spec, df)
    reason = result.unreachable
    assert reason is not None and "unreachable" in reason
    assert len(result.data) == 8
    outcomes = {o.name: o.passed for o in policy.threshold_outcomes(spec, policy.measure(spec, result.data))}
    assert outcomes == {"k_anonymity": True, "l_diversity_distinct": False}


# ----- metadata ------------------------------------------------------------------------------------


def test_plain_evidence_becomes_dagster_metadata():
    from pathlib import Path

    from dagster import JsonMetadataValue, PathMetadataValue, TableMetadataValue

    from anon_dagster.dagster.metadata import as_metadata
    from anon_dagster.release.evaluation import EvidenceTable

    table = EvidenceTable([("size", "float"), ("qi", "string")], [{"size": 1.0, "qi": "age"}])
    meta = as_metadata({"t": table, "p": Path("/x/y.parquet"), "j": {"a": [1]}, "l": ["x"], "n": 3, "s": "abc"})
    assert isinstance(meta["t"], TableMetadataValue)
    assert [(c.name, c.type) for c in meta["t"].schema.columns] == [("size", "float"), ("qi", "string")]
    assert [r.data for r in meta["t"].records] == [{"size": 1.0, "qi": "age"}]
    assert isinstance(meta["p"], PathMetadataValue) and meta["p"].value == "/x/y.parquet"
    assert isinstance(meta["j"], JsonMetadataValue) and meta["j"].value == {"a": [1]}
    assert isinstance(meta["l"], JsonMetadataValue) and meta["l"].value == ["x"]
    assert (meta["n"], meta["s"]) == (3, "abc")
