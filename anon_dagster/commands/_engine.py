"""The ``--engine`` and ``--spark-master`` options the release commands share.

The engine is the caller's choice, never the spec's (:mod:`anon_dagster.engine`): a command only
opens the engine named and delegates to it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from ..engine.base import DEFAULT_ENGINE, DEFAULT_SPARK_MASTER, ENGINES, Engine
from ..engine.choose import open_engine


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """``--engine pandas|spark`` and ``--spark-master URL`` (used with ``--engine spark``)."""
    parser.add_argument("--engine", choices=ENGINES, default=DEFAULT_ENGINE,
                        help=f"where the rows are processed (default {DEFAULT_ENGINE}); the spec's contract is the same")
    parser.add_argument("--spark-master", default=DEFAULT_SPARK_MASTER,
                        help=f"with --engine spark: the Spark master URL (default {DEFAULT_SPARK_MASTER})")


@contextmanager
def engine_of(args: argparse.Namespace) -> Iterator[Engine]:
    """The engine the options name, closed when the command is done."""
    engine = open_engine(getattr(args, "engine", DEFAULT_ENGINE),
                         spark_master=getattr(args, "spark_master", DEFAULT_SPARK_MASTER))
    try:
        yield engine
    finally:
        engine.close()


__all__ = ["add_engine_arguments", "engine_of"]
