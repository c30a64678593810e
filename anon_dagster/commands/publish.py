"""``anon-dagster publish SPEC [--partition P] [--input DATA] [--ledger PATH]``: evaluate and publish one partition.

The whole release outside Dagster (:func:`~anon_dagster.release.publish_partition.publish_partition`):
the gate, then the publication when every blocking check passes and, with
``approval.required``, once the evaluation is approved.

``--engine spark`` (``--spark-master``, default ``local[2]``) takes the rows through the same
gate and protocol on Spark (docs/scale.md).

Exit status: 0 published (or already published: the same data in place), 1 refused (by a
check, a rejection or the target), 3 awaiting approval (the line printed says the command that
approves it), 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys

from ._engine import add_engine_arguments, engine_of

AWAITING_EXIT = 3


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("publish", help="evaluate a partition and publish it when its checks (and approvals) allow",
                       description="Run the release gate on a partition and publish it if it passes (and, with "
                                   "approval.required, once approved).")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--partition", help="partition key (e.g. 2024 for a yearly release)")
    p.add_argument("--input", help="data to publish (default: the spec's source)")
    p.add_argument("--ledger", help="ledger file, which must exist (default: $ANON_DAGSTER_LEDGER, else under $DAGSTER_HOME)")
    add_engine_arguments(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..pseudonymize import open_keystore
    from ..release.governance import AwaitingApproval
    from ..release.ledger import open_ledger
    from ..release.publish_partition import publish_partition
    from ..release.refusals import PublicationRefused
    from ..spec import load_spec

    spec = load_spec(args.spec)
    keystore = open_keystore()
    ledger = open_ledger(args.ledger, keystore)
    try:
        with engine_of(args) as engine:
            done = publish_partition(spec, partition=args.partition, ledger=ledger, keystore=keystore,
                                     input_path=args.input, engine=engine)
    except AwaitingApproval as exc:
        print(f"awaiting approval: {exc}")
        return AWAITING_EXIT
    except PublicationRefused as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 1
    figures = done.figures()
    print(f"published: {figures['path']} ({done.published.rows} {'cells' if done.mode == 'aggregates' else 'rows'}, "
          f"ledger entry {figures['ledger_entry']} {figures['ledger_action']}, evaluation {figures['evaluation']}); "
          f"report {figures['report']}")
    return 0
