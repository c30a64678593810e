"""What a release costs through Dagster, beside the same release through the core and the CLI.

    .venv/bin/python benchmarks/ui_run.py [--repeat 3] [--rows 30162]

The release is Adult (``datasets/adult``, 30,162 rows, or its first ``--rows``) with a
pseudonymized row identifier, five QIs with ARX's hierarchies, occupation as the sensitive
attribute, global recoding at k = 5, four thresholds, a utility query, composition with the
ledger and a row publication. Each repeat starts from nothing (a new folder, ledger, key store
state and Dagster home) and times, interleaved:

- **dagster**: the release's job run as a UI run runs it, with the in-process executor against a
  real ``DagsterInstance`` on disk (run storage, event log, the IO manager's encrypted tables):
  ingest, pseudonymize, anonymize, the checks, the publication (which re-verifies every check);
  loading the definitions is timed apart;
- **core**: the same functions without Dagster, as a script would call them:
  ``pipeline.run_gate`` then ``publication.publish_release``;
- **cli check**: ``anon-dagster check SPEC --ledger L`` as a user runs it (a new process: start-up
  and imports included); it publishes nothing.

Wall and CPU time (the process's, for the CLI its child's), medians of ``--repeat``; the ratio
dagster / core is the cost of the Dagster layer (target <= 2).
"""

from __future__ import annotations

import argparse
import base64
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "datasets" / "adult"
QIS = ["sex", "age", "race", "marital-status", "education"]


def write_release(folder: Path, rows: int) -> Path:
    data = pd.read_csv(ADULT / "adult.csv", sep=";").head(rows)
    data.insert(0, "pid", [f"P{i:07d}" for i in range(len(data))])
    data.to_csv(folder / "adult.csv", sep=";", index=False)
    columns: dict = {"pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}}}
    for name in data.columns[1:]:
        if name in QIS:
            columns[name] = {"role": "quasi", "hierarchy": {"type": "table",
                                                            "path": str(ADULT / f"adult_hierarchy_{name}.csv")}}
        else:
            columns[name] = {"role": "sensitive" if name == "occupation" else "insensitive"}
    spec = {
        "release": "adult_bench", "description": "Adult through the release gate",
        "source": {"path": "../adult.csv", "separator": ";"}, "columns": columns,
        "anonymization": {"method": "global", "k": 5, "max_suppression": 0.05, "utility": "loss"},
        "policy": {"thresholds": {"k": 5, "prosecutor_max": 0.2, "l_distinct": 2, "uniques_fraction": 0.0}},
        "utility_queries": [{"name": "occupation_by_sex", "group_by": ["sex"], "target": "occupation",
                             "max_error_points": 2.0}],
        "composition": {"population": "adult_people", "person": "pid", "min_k": 2},
        "publication": {"path": "../published/{release}.parquet"},
    }
    path = folder / "specs" / "adult_bench.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def fresh(rows: int) -> tuple[Path, Path, Path]:
    """A new folder with the release, its key store state and a new ledger; the environment set."""
    folder = Path(tempfile.mkdtemp(prefix="ui_run_"))
    spec = write_release(folder, rows)
    os.environ["ANON_DAGSTER_KEYSTORE_STATE"] = str(folder / "keystate")
    os.environ["DAGSTER_HOME"] = str(folder / "dagster_home")
    (folder / "dagster_home").mkdir(mode=0o700)
    (folder / "dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    from anon_dagster.pseudonymize import open_keystore
    from anon_dagster.release.ledger import LedgerSeal, init_ledger

    ledger = folder / "ledger.sqlite"
    init_ledger(ledger, LedgerSeal.from_keystore(open_keystore()))
    return folder, spec, ledger


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = clock()
    return wall - start[0], cpu - start[1]


def run_dagster(rows: int) -> tuple[tuple[float, float], tuple[float, float]]:
    from dagster import DagsterInstance

    from anon_dagster.dagster import AnonReleaseComponent

    folder, spec, ledger = fresh(rows)
    start = clock()
    defs = AnonReleaseComponent(specs=[str(spec)], storage_dir=str(folder / "storage"),
                                ledger_path=str(ledger)).build_definitions(folder)
    job = defs.resolve_job_def("adult_bench_release")
    loaded = since(start)
    with DagsterInstance.local_temp(str(folder / "dagster_home")) as instance:
        start = clock()
        result = job.execute_in_process(instance=instance, raise_on_error=False,
                                        run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}})
        ran = since(start)
    if not result.success or not (folder / "published" / "adult_bench.parquet").exists():
        raise SystemExit("the Dagster run did not publish the release")
    return loaded, ran


def run_core(rows: int) -> tuple[float, float]:
    from anon_dagster.pseudonymize import open_keystore
    from anon_dagster.release import pipeline, publication
    from anon_dagster.release.ledger import open_ledger
    from anon_dagster.spec import load_spec

    folder, spec_path, ledger_path = fresh(rows)
    start = clock()
    spec = load_spec(spec_path)
    keystore = open_keystore()
    ledger = open_ledger(ledger_path, keystore)
    gate = pipeline.run_gate(spec, keystore=keystore, ledger=ledger)
    publication.publish_release(spec, gate.evaluation, anonymized=gate.anonymized.data,
                                pseudonymized=gate.pseudonymized.data, ledger=ledger, keystore=keystore)
    elapsed = since(start)
    if not (folder / "published" / "adult_bench.parquet").exists():
        raise SystemExit("the core did not publish the release")
    return elapsed


def run_cli(rows: int) -> tuple[float, float]:
    folder, spec, ledger = fresh(rows)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "anon_dagster.cli", "check", str(spec), "--ledger", str(ledger)],
                          capture_output=True, text=True, env=dict(os.environ))
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"anon-dagster check failed ({proc.returncode}): {proc.stdout[-500:]}{proc.stderr[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=30_162)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    os.environ["ANON_DAGSTER_MASTER_KEY"] = base64.b64encode(os.urandom(32)).decode()
    for var in ("ANON_DAGSTER_KEYSTORE", "ANON_DAGSTER_KEYSTORE_PASSPHRASE", "ANON_DAGSTER_LEDGER",
                "ANON_DAGSTER_REFUSAL_WEBHOOK"):
        os.environ.pop(var, None)
    run_core(min(args.rows, 2000))  # imports and caches warmed for every path alike
    run_dagster(min(args.rows, 2000))
    loads, dagster, core, cli = [], [], [], []
    for _ in range(args.repeat):
        loaded, ran = run_dagster(args.rows)
        loads.append(loaded)
        dagster.append(ran)
        core.append(run_core(args.rows))
        cli.append(run_cli(args.rows))
    rows = [("dagster: definitions loaded", median(loads)), ("dagster: release job run (in-process)", median(dagster)),
            ("core: run_gate + publish_release", median(core)), ("cli: anon-dagster check (new process)", median(cli))]
    print(f"Adult, {args.rows:,} rows; medians of {args.repeat}")
    print(f"| {'path':<40} | {'wall':>8} | {'cpu':>8} |\n| {'-' * 40} | {'-' * 8} | {'-' * 8} |")
    for name, (wall, cpu) in rows:
        print(f"| {name:<40} | {wall:>7.2f}s | {cpu:>7.2f}s |")
    (dw, dc), (cw, cc) = median(dagster), median(core)
    print(f"ratio dagster / core: wall {dw / cw:.2f}, cpu {dc / cc:.2f} (target <= 2)")


if __name__ == "__main__":
    main()
