"""``anon-dagster erase SPEC (--person ID | --file IDS) --reason TEXT [--storage DIR] [--ledger PATH]``.

Removes each person from every stored intermediate of the release and adds them to its
suppression list, so that no later run contains them
(:mod:`anon_dagster.release.governance.erasure`); the ledger records it without the identifier
(a digest of its linkage pseudonym) and lists the earlier publications that held the person.
``--file``: one identifier per line. ``anon-dagster erase SPEC --list`` prints the erasures the
ledger holds. Exit 0, 2 on bad input. The identifiers are never printed.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("erase", help="erase persons from a release's stored intermediates and from every later run",
                       description="Remove persons from every stored raw and pseudonymized table of a release, and "
                                   "suppress them in every later run.")
    p.add_argument("spec", help="release spec (YAML)")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--person", action="append", help="the person's identifier (composition.person); repeatable")
    who.add_argument("--file", help="a text file of identifiers, one per line")
    who.add_argument("--list", action="store_true", help="list the erasures recorded in the ledger")
    p.add_argument("--reason", default="", help="the request this answers (recorded); required to erase")
    p.add_argument("--storage", help="the intermediates' folder (default: $DAGSTER_HOME/anon_dagster/storage)")
    p.add_argument("--ledger", help="ledger file (default: $ANON_DAGSTER_LEDGER, else under $DAGSTER_HOME)")
    p.set_defaults(handler=run)


def _persons(args: argparse.Namespace) -> list[str]:
    from ..errors import UserError

    if args.person:
        return list(args.person)
    try:
        lines = Path(args.file).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"{args.file}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    return [line.strip() for line in lines if line.strip()]


def run(args: argparse.Namespace) -> int:
    from ..pseudonymize import open_keystore
    from ..release.governance.erasure import erase, erasures
    from ..release.governance.retention import intermediates_base
    from ..release.ledger import open_ledger
    from ..spec import load_spec

    spec = load_spec(args.spec)
    keystore = open_keystore()
    ledger = open_ledger(args.ledger, keystore)
    if args.list:
        for e in erasures(ledger, spec.release):
            pubs = ", ".join(str(p) for p in e.get("publications") or []) or "none"
            print(f"{e['seq']}  {e['at']}  person {e['person']}  by {e['by']}  why {e['why']}  "
                  f"tables {len(e.get('tables') or [])}  earlier publications: {pubs}")
        return 0
    for outcome in erase(spec, intermediates_base(args.storage), persons=_persons(args), keystore=keystore,
                         ledger=ledger, why=args.reason):
        print(outcome.describe(spec.release))
    return 0
