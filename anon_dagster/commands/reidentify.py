"""``anon-dagster reidentify``: turn AES-SIV pseudonyms or tokens back into identifiers.

Requires ``--actor`` and ``--reason``; every request, granted or refused, is appended to the
tamper-evident audit log, and anchored in the key store, before anything is printed (a log that
does not verify refuses the request, exit 2). HMAC pseudonyms are refused: they are one-way by design.

    anon-dagster reidentify --method aes_siv --purpose care --actor dr.lee \\
        --reason "incident 2026-114: contact the patient" v1:Qm9...
    anon-dagster reidentify --spec assets_config/x.yaml --column patient_id --partition 2024 \\
        --actor ... --reason ... --input flagged.csv --output flagged_identified.csv

A column of scope ``release`` (the default) is bound to one publication: ``--partition`` names
it (the release comes from ``--spec``), and pseudonyms of another partition come back not found.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..errors import DataError, UserError
from ..io import read_table, write_table_atomic
from ..pseudonymize.audit import AuditLog
from ..pseudonymize.keystore import ENV_KEYSTORE, ENV_PASSPHRASE, open_keystore
from ..pseudonymize.reversal import reidentify
from ..pseudonymize.table import column_publication
from ..spec import load_spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reidentify", help="reverse AES-SIV pseudonyms or tokens (authorized, audited)")
    p.add_argument("pseudonyms", nargs="*", help="pseudonyms to reverse (or use --input)")
    p.add_argument("--actor", required=True, help="who asks (recorded in the audit log)")
    p.add_argument("--reason", required=True, help="why (recorded in the audit log)")
    p.add_argument("--spec", help="release spec declaring the column's method and purpose")
    p.add_argument("--column", help="the pseudonymized column (with --spec and/or --input)")
    p.add_argument("--method", choices=["aes_siv", "token", "hmac"], help="pseudonym method (without --spec)")
    p.add_argument("--purpose", help="pseudonym purpose (without --spec)")
    p.add_argument("--key-version", type=int, help="key version of pseudonyms written without a v<N>: prefix")
    p.add_argument("--partition", help="with --spec: the partition the pseudonyms were published in "
                                       "(needed for a column of scope release in a partitioned spec)")
    p.add_argument("--input", help="table (csv/parquet) whose --column holds the pseudonyms")
    p.add_argument("--output", help="with --input: write the table plus <column>_identifier here (mode 0600)")
    p.add_argument("--audit-log", help="audit log (default: $ANON_DAGSTER_AUDIT_LOG, else beside the key store)")
    p.add_argument("--path", help=f"key store (default: ${ENV_KEYSTORE})")
    p.add_argument("--dev", action="store_true", help="use the development key store")
    p.set_defaults(handler=run)


def _column(args: argparse.Namespace) -> tuple[str, str, str | None]:
    """(method, purpose, publication label or None) of the pseudonyms to reverse."""
    if args.spec:
        spec = load_spec(args.spec)
        if not args.column:
            raise UserError(f"{args.spec}: give --column, the pseudonymized column to reverse")
        col = spec.columns.get(args.column)
        if col is None or col.pseudonymize is None:
            raise UserError(f"{args.spec}: column {args.column!r} is not a pseudonymized identifier of this spec")
        method = col.pseudonymize.method.lower()
        if method == "hmac":  # one-way whatever its scope: reidentify logs and refuses it
            return method, col.pseudonymize.purpose, None
        return method, col.pseudonymize.purpose, column_publication(spec, args.column, args.partition)
    if args.partition:
        raise UserError("--partition needs --spec (the release and the column's scope come from it)")
    if not args.method or not args.purpose:
        raise UserError("give --spec and --column, or --method and --purpose")
    return args.method, args.purpose, None


def run(args: argparse.Namespace) -> int:
    method, purpose, publication = _column(args)
    if bool(args.pseudonyms) == bool(args.input):
        raise UserError("give pseudonyms as arguments or a table with --input, not both")
    if args.input and not (args.column and args.output):
        raise UserError("--input needs --column (where the pseudonyms are) and --output")
    table = None
    if args.input:
        table = read_table(args.input, text_columns=[args.column])  # pseudonyms: exact text
        if args.column not in table.columns:
            raise DataError(f"{args.input}: no column {args.column!r}")
        pseudonyms = table[args.column].tolist()
    else:
        pseudonyms = list(args.pseudonyms)
    keystore = open_keystore(args.path or None, passphrase=os.environ.get(ENV_PASSPHRASE), dev=args.dev or None)
    audit = AuditLog(keystore, args.audit_log) if args.audit_log else AuditLog(keystore)
    result = reidentify(pseudonyms, keystore=keystore, method=method, purpose=purpose,
                        actor=args.actor, reason=args.reason, key_version=args.key_version, audit=audit,
                        publication=publication)
    if table is not None:
        out = table.copy()
        out[f"{args.column}_identifier"] = result.identifiers
        write_table_atomic(out, Path(args.output), mode=0o600)
        print(f"{args.output}: {len(out)} rows, {result.not_found} not found; audit entry {result.audit_seq}")
    else:
        for p, ident in zip(pseudonyms, result.identifiers, strict=True):
            print(f"{p}\t{ident if ident is not None else '<not found>'}")
    return 0 if result.not_found == 0 else 3
