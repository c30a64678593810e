"""``anon-dagster keys init | rotate | list | bridge | rekey | reseal-tokens``: the key store.

Nothing here ever shows key material. ``bridge``, ``rekey`` and ``reseal-tokens`` carry data
across a rotation (see docs/pseudonymization.md, *Rotation and its cost*). A column of scope
``release`` (the default) is carried over one publication at a time: ``bridge`` and ``rekey``
take ``--partition`` with ``--spec``; ``reseal-tokens`` re-seals the purpose's vault and every
publication's vault of that purpose.

The key store path comes from ``--path`` or ``ANON_DAGSTER_KEYSTORE``; the passphrase from
``ANON_DAGSTER_KEYSTORE_PASSPHRASE`` (or, on a terminal, a prompt); as for every entry point,
a second configured key source is refused. ``list`` shows versions, creation dates and a 64-bit
fingerprint per version (a dedicated HKDF output: it tells whether two deployments hold the same
key and reveals nothing about it), and which version keys the ledger's linkage: ``rotate`` never
changes that one, so the composition check keeps recognizing the persons of earlier publications.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys

from ..errors import DataError, SecretError, UserError
from ..io import read_table, write_table_atomic
from ..pseudonymize.keystore import (
    DEFAULT_SCRYPT_N,
    DEV_PASSPHRASE,
    ENV_KEYSTORE,
    ENV_PASSPHRASE,
    KEYSTORE_FILENAME,
    LINKAGE_KEY_VERSION,
    KeyStore,
    dev_keystore_path,
    dev_keystore_requested,
    init_keystore,
    open_keystore,
)
from ..pseudonymize.rotation import hmac_bridge, rekey_aes_siv, rekey_token_vault
from ..pseudonymize.table import column_publication
from ..pseudonymize.tokens import vault_path, vault_publications
from ..spec import NormalizeSpec, load_spec


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keys", help="create, rotate and list the keys of the key store (never shows key material)")
    ksub = p.add_subparsers(dest="keys_command", metavar="ACTION")
    ksub.required = True
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--path", help=f"key store file or folder (default: ${ENV_KEYSTORE})")
    common.add_argument("--dev", action="store_true",
                        help="development store in .anon_dagster/dev-keystore (demo data only; warns)")
    common.add_argument("--reason", default="", help="why (recorded in the custody log with who and when)")

    init = ksub.add_parser("init", parents=[common], help="create a new encrypted key store with key version 1")
    init.add_argument("--scrypt-n", type=int, default=DEFAULT_SCRYPT_N,
                      help=f"scrypt cost (power of two; default {DEFAULT_SCRYPT_N}; lower only for tests)")
    init.set_defaults(handler=run_init)
    rotate = ksub.add_parser("rotate", parents=[common], help="add a new key version (data keeps its version)")
    rotate.set_defaults(handler=run_rotate)
    lst = ksub.add_parser("list", parents=[common], help="list key versions, creation dates and fingerprints")
    lst.add_argument("--json", action="store_true", help="print JSON")
    lst.set_defaults(handler=run_list)

    column = argparse.ArgumentParser(add_help=False)
    column.add_argument("--spec", help="release spec declaring the column's purpose and normalization")
    column.add_argument("--column", required=True, help="the identifier column")
    column.add_argument("--purpose", help="pseudonym purpose (without --spec)")
    column.add_argument("--input", required=True, help="table (csv/parquet) holding the column")
    column.add_argument("--output", required=True, help="table to write (mode 0600; personal data)")
    column.add_argument("--to-version", type=int, help="target key version (default: current)")
    column.add_argument("--partition", help="with --spec: the partition the pseudonyms belong to "
                                            "(needed for a column of scope release in a partitioned spec)")
    bridge = ksub.add_parser(
        "bridge", parents=[common, column],
        help="HMAC old -> new pseudonym table from the ORIGINAL identifiers (run in the secure zone)")
    bridge.add_argument("--from-version", type=int, required=True, help="key version of the old pseudonyms")
    bridge.set_defaults(handler=run_bridge)
    rekey = ksub.add_parser(
        "rekey", parents=[common, column],
        help="re-encrypt an AES-SIV pseudonym column under the new key version (no identifiers needed)")
    rekey.set_defaults(handler=run_rekey)
    vault = ksub.add_parser("reseal-tokens", parents=[common], help="re-seal a token vault under the current key version")
    vault.add_argument("--purpose", required=True)
    vault.set_defaults(handler=run_reseal)


def _passphrase(confirm: bool) -> str:
    value = os.environ.get(ENV_PASSPHRASE)
    if value:
        return value
    if not sys.stdin.isatty():
        raise SecretError(f"no passphrase: set {ENV_PASSPHRASE} (or run on a terminal to be prompted)")
    value = getpass.getpass("key store passphrase: ")
    if confirm and getpass.getpass("repeat the passphrase: ") != value:
        raise SecretError("the two passphrases differ; nothing was created")
    if not value:
        raise SecretError("an empty passphrase is not accepted")
    return value


def _open(args: argparse.Namespace) -> KeyStore:
    path = args.path or os.environ.get(ENV_KEYSTORE)
    if path:
        return open_keystore(path, passphrase=_passphrase(confirm=False), dev=args.dev or None)
    return open_keystore(dev=args.dev or None)


def _custody(ks: KeyStore, action: str, args: argparse.Namespace, **fields: object) -> None:
    """The key operation in the custody log (release governance); a key store that keeps no state
    has no custody log, which is said on stderr."""
    from ..release.governance.access import record

    try:
        record(action, keystore=ks, why=getattr(args, "reason", "") or f"anon-dagster keys {args.keys_command}",
               **fields)
    except SecretError as exc:
        print(f"warning: {action} not recorded in a custody log: {exc}", file=sys.stderr)


def run_init(args: argparse.Namespace) -> int:
    path = args.path or os.environ.get(ENV_KEYSTORE)
    dev = args.dev or dev_keystore_requested()
    if not path:
        if not dev:
            raise SecretError(f"where? give --path or set {ENV_KEYSTORE} (a location apart from the data and the code)")
        path = dev_keystore_path() / KEYSTORE_FILENAME
        passphrase = os.environ.get(ENV_PASSPHRASE) or DEV_PASSPHRASE
        print("warning: development key store: never use it for real personal data", file=sys.stderr)
    else:
        passphrase = _passphrase(confirm=True)
    ks = init_keystore(path, passphrase, scrypt_n=args.scrypt_n, dev=dev)
    info = ks.versions()[0]
    _custody(ks, "key-init", args, version=info.version)
    print(f"created {ks.describe()}: key version {info.version} ({info.created}); mode 0600")
    print("keep it and its passphrase apart from the data; back it up: without it, pseudonyms cannot be recomputed")
    return 0


def run_rotate(args: argparse.Namespace) -> int:
    ks = _open(args)
    info = ks.rotate()
    _custody(ks, "key-rotate", args, version=info.version)
    print(f"{ks.describe()}: key version {info.version} created ({info.created}); it is now the current version")
    print("data made before keeps its version prefix; see docs/pseudonymization.md (rotation) to bridge or re-key it")
    print(f"the ledger's linkage key stays on key version {LINKAGE_KEY_VERSION}: the composition check keeps "
          "recognizing the persons of earlier publications")
    return 0


def run_list(args: argparse.Namespace) -> int:
    ks = _open(args)
    current = ks.current_version
    rows = [
        {**k.to_dict(), "current": k.version == current, "fingerprint": ks.fingerprint(k.version),
         "ledger_linkage": k.version == LINKAGE_KEY_VERSION}
        for k in ks.versions()
    ]
    if args.json:
        print(json.dumps({"keystore": ks.describe(), "keys": rows}, indent=2))
        return 0
    print(ks.describe())
    print(f"{'version':>7}  {'created':<25}  {'fingerprint':<16}  status")
    for r in rows:
        status = ("current" if r["current"] else "older") + (", ledger linkage" if r["ledger_linkage"] else "")
        print(f"{r['version']:>7}  {r['created'] or '-':<25}  {r['fingerprint']:<16}  {status}")
    if not any(r["ledger_linkage"] for r in rows):
        print(f"warning: key version {LINKAGE_KEY_VERSION}, which keys the ledger's linkage, is not held: "
              "releases that compose with earlier publications are refused", file=sys.stderr)
    return 0


def _column_settings(args: argparse.Namespace, method: str) -> tuple[str, NormalizeSpec, bool, str | None]:
    """(purpose, normalization, prefix_version, publication label or None) from --spec (and
    --partition), else from --purpose and defaults (scope population)."""
    if args.spec:
        spec = load_spec(args.spec)
        col = spec.columns.get(args.column)
        if col is None or col.pseudonymize is None:
            raise UserError(f"{args.spec}: column {args.column!r} is not a pseudonymized identifier")
        if col.pseudonymize.method.lower() != method:
            raise UserError(f"{args.spec}: column {args.column!r} uses {col.pseudonymize.method!r}, not {method}")
        publication = column_publication(spec, args.column, args.partition)
        return col.pseudonymize.purpose, col.pseudonymize.normalize, col.pseudonymize.prefix_version, publication
    if args.partition:
        raise UserError("--partition needs --spec (the release and the column's scope come from it)")
    if not args.purpose:
        raise UserError("give --spec, or --purpose")
    return args.purpose, NormalizeSpec(), True, None


def _read_column(args: argparse.Namespace):
    table = read_table(args.input, text_columns=[args.column])  # identifiers: exact text
    if args.column not in table.columns:
        raise DataError(f"{args.input}: no column {args.column!r}")
    return table


def run_bridge(args: argparse.Namespace) -> int:
    purpose, normalize, prefix, publication = _column_settings(args, "hmac")
    table = _read_column(args)
    ks = _open(args)
    bridge = hmac_bridge(table[args.column], ks, purpose=purpose, from_version=args.from_version,
                         to_version=args.to_version, normalize=normalize, prefix_version=prefix,
                         publication=publication)
    write_table_atomic(bridge, args.output, mode=0o600)
    _custody(ks, "key-bridge", args, purpose=purpose, pairs=len(bridge))
    print(f"{args.output}: {len(bridge)} old -> new pseudonym pairs (purpose {purpose!r}); "
          "it links both generations: keep it with the pseudonymized data, never publish it")
    return 0


def run_rekey(args: argparse.Namespace) -> int:
    purpose, _, prefix, publication = _column_settings(args, "aes_siv")
    table = _read_column(args)
    ks = _open(args)
    out = table.copy()
    out[args.column] = rekey_aes_siv(table[args.column], ks, purpose=purpose, to_version=args.to_version,
                                     prefix_version=prefix, publication=publication).to_numpy()
    write_table_atomic(out, args.output, mode=0o600)
    version = args.to_version or ks.current_version
    _custody(ks, "key-rekey", args, purpose=purpose, rows=len(out), version=version)
    print(f"{args.output}: column {args.column!r} re-keyed to version {version} ({len(out)} rows)")
    return 0


def run_reseal(args: argparse.Namespace) -> int:
    ks = _open(args)
    publications = vault_publications(ks, args.purpose)
    # the purpose's own vault (scope population) as before; not created when only publications have one
    if not publications or vault_path(ks, args.purpose).exists():
        count = rekey_token_vault(ks, args.purpose)
        _custody(ks, "key-reseal", args, purpose=args.purpose, tokens=count)
        print(f"token vault {args.purpose!r}: {count} tokens re-sealed under key version {ks.current_version}")
    for label in publications:
        count = rekey_token_vault(ks, args.purpose, publication=label)
        _custody(ks, "key-reseal", args, purpose=args.purpose, publication=label, tokens=count)
        print(f"token vault {args.purpose!r} of publication {label}: {count} tokens re-sealed "
              f"under key version {ks.current_version}")
    return 0
