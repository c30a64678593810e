"""``anon-dagster keys init | rotate | list``: manage the key store without ever showing a key.

The key store path comes from ``--path`` or ``ANON_DAGSTER_KEYSTORE``; the passphrase from
``ANON_DAGSTER_KEYSTORE_PASSPHRASE`` (or, on a terminal, a prompt). ``list`` shows versions,
creation dates and a 64-bit fingerprint per version (a dedicated HKDF output: it tells whether
two deployments hold the same key and reveals nothing about it).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys

from ..errors import SecretError
from ..pseudonymize.keystore import (
    DEFAULT_SCRYPT_N,
    DEV_PASSPHRASE,
    ENV_DEV,
    ENV_KEYSTORE,
    ENV_PASSPHRASE,
    KEYSTORE_FILENAME,
    KeyStore,
    dev_keystore_path,
    init_keystore,
    open_keystore,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("keys", help="create, rotate and list the keys of the key store (never shows key material)")
    ksub = p.add_subparsers(dest="keys_command", metavar="ACTION")
    ksub.required = True
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--path", help=f"key store file or folder (default: ${ENV_KEYSTORE})")
    common.add_argument("--dev", action="store_true",
                        help="development store in .anon_dagster/dev-keystore (demo data only; warns)")

    init = ksub.add_parser("init", parents=[common], help="create a new encrypted key store with key version 1")
    init.add_argument("--scrypt-n", type=int, default=DEFAULT_SCRYPT_N,
                      help=f"scrypt cost (power of two; default {DEFAULT_SCRYPT_N}; lower only for tests)")
    init.set_defaults(handler=run_init)
    rotate = ksub.add_parser("rotate", parents=[common], help="add a new key version (data keeps its version)")
    rotate.set_defaults(handler=run_rotate)
    lst = ksub.add_parser("list", parents=[common], help="list key versions, creation dates and fingerprints")
    lst.add_argument("--json", action="store_true", help="print JSON")
    lst.set_defaults(handler=run_list)


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


def run_init(args: argparse.Namespace) -> int:
    path = args.path or os.environ.get(ENV_KEYSTORE)
    dev = args.dev or os.environ.get(ENV_DEV, "").lower() in ("1", "true", "yes", "on")
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
    print(f"created {ks.describe()}: key version {info.version} ({info.created}); mode 0600")
    print("keep it and its passphrase apart from the data; back it up: without it, pseudonyms cannot be recomputed")
    return 0


def run_rotate(args: argparse.Namespace) -> int:
    ks = _open(args)
    info = ks.rotate()
    print(f"{ks.describe()}: key version {info.version} created ({info.created}); it is now the current version")
    print("data made before keeps its version prefix; see docs/pseudonymization.md (rotation) to bridge or re-key it")
    return 0


def run_list(args: argparse.Namespace) -> int:
    ks = _open(args)
    current = ks.current_version
    rows = [
        {**k.to_dict(), "current": k.version == current, "fingerprint": ks.fingerprint(k.version)}
        for k in ks.versions()
    ]
    if args.json:
        print(json.dumps({"keystore": ks.describe(), "keys": rows}, indent=2))
        return 0
    print(ks.describe())
    print(f"{'version':>7}  {'created':<25}  {'fingerprint':<16}  status")
    for r in rows:
        print(f"{r['version']:>7}  {r['created'] or '-':<25}  {r['fingerprint']:<16}  {'current' if r['current'] else 'older'}")
    return 0
