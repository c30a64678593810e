"""A catalog table beside the same rows as a parquet file, on the Spark engine: the gate's run and
the cost of the rows' content positions.

For each size (1,000,000 rows by default) the seeded discharges of :mod:`benchmarks.spark` are
written as parquet, and the same file is registered as the temporary view ``bench_source``. Then:

* **gate, parquet** (the baseline): ``SparkEngine.run_gate`` on the spec reading the file
  (``source.path``: positions from the file, ``_metadata.row_index``);
* **gate, table**: the same spec reading ``source.table: bench_source`` (positions from the rows'
  contents: a window partitioned by a hash bucket, one shuffle wherever a step reads them);
  every check's name, measured, threshold and verdict asserted equal to the baseline's;
* **first rows**: the bottom frequency table with each combination's first row
  (``SparkEngine.frequencies``) on each source, the step that reads the positions.

A first, untimed gate on the file warms the JVM up. Wall clock and CPU seconds (the process tree's, Spark's JVM and Python workers included) are given
for each; the machine's load average is printed, since on a shared machine the wall clock also
counts time spent waiting for a core.

    .venv/bin/python benchmarks/spark_catalog_source.py [--rows 1000000] [--master local[2]] [--folder DIR]
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from anon_dagster.engine.spark_engine import SparkEngine  # noqa: E402
from anon_dagster.pseudonymize import open_keystore  # noqa: E402
from anon_dagster.spec import load_spec  # noqa: E402
from benchmarks.spark import QIS, SENSITIVE, Timer, spec_file, write_table  # noqa: E402

VIEW = "bench_source"


def as_table(spec_path: Path) -> Path:
    """The spec at ``spec_path`` reading the view :data:`VIEW` instead of its file."""
    spec = yaml.safe_load(spec_path.read_text())
    spec["source"] = {"table": VIEW}
    out = spec_path.with_name("bench_table.yaml")
    out.write_text(yaml.safe_dump(spec, sort_keys=False))
    return out


def outcome(run) -> list[tuple]:
    return [(c.name, c.measured, c.threshold, c.passed) for c in run.evaluation.checks]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--folder", help="where the tables are written (default: a temporary folder)")
    args = parser.parse_args(argv)
    # a fixed benchmark key, in the environment the executors inherit (as benchmarks/spark.py)
    os.environ.setdefault("ANON_DAGSTER_MASTER_KEY", base64.b64encode(bytes(range(32))).decode())
    os.environ.setdefault("ANON_DAGSTER_KEYSTORE_STATE", tempfile.mkdtemp(prefix="bench-keystate-"))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores; "
          f"Spark master {args.master}")
    engine = SparkEngine(master=args.master)
    keystore = open_keystore()
    try:
        for rows in args.rows:
            folder = Path(args.folder or tempfile.mkdtemp(prefix="bench-catalog-")) / f"rows-{rows}"
            folder.mkdir(parents=True, exist_ok=True)
            data = folder / "discharges.parquet"
            if not data.exists():
                write_table(data, rows)
            by_file = load_spec(spec_file(folder, data))
            by_table = load_spec(as_table(spec_file(folder, data)))
            engine.spark.read.parquet(str(data)).createOrReplaceTempView(VIEW)
            engine.run_gate(by_file, keystore=keystore)  # warm-up, untimed: the JVM's first run is slower
            figures = {}
            for label, spec in (("parquet", by_file), ("table", by_table)):
                with Timer() as gate:
                    run = engine.run_gate(spec, keystore=keystore)
                df, _ = engine.read(spec, None, None)
                with Timer() as first:
                    engine.frequencies(df, [*QIS, *SENSITIVE], what="the bottom frequency table")
                figures[label] = (gate, first, outcome(run))
            assert figures["table"][2] == figures["parquet"][2], (figures["table"][2], figures["parquet"][2])
            base_gate, base_first, _ = figures["parquet"]
            print(f"\n{rows:,} rows: the same outcome on both sources ({len(figures['table'][2])} checks)")
            print(f"{'step':<26}{'parquet (baseline)':>22}{'catalog table':>22}")
            for name, i in (("gate (run_gate)", 0), ("first rows (frequencies)", 1)):
                cells = [f"{figures[k][i].wall:8.1f} s wall {figures[k][i].cpu:6.1f} s cpu" for k in ("parquet", "table")]
                print(f"{name:<26}{cells[0]:>22}{cells[1]:>22}")
            ratio = figures["table"][0].wall / base_gate.wall if base_gate.wall else float("nan")
            print(f"gate wall clock, table / parquet: {ratio:.2f}")
            engine.spark.catalog.dropTempView(VIEW)
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
