"""The gate on Spark: ``anon-dagster check --json --engine spark`` gives the pandas engine's outcome,
check by check (name, spec key, verdict, severity, measured, threshold), and the same exit status.

The releases cover the figures the gate reads from the published frequency table (k, risks,
l-diversity, entropy, recursive (c, l), t-closeness by total variation and ordered distance,
journalist risk from a sampling fraction and from a population, uniqueness), a utility query
from two frequency tables, the data contract, passing and refused partitions, an unreachable
policy shown relaxed.
"""

from __future__ import annotations

import pytest

from tests.support.spark_releases import COLUMNS, check_json, discharges, without_id, write_release

pytestmark = pytest.mark.usefixtures("master_key", "spark")

EVERY_FIGURE = {"k": 2, "prosecutor_max": 0.5, "prosecutor_avg": 0.6, "l_distinct": 2, "l_entropy": 1.2,
                "recursive_cl": {"c": 3, "l": 2}, "t_closeness": 0.5, "uniques_fraction": 0.2,
                "journalist_max": 0.5, "journalist_avg": 0.5, "marketer": 0.5, "population_uniqueness": 0.5}


def both(spec, *args: str) -> tuple[tuple[int, dict], tuple[int, dict]]:
    return check_json(spec, *args), check_json(spec, *args, "--engine", "spark")


def assert_same(spec, *args: str) -> dict:
    (code_p, pandas), (code_s, spark) = both(spec, *args)
    assert without_id(spark) == without_id(pandas)
    assert code_s == code_p
    # real figures on both sides: a check that could not be computed has nothing measured
    assert all(c["measured"] is not None for c in pandas["checks"]), pandas["checks"]
    return pandas


def test_every_threshold_on_the_rows_as_they_are(tmp_path):
    spec = write_release(tmp_path, anonymization={"method": "none"},
                         policy={"adversary": "journalist", "sampling_fraction": 0.1, "thresholds": EVERY_FIGURE},
                         utility_queries=[{"name": "by_region", "group_by": ["region"], "target": "diagnosis",
                                           "max_error_points": 1.0}])
    for partition in ("2023", "2024"):
        out = assert_same(spec, "--partition", partition)
        assert {c["name"] for c in out["checks"]} >= {"k_anonymity", "t_closeness", "data_contract",
                                                      "utility_by_region", "population_uniqueness"}


def test_global_recoding_with_suppression_and_an_ordinal_attribute(tmp_path):
    columns = {**COLUMNS, "severity": {"role": "sensitive", "kind": "ordinal", "order": ["1", "2", "3"]}}
    spec = write_release(tmp_path, columns=columns,
                         anonymization={"method": "global", "k": 4, "max_suppression": 0.05, "utility": "loss"},
                         policy={"thresholds": {"k": 4, "l_distinct": 2, "t_closeness": 0.45, "prosecutor_avg": 0.2}},
                         utility_queries=[{"name": "by_region", "group_by": ["region"], "target": "diagnosis"}])
    for partition in ("2023", "2024"):
        out = assert_same(spec, "--partition", partition)
        assert out["verdict"] == "pass"


def test_an_unreachable_policy_is_refused_alike(tmp_path):
    spec = write_release(tmp_path, anonymization={"method": "global", "k": 3},
                         policy={"thresholds": {"k": 3, "t_closeness": 0.01}})
    out = assert_same(spec, "--partition", "2023")
    assert out["verdict"] == "fail"
    assert [c["name"] for c in out["checks"] if not c["passed"]] == ["t_closeness"]


def test_a_population_places_the_published_classes(tmp_path):
    population = discharges(3000, seed=9)[["age", "sex", "zip", "region"]]
    (tmp_path / "data").mkdir(parents=True, exist_ok=True)
    population.to_parquet(tmp_path / "data" / "population.parquet", index=False)
    spec = write_release(tmp_path, anonymization={"method": "global", "k": 3, "max_suppression": 0.02},
                         policy={"adversary": "journalist", "population": {"path": "../data/population.parquet"},
                                 "thresholds": {"k": 3, "journalist_max": 0.2, "marketer": 0.05}})
    assert_same(spec, "--partition", "2024")
