"""``anon-dagster report SPEC --partition P [--format md|html|json] [--output PATH]``.

Rebuilds a release's risk report from its ledger entry (the inputs stored at evaluation time),
byte-identical to the one written then: the date inside is the evaluation's date.
"""

from __future__ import annotations

import argparse
import sys

from ..io import write_bytes_atomic
from ..release.ledger import open_ledger
from ..release.publish import find_entry, rebuild_report
from ..release.report import render
from ..spec import load_spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="rebuild a release's risk report from the ledger")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--partition", help="partition key (omit for an unpartitioned release)")
    p.add_argument("--format", choices=("md", "html", "json"), default="md", help="output format (default md)")
    p.add_argument("--output", help="file to write (default: standard output)")
    p.add_argument("--id", type=int, help="a specific ledger entry (default: the latest of the partition)")
    p.add_argument("--ledger", help="ledger file, which must exist (default: $ANON_DAGSTER_LEDGER, else under $DAGSTER_HOME)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..pseudonymize import open_keystore

    spec = load_spec(args.spec)
    entry = find_entry(open_ledger(args.ledger, open_keystore()), spec.release, args.partition, args.id)
    text = render(rebuild_report(entry), args.format)
    if entry.spec_hash != spec.spec_hash():
        print(
            f"note: {args.spec} changed since this evaluation; the report shows the spec as it was then",
            file=sys.stderr,
        )
    if args.output:
        write_bytes_atomic(text.encode("utf-8"), args.output, mode=0o644)
    else:
        sys.stdout.write(text)
    return 0
