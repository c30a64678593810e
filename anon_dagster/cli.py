"""The ``anon-dagster`` command.

Each sub-command lives in its own module of :mod:`anon_dagster.commands` and exposes
``register(subparsers)``; the parser is assembled from them. User errors
(:class:`~anon_dagster.errors.UserError`, a missing file) exit with status 2 and one line on
stderr, never a traceback. When the reader of the output goes away (``anon-dagster risk --json |
head -1``) the command stops quietly with status 141, as Unix tools killed by SIGPIPE do.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import select
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
        sys.stdout.flush()  # here, so that a reader gone away is seen below, not at exit
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        # the reader of our output closed it (``| head -1``): stop quietly, as Unix tools do
        _silence_stdout()
        return 141
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


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has gone (POLLERR on its end)."""
    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush at exit does not
    fail again (and print "Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
