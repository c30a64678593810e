"""A parquet source on object storage read by the Spark engine's executors through pyarrow
(``anon_dagster.engine.spark_objects``), against the test S3 server: the rows, types and
positions of the same file read locally; the release read from and published to the bucket equal
to the pandas engine's; a missing object, a csv object and a column Spark cannot type refused in one line; no
credential in the query plan or in what Spark ships to its tasks."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from anon_dagster.cli import main
from anon_dagster.engine.base import UnsupportedOnEngine
from anon_dagster.engine.spark_frames import ROW_COLUMN, read_parquet
from anon_dagster.engine.spark_objects import object_schema, read_groups, read_object_parquet
from anon_dagster.errors import DataError
from anon_dagster.objectstore import ObjectPath
from anon_dagster.spec import load_spec
from tests.support import s3
from tests.support.ledgers import env_ledger
from tests.support.spark_releases import discharges, published_rows, write_release

pytestmark = pytest.mark.usefixtures("master_key")


def typed_table(n: int = 230) -> pd.DataFrame:
    """Discharges with every kind of column a source holds: nanosecond timestamps, an aware
    timestamp, missing floats, text, a categorical, small unsigned integers, booleans, dates."""
    data = discharges(n=n, seed=4)
    data["when"] = pd.Timestamp("2024-03-01 10:00:00.123456789", tz="Europe/Madrid") + pd.to_timedelta(
        np.arange(n), unit="h")
    data["unit"] = pd.Categorical(np.resize(["icu", "er", "ward"], n), categories=["er", "icu", "ward", "unused"])
    data["beds"] = np.resize(np.array([0, 7, 255], dtype=np.uint8), n)
    data["flag"] = np.resize([True, False, True], n)
    data["day"] = [d.date() for d in data["admitted"]]
    return data


def rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.orderBy(ROW_COLUMN).collect())


def test_an_object_is_read_as_the_same_file_is_read_locally(spark, s3_bucket, tmp_path):
    local = tmp_path / "typed.parquet"
    pq.write_table(pa.Table.from_pandas(typed_table()), local, row_group_size=40)  # 6 row groups
    s3_bucket.put("raw/typed.parquet", local.read_bytes())
    remote = read_object_parquet(spark, ObjectPath.parse(s3_bucket.uri("raw/typed.parquet")))
    here = read_parquet(spark, local)
    assert remote.dtypes == here.dtypes
    assert ("when", "timestamp") in remote.dtypes and ("admitted", "timestamp_ntz") in remote.dtypes
    got, expected = rows(remote), rows(here)
    assert got == expected and len(got) == 230
    assert [r[ROW_COLUMN] for r in remote.orderBy(ROW_COLUMN).collect()] == list(range(230))
    assert remote.rdd.getNumPartitions() == 6


def test_a_release_on_object_storage_on_spark_publishes_the_pandas_rows(tmp_path, s3_bucket, monkeypatch, capsys,
                                                                          spark):
    outcomes = {}
    for engine in ("pandas", "spark"):
        folder = tmp_path / engine
        path = write_release(folder, anonymization={"method": "global", "k": 3, "max_suppression": 0.05},
                             policy={"thresholds": {"k": 3}})
        data = folder / "data" / "tiny.parquet"
        pq.write_table(pq.read_table(data), data, row_group_size=64)
        s3_bucket.put(f"{engine}/tiny.parquet", data.read_bytes())
        data.unlink()  # only the object is there to read
        spec = yaml.safe_load(path.read_text())
        spec["source"]["path"] = s3_bucket.uri(f"{engine}/tiny.parquet")
        spec["publication"]["path"] = s3_bucket.uri(f"{engine}/published/{{release}}/{{partition}}.parquet")
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        env_ledger(folder / "ledger.sqlite", create=True)
        monkeypatch.setenv("ANON_DAGSTER_LEDGER", str(folder / "ledger.sqlite"))
        assert main(["publish", str(path), "--partition", "2023", "--engine", engine]) == 0, capsys.readouterr().err
        published = pd.read_parquet(io.BytesIO(s3_bucket.get(f"{engine}/published/tiny/2023.parquet")))
        outcomes[engine] = published_rows(published), len(published)
    assert outcomes["spark"] == outcomes["pandas"] and outcomes["spark"][1] > 100


def test_what_cannot_be_read_from_object_storage_is_refused_in_one_line(tmp_path, s3_bucket, spark, capsys):
    path = write_release(tmp_path, anonymization={"method": "global", "k": 3})
    spec = yaml.safe_load(path.read_text())
    missing = s3_bucket.uri("nowhere/tiny.parquet")
    with pytest.raises(DataError, match=f"^{missing}: no such object$"):
        read_object_parquet(spark, ObjectPath.parse(missing))
    s3_bucket.put("raw/tiny.csv", b"pid,age\nP1,30\n")
    spec["source"]["path"] = s3_bucket.uri("raw/tiny.csv")
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    assert main(["check", str(path), "--partition", "2023", "--engine", "spark"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a csv source on object storage" in err[0] and "store it as parquet" in err[0]
    table = io.BytesIO()
    pq.write_table(pa.table({"n": pa.array([1, 2**64 - 1], pa.uint64())}), table)
    s3_bucket.put("raw/big.parquet", table.getvalue())
    with pytest.raises(DataError, match="column 'n' holds unsigned 64-bit integers"):
        read_object_parquet(spark, ObjectPath.parse(s3_bucket.uri("raw/big.parquet")))
    with pytest.raises(UnsupportedOnEngine, match="a csv source on object storage"):
        from anon_dagster.engine.spark_ingest import _object_source

        _object_source(None, load_spec(path), ObjectPath.parse(s3_bucket.uri("raw/tiny.csv")), None)


def test_no_credential_reaches_the_plan_or_the_tasks(spark, s3_bucket, tmp_path):
    from pyspark import cloudpickle

    local = tmp_path / "typed.parquet"
    pq.write_table(pa.Table.from_pandas(typed_table(50)), local)
    s3_bucket.put("raw/typed.parquet", local.read_bytes())
    uri = s3_bucket.uri("raw/typed.parquet")
    df = read_object_parquet(spark, ObjectPath.parse(uri))
    plan = df._jdf.queryExecution().toString()
    shipped = cloudpickle.dumps(read_groups(uri, object_schema(pq.read_schema(local), uri)))
    conf = str(spark.sparkContext.getConf().getAll())
    for secret in (s3.ACCESS_KEY_ID, s3.SECRET_ACCESS_KEY):
        assert secret not in plan and secret.encode() not in shipped and secret not in conf
    assert df.count() == 50
