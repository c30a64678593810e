"""The demo release through Dagster on each engine, same run: wall clock and CPU per engine.

The demo data is generated (``--discharges`` discharges, seed 5) and the main demo spec run with
global recoding and its utility query bound at 3 points (as tests/spark/test_spark_dagster.py
runs it), in a folder of its own per engine: ``materialize_release`` of the partitions 2024 and
2025 (raw, pseudonymized, anonymized, checks, published), the outcomes asserted equal. The pandas
engine is the baseline. CPU is the whole process tree's (the JVM and its Python workers
included), read from /proc as in benchmarks/spark.py; the load average is printed (on a shared
machine the wall clock also counts time spent waiting for a core).

    .venv/bin/python benchmarks/spark_dagster.py [--discharges 4000] [--master local[2]]
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark import tree_cpu  # noqa: E402 - the benchmark beside this one

REPO = Path(__file__).resolve().parent.parent
PARTITIONS = ["2024", "2025"]


def run(folder: Path, engine: object) -> tuple[list[tuple], float, float]:
    """The demo's partitions through the release's job on ``engine``: outcomes, wall and CPU seconds."""
    from dagster import DagsterInstance

    from anon_dagster.dagster import load_release_definitions
    from anon_dagster.dagster.runner import materialize_release
    from anon_dagster.spec import load_spec

    spec = folder / "assets_config" / "hospital_discharges.yaml"
    defs = load_release_definitions(folder / "assets_config", engine=engine, storage_dir=str(folder / "storage"),
                                    ledger_path=str(folder / "ledger.sqlite"))
    wall, cpu = time.perf_counter(), tree_cpu()
    outcomes = materialize_release(defs, load_spec(spec), DagsterInstance.ephemeral(), PARTITIONS)
    wall, cpu = time.perf_counter() - wall, tree_cpu() - cpu
    return [(o.partition, o.outcome, o.failed_checks, o.rows_in, o.rows_published) for o in outcomes], wall, cpu


def prepared(folder: Path, generated: Path) -> Path:
    """The demo specs and data in ``folder``, the main spec with global recoding, and an empty ledger."""
    from anon_dagster.pseudonymize import open_keystore
    from anon_dagster.release.ledger import LedgerSeal, init_ledger

    shutil.copytree(REPO / "assets_config", folder / "assets_config")
    shutil.copytree(generated, folder / "data" / "demo")
    path = folder / "assets_config" / "hospital_discharges.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["anonymization"]["method"] = "global"
    spec["utility_queries"][0]["max_error_points"] = 3.0
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    init_ledger(folder / "ledger.sqlite", LedgerSeal.from_keystore(open_keystore()))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--discharges", type=int, default=4000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="anon-dagster-bench-"))
    os.environ.setdefault("ANON_DAGSTER_MASTER_KEY", base64.b64encode(bytes(range(32))).decode())
    os.environ.setdefault("ANON_DAGSTER_KEYSTORE_STATE", str(root / "keystate"))
    os.environ["DAGSTER_HOME"] = str(root / "home")
    (root / "home").mkdir()
    from anon_dagster.dagster.resources import EngineResource
    from anon_dagster.demo.generate import generate
    from anon_dagster.engine.spark_frames import start_session

    generate(root / "generated", population=100_000, discharges=args.discharges, seed=5)
    session = start_session(args.master, "anon_dagster-bench")
    try:
        pandas = run(prepared(root / "pandas", root / "generated"), None)
        spark = run(prepared(root / "spark", root / "generated"),
                    EngineResource(engine="spark", spark=session, scratch_dir=str(root / "scratch")))
    finally:
        session.stop()
    assert spark[0] == pandas[0], (spark[0], pandas[0])
    print(f"{args.discharges:,} discharges, partitions {', '.join(PARTITIONS)}: {pandas[0]}")
    print("| engine | wall | CPU | load average |")
    print("| --- | --- | --- | --- |")
    for name, (_, wall, cpu) in (("pandas (baseline)", pandas), (f"spark {args.master}", spark)):
        print(f"| {name} | {wall:.1f} s | {cpu:.1f} s | {os.getloadavg()[0]:.1f} |")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
