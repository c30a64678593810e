"""What a release costs through Dagster, beside the same release through the core and the CLI.

    .venv/bin/python benchmarks/ui_run.py [--repeat 3] [--rows 30162] [--profile FILE]

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
- **ui run**: the same job launched as the UI launches it: the webserver's GraphQL ``launchRun``
  mutation (run in this process, on a workspace whose code location, the demo's ``definitions.py``
  with ``ANON_DAGSTER_CONFIG`` naming the release, is served by its own gRPC process, as under
  ``dagster dev``), the instance's run launcher (``DefaultRunLauncher``) starting a run worker
  process, which imports Dagster and the project, loads the definitions and runs the job. Wall
  time from the mutation until the run's status is final (polled every 20 ms); CPU time the run
  worker's own (recorded when it exits) plus this process's during the launch. The run queue is
  left out (``DefaultRunCoordinator``: the daemon's polling interval is not the run's cost);
- **cli check**: ``anon-dagster check SPEC --ledger L`` as a user runs it (a new process: start-up
  and imports included); it publishes nothing.

Wall and CPU time (the process's, for the CLI its child's), medians of ``--repeat``; the ratio
dagster / core is the cost of the Dagster layer, the ratio ui run / cli what a run from the UI
costs beside the same gate from the command line, each a new process (target <= 2 for both).
"""

from __future__ import annotations

import argparse
import base64
import json
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


# The run worker's definitions: the demo's, unchanged, and the worker's own CPU time appended to
# $UI_RUN_RECORD when it exits, with its CPU time once the definitions were loaded (the code
# server, which loads the same file, is not a worker). $UI_RUN_PROFILE: cProfile the run from there.
WORKER_DEFINITIONS = """
import atexit, json, multiprocessing, os, resource, runpy, time

def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

def _record() -> None:
    if multiprocessing.parent_process() is None:
        return
    if PROFILE is not None:
        PROFILE.disable()
        PROFILE.dump_stats(os.environ["UI_RUN_PROFILE"])
    with open(os.environ["UI_RUN_RECORD"], "a") as out:
        out.write(json.dumps({"cpu": _cpu(), "loaded_cpu": LOADED_CPU, "loaded": LOADED,
                              "ended": time.time()}) + "\\n")

defs = runpy.run_path(DEFINITIONS)["defs"]
LOADED, LOADED_CPU, PROFILE = time.time(), _cpu(), None
if multiprocessing.parent_process() is not None:
    atexit.register(_record)
    if os.environ.get("UI_RUN_PROFILE"):
        import cProfile
        PROFILE = cProfile.Profile()
        PROFILE.enable()
"""
LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
  }
}"""
REPOSITORIES = "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }"


def run_ui(rows: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """The UI run's wall and CPU time, and the part of each until the worker had loaded the definitions."""
    folder, spec, ledger = fresh(rows)
    (folder / "dagster_home" / "dagster.yaml").write_text(
        "telemetry:\n  enabled: false\nrun_coordinator:\n  module: dagster.core.run_coordinator\n"
        "  class: DefaultRunCoordinator\n")
    record = folder / "worker.jsonl"
    os.environ.update({"ANON_DAGSTER_CONFIG": str(spec.parent), "ANON_DAGSTER_LEDGER": str(ledger),
                       "UI_RUN_RECORD": str(record)})
    definitions = folder / "definitions.py"
    definitions.write_text(f"DEFINITIONS = {str(REPO / 'definitions.py')!r}\n" + WORKER_DEFINITIONS)
    # the code server and the worker inherit standard output and error: their logs go to the run's folder
    sys.stdout.flush()
    log, saved = open(folder / "dagster.log", "wb"), (os.dup(1), os.dup(2))
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    try:
        return ui_launch(folder, record, definitions)
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        log.close()
        for var in ("ANON_DAGSTER_CONFIG", "ANON_DAGSTER_LEDGER", "UI_RUN_RECORD"):
            os.environ.pop(var)


def ui_launch(folder: Path, record: Path, definitions: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """The launch and the wait of :func:`run_ui`, its logs already redirected."""
    from dagster import DagsterInstance, DagsterRunStatus
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import PythonFileTarget
    from dagster_graphql.test.utils import execute_dagster_graphql

    finished = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
    with DagsterInstance.get() as instance, WorkspaceProcessContext(
            instance, PythonFileTarget(str(definitions), None, str(folder), None)) as workspace:
        context = workspace.create_request_context()
        repo = execute_dagster_graphql(context, REPOSITORIES).data["repositoriesOrError"]["nodes"][0]
        params = {"selector": {"repositoryLocationName": repo["location"]["name"], "repositoryName": repo["name"],
                               "jobName": "adult_bench_release"}, "runConfigData": {}}
        start, started = clock(), time.time()
        launched = execute_dagster_graphql(context, LAUNCH, {"params": params}).data["launchRun"]
        if launched["__typename"] != "LaunchRunSuccess":
            raise SystemExit(f"the UI launch failed: {launched}")
        run_id = launched["run"]["runId"]
        while (run := instance.get_run_by_id(run_id)) is None or run.status not in finished:
            time.sleep(0.02)
        wall, launcher_cpu = since(start)
        for _ in range(250):  # the worker's record is written as it exits, just after its last event
            if record.exists() and record.read_text().endswith("\n"):
                break
            time.sleep(0.02)
    if run.status != DagsterRunStatus.SUCCESS or not (folder / "published" / "adult_bench.parquet").exists():
        raise SystemExit(f"the UI run did not publish the release ({run.status})")
    worker = json.loads(record.read_text().splitlines()[-1])
    return (wall, worker["cpu"] + launcher_cpu), (worker["loaded"] - started, worker["loaded_cpu"])


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
    parser.add_argument("--profile", metavar="FILE", help="one UI run only, its worker's run under cProfile "
                        "(stats saved to FILE, the 40 costliest calls printed); no timings")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    os.environ["ANON_DAGSTER_MASTER_KEY"] = base64.b64encode(os.urandom(32)).decode()
    for var in ("ANON_DAGSTER_KEYSTORE", "ANON_DAGSTER_KEYSTORE_PASSPHRASE", "ANON_DAGSTER_LEDGER",
                "ANON_DAGSTER_REFUSAL_WEBHOOK"):
        os.environ.pop(var, None)
    run_core(min(args.rows, 2000))  # imports and caches warmed for every path alike
    run_dagster(min(args.rows, 2000))
    run_ui(min(args.rows, 2000))
    if args.profile:
        import pstats

        os.environ["UI_RUN_PROFILE"] = str(Path(args.profile).resolve())
        run_ui(args.rows)
        pstats.Stats(os.environ.pop("UI_RUN_PROFILE")).sort_stats("cumulative").print_stats(40)
        return
    loads, dagster, core, ui, ui_loads, cli = [], [], [], [], [], []
    for _ in range(args.repeat):
        loaded, ran = run_dagster(args.rows)
        loads.append(loaded)
        dagster.append(ran)
        core.append(run_core(args.rows))
        ran, loaded = run_ui(args.rows)
        ui.append(ran)
        ui_loads.append(loaded)
        cli.append(run_cli(args.rows))
    rows = [("dagster: definitions loaded", median(loads)), ("dagster: release job run (in-process)", median(dagster)),
            ("core: run_gate + publish_release", median(core)), ("ui run: launched, worker process", median(ui)),
            ("ui run: until the worker's definitions", median(ui_loads)),
            ("cli: anon-dagster check (new process)", median(cli))]
    print(f"Adult, {args.rows:,} rows; medians of {args.repeat}")
    print(f"| {'path':<40} | {'wall':>8} | {'cpu':>8} |\n| {'-' * 40} | {'-' * 8} | {'-' * 8} |")
    for name, (wall, cpu) in rows:
        print(f"| {name:<40} | {wall:>7.2f}s | {cpu:>7.2f}s |")
    (dw, dc), (cw, cc) = median(dagster), median(core)
    print(f"ratio dagster / core: wall {dw / cw:.2f}, cpu {dc / cc:.2f} (target <= 2)")
    (uw, uc), (lw, lc) = median(ui), median(cli)
    print(f"ratio ui run / cli: wall {uw / lw:.2f}, cpu {uc / lc:.2f} (target <= 2)")


if __name__ == "__main__":
    main()
