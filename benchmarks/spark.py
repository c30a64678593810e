"""The Spark engine beside the pandas engine, same run: risk figures, the gate, pseudonyms, PRAM, the release.

For each size (1,000,000 and 10,000,000 rows by default) a seeded table of discharges is written
as parquet (row groups of 1M rows), then, on each engine in turn:

* **risk**: every figure of the table (``measure_risk`` on the rows read by pandas; Spark's
  frequency table over the QIs and the sensitive attribute measured by ``measure_frequencies``),
  asserted equal key by key;
* **gate**: ``check`` of a release over the table (global recoding at k=5 with 1% suppression,
  l-diversity, a utility query, the data contract), the two JSON outcomes asserted equal;
* **attacks**: ``check`` of the same release judged by its attacks instead (``policy.attacks``:
  singling out, linkability, inference of the diagnosis; the identifier keyed, scope release),
  which on Spark run on the driver with the pandas engine's code: the two JSON outcomes and the
  attacks' figures (``measures["attacks"]``) asserted equal;
* **pseudonyms**: the identifier column pseudonymized with HMAC (scope release), every
  pseudonym asserted equal, and the rate in pseudonyms per second, by wall clock and per
  CPU-second. Timed: pandas' step on the column in memory; Spark's step from the parquet scan to
  the materialized result (the engine computes it once). The comparison is not timed;
* **pram**: PRAM of the diagnosis (20 values, each kept with probability 0.8, else the next
  one), the draws asserted equal row for row and the rows changed equal. Timed: pandas'
  ``apply_pram`` on the column in memory; Spark's from the parquet scan (the diagnosis and the
  row positions) to the materialized result, the rows ranked in table order on Spark;
* **release**: the whole release end to end from the parquet file — pseudonymize (HMAC, scope
  release), anonymize (global recoding), the gate, publish — through the stored steps both
  engines offer (``raw_step``, ``pseudonymized_step``, ``anonymized_step``, ``published_step``
  of ``anon_dagster.release.engine_steps``, as the Dagster assets run them: ``anon-dagster
  publish`` runs the pandas pipeline only, and the Spark engine has no single call that
  publishes), each run into a new folder under ``--folder``/release with a ledger of its own;
  the gate outcomes and the published rows (sorted by every column) asserted equal.

After the risk figures, **DuckDB's GROUP BY** of the same parquet file over the QIs and the
sensitive attribute, fetched to Arrow, on as many threads as the master's cores
(``--duckdb-threads``): its wall clock and CPU, the ratio of Spark's risk wall clock to it, and
its number of groups asserted equal to the size of Spark's frequency table.

Spark runs on ``local[2]`` (``--master``), its driver JVM with ``-Xmx`` set by
``spark.driver.memory`` (``--driver-memory``, 6g), printed in the header. Wall clock and CPU
seconds are given for each step; CPU is the whole process tree's (this process, the JVM, its
Python workers), read from /proc, so Spark's executors are counted. Peak resident memory is
sampled every 50 ms during each step (``spark_measures``): this process (``pandas peak RSS`` on
the pandas step, ``driver peak RSS`` on the Spark one, DuckDB's too), the JVM (bounded by its
``-Xmx`` plus off-heap memory; a JVM keeps the pages it took, so it is the session's high-water
mark so far) and the PySpark Python workers summed. ``--skip-pandas-above N``: sizes above N
rows run Spark and DuckDB only, the pandas columns say "not run". The machine's load average
is printed: on a shared machine the wall clock also counts time spent waiting for a core.

    .venv/bin/python benchmarks/spark.py [--rows 1000000 10000000] [--master local[2]] [--folder DIR]
        [--steps risk gate attacks pseudonyms pram mondrian release] [--repeats 1] [--skip-pandas-above N]
        [--driver-memory 6g] [--max-driver-cells N] [--max-worker-cells N] [--duckdb-threads N]

``--repeats`` runs each step that many times per engine and prints the medians (the peaks are
the highest of all runs). ``--max-driver-cells`` sets the Spark engine's bound on what the
driver holds: the generated table's bottom frequency table (the search's starting table) is
nearly as long as the table, so the gate and the release at 10M rows and more need it raised
(e.g. 1,000,000,000); the release's published rows are streamed through the driver one row
group at a time, whatever the bound. ``--max-worker-cells`` sets the most frequency cells one
executor is handed to cut a Mondrian part: below a part's cells, its first depths are cut on
Spark (docs/scale.md, Mondrian).
"""

from __future__ import annotations

import argparse
import base64
import itertools
import logging
import operator
import os
import sys
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its helpers, when another script loads it by path

from spark_measures import Measured, Timer, gib, master_cores, measure, tree_cpu  # noqa: E402, F401 - tree_cpu: for the scripts beside it
from spark_release import Released, duckdb_groups, release, same_release  # noqa: E402

from anon_dagster.engine.spark_engine import SparkEngine  # noqa: E402
from anon_dagster.engine.spark_frames import FIRST_COLUMN, ROW_COLUMN, read_parquet  # noqa: E402
from anon_dagster.io import read_table  # noqa: E402
from anon_dagster.pseudonymize import open_keystore  # noqa: E402
from anon_dagster.release import pipeline  # noqa: E402
from anon_dagster.risk import measure_risk  # noqa: E402
from anon_dagster.risk.frequencies import measure_frequencies  # noqa: E402
from anon_dagster.spec import load_spec  # noqa: E402

QIS = ["age", "sex", "zip", "region"]
SENSITIVE = ["diagnosis"]
DIAGNOSES = [f"{letter}{n:02d}" for letter in "ABCDE" for n in range(4)]


def write_table(path: Path, rows: int, seed: int = 0, chunk: int = 1_000_000) -> None:
    """``rows`` seeded discharges as parquet, written a million rows at a time."""
    rng = np.random.default_rng(seed)
    zips = np.array([f"{z:05d}" for z in rng.choice(np.arange(28000, 29000), 60, replace=False)], dtype=object)
    writer = None
    try:
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            ids = rng.integers(0, max(rows // 3, 1), n)  # about three stays per patient
            table = pa.table({
                "pid": pa.array(np.char.add("P", ids.astype("U10")), type=pa.string()),
                "age": pa.array(rng.integers(18, 98, n)),
                "sex": pa.array(rng.choice(np.array(["F", "M"], dtype=object), n), type=pa.string()),
                "zip": pa.array(rng.choice(zips, n), type=pa.string()),
                "region": pa.array(rng.choice(np.array(["North", "South"], dtype=object), n), type=pa.string()),
                "admitted": pa.array((pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, n), unit="D"))
                                     .to_numpy(dtype="datetime64[us]")),
                "diagnosis": pa.array(rng.choice(np.array(DIAGNOSES, dtype=object), n), type=pa.string()),
            })
            writer = writer or pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


def spec_file(folder: Path, data: Path, scope: str = "row") -> Path:
    """The release spec over ``data`` written to ``folder``, published under ``folder``; ``scope``
    the identifier's pseudonym scope (``row``: random per row; ``release``: keyed, so both engines
    make the same pseudonyms)."""
    spec = {
        "release": "bench", "source": {"path": str(data)},
        "columns": {
            "pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research", "scope": scope}},
            "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5, 10, 20, 40]}},
            "sex": {"role": "quasi"},
            "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [4, 3, 2]}},
            "region": {"role": "quasi", "partition_key": True},
            "admitted": {"role": "insensitive"},
            "diagnosis": {"role": "sensitive"},
        },
        "anonymization": {"method": "global", "k": 5, "max_suppression": 0.01, "utility": "entropy"},
        "policy": {"sampling_fraction": 0.1, "thresholds": {"k": 5, "l_distinct": 2, "prosecutor_avg": 0.2}},
        "utility_queries": [{"name": "by_region", "group_by": ["region"], "target": "diagnosis"}],
        "publication": {"path": str(folder / "published" / "{release}.parquet")},
    }
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def attacks_spec_file(folder: Path, data: Path) -> Path:
    """The release of :func:`spec_file` with the attacks as its gate (``policy.attacks``: singling
    out, linkability, inference of the diagnosis) instead of thresholds, its identifier keyed
    (scope release: both engines withhold the same persons as control records)."""
    spec = yaml.safe_load(spec_file(folder, data, scope="release").read_text())
    spec["release"] = "bench_attacks"
    spec["policy"] = {"attacks": {"singling_out": 0.05, "linkability": 0.05, "inference": 0.10}}
    path = folder / "bench_attacks.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def risk_pandas(path: Path) -> dict:
    df = read_table(path)
    return measure_risk(df, QIS, SENSITIVE, sampling_fraction=0.1).to_dict()


def risk_spark(engine: SparkEngine, path: Path) -> tuple[dict, int]:
    """Spark's risk figures and the size of the frequency table they are measured from."""
    freq, _ = engine.frequencies(read_parquet(engine.spark, path), QIS + SENSITIVE)
    figures = measure_frequencies(freq, QIS, SENSITIVE, sampling_fraction=0.1, first_row=FIRST_COLUMN).to_dict()
    return figures, len(freq)


def gate(engine, spec, keystore, *, attacks: bool = False) -> dict:
    """``check``'s JSON without its id; with ``attacks``, the attacks' figures (``measures["attacks"]``) too."""
    evaluation = engine.run_gate(spec, keystore=keystore).evaluation
    shown = {k: v for k, v in evaluation.to_json().items() if k != "evaluation"}
    return {**shown, "attacks": evaluation.measures.get("attacks")} if attacks else shown


def pseudonyms_pandas(spec, frame: pd.DataFrame, keystore) -> pd.DataFrame:
    """The pandas engine's pseudonymize step on the identifier column already in memory."""
    return pipeline.pseudonymize(spec, frame, keystore).data


def pseudonyms_spark(engine: SparkEngine, spec, ingested, keystore):
    """The Spark engine's pseudonymize step: the parquet scan, the executors' keying and the
    result materialized once (as the engine always does), the Spark DataFrame returned."""
    return engine.pseudonymize(spec, ingested, keystore).df


def pandas_pseudonyms(data: pd.DataFrame) -> pa.Array:
    return pa.array(data["pid"]).cast(pa.string())


def spark_pseudonyms(df, folder: Path) -> pa.Array:
    """The pseudonyms Spark made, in the source's row order (written by Spark, read with pyarrow)."""
    target = folder / "pseudonyms"
    df.write.mode("overwrite").parquet(str(target))
    table = pq.read_table(target).sort_by(ROW_COLUMN)
    return table["pid"].combine_chunks().cast(pa.string())


def keyed_spec(spec):
    columns = dict(spec.columns)
    pid = columns["pid"].model_copy(update={"pseudonymize": columns["pid"].pseudonymize.model_copy(
        update={"scope": "release"})})
    return spec.model_copy(update={"columns": {"pid": pid}})


def pram_spec(spec):
    """``spec`` with PRAM of the diagnosis: each value kept with probability 0.8, else the next one."""
    matrix = {d: {d: 0.8, DIAGNOSES[(i + 1) % len(DIAGNOSES)]: 0.2} for i, d in enumerate(DIAGNOSES)}
    an = spec.anonymization.model_copy(update={"pram": {"column": "diagnosis", "matrix": matrix}, "seed": 7})
    return spec.model_copy(update={"anonymization": an})


def pram_pandas(spec, frame: pd.DataFrame) -> tuple[pd.Series, int]:
    """The pandas engine's PRAM of the diagnosis in memory: the new column and the rows changed."""
    from anon_dagster.anonymize.pram import apply_pram, parse_pram

    return apply_pram(frame["diagnosis"], parse_pram(spec.anonymization.pram), spec.anonymization.seed)


def pram_spark(engine: SparkEngine, spec, df):
    """The Spark engine's PRAM of the diagnosis, materialized, and the record's entry."""
    from anon_dagster.engine.spark_pram import apply_pram

    return apply_pram(engine, spec, df)


def same_pram(left, right, folder: Path) -> bool:
    """The same draws row for row (Spark's written and read back in source order) and rows changed."""
    (column, changed), (df, entry) = left, right
    target = folder / "pram"
    df.select(ROW_COLUMN, "diagnosis").write.mode("overwrite").parquet(str(target))
    drawn = pq.read_table(target).sort_by(ROW_COLUMN)["diagnosis"].to_pylist()
    return entry["rows_changed"] == changed and drawn == column.tolist()


def mondrian_spec(spec):
    """``spec`` anonymized by Mondrian (k=5) within each region, without the pseudonym column."""
    an = spec.anonymization.model_copy(update={"method": "mondrian"})
    return spec.model_copy(update={"anonymization": an})


def mondrian_pandas(spec, frame: pd.DataFrame):
    """The pandas engine's Mondrian of the table in memory: the published rows and the record."""
    done = pipeline.anonymize(spec, frame)
    return done.data, done.record


def mondrian_spark(engine: SparkEngine, spec, df):
    """The Spark engine's Mondrian (each region cut from its frequency cells on an executor), the
    published rows materialized."""
    from anon_dagster.engine.spark_results import SparkPseudonymized

    done = engine.anonymize(spec, SparkPseudonymized(df), relax=False)
    done.df.count()
    return done


def same_mondrian(left, right, folder: Path) -> bool:
    """The same labels row for row (Spark's written and read back in source order) and the same
    record's ``mondrian`` entry."""
    (data, record), done = left, right
    target = folder / "mondrian"
    columns = ["age", "sex", "zip", "region"]
    done.df.select(ROW_COLUMN, *columns).write.mode("overwrite").parquet(str(target))
    labelled = pq.read_table(target).sort_by(ROW_COLUMN).select(columns).to_pandas()
    ours = data[columns].astype(str).reset_index(drop=True)
    return (done.record.to_json()["mondrian"] == record.to_json()["mondrian"]
            and labelled.astype(str).equals(ours))


def folders(folder: Path, label: str) -> Iterator[Path]:
    """``folder/release/<label>-1``, ``-2``, ...: a new folder for each run of the release (those
    of earlier invocations skipped)."""
    candidates = (folder / "release" / f"{label}-{n}" for n in itertools.count(1))
    return (path for path in candidates if not path.exists())


def released(engine: object, data: Path, targets: Iterator[Path], keystore: object) -> Released:
    """The release end to end on ``engine`` into the next folder of ``targets`` (a new one each run)."""
    return release(engine, lambda at: spec_file(at, data, scope="release"), next(targets), keystore)


STEPS = ("risk", "gate", "attacks", "pseudonyms", "pram", "mondrian", "release")
NOT_RUN = "not run"


def row(rows: int, name: str, pandas: Measured | None, spark: Measured, equal: str, before: str) -> str:
    """One line of the table: the pandas columns say "not run" when pandas was skipped."""
    left = (f"{pandas.wall:.1f} s | {pandas.cpu:.1f} s | {gib(pandas.peaks.driver)}" if pandas is not None
            else f"{NOT_RUN} | {NOT_RUN} | {NOT_RUN}")
    peaks = spark.peaks
    return (f"| {rows:,} | {name} | {left} | {spark.wall:.1f} s | {spark.cpu:.1f} s | {gib(peaks.driver)} | "
            f"{gib(peaks.jvm)} | {gib(peaks.workers)} | {equal} | {before} → {load()} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--folder", help="where the generated tables go (default: a temporary folder)")
    parser.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS))
    parser.add_argument("--repeats", type=int, default=1, help="runs of each step per engine (medians)")
    parser.add_argument("--skip-pandas-above", type=int, default=None, metavar="N",
                        help="sizes above N rows run Spark (and DuckDB) only")
    parser.add_argument("--driver-memory", default="6g", help="spark.driver.memory, the JVM's -Xmx (default 6g)")
    parser.add_argument("--max-driver-cells", type=int, default=None,
                        help="the Spark engine's max_driver_cells (default the engine's)")
    parser.add_argument("--max-worker-cells", type=int, default=None,
                        help="the Spark engine's max_worker_cells (default the engine's)")
    parser.add_argument("--duckdb-threads", type=int, default=None, help="default: the master's cores")
    args = parser.parse_args()
    # Mondrian says how many depths it cut on Spark (parts over max_worker_cells), counts only
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stdout)
    logging.getLogger("anon_dagster.engine.spark_mondrian_top").setLevel(logging.INFO)
    os.environ.setdefault("ANON_DAGSTER_MASTER_KEY", base64.b64encode(bytes(range(32))).decode())
    folder = Path(args.folder or tempfile.mkdtemp(prefix="anon-dagster-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("ANON_DAGSTER_KEYSTORE_STATE", str(folder / "keystate"))
    keystore = open_keystore()
    limits = {name: value for name, value in (("max_driver_cells", args.max_driver_cells),
                                              ("max_worker_cells", args.max_worker_cells)) if value is not None}
    engine = SparkEngine(master=args.master, conf={"spark.driver.memory": args.driver_memory},
                         scratch_dir=folder / "scratch", **limits)
    threads = args.duckdb_threads or master_cores(args.master)
    with Timer() as t:
        engine.spark.range(1).count()
    print(f"Spark session on {args.master}: {t.wall:.1f} s; spark.driver.memory (JVM -Xmx) {args.driver_memory}; "
          f"max_driver_cells {engine.max_driver_cells:,}; max_worker_cells {engine.max_worker_cells:,}; DuckDB {duckdb.__version__} on {threads} threads; "
          f"load average {load()}; median of {args.repeats} run(s) per engine and step")
    print("| rows | step | pandas wall | pandas CPU | pandas peak RSS | Spark wall | Spark CPU | driver peak RSS | "
          "JVM peak RSS | workers peak RSS | equal | load average |")
    print("| --- " * 12 + "|")
    for rows in args.rows:
        path = folder / f"discharges_{rows}.parquet"
        if not path.exists():
            write_table(path, rows)
        spec = load_spec(spec_file(folder, path))
        with_pandas = args.skip_pandas_above is None or rows <= args.skip_pandas_above
        steps = []
        if "risk" in args.steps:
            steps.append(("risk figures", partial(risk_pandas, path), partial(risk_spark, engine, path),
                          lambda left, right: left == right[0]))
        if "gate" in args.steps:
            steps.append(("gate (check)", partial(gate, pipeline_engine(), spec, keystore),
                          partial(gate, engine, spec, keystore), operator.eq))
        if "attacks" in args.steps:
            attacked = load_spec(attacks_spec_file(folder, path))
            steps.append(("gate with attacks (check)", partial(gate, pipeline_engine(), attacked, keystore, attacks=True),
                          partial(gate, engine, attacked, keystore, attacks=True), operator.eq))
        if "pseudonyms" in args.steps:
            from anon_dagster.engine.spark_engine import SparkIngested

            keyed = keyed_spec(spec)
            # each engine's table as it holds it before the step: pandas in memory, Spark a scan
            frame = read_table(path, text_columns=["pid"])[["pid"]] if with_pandas else None
            ingested = SparkIngested(read_parquet(engine.spark, path).select("pid", ROW_COLUMN), str(path))
            steps.append(("pseudonyms (hmac)", partial(pseudonyms_pandas, keyed, frame, keystore),
                          partial(pseudonyms_spark, engine, keyed, ingested, keystore),
                          lambda left, right: pandas_pseudonyms(left).equals(spark_pseudonyms(right, folder))))
        if "pram" in args.steps:
            perturbed = pram_spec(spec)
            frame = read_table(path)[["diagnosis"]] if with_pandas else None
            positioned = read_parquet(engine.spark, path).select("diagnosis", ROW_COLUMN)
            steps.append(("PRAM (diagnosis)", partial(pram_pandas, perturbed, frame),
                          partial(pram_spark, engine, perturbed, positioned),
                          lambda left, right: same_pram(left, right, folder)))
        if "mondrian" in args.steps:
            cut = mondrian_spec(spec)
            columns = ["age", "sex", "zip", "region", "admitted", "diagnosis"]
            frame = read_table(path)[columns] if with_pandas else None
            positioned = read_parquet(engine.spark, path).select(*columns, ROW_COLUMN)
            steps.append(("Mondrian (k=5 per region)", partial(mondrian_pandas, cut, frame),
                          partial(mondrian_spark, engine, cut, positioned),
                          lambda left, right: same_mondrian(left, right, folder)))
        if "release" in args.steps:
            steps.append(("release (end to end)",
                          partial(released, pipeline_engine(), path, folders(folder, f"{rows}-pandas"), keystore),
                          partial(released, engine, path, folders(folder, f"{rows}-spark"), keystore), same_release))
        for name, on_pandas, on_spark, same in steps:
            before = load()
            left = measure(on_pandas, args.repeats) if with_pandas else None
            right = measure(on_spark, args.repeats)
            equal = "Spark only" if left is None else "yes" if same(left.result, right.result) else "NO"
            print(row(rows, name, left, right, equal, before), flush=True)
            if name.startswith("pseudonyms"):
                rate = f"{NOT_RUN} | {NOT_RUN} |" if left is None else f"{rows / left.wall:,.0f} | {rows / left.cpu:,.0f} |"
                print(f"|  | pseudonyms per second (wall; CPU-second) | {rate} | {rows / right.wall:,.0f} | "
                      f"{rows / right.cpu:,.0f} |  |  |  |  |  |", flush=True)
            if name.startswith("release") and right.result.outcome != "published":
                print(f"|  | release outcome | {right.result.outcome} |" + " |" * 9, flush=True)
            if equal == "NO":
                raise SystemExit(f"{name} differs between the engines at {rows:,} rows")
            if name.startswith("risk"):
                before = load()
                duck = measure(partial(duckdb_groups, path, QIS + SENSITIVE, threads), args.repeats)
                groups = right.result[1]
                ratio = right.wall / duck.wall
                print(f"| {rows:,} | DuckDB GROUP BY ({threads} threads); Spark risk wall / DuckDB wall "
                      f"{ratio:.1f}× | | | | {duck.wall:.1f} s | {duck.cpu:.1f} s | {gib(duck.peaks.driver)} | | | "
                      f"{'yes' if duck.result == groups else 'NO'} ({duck.result:,} groups) | {before} → {load()} |",
                      flush=True)
                if duck.result != groups:
                    raise SystemExit(f"DuckDB counts {duck.result:,} groups, Spark's frequency table "
                                     f"{groups:,}, at {rows:,} rows")
    engine.close()


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def pipeline_engine():
    from anon_dagster.engine import PandasEngine

    return PandasEngine()


if __name__ == "__main__":
    main()
