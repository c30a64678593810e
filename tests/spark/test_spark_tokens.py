"""Tokens on the Spark engine: the same vault, the same tokens as the pandas engine, row for row."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anon_dagster.engine.spark_frames import ROW_COLUMN, DriverLimit
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.pseudonymize.methods import publication_label
from anon_dagster.pseudonymize.tokens import TokenVault
from anon_dagster.release import pipeline
from anon_dagster.spec import spec_from_dict

pytestmark = pytest.mark.usefixtures("master_key")

SPELLINGS = ["P001", " p001", "P001 ", "", None, "Straße", "STRASSE", "ﬁle", "file", "Ω1", "P002", "x7"]
RAW_SPEC = {
    "release": "tok", "source": {"path": "ids.parquet"},
    "columns": {
        "pid": {"role": "identifier", "pseudonymize": {"method": "token", "purpose": "research",
                                                       "normalize": {"case": "upper", "unicode": "NFKC"}}},
        "visit": {"role": "identifier", "pseudonymize": {"method": "token", "purpose": "visits"}},
        "email": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "contact"}},
        "age": {"role": "quasi"},
    },
    "publication": {"path": "out/{release}.parquet"},
}


def identifiers(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    pick = lambda: [SPELLINGS[i] for i in rng.integers(0, len(SPELLINGS), n)]  # noqa: E731
    return pd.DataFrame({"pid": pick(), "visit": pick(), "email": pick(), "age": rng.integers(20, 90, n)})


def on_spark(engine, spec, raw: pd.DataFrame, tmp: Path, keystore):
    raw.to_parquet(tmp / "ids.parquet", index=False)
    out = engine.pseudonymize(spec, engine.ingest(spec), keystore)
    return out, out.df.toArrow().to_pandas().sort_values(ROW_COLUMN).reset_index(drop=True)


def on_pandas(spec, raw: pd.DataFrame, keystore):
    return pipeline.pseudonymize(spec, raw, keystore)


def same(left: pd.Series, right: pd.Series) -> bool:
    return [None if pd.isna(v) else v for v in left] == [None if pd.isna(v) else v for v in right]


def test_the_engines_share_one_vault_and_give_the_same_tokens(spark_engine, tmp_path):
    """Tokens minted by either engine are found by the other: pandas keys the first rows, Spark
    the whole table (reusing those, minting the rest), pandas the whole table again."""
    spec = spec_from_dict(RAW_SPEC, tmp_path / "spec.yaml")
    keystore = open_keystore()
    raw = identifiers(200, seed=3)
    first = on_pandas(spec, raw.iloc[:60].reset_index(drop=True), keystore).data
    result, spark = on_spark(spark_engine, spec, raw, tmp_path, keystore)
    for column in ("pid", "visit", "email"):
        assert same(spark[column].iloc[:60], first[column]), column
    again = on_pandas(spec, raw, keystore)
    for column in ("pid", "visit", "email"):
        assert same(spark[column], again.data[column]), column
    assert spark["pid"].dropna().str.fullmatch(r"tk_[a-z2-7]{26}").all()
    # the summary counts as the pandas engine's does (tokens: no key version, no prefix)
    assert {c["column"]: c for c in result.summary["columns"]} == {c["column"]: c for c in again.summary["columns"]}
    # the vault holds each normalized identifier once: spellings of one person share a token
    vault = TokenVault.load(keystore, "research", publication_label("tok", None))  # scope release, the default
    assert len(vault.forward) == spark["pid"].nunique()
    assert spark["pid"][raw["pid"].isin(["P001", " p001", "P001 "])].nunique() == 1


def test_no_identifier_is_in_the_plan_and_the_pairs_are_removed(spark_engine, tmp_path):
    spec = spec_from_dict(RAW_SPEC, tmp_path / "spec.yaml")
    raw = identifiers(80, seed=5)
    result, _ = on_spark(spark_engine, spec, raw, tmp_path, open_keystore())
    plan = io.StringIO()
    with redirect_stdout(plan):
        result.planned.explain(True)
    text = plan.getvalue()
    assert "__token_digest" in text  # the join with the (digest, token) pairs is the plan's
    for value in {"P001", "p001", "STRASSE", "strasse", "Ω1", "x7"}:
        assert value not in text
    assert not list((tmp_path / "scratch").glob("tokens-*"))  # removed once the rows were materialized


def test_more_distinct_identifiers_than_the_driver_holds_is_refused_before_minting(spark, tmp_path):
    from anon_dagster.engine.spark_engine import SparkEngine

    spec = spec_from_dict(RAW_SPEC, tmp_path / "spec.yaml")
    keystore = open_keystore()
    engine = SparkEngine(spark, scratch_dir=tmp_path / "scratch", max_driver_cells=4)
    with pytest.raises(DriverLimit) as err:
        # one age, so that the ingest's look at the QI values fits: the tokens' identifiers do not
        on_spark(engine, spec, identifiers(100, seed=7).assign(age=30), tmp_path, keystore)
    assert "tokens of column 'pid': more than 4 distinct identifiers" in str(err.value)
    assert "max_driver_cells=4" in str(err.value) and "\n" not in str(err.value)
    assert TokenVault.load(keystore, "research", publication_label("tok", None)).forward == {}  # nothing minted


def test_check_with_a_token_column_gives_the_pandas_engines_outcome(tmp_path, spark):
    """``check --engine spark`` over a release whose identifier is tokenized: every check's
    outcome and figures as on pandas, the tokens from the one vault."""
    from tests.support.spark_releases import (
        COLUMNS,
        check_json,
        discharges,
        without_id,
        write_release,
    )

    columns = {**COLUMNS, "pid": {"role": "identifier", "pseudonymize": {"method": "token", "purpose": "research"}}}
    spec = write_release(tmp_path, data=discharges(300, seed=11), columns=columns,
                         anonymization={"method": "global", "k": 3, "max_suppression": 0.05},
                         policy={"thresholds": {"k": 3, "l_distinct": 2}})
    for partition in ("2023", "2024"):
        code_pandas, on_pandas_ = check_json(spec, "--partition", partition)
        code_spark, on_spark_ = check_json(spec, "--partition", partition, "--engine", "spark")
        assert code_spark == code_pandas
        assert without_id(on_spark_) == without_id(on_pandas_)
