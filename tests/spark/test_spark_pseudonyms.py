"""Pseudonyms on Spark: the project's keyed functions through ``mapInArrow``, byte for byte the
pandas engine's; no key, subkey or passphrase in the plan, the event log or Spark's local files."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.engine.spark_frames import ROW_COLUMN
from anon_dagster.errors import SecretError
from anon_dagster.pseudonymize import open_keystore
from anon_dagster.pseudonymize.keystore import EnvKeyBackend, KeyStore, init_keystore
from anon_dagster.release import pipeline
from anon_dagster.release.gate import LINKAGE_COLUMN
from anon_dagster.spec import spec_from_dict
from tests.support.spark import SPARK_CONF, java_problem

COLUMNS = {
    "pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research", "scope": "population"}},
    "visit": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}},
    "card": {"role": "identifier", "pseudonymize": {"method": "aes_siv", "purpose": "billing",
                                                    "normalize": {"case": "upper"}}},
    "email": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "contact", "prefix_version": False,
                                                     "normalize": {"case": "lower", "unicode": "NFKC"}}},
    "stay": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research", "scope": "row"}},
    "number": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research", "scope": "population"}},
    "name": {"role": "identifier"},
    "age": {"role": "quasi"},
}
KEYED = ["pid", "visit", "card", "email", "number"]


def identifiers(n: int = 300, seed: int = 1) -> pd.DataFrame:
    """Identifiers as they come: repeats, missing and empty values, surrounding blanks, case and
    Unicode variants of one person, integers."""
    rng = np.random.default_rng(seed)
    spellings = ["P001", " P001", "p001 ", "", None, "Straße", "STRASSE", "ﬁle", "file", "Ω1", "P002"]
    pick = lambda: [spellings[i] for i in rng.integers(0, len(spellings), n)]  # noqa: E731
    return pd.DataFrame({
        "pid": pick(), "visit": pick(), "card": pick(), "email": pick(), "stay": pick(),
        "number": pd.array(rng.integers(10**9, 10**9 + 40, n), dtype="int64"),
        "name": [f"Name {i}" for i in range(n)], "age": rng.integers(20, 90, n),
    })


# scope population links a person across releases: the spec composes them
RAW_SPEC = {"release": "ids", "source": {"path": "ids.parquet"}, "columns": COLUMNS,
            "composition": {"population": "patients", "person": "number", "min_k": 2},
            "publication": {"path": "out/{release}.parquet"}}


def spec_for(tmp: Path):
    return spec_from_dict(RAW_SPEC, tmp / "spec.yaml")


def on_spark(engine, spec, df: pd.DataFrame, tmp: Path, keystore, **options) -> pd.DataFrame:
    df.to_parquet(tmp / "ids.parquet", index=False)
    out = engine.pseudonymize(spec, engine.ingest(spec), keystore, **options)
    return out, out.df.toArrow().to_pandas().sort_values(ROW_COLUMN).reset_index(drop=True)


@pytest.mark.usefixtures("master_key")
def test_pseudonyms_are_the_pandas_engines_byte_for_byte(spark_engine, tmp_path):
    spec = spec_for(tmp_path)
    keystore = open_keystore()
    raw = identifiers()
    expected = pipeline.pseudonymize(spec, raw.assign(number=raw["number"].astype(str)), keystore).data
    result, got = on_spark(spark_engine, spec, raw, tmp_path, keystore)
    assert "name" not in got.columns
    for column in [*KEYED, LINKAGE_COLUMN]:
        left = [None if pd.isna(v) else str(v).encode() for v in got[column]]
        right = [None if pd.isna(v) else str(v).encode() for v in expected[column]]
        assert left == right, column
    # scope row: a fresh random value per present row, in the hmac format, nulls where they were
    assert got["stay"].isna().tolist() == expected["stay"].isna().tolist()
    assert got["stay"].dropna().str.fullmatch(r"v1:[0-9a-f]{32}").all()
    assert got["stay"].dropna().is_unique
    # the summary counts as the pandas engine does
    summary = {c["column"]: c for c in result.summary["columns"]}
    reference = {c["column"]: c for c in pipeline.pseudonymize(spec, raw.assign(number=raw["number"].astype(str)),
                                                              keystore).summary["columns"]}
    assert summary == reference


@pytest.mark.usefixtures("master_key")
def test_a_person_missing_stops_the_step_in_one_line(spark_engine, tmp_path):
    """A row without a person cannot be composed with earlier releases: the executors refuse it
    and the driver raises the project's DataError in one line."""
    from anon_dagster.errors import DataError

    raw = identifiers(40)
    raw["number"] = raw["number"].astype(str)
    raw.loc[7, "number"] = "  "  # empty after normalization
    with pytest.raises(DataError) as err:
        on_spark(spark_engine, spec_for(tmp_path), raw, tmp_path, open_keystore())
    assert "the person column has 1 values missing or empty" in str(err.value)
    assert "\n" not in str(err.value)


def test_executors_with_another_key_store_refuse_in_one_line(spark_engine, tmp_path):
    other = KeyStore(EnvKeyBackend(base64.b64encode(bytes(range(1, 33))).decode()), tmp_path / "state")
    with pytest.raises(SecretError) as err:
        on_spark(spark_engine, spec_for(tmp_path), identifiers(20), tmp_path, other)
    assert "the key store of the Spark executors is not the driver's" in str(err.value)
    assert "\n" not in str(err.value)


SCRIPT = textwrap.dedent("""
    import contextlib, io, json, sys
    from pathlib import Path
    from anon_dagster.engine.spark_engine import SparkEngine, SparkIngested
    from anon_dagster.engine.spark_frames import read_parquet, start_session
    from anon_dagster.pseudonymize import open_keystore
    from anon_dagster.spec import load_spec

    conf = json.loads(sys.argv[1])
    folder = Path(sys.argv[2])
    spark = start_session("local[2]", "keys-in-logs", conf)
    engine = SparkEngine(spark, scratch_dir=folder / "scratch")
    spec = load_spec(folder / "spec.yaml")
    keystore = open_keystore()
    ingested = SparkIngested(read_parquet(spark, folder / "ids.parquet"), "ids.parquet")
    out = engine.pseudonymize(spec, ingested, keystore)
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        out.planned.explain(True)
    out.df.write.parquet(str(folder / "pseudonymized"))
    (folder / "explain.txt").write_text(plan.getvalue())
    local = b""
    for path in Path(conf["spark.local.dir"]).rglob("*"):
        if path.is_file():
            local += path.read_bytes()
    (folder / "local.bin").write_bytes(local)
    spark.stop()
""")


@pytest.mark.usefixtures("spark")
def test_no_key_in_the_plan_the_event_log_or_the_local_files(tmp_path):
    assert java_problem() is None
    passphrase = "correct horse battery staple 7"
    store_path = tmp_path / "keys" / "keystore.json"
    store_path.parent.mkdir(mode=0o700)
    store = init_keystore(store_path, passphrase, scrypt_n=2**10)
    identifiers(200).to_parquet(tmp_path / "ids.parquet", index=False)
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(json.dumps(RAW_SPEC))
    logs, local = tmp_path / "events", tmp_path / "local"
    logs.mkdir()
    local.mkdir()
    # uncompressed, so that the test reads what Spark wrote
    conf = {**SPARK_CONF, "spark.eventLog.enabled": "true", "spark.eventLog.compress": "false",
            "spark.eventLog.dir": str(logs), "spark.local.dir": str(local)}
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANON_DAGSTER_")}
    env.update({"ANON_DAGSTER_KEYSTORE": str(store_path), "ANON_DAGSTER_KEYSTORE_PASSPHRASE": passphrase,
                "ANON_DAGSTER_KEYSTORE_STATE": str(tmp_path / "state"), "PYTHONPATH": str(Path.cwd())})
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(conf), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    master = store.backend._keys[1]
    subkeys = [store.pseudonym_key("hmac", "research", 1), store.pseudonym_key("hmac", "research", 1, "ids/all"),
               store.pseudonym_key("aes_siv", "billing", 1), store.pseudonym_key("hmac", "contact", 1),
               store.derive_key("distinct-count"), store.derive_key("ledger-linkage")]
    secrets = [passphrase.encode()]
    for key in [master, *subkeys]:
        secrets += [key.hex().encode(), key.hex().upper().encode(), base64.b64encode(key),
                    base64.urlsafe_b64encode(key), base64.b64encode(key).rstrip(b"=")]
    explain = (tmp_path / "explain.txt").read_bytes()
    events = b"".join(p.read_bytes() for p in logs.rglob("*") if p.is_file())
    assert b"MapInArrow" in explain and b"SparkListenerSQLExecutionStart" in events
    for secret in secrets:
        assert secret not in explain
        assert secret not in events
    raw = (tmp_path / "local.bin").read_bytes()
    for key in [master, *subkeys]:  # Spark's own files: no key in any form, not even as bytes
        assert key not in raw and key.hex().encode() not in raw and base64.b64encode(key) not in raw
    assert passphrase.encode() not in raw
    written = pd.read_parquet(tmp_path / "pseudonymized")
    assert written["pid"].dropna().str.fullmatch(r"v1:[0-9a-f]{32}").all()


# ----- the executors' function, batch by batch (no Spark needed) ------------------------------
SPELLINGS = ["P001", " P001", "p001 ", "", "  ", None, "Straße", "STRASSE", "ﬁle", "Ω1", "P002", "P003"]


class FakeConf:
    """The part of ``spark.conf`` that :func:`pseudonym_batches` uses."""

    def __init__(self, values: dict[str, str]):
        self.values = dict(values)

    def get(self, key: str) -> str:
        return self.values[key]

    def set(self, key: str, value: str) -> None:
        self.values[key] = value


def plan_for(keystore):
    """The executors' plan of a keyed hmac column, an aes_siv column and a scope-row column, as
    :func:`~anon_dagster.engine.spark_ingest.pseudonymize` builds it."""
    from anon_dagster.engine.spark_pseudonyms import (
        DISTINCT_PREFIX,
        DISTINCT_PURPOSE,
        ColumnStep,
        KeyRequest,
        PseudonymPlan,
    )

    v = keystore.current_version
    steps = (
        ColumnStep("pid", key=KeyRequest("pseudonym", "research", "hmac", v).checked(keystore), prefix=f"v{v}:",
                   normalize=(True, "lower", "NFC")),
        ColumnStep("card", method="aes_siv", purpose="billing", prefix=f"v{v}:", normalize=(True, "keep", "NFKC"),
                   key=KeyRequest("pseudonym", "billing", "aes_siv", v).checked(keystore)),
        ColumnStep("stay", scope="row", prefix=f"v{v}:", distinct=KeyRequest("internal", DISTINCT_PURPOSE).checked(keystore)),
    )
    return PseudonymPlan(steps, None, ("pid", "card", "stay", DISTINCT_PREFIX + "stay", "n"))


@pytest.mark.usefixtures("master_key")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.integers(0, len(SPELLINGS) - 1), max_size=60), cuts=st.lists(st.integers(0, 60), max_size=6))
def test_batches_cut_anywhere_give_the_pandas_engines_pseudonyms(picks, cuts, monkeypatch):
    """Wherever Spark cuts the rows into Arrow batches (empty batches, a batch of nulls or empty
    strings only, one row), the executors' pseudonyms are the pandas engine's on the whole column."""
    import pyarrow as pa

    from anon_dagster.engine import spark_pseudonyms
    from anon_dagster.pseudonymize import pseudonymize_values
    from anon_dagster.spec import NormalizeSpec

    monkeypatch.setattr(spark_pseudonyms, "_KEYS", {})
    monkeypatch.setattr(spark_pseudonyms, "_STORE", [])
    keystore = open_keystore()
    values = [SPELLINGS[i] for i in picks]
    table = pa.table({"pid": pa.array(values, pa.string()), "card": pa.array(values, pa.string()),
                      "stay": pa.array(values, pa.string()), "n": pa.array(range(len(values)), pa.int64())})
    bounds = [0, *sorted(c for c in cuts if c <= len(values)), len(values)]  # repeated cuts: empty batches
    batches = [pa.RecordBatch.from_pylist(table.slice(a, b - a).to_pylist(), schema=table.schema)
               for a, b in zip(bounds, bounds[1:], strict=False)]
    run = spark_pseudonyms.pseudonymize_batches(plan_for(keystore))
    out = pa.Table.from_batches(list(run(iter(batches))))
    assert out["n"].to_pylist() == list(range(len(values)))
    series = pd.Series(values, dtype=object)
    pid, _ = pseudonymize_values(series, keystore, method="hmac", purpose="research",
                                 normalize=NormalizeSpec(case="lower"))
    card, _ = pseudonymize_values(series, keystore, method="aes_siv", purpose="billing",
                                  normalize=NormalizeSpec(unicode="NFKC"))
    assert out["pid"].to_pylist() == [None if pd.isna(v) else v for v in pid]
    assert out["card"].to_pylist() == [None if pd.isna(v) else v for v in card]
    # scope row: null exactly where the normalized identifier is missing or empty, else fresh values
    stay = out["stay"].to_pylist()
    assert [s is None for s in stay] == [v is None or not v.strip() for v in values]
    assert len({s for s in stay if s is not None}) == sum(s is not None for s in stay)


def test_pseudonym_batches_raise_the_batch_size_and_restore_it():
    from anon_dagster.engine.spark_pseudonyms import (
        BATCH_ROWS_CONF,
        PSEUDONYM_BATCH_ROWS,
        pseudonym_batches,
    )

    class Session:
        conf = FakeConf({BATCH_ROWS_CONF: "10000"})

    seen = []
    with pseudonym_batches(Session):
        seen.append(Session.conf.get(BATCH_ROWS_CONF))
    assert seen == [str(PSEUDONYM_BATCH_ROWS)]
    assert Session.conf.get(BATCH_ROWS_CONF) == "10000"
    # a larger setting is the session's choice, kept; restored even when the query fails
    Session.conf.set(BATCH_ROWS_CONF, "500000")
    with pytest.raises(RuntimeError), pseudonym_batches(Session):
        seen.append(Session.conf.get(BATCH_ROWS_CONF))
        raise RuntimeError("the query failed")
    assert seen[-1] == "500000" and Session.conf.get(BATCH_ROWS_CONF) == "500000"
