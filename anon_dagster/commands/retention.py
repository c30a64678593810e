"""``anon-dagster retention SPEC [--now ISO] [--dry-run] [--storage DIR] [--ledger PATH] [--reason TEXT]``.

Deletes the release's stored intermediate tables past their retention (the spec's ``retention``
block; :mod:`anon_dagster.release.governance.retention`): each one's data key, then its file;
each deletion in the custody log, one ``retention`` event in the ledger. ``--dry-run`` lists
what would be deleted and changes nothing. Exit 0 (also when nothing is due), 2 on bad input.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("retention", help="delete the stored intermediates past the spec's retention (crypto-shredded)",
                       description="Delete a release's stored raw, pseudonymized and anonymized tables past their "
                                   "retention: the partition's data key first, then the file.")
    p.add_argument("spec", help="release spec (YAML)")
    p.add_argument("--now", help="the time to judge retention at, ISO 8601 (default: now, UTC)")
    p.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    p.add_argument("--storage", help="the intermediates' folder (default: $DAGSTER_HOME/anon_dagster/storage)")
    p.add_argument("--ledger", help="ledger file (default: $ANON_DAGSTER_LEDGER, else under $DAGSTER_HOME)")
    p.add_argument("--reason", default="", help="why (recorded in the custody log; default: the spec's retention)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from .. import storage
    from ..errors import UserError
    from ..pseudonymize import open_keystore
    from ..release.governance.retention import apply_retention, intermediates_base, parse_now
    from ..release.ledger import open_ledger
    from ..spec import load_spec

    spec = load_spec(args.spec)
    if spec.retention is None:
        raise UserError(f"{spec.label}: no retention block (retention: {{raw_days: N, pseudonymized_days: N}}): "
                        "nothing has a retention to be past")
    now = parse_now(args.now)
    store = storage.TableStore(intermediates_base(args.storage))
    keystore = ledger = None
    if not args.dry_run:
        keystore = open_keystore()
        ledger = open_ledger(args.ledger, keystore)
    outcome = apply_retention(spec, store, now=now, ledger=ledger, keystore=keystore, dry_run=args.dry_run,
                              why=args.reason)
    print(outcome.describe())
    return 0
