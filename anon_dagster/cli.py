"""The ``anon-dagster`` command.

Each sub-command lives in its own module of :mod:`anon_dagster.commands` and exposes
``register(subparsers)``; the parser is assembled from them. User errors
(:class:`~anon_dagster.errors.UserError`, a missing file) exit with status 2 and one line on
stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from . import commands
from .errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="anon-dagster",
        description="Measure re-identification risk, anonymize, pseudonymize and publish releases.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.handler(args)
    except UserError as exc:
        print(f"anon-dagster {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"anon-dagster {args.command}: error: {exc.filename}: no such file", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"anon-dagster {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
