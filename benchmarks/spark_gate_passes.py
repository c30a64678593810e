"""The Spark gate's cost in Spark jobs beside its time, this checkout against an earlier one.

The table and the release are those of ``benchmarks/spark.py`` (seeded discharges as parquet;
global recoding at k=5 with 1% suppression, l-diversity, a utility query, the data contract).
For each size, ``SparkEngine.run_gate`` runs ``--repeats`` times in one Spark session on
``local[2]`` (``--master``), each run under a Spark job group, and the script prints the medians
of the run's wall clock, its CPU seconds (the process tree's: this process, the JVM and its
Python workers, read from /proc) and the number of Spark jobs the group ran (the status
tracker's count: every action, and each query stage adaptive execution submits as a job of its
own). The outcome is asserted equal to the pandas engine's (``check``'s JSON, run once, untimed).

With ``--baseline DIR`` (a checkout of an earlier commit, for instance ``git worktree add DIR
COMMIT``) the same runs are made first with that checkout's package, in a process of their own,
and both lines are printed with the ratio. The load average is printed with each line: on a
shared machine the wall clock also counts the time spent waiting for a core.

    .venv/bin/python benchmarks/spark_gate_passes.py [--rows 1000000] [--repeats 3]
        [--baseline DIR] [--folder DIR] [--master local[2]]
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def bench_module(code: Path):
    """``benchmarks/spark.py`` of the checkout ``code`` (its table, spec and CPU clock; it puts
    the checkout first on the path and imports its package)."""
    spec = importlib.util.spec_from_file_location("spark_benchmark", code / "benchmarks" / "spark.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_side(code: Path, rows: int, repeats: int, folder: Path, master: str, compare: bool) -> dict:
    """The medians of ``repeats`` gate runs with the package of the checkout ``code``."""
    bench = bench_module(code)
    from anon_dagster.engine.spark_engine import SparkEngine
    from anon_dagster.pseudonymize import open_keystore
    from anon_dagster.spec import load_spec

    path = folder / f"discharges_{rows}.parquet"
    if not path.exists():
        bench.write_table(path, rows)
    spec = load_spec(bench.spec_file(folder, path))
    keystore = open_keystore()
    engine = SparkEngine(master=master, conf={"spark.driver.memory": "6g"}, scratch_dir=folder / "scratch")
    engine.spark.range(1).count()
    tracker = engine.spark.sparkContext.statusTracker()
    walls, cpus, jobs, outcome = [], [], [], None
    for i in range(repeats):
        group = f"gate-{i}"
        engine.spark.sparkContext.setJobGroup(group, "the release gate")
        wall, cpu = time.perf_counter(), bench.tree_cpu()
        outcome = engine.run_gate(spec, keystore=keystore).evaluation.to_json()
        walls.append(time.perf_counter() - wall)
        cpus.append(bench.tree_cpu() - cpu)
        jobs.append(len(tracker.getJobIdsForGroup(group)))
    engine.spark.sparkContext.setJobGroup("after", "after the gate")
    engine.close()
    equal = None
    if compare:
        from anon_dagster.engine import PandasEngine

        reference = PandasEngine().run_gate(spec, keystore=keystore).evaluation.to_json()
        equal = {k: v for k, v in reference.items() if k != "evaluation"} == \
            {k: v for k, v in outcome.items() if k != "evaluation"}
    import anon_dagster

    if Path(anon_dagster.__file__).resolve().parents[1] != code.resolve():
        raise SystemExit(f"the package imported is {anon_dagster.__file__}, not the checkout {code}'s")
    return {"wall": statistics.median(walls), "cpu": statistics.median(cpus), "jobs": statistics.median(jobs),
            "runs": repeats, "equal": equal, "load": " ".join(f"{x:.1f}" for x in os.getloadavg())}


def baseline_side(code: Path, rows: int, repeats: int, folder: Path, master: str) -> dict:
    """:func:`run_side` for the checkout ``code``, in a process of its own."""
    # the executors' Python workers import the package too: the checkout first on their path
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run([sys.executable, __file__, "--side", str(code), "--rows", str(rows), "--repeats",
                          str(repeats), "--folder", str(folder), "--master", master],
                         check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--repeats", type=int, default=3, help="gate runs per checkout (medians)")
    parser.add_argument("--baseline", help="a checkout of an earlier commit to compare with")
    parser.add_argument("--folder", help="where the generated tables go (default: a temporary folder)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--side", help=argparse.SUPPRESS)  # one checkout's runs, printed as JSON
    args = parser.parse_args()
    os.environ.setdefault("ANON_DAGSTER_MASTER_KEY", base64.b64encode(bytes(range(32))).decode())
    folder = Path(args.folder or tempfile.mkdtemp(prefix="anon-dagster-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    # the key store's state apart from the data folder (the key store refuses a place inside it)
    os.environ.setdefault("ANON_DAGSTER_KEYSTORE_STATE", tempfile.mkdtemp(prefix="anon-dagster-bench-keys-"))
    if args.side:
        print(json.dumps(run_side(Path(args.side), args.rows[0], args.repeats, folder, args.master, False)))
        return
    print(f"the Spark gate on {args.master}, median of {args.repeats} run(s) per checkout")
    print("| rows | code | wall | CPU | Spark jobs | equal to pandas | load average after |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for rows in args.rows:
        old = baseline_side(Path(args.baseline), rows, args.repeats, folder, args.master) if args.baseline else None
        new = run_side(HERE.parent, rows, args.repeats, folder, args.master, True) if old is None else \
            baseline_side(HERE.parent, rows, args.repeats, folder, args.master)
        if old is not None:
            print(f"| {rows:,} | baseline | {old['wall']:.1f} s | {old['cpu']:.1f} s | {old['jobs']:.0f} |  | "
                  f"{old['load']} |")
            sys.path.insert(0, str(HERE.parent))
            new["equal"] = run_side(HERE.parent, rows, 1, folder, args.master, True)["equal"]
        print(f"| {rows:,} | this checkout | {new['wall']:.1f} s | {new['cpu']:.1f} s | {new['jobs']:.0f} | "
              f"{'yes' if new['equal'] else 'NO'} | {new['load']} |", flush=True)
        if old is not None:
            print(f"| {rows:,} | ratio | x{new['wall'] / old['wall']:.2f} | x{new['cpu'] / old['cpu']:.2f} | "
                  f"x{new['jobs'] / old['jobs']:.2f} |  |  |", flush=True)
        if not new["equal"]:
            raise SystemExit(f"the gate's outcome differs from the pandas engine's at {rows:,} rows")


if __name__ == "__main__":
    main()
