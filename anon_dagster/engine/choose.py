"""Choosing an engine by name: the one module that knows every engine (the engines know only
:mod:`.base`, so no engine imports another)."""

from __future__ import annotations

from typing import Any

from ..errors import UserError
from .base import DEFAULT_ENGINE, DEFAULT_SPARK_MASTER, ENGINES, Engine


def open_engine(name: str = DEFAULT_ENGINE, *, spark_master: str = DEFAULT_SPARK_MASTER,
                spark: Any = None, **options: Any) -> Engine:
    """The engine called ``name`` (:data:`ENGINES`).

    ``spark_master`` (a Spark master URL, ``local[2]`` by default) and ``spark`` (a SparkSession
    to use instead of starting one) are for the Spark engine, as are ``options``
    (:class:`~anon_dagster.engine.spark_engine.SparkEngine`); pyspark is imported only then.
    """
    if name == "pandas":
        from .pandas_engine import PandasEngine

        return PandasEngine()
    if name == "spark":
        from .spark_engine import SparkEngine

        return SparkEngine(spark, master=spark_master, **options)
    raise UserError(f"unknown engine {name!r}: one of {', '.join(ENGINES)}")


__all__ = ["open_engine"]
