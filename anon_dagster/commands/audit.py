"""``anon-dagster audit verify|show|anchor``: check the audit log, list it, or anchor one that predates anchoring.

The audit log holds the re-identifications and, as the custody log of release governance, every
approval and rejection, read of a stored raw or pseudonymized table, retention deletion, erasure
and key operation (docs/governance.md). ``show`` lists its entries once it verifies (exit 1
like ``verify`` otherwise): one line each, sequence, time, action, who, and what it concerns.

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

from ..pseudonymize.audit import (
    AuditLog,
    AuditTampered,
    default_audit_path,
    describe_entry,
    verify_audit_log,
)
from ..pseudonymize.keystore import ENV_KEYSTORE, ENV_PASSPHRASE, KeyStore, open_keystore

LOG_HELP = "audit log (default: $ANON_DAGSTER_AUDIT_LOG, else audit.jsonl beside the key store)"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="verify the tamper-evident audit log of re-identifications")
    asub = p.add_subparsers(dest="audit_command", metavar="ACTION")
    asub.required = True
    verify = asub.add_parser("verify", help="verify MACs, sequence and chain of every entry, and the key store's anchor")
    show = asub.add_parser("show", help="list the entries (re-identifications, approvals, reads, deletions, erasures, "
                                          "key operations) once the log verifies")
    show.add_argument("--action", help="only entries of this action (e.g. approve, reject, reidentify, read, "
                                       "retention-delete, erase, key-rotate)")
    anchor = asub.add_parser("anchor", help="anchor a log written before the key store recorded anchors (logged)")
    anchor.add_argument("--actor", required=True, help="who adopts the log (recorded in it)")
    anchor.add_argument("--reason", required=True, help="why (recorded in the log)")
    for cmd in (verify, show, anchor):
        cmd.add_argument("--log", help=LOG_HELP)
        cmd.add_argument("--path", help=f"key store holding the audit key and the anchor (default: ${ENV_KEYSTORE})")
        cmd.add_argument("--dev", action="store_true", help="use the development key store")
    verify.set_defaults(handler=run_verify)
    anchor.set_defaults(handler=run_anchor)
    show.set_defaults(handler=run_show)


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


def run_show(args: argparse.Namespace) -> int:
    keystore = _keystore(args)
    log = AuditLog(keystore, args.log) if args.log else AuditLog(keystore)
    try:
        entries = log.entries()
    except AuditTampered as exc:
        print(f"anon-dagster audit show: TAMPERED: {exc}", file=sys.stderr)
        return 1
    shown = 0
    for entry in entries:
        line = describe_entry(entry)
        if args.action and entry["event"].get("action") != args.action:
            continue
        print(line)
        shown += 1
    print(f"{log.path}: {shown} of {len(entries)} entries shown (verified)")
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
