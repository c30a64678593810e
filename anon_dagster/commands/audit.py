"""``anon-dagster audit verify``: check the reversal audit log has not been tampered with.

Exit 0 when every entry's MAC, sequence and chain (and the head) verify; exit 1 naming the
first bad line otherwise (an edited, deleted, reordered or truncated log).
"""

from __future__ import annotations

import argparse
import os
import sys

from ..pseudonymize.audit import AuditTampered, default_audit_path, verify_audit_log
from ..pseudonymize.keystore import ENV_KEYSTORE, ENV_PASSPHRASE, open_keystore


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="verify the tamper-evident audit log of re-identifications")
    asub = p.add_subparsers(dest="audit_command", metavar="ACTION")
    asub.required = True
    verify = asub.add_parser("verify", help="verify MACs, sequence and chain of every entry")
    verify.add_argument("--log", help="audit log (default: $ANON_DAGSTER_AUDIT_LOG, else audit.jsonl beside the key store)")
    verify.add_argument("--path", help=f"key store holding the audit key (default: ${ENV_KEYSTORE})")
    verify.add_argument("--dev", action="store_true", help="use the development key store")
    verify.set_defaults(handler=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    path = args.path or None
    keystore = open_keystore(path, passphrase=os.environ.get(ENV_PASSPHRASE), dev=args.dev or None)
    log = args.log or default_audit_path(keystore)
    try:
        result = verify_audit_log(keystore, log)
    except AuditTampered as exc:
        print(f"anon-dagster audit verify: TAMPERED: {exc}", file=sys.stderr)
        return 1
    print(f"{result.path}: {result.entries} entries verified (MACs, sequence, chain and head intact)")
    return 0
