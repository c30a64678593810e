"""Global recoding on Spark with the nodes judged on Spark, beside the search over the bottom table.

For each size (200,000 rows by default) the seeded discharges of ``benchmarks/spark.py`` are
written as parquet and pseudonymized once on Spark; then the anonymize step runs twice on the
same table: with the default ``max_driver_cells`` (the baseline: the bottom frequency table read
by the driver, one search), and with a budget holding as many table rows as the class bound
allows classes (``B + (N - B) // k``), so the bottom is over it and the lattice's nodes are
judged on Spark (one Spark job per node judged, one search per minimal node). The chosen node,
its loss and the rows suppressed are asserted equal. Policy: k (``--k``, 25 by default: a bound
below the bottom's rows, so the walk climbs), 1% suppression, prosecutor_avg 0.2 (no sensitive
attribute: each table's rows are its classes).

    .venv/bin/python benchmarks/spark_node_judging.py [--rows 200000 1000000] [--k 25] [--master local[2]]
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark import Timer, load, spec_file, write_table  # noqa: E402

from anon_dagster.anonymize.criteria import Policy  # noqa: E402
from anon_dagster.engine.spark_engine import SparkEngine  # noqa: E402
from anon_dagster.engine.spark_frames import DEFAULT_MAX_DRIVER_CELLS, ROW_COLUMN  # noqa: E402
from anon_dagster.engine.spark_node_judging import class_bound  # noqa: E402
from anon_dagster.pseudonymize import open_keystore  # noqa: E402
from anon_dagster.spec import load_spec  # noqa: E402


def judged_spec(folder: Path, data: Path, k: int) -> Path:
    """``benchmarks/spark.py``'s spec at ``k``, without the sensitive criteria and the utility query."""
    path = spec_file(folder, data)
    spec = yaml.safe_load(path.read_text())
    spec["anonymization"]["k"] = k
    spec["policy"]["thresholds"] = {"k": k, "prosecutor_avg": 0.2}
    spec.pop("utility_queries")
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[200_000])
    parser.add_argument("--k", type=int, default=25)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    os.environ.setdefault("ANON_DAGSTER_MASTER_KEY", base64.b64encode(bytes(range(32))).decode())
    folder = Path(tempfile.mkdtemp(prefix="anon-dagster-bench-"))
    os.environ.setdefault("ANON_DAGSTER_KEYSTORE_STATE", str(folder / "keystate"))
    engine = SparkEngine(master=args.master, conf={"spark.driver.memory": "4g"}, scratch_dir=folder / "scratch")
    print(f"load average {load()}")
    print("| rows | path | max_driver_cells | wall | CPU | node | Spark counts | minimal nodes |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for rows in args.rows:
        path = folder / f"discharges_{rows}.parquet"
        write_table(path, rows)
        spec = load_spec(judged_spec(folder, path, args.k))
        pseudo = engine.pseudonymize(spec, engine.ingest(spec), open_keystore())
        pseudo.df.persist().count()
        columns = [*spec.generalized_qis, *spec.partition_keys]
        bottom = pseudo.df.select(*columns).distinct().count()
        width = len(columns) + 1 + (ROW_COLUMN in pseudo.df.columns)
        bound = class_bound(Policy.from_spec(spec), pseudo.df.count())
        results = []
        for name, cells in (("bottom table (baseline)", DEFAULT_MAX_DRIVER_CELLS),
                            ("nodes judged on Spark", min(bound, bottom - 1) * width)):
            engine.max_driver_cells = cells
            with Timer() as t:
                done = engine.anonymize(spec, pseudo)
            judged = done.record.search.get("judged_on_spark") or {}
            results.append((done.record.levels, done.record.search["loss"], done.suppressed))
            print(f"| {rows:,} | {name} | {cells:,} | {t.wall:.1f} s | {t.cpu:.1f} s | {done.record.levels} | "
                  f"{judged.get('spark_counts', '-')} | {len(judged.get('minimal_nodes', [])) or '-'} |", flush=True)
        (lv0, loss0, sup0), (lv1, loss1, sup1) = results
        if lv0 != lv1 or sup0 != sup1 or abs(loss0 - loss1) > 1e-9 * max(1.0, abs(loss0)):
            raise SystemExit(f"the two paths differ at {rows:,} rows: {results}")
        print(f"|  | bottom {bottom:,} rows, class bound {bound:,} | | | | same node, loss and suppression | | |")
    engine.close()


if __name__ == "__main__":
    main()
