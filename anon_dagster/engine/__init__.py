"""Execution engines: pandas (the default and the reference) and Spark (pyspark imported lazily).

The spec is the privacy contract; the engine is the caller's choice (:mod:`.base`). Importing
this package loads neither pyspark nor Dagster: :class:`SparkEngine` is imported on first use.
"""

from typing import Any

from .base import (
    DEFAULT_ENGINE,
    DEFAULT_SPARK_MASTER,
    ENGINES,
    AnonymizeOutcome,
    Engine,
    MeasuredRelease,
    UnsupportedOnEngine,
    record_beside,
    record_path,
)
from .choose import open_engine
from .pandas_engine import PandasEngine

__all__ = [
    "DEFAULT_ENGINE", "DEFAULT_SPARK_MASTER", "ENGINES", "AnonymizeOutcome", "Engine", "MeasuredRelease",
    "PandasEngine", "SparkEngine", "UnsupportedOnEngine", "open_engine", "record_beside", "record_path",
]


def __getattr__(name: str) -> Any:
    if name == "SparkEngine":
        from .spark_engine import SparkEngine

        return SparkEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
