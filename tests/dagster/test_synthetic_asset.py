"""A synthetic release whose table is an asset of the user's Dagster project
(``anonymization.synthetic.table: {asset: key}``): the output of their own generator, loaded
through its IO manager and judged by the same audit as any synthetic table."""

from __future__ import annotations

import pandas as pd
from dagster import AssetKey

from tests.support.releases import check_evaluations, materialized
from tests.support.synthetic_project import (
    COLUMNS,
    GENERATOR,
    copier,
    population_model,
    project,
    run_partition,
)


def test_the_anonymized_asset_takes_the_generator_as_an_input(env):
    defs = project(env, population_model)
    anonymized = defs.resolve_assets_def(AssetKey(["synth", "anonymized"]))
    assert GENERATOR in anonymized.asset_deps[AssetKey(["synth", "anonymized"])]


def test_a_table_that_passes_the_audit_is_published(env):
    _, result = run_partition(env, population_model)
    assert result.success
    copy_gap = check_evaluations(result)["synthetic_copy_rate_gap"]
    assert copy_gap.passed and copy_gap.metadata["check"].value["measured"] <= 0.2
    assert "synth/published" in materialized(result)
    published = pd.read_parquet(env / "published" / "synth" / "2023.parquet")
    assert list(published.columns) == COLUMNS and "pid" not in published.columns
    # the generator's own table, its 300 rows (600 less the control half): no row added or dropped
    assert len(published) == 300
    assert set(published["visit_date"].astype(str)) == {"2023-06-01"}


def test_a_generator_that_copies_its_training_rows_is_refused(env):
    _, result = run_partition(env, copier)
    copy_gap = check_evaluations(result)["synthetic_copy_rate_gap"]
    assert not copy_gap.passed
    # every train record copied, a control record only when it equals one: the gap is large
    assert copy_gap.metadata["check"].value["measured"] > 0.2
    assert "synth/published" not in materialized(result)
    assert not (env / "published" / "synth" / "2023.parquet").exists()
