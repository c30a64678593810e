"""``anon-dagster audit verify|anchor``: check the reversal audit log, or anchor one that predates anchoring.

``verify`` exits 0 when every entry's MAC, sequence and chain, the head, and the key store's
anchor agree; it exits 1 with one line saying what was found otherwise — an edited, deleted,
reordered or truncated entry (with its line), or a log wiped, emptied, replaced or rolled back
against the anchor. ``anchor`` adopts a log written before the key store recorded anchors (it
refuses when an anchor exists), logging who did it and why.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..pseudonymize.audit import AuditLog, AuditTampered, default_audit_path, verify_audit_log
from ..pseudonymize.keystore import ENV_KEYSTORE, ENV_PASSPHRASE, KeyStore, open_keystore

LOG_HELP = "audit log (default: $ANON_DAGSTER_AUDIT_LOG, else audit.jsonl beside the key store)"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="verify the tamper-evident audit log of re-identifications")
    asub = p.add_subparsers(dest="audit_command", metavar="ACTION")
    asub.required = True
    verify = asub.add_parser("verify", help="verify MACs, sequence and chain of every entry, and the key store's anchor")
    anchor = asub.add_parser("anchor", help="anchor a log written before the key store recorded anchors (logged)")
    anchor.add_argument("--actor", required=True, help="who adopts the log (recorded in it)")
    anchor.add_argument("--reason", required=True, help="why (recorded in the log)")
    for cmd in (verify, anchor):
        cmd.add_argument("--log", help=LOG_HELP)
        cmd.add_argument("--path", help=f"key store holding the audit key and the anchor (default: ${ENV_KEYSTORE})")
        cmd.add_argument("--dev", action="store_true", help="use the development key store")
    verify.set_defaults(handler=run_verify)
    anchor.set_defaults(handler=run_anchor)


def _keystore(args: argparse.Namespace) -> KeyStore:
    return open_keystore(args.path or None, passphrase=os.environ.get(ENV_PASSPHRASE), dev=args.dev or None)


def run_verify(args: argparse.Namespace) -> int:
    keystore = _keystore(args)
    log = args.log or default_audit_path(keystore)
    try:
        result = verify_audit_log(keystore, log)
    except AuditTampered as exc:
        print(f"anon-dagster audit verify: TAMPERED: {exc}", file=sys.stderr)
        return 1
    note = ""
    if result.unanchored:
        note = ("; the last entry is not anchored yet: its reversal stopped before it completed and returned "
                "nothing, the next reversal anchors it")
    print(f"{result.path}: {result.entries} entries verified (MACs, sequence, chain and head intact, "
          f"matching the anchor in {result.anchor}){note}")
    return 0


def run_anchor(args: argparse.Namespace) -> int:
    keystore = _keystore(args)
    log = AuditLog(keystore, args.log) if args.log else AuditLog(keystore)
    try:
        entry = log.adopt(args.actor, args.reason)
    except AuditTampered as exc:
        print(f"anon-dagster audit anchor: TAMPERED: {exc}", file=sys.stderr)
        return 1
    print(f"{log.path}: {entry['event']['entries']} entries anchored in {keystore.audit_anchor().describe()}; "
          f"the adoption is entry {entry['seq']}")
    return 0
