"""``anon-dagster ledger init|verify|reconcile [--ledger PATH]``: the publication ledger's lifecycle.

- ``init`` creates the ledger (the only way one comes into being; a sound existing ledger is
  left as it is); ``--migrate`` converts a schema version 1 ledger, ``--adopt`` anchors an
  existing ledger that has no anchor in this key store's state (docs/release.md).
- ``verify`` checks the whole ledger: the file (``PRAGMA integrity_check``), every event's MAC,
  every entry and its class assignment, the anchor.
- ``reconcile`` settles the entries left pending by a publisher that stopped midway, with the
  files in their publication folders (rolled forward or back).

The key store comes from the environment (its ``ledger-integrity`` subkey and state folder).
Exit status: 0 done, 2 on an error (one line naming the file).
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ledger", help="create, verify or reconcile the publication ledger",
                       description="The publication ledger's lifecycle: init, verify, reconcile.")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    where = "ledger file (default: $ANON_DAGSTER_LEDGER, else under $DAGSTER_HOME)"
    init = actions.add_parser("init", help="create the ledger (or migrate, or adopt, the one there)")
    init.add_argument("--ledger", help=where)
    mode = init.add_mutually_exclusive_group()
    mode.add_argument("--migrate", action="store_true", help="convert a schema version 1 ledger in place")
    mode.add_argument("--adopt", action="store_true",
                      help="anchor an existing ledger that has no anchor in this key store's state")
    verify = actions.add_parser("verify", help="check the whole ledger and its anchor")
    verify.add_argument("--ledger", help=where)
    reconcile = actions.add_parser("reconcile", help="settle pending entries with the files in place")
    reconcile.add_argument("--ledger", help=where)
    reconcile.add_argument("--release", help="only this release's pending entries")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..pseudonymize import open_keystore
    from ..release.ledger import LedgerSeal, init_ledger, open_ledger

    keystore = open_keystore()
    if args.action == "init":
        print(init_ledger(args.ledger, LedgerSeal.from_keystore(keystore), migrate=args.migrate,
                          adopt=args.adopt).describe())
        return 0
    ledger = open_ledger(args.ledger, keystore)
    if args.action == "verify":
        state = ledger.verify(full=True)
        print(f"{ledger.path}: sound: {len(state.entries)} entries, {state.events} events, anchored")
        return 0
    from ..release.publication import reconcile_pending

    done = reconcile_pending(ledger, args.release)
    for item in done:
        what = "left pending: its publisher is at work" if item.action == "busy" else item.action
        print(f"{item.release}/{item.partition or '-'}: entry {item.entry} {what}")
    settled = sum(item.action != "busy" for item in done)
    print(f"{ledger.path}: {settled} pending entr{'y' if settled == 1 else 'ies'} reconciled")
    return 0
