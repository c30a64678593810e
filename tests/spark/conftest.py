"""One local Spark session for the Spark tests: ``local[2]``, few shuffle partitions, no UI.

Spark needs Java: ``make test`` installs Debian's ``openjdk-17-jre-headless`` when it can (the
Makefile's ``java`` target); without Java, or without pyspark, every Spark test is skipped and
says why. The executors' Python workers inherit the environment the session is started with:
it carries the tests' fixed master key (:data:`tests.support.keys.MASTER_KEY`), so they re-derive
the keys the ``master_key`` fixture gives the driver (the key never enters Spark's configuration),
and the test S3 server's endpoint and credentials, so they read the objects of ``s3_bucket``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import s3
from tests.support.keys import MASTER_KEY
from tests.support.spark import SPARK_CONF, java_problem


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory, s3_server: s3.Server) -> Iterator[object]:
    """The session's SparkSession on ``local[2]`` (skips the test when Spark cannot start); its
    Python workers see the test S3 server as a machine of an installation would (the
    ``s3_bucket`` fixture points the driver at it the same way)."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
    problem = java_problem()
    if problem:
        pytest.skip(f"Spark needs Java: {problem}")
    from anon_dagster.engine.spark_frames import start_session

    workers = {"ANON_DAGSTER_MASTER_KEY": MASTER_KEY,
               "ANON_DAGSTER_KEYSTORE_STATE": str(tmp_path_factory.mktemp("executor-keystate")),
               **s3.server_environment(s3_server, tmp_path_factory.mktemp("executor-aws"))}
    saved = {k: os.environ.get(k) for k in workers}
    os.environ.update(workers)
    conf = {**SPARK_CONF, "spark.local.dir": str(tmp_path_factory.mktemp("spark-local"))}
    try:
        session = start_session("local[2]", "anon_dagster-tests", conf)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def spark_engine(spark, tmp_path: Path):
    """A SparkEngine on the session's SparkSession, collecting through this test's folder."""
    from anon_dagster.engine.spark_engine import SparkEngine

    engine = SparkEngine(spark, scratch_dir=tmp_path / "scratch")
    yield engine
    engine.close()
