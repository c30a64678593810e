"""CSV sources on Spark: the columns read as numbers typed in one pass over the file, beside one
pass per column (the way before), same session, same file.

A generated csv of ``--rows`` rows (an identifier, five number columns, a zip code with leading
zeros that stays text) is read as text by Spark, then typed by
:func:`anon_dagster.engine.spark_csv.numbers_where_lossless` over all six columns at once, and
by the same function called once per column; each result is written to Spark's ``noop`` sink
(every row computed, nothing kept) and the two typed tables are compared (schema and rows). Medians of
``--repeats`` runs; CPU is the process tree's (the JVM and its Python workers included).

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python benchmarks/spark_csv.py [--rows 2000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_measures import measure  # noqa: E402

from anon_dagster.engine.spark_csv import numbers_where_lossless  # noqa: E402
from anon_dagster.engine.spark_engine import SparkEngine  # noqa: E402

COLUMNS = ["age", "stay", "cost", "ward", "visits", "zip"]


def write_csv(path: Path, rows: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    pd.DataFrame({
        "pid": [f"P{i}" for i in range(rows)], "age": rng.integers(0, 100, rows), "stay": rng.integers(1, 60, rows),
        "cost": np.round(rng.gamma(2.0, 900.0, rows), 2), "ward": rng.integers(1, 40, rows),
        "visits": rng.integers(0, 12, rows), "zip": [f"{z:05d}" for z in rng.integers(1000, 53000, rows)],
    }).to_csv(path, index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="anon-dagster-csv-"))
    path = folder / "discharges.csv"
    write_csv(path, args.rows)
    engine = SparkEngine(scratch_dir=folder / "scratch")
    text = engine.spark.read.csv(str(path), header=True, inferSchema=False)

    def together():
        return numbers_where_lossless(engine, text, COLUMNS, str(path))

    def apart():
        df = text
        for column in COLUMNS:
            df = numbers_where_lossless(engine, df, [column], str(path))
        return df

    def run(typed):
        def go():
            df = typed()
            df.write.format("noop").mode("overwrite").save()
            return df
        return go

    one = measure(run(together), args.repeats)
    each = measure(run(apart), args.repeats)
    a, b = one.result, each.result
    same = a.schema == b.schema and a.exceptAll(b).count() == 0 and b.exceptAll(a).count() == 0
    kinds = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in one.result.schema.fields)
    print(f"{args.rows:,} rows ({kinds}); medians of {args.repeats}; equal tables: {same}")
    print("| typing | wall | CPU |")
    print("| --- | --- | --- |")
    print(f"| one pass for the {len(COLUMNS)} columns | {one.wall:.1f} s | {one.cpu:.1f} s |")
    print(f"| one pass per column | {each.wall:.1f} s | {each.cpu:.1f} s |")
    print(f"ratio (one pass / per column): wall {one.wall / each.wall:.2f}, CPU {one.cpu / each.cpu:.2f}")
    engine.close()


if __name__ == "__main__":
    main()
