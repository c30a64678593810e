"""``python -m anon_dagster.demo run`` (``make demo``): the demo releases, end to end in Dagster.

Generates the demo data, opens (creating on first use) the development key store and creates the
publication ledger when there is none (``anon-dagster ledger init``), then materializes every partition of every release spec beside the demo spec — the demo release,
published yearly, the strict release that is refused by design, and the reviewed release that
awaits the approval of its data protection officer — through the releases' Dagster jobs, against
a Dagster home beside the spec folder so that ``dagster dev`` shows the runs, checks and reports
afterwards.

The pipeline runs as :data:`PIPELINE_RUNNER` (``ANON_DAGSTER_RUNNER``). A partition awaiting
approval is approved with the exact ``anon-dagster approve`` command printed, run as
:data:`DEMO_APPROVER`; the release's approval sensor is then ticked as the daemon would, and the
run it requests publishes the partition.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from ..pseudonymize.keystore import ENV_DEV, ENV_KEYSTORE, ENV_MASTER_KEY
from ..release.governance.binding import RUNNER_ENV
from ..release.partition_outcome import PartitionOutcome
from ..spec import ReleaseSpec
from .generate import REPO_ROOT, default_out_dir, generate

DEMO_SPEC = REPO_ROOT / "assets_config" / "hospital_discharges.yaml"
PIPELINE_RUNNER = "demo-pipeline"  # who runs the evaluations: never an approver of them
DEMO_APPROVER = "dpo"  # the demo's data protection officer, the approver its reviewed release lists


def _show(path: Path | None) -> str:
    if path is None:
        return "-"
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def run_demo(spec: str | Path = DEMO_SPEC) -> int:
    """Run the demo; returns 0 when every release did what its spec leads to expect.

    A release refused by its checks is an expected outcome (printed with the failed checks); a
    step that fails for another reason (bad data, key store) makes the exit status 1. The
    environment variables it sets for the runs are restored afterwards.
    """
    import logging
    import warnings

    saved = {v: os.environ.get(v) for v in ("DAGSTER_HOME", ENV_DEV, RUNNER_ENV)}
    keystore_log = logging.getLogger("anon_dagster.pseudonymize.keystore")
    saved_level = keystore_log.level
    try:
        # warning filters and log levels set for the demo's output are undone afterwards
        with warnings.catch_warnings():
            return _run_demo(Path(spec))
    finally:
        keystore_log.setLevel(saved_level)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run_demo(spec: Path) -> int:
    started = time.perf_counter()
    manifest = generate(default_out_dir())
    state = "already current" if manifest["skipped"] else "written"
    sizes = ", ".join(f"{name} {info['rows']:,} rows" for name, info in manifest["files"].items())
    print(f"demo data in {_show(default_out_dir())}: {state} ({sizes})", flush=True)

    # Development key store: only when no real one is configured.
    configured = any(os.environ.get(v) for v in (ENV_KEYSTORE, ENV_MASTER_KEY))
    if not configured:
        import warnings

        from ..pseudonymize import open_keystore
        from ..pseudonymize.keystore import dev_keystore_path

        os.environ[ENV_DEV] = "1"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            open_keystore(dev=True)
        print(f"development key store: {_show(dev_keystore_path())} -- FOR DEVELOPMENT ONLY "
              "(synthetic demo data; its passphrase is public): never use it for real data")

    home = Path(os.environ.get("DAGSTER_HOME") or (spec.resolve().parent.parent / ".dagster_home"))
    # owner-only: Dagster's run and event storage, the intermediate tables and the ledger live here
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    os.environ["DAGSTER_HOME"] = str(home)

    import logging
    import warnings

    from dagster import DagsterInstance

    from ..dagster import AnonReleaseComponent
    from ..dagster.runner import materialize_release
    from ..spec import load_specs

    # The key store's development warning was printed once above; Dagster's preview notice
    # (partition-aware checks) is documented in docs/dagster.md.
    logging.getLogger("anon_dagster.pseudonymize.keystore").setLevel(logging.ERROR)

    # The ledger is created explicitly, as `anon-dagster ledger init` does; a ledger that was
    # lost while its anchor remembers publications is an error, never a fresh start.
    from ..pseudonymize import open_keystore
    from ..release.ledger import LedgerSeal, init_ledger

    created = init_ledger(None, LedgerSeal.from_keystore(open_keystore()))
    if created.action != "exists":
        print(f"ledger: {_show(created.ledger.path)}: {created.action}")
    warnings.filterwarnings("ignore", category=UserWarning)
    config = spec.resolve().parent
    specs = load_specs(config)
    defs = AnonReleaseComponent(config_dir=str(config)).build_definitions(config)
    status = 0
    os.environ[RUNNER_ENV] = PIPELINE_RUNNER
    with DagsterInstance.get() as instance:
        for release in specs:
            for out in materialize_release(defs, release, instance):
                if out.outcome == "awaiting_approval":
                    rows = f"{out.rows_in:,} rows in" if out.rows_in is not None else "no rows read"
                    print(f"{out.release} {out.partition or ''}: {rows}, AWAITING APPROVAL: every blocking check "
                          f"passed, nothing published  (report {_show(out.report)})", flush=True)
                    out = _approve_and_publish(defs, instance, release, out)
                status = max(status, _print_outcome(out))
    elapsed = time.perf_counter() - started
    keystore_env = "" if configured else "ANON_DAGSTER_DEV_KEYSTORE=1 "
    print(f"\ndone in {elapsed:.1f} s. Open the UI (runs, checks, reports as metadata):\n"
          # Dagster wants an absolute DAGSTER_HOME: "$PWD/..." keeps the line short and valid
          f"  DAGSTER_HOME=\"$PWD/{_show(home)}\" {keystore_env}.venv/bin/dagster dev -f definitions.py"
          if not Path(_show(home)).is_absolute() else
          f"  DAGSTER_HOME={home} {keystore_env}.venv/bin/dagster dev -f definitions.py")
    return status


def _print_outcome(out: PartitionOutcome) -> int:
    """Print one partition's outcome; 1 when a step failed for another reason than the gate."""
    where = f"{out.release} {out.partition or ''}".strip()
    rows = f"{out.rows_in:,} rows in" if out.rows_in is not None else "no rows read"
    if out.published is not None:
        print(f"{where}: {rows}, PUBLISHED {out.rows_published:,} rows -> {_show(out.published)}"
              f"  (report {_show(out.report)})")
    elif out.outcome == "awaiting_approval":
        print(f"{where}: still AWAITING APPROVAL: {out.approve_command}")
    elif out.failed_checks:
        print(f"{where}: {rows}, REFUSED by {', '.join(sorted(set(out.failed_checks)))}"
              f"  (report {_show(out.report)})")
        for reason in dict.fromkeys(out.reasons):
            print(f"    {reason.splitlines()[0]}")
    else:
        print(f"{where}: {rows}, FAILED in {', '.join(out.failed_steps) or 'the run'} "
              f"(see the run in the UI)", file=sys.stderr)
        return 1
    return 0


def _approve_and_publish(defs: Any, instance: Any, spec: ReleaseSpec, out: PartitionOutcome) -> PartitionOutcome:
    """Approve the awaiting partition as the demo's DPO with the exact command printed, tick the
    release's approval sensor as the daemon would, and run what it requests."""
    from dagster import build_sensor_context

    from ..cli import main as cli
    from ..dagster.runner import run_requested
    from ..dagster.translator import ReleaseTranslator

    t = ReleaseTranslator()
    sensor = defs.resolve_sensor_def(f"{spec.release}_approval_sensor")

    def tick(cursor: str | None) -> Any:
        resources = {k: defs.resources[k] for k in ("ledger", "keystore")}  # what the sensor reads
        with build_sensor_context(instance=instance, cursor=cursor, definitions=defs, resources=resources) as context:
            return sensor.evaluate_tick(context)

    seen = tick(None).cursor  # the approvals already in the ledger were acted on by earlier runs
    args = [_show(Path(str(spec.label))), *(["--partition", out.partition] if out.partition else []),
            "--evaluation", str(out.evaluation), "--as", DEMO_APPROVER, "--reason", "demo: report read"]
    print(f"    to approve, the demo's DPO runs: anon-dagster approve {shlex.join(args)}", flush=True)
    os.environ[RUNNER_ENV] = DEMO_APPROVER  # the approver's own account, not the pipeline's
    try:
        if cli(["approve", *args]) != 0:
            return out
    finally:
        os.environ[RUNNER_ENV] = PIPELINE_RUNNER
    requests = tick(seen).run_requests
    print(f"    approval sensor: {len(requests)} run requested", flush=True)
    for request in requests:  # the run the daemon would launch
        out = run_requested(defs, spec, instance, request, translator=t)
    return out
