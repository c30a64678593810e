"""``anon-dagster anonymize SPEC.yaml [--input DATA] --output OUT [--partition P]``.

Reads the data (``--input``, or the spec's source; with ``--partition`` only the rows of that
time window of ``spec.partitions``), checks it against the spec, pseudonymizes the identifiers
the spec pseudonymizes (the key store is opened only then) and drops the others, anonymizes as
``anonymization`` declares, and writes OUT (parquet or csv by suffix) and
``OUT.transformations.json`` beside it, both atomically. Suppressed rows are not in OUT; their
count and breakdown are in the record. Bad input or an unreachable policy exits with status 2
and one line, and nothing is written.

``--engine spark`` (``--spark-master``, default ``local[2]``) runs the same steps on Spark and
writes OUT as a parquet folder of part files (docs/scale.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..anonymize.record import TransformationRecord
from ..spec import load_spec
from ._engine import add_engine_arguments, engine_of


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "anonymize",
        help="pseudonymize and anonymize a release's data; write it and its transformation record",
        description="Anonymize the data of a release spec as its anonymization section declares.",
    )
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--input", help="data to anonymize (default: the spec's source)")
    p.add_argument("--output", required=True, help="output table (.parquet or .csv)")
    p.add_argument("--partition", help="only the rows of this partition (e.g. 2024, 2024-03)")
    p.add_argument("--quiet", action="store_true", help="no summary, no progress")
    add_engine_arguments(p)
    p.set_defaults(handler=run)


class _Progress:
    """A one-line progress indicator on a terminal, shown once work takes over two seconds."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if not self.enabled or now - self.t0 < 2.0 or now - self.last < 0.2 or total <= 0:
            return
        self.last = now
        self.shown = True
        share = min(done / total, 1.0)
        bar = "#" * int(share * 30)
        print(f"\ranonymizing [{bar:<30}] {share:6.1%}", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.shown:
            print("\r" + " " * 60 + "\r", end="", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    spec = load_spec(args.spec)
    progress = _Progress(sys.stderr.isatty() and not args.quiet)
    try:
        with engine_of(args) as engine:
            outcome = engine.anonymize_release(spec, output=args.output, partition=args.partition,
                                               input_path=args.input, progress=progress)
    finally:
        progress.close()
    if not args.quiet:
        print(summary(outcome.record, outcome.output, time.perf_counter() - t0))
    return 0


def summary(record: TransformationRecord, out: Path, elapsed: float) -> str:
    """The few lines printed after a run: k reached, suppression, utility, time."""
    sup = record.suppression
    classes = record.classes
    util = record.utility
    lines = [
        f"{out}: {record.rows_out} of {record.rows_in} rows published "
        f"({record.method}), k reached {classes.k} over {classes.count} classes",
        f"suppressed: {sup.rows} rows ({sup.share:.2%}, budget {sup.budget_rows})"
        + (f", {sup.cells_total} cells" if sup.cells_total else ""),
    ]
    if record.levels is not None:
        search = record.search or {}
        lines.append("levels: " + ", ".join(f"{c}={lv}" for c, lv in record.levels.items())
                     + (f" ({search['nodes_checked']} of {search['lattice_size']} lattice nodes checked, "
                        f"{len(search.get('frontier', []))} minimal nodes on the frontier, "
                        f"{'complete' if search.get('frontier_complete') else 'partial'})" if search else ""))
    value = util.value
    lines.append(
        f"utility: {util.metric} = {value:.6g}" if isinstance(value, float | int) else f"utility: {util.metric}"
    )
    for name, err in util.queries.items():
        lines.append(f"query {name}: error {err:.4g} percentage points")
    lines.append(f"time: {elapsed:.2f} s; record: {out.name}.transformations.json")
    return "\n".join(lines)
