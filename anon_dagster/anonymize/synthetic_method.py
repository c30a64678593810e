"""Synthetic releases as :func:`anon_dagster.anonymize.anonymize` runs them (method ``synthetic``).

**Sequential CART** (the method of synthpop, Nowok, Raab and Dibben 2016): the columns are drawn
one after another in the order of :func:`~anon_dagster.spec.synthetic.synthesis_order`.

1. The first column's synthetic values are drawn, with replacement, from its real values (its
   marginal distribution).
2. Each next column ``c``: a decision tree (CART, scikit-learn's ``DecisionTreeClassifier`` for
   a categorical column, ``DecisionTreeRegressor`` for a number or a date) is fitted on the real
   rows, predicting ``c`` from the columns drawn before it, with at least ``min_samples_leaf``
   real rows in every leaf. Each synthetic row is dropped down the tree by its synthetic values
   of those columns; its value of ``c`` is the value of ``c`` of a real row drawn at random from
   the real rows of the leaf it lands in.

Every synthetic value is therefore a real value of its column (a category, a number, a date as
written in the data), and a leaf never holds fewer than ``min_samples_leaf`` real rows, so no
value is drawn from fewer than that many people's records. The trees see categories as codes
in the order of their sorted labels, numbers as they are and dates as their instants.

**Seeded** from the input table's content hash and ``anonymization.seed``
(:func:`synthesis_seed`): the same partition synthesizes the same table, byte for byte.

**A table of another generator** (``anonymization.synthetic.table``) is published instead: a
file's read (:func:`table_file`), a Dagster asset's handed over (``table: {asset: key}``),
both checked by :func:`checked_table` (exactly the release's columns, numbers where the data has
numbers) in :func:`table_synthesis`.
A path holding ``{partition}`` names each partition's own table: the key is that of the window
the partition's rows fall in (:func:`partition_of_rows`), ``all`` for an unpartitioned release.

The record's ``synthetic`` section says which generator ran, the order, the leaf size, the seed
and the rows drawn (no value).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd

from ..dates import parse_dates
from ..errors import DataError, UserError
from ..io import read_table
from ..partitions import KEY_FORMATS, UNPARTITIONED, partition_format, partition_window
from ..spec.synthetic import synthesis_order, synthetic_columns

SEED_PURPOSE = "anon_dagster/synthetic/1"


def synthesis_seed(input_hash: str, seed: int) -> int:
    """The synthesis's seed: the first 8 bytes of SHA-256 of the purpose, the input table's
    content hash and ``anonymization.seed`` (an unsigned 64-bit integer)."""
    digest = hashlib.sha256(f"{SEED_PURPOSE}\0{input_hash}\0{int(seed)}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _is_number(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)


def column_kind(series: pd.Series, *, is_date: bool = False) -> str:
    """``"number"``, ``"date"`` or ``"category"``: how the trees read the column."""
    if pd.api.types.is_datetime64_any_dtype(series.dtype) or is_date:
        return "date"
    return "number" if _is_number(series) else "category"


def encode(series: pd.Series, kind: str, name: str = "", date_format: str | None = None) -> np.ndarray:
    """The column as the trees' numbers: a category's code in the order of the sorted labels
    (missing: -1), a number as is, a date as its instant in nanoseconds; missing numbers and
    dates one below the smallest value (a value of their own, below every other)."""
    if kind == "category":
        labels = series.astype("string")
        codes, _ = pd.factorize(labels, sort=True)
        return codes.astype(np.float64)
    if kind == "date":
        dates = series if pd.api.types.is_datetime64_any_dtype(series.dtype) else parse_dates(
            series, name, date_format, show_value=False)
        values = pd.Series(pd.to_datetime(dates)).astype("int64").to_numpy(dtype=np.float64)
        values[pd.isna(dates).to_numpy()] = np.nan
    else:
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)
    missing = np.isnan(values)
    if missing.any():
        values[missing] = (np.nanmin(values) - 1.0) if not missing.all() else 0.0
    return values


def draw_from_leaves(train_leaf: np.ndarray, synth_leaf: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """For each synthetic row, a real row drawn uniformly from the real rows in its leaf
    (positions into the real rows). Every leaf a synthetic row reaches holds real rows: the
    tree's leaves are made of them."""
    order = np.argsort(train_leaf, kind="stable")
    leaves, start, count = np.unique(train_leaf[order], return_index=True, return_counts=True)
    where = np.searchsorted(leaves, synth_leaf)
    return order[start[where] + (rng.random(len(synth_leaf)) * count[where]).astype(np.int64)]


def cart_synthesis(real: pd.DataFrame, order: list[str], *, min_samples_leaf: int, seed: int,
                   rows: int | None = None, kinds: dict[str, str] | None = None,
                   date_formats: dict[str, str | None] | None = None) -> pd.DataFrame:
    """The sequential CART synthesis of ``real`` (module docstring): ``rows`` synthetic rows
    (default: as many as ``real``), the columns of ``order`` in that order, their dtypes kept."""
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    real = real.reset_index(drop=True)
    n, m = len(real), len(real) if rows is None else int(rows)
    rng = np.random.default_rng(seed)
    kinds = {c: (kinds or {}).get(c) or column_kind(real[c]) for c in order}
    if n == 0 or not order:
        return real[order].iloc[0:0].reset_index(drop=True)
    features = np.zeros((n, 0))
    synth_features = np.zeros((m, 0))
    out: dict[str, pd.Series] = {}
    for i, name in enumerate(order):
        y = encode(real[name], kinds[name], name, (date_formats or {}).get(name))
        if i == 0 or np.all(y == y[0]):
            drawn = rng.integers(0, n, m)  # the marginal: a real row at random
        else:
            model = (DecisionTreeClassifier if kinds[name] == "category" else DecisionTreeRegressor)(
                min_samples_leaf=min_samples_leaf, random_state=int(rng.integers(0, 2**31 - 1)))
            model.fit(features, y)
            drawn = draw_from_leaves(model.apply(features), model.apply(synth_features), rng)
        out[name] = real[name].iloc[drawn].reset_index(drop=True)
        features = np.column_stack([features, y])
        synth_features = np.column_stack([synth_features, y[drawn]])
    return pd.DataFrame(out)


def partition_of_rows(spec: Any, real: pd.DataFrame) -> str:
    """The key of the partition whose rows ``real`` are: the window of the spec's cadence that
    holds every date of ``partitions.column`` (:data:`~anon_dagster.partitions.UNPARTITIONED`
    without partitions). Raises DataError when the rows hold no date or span two windows; the
    key is checked against the spec's partitions (:func:`~anon_dagster.partitions.partition_window`)."""
    if spec.partitions is None:
        return UNPARTITIONED
    column, cadence = spec.partitions.column, spec.partitions.cadence
    if column not in real.columns:
        raise DataError(f"{spec.label}: column {column!r} (partitions.column) is missing from the data, so the "
                        "partition of anonymization.synthetic.table's {partition} is unknown")
    dates = pd.Series(pd.to_datetime(parse_dates(real[column], column, partition_format(spec), show_value=False)))
    if dates.isna().all():
        raise DataError(f"{spec.label}: the partition holds no date of {column!r}: its synthetic table "
                        "({partition}) cannot be named")
    first = dates.min()
    start = {"yearly": pd.Timestamp(year=first.year, month=1, day=1),
             "monthly": pd.Timestamp(year=first.year, month=first.month, day=1),
             "quarterly": pd.Timestamp(year=first.year, month=first.month - (first.month - 1) % 3, day=1),
             "weekly": first.normalize() - pd.Timedelta(days=first.day_of_week)}.get(cadence, first.normalize())
    key = start.strftime(KEY_FORMATS[cadence])
    low, high = partition_window(spec, key)
    if dates.max() >= high or first < low:
        raise DataError(f"{spec.label}: the rows span more than one {cadence} partition of {column!r}: "
                        "anonymization.synthetic.table's {partition} names one partition's table")
    return key


def checked_table(spec: Any, table: object, real: pd.DataFrame, name: str) -> pd.DataFrame:
    """The synthetic table of another generator, ``table``, checked against the release: a pandas
    DataFrame holding exactly the release's columns (:func:`~anon_dagster.spec.synthetic.
    synthetic_columns`, none missing, none more), numbers where ``real`` holds numbers; returned
    with its columns in spec order. The one check of a supplied table, whether read from a file
    or handed over by a Dagster asset. Raises DataError naming ``name`` and the column at fault."""
    if not isinstance(table, pd.DataFrame):
        raise DataError(f"{name}: the synthetic table is a {type(table).__module__}.{type(table).__qualname__}, not "
                        "a pandas DataFrame: its IO manager must load it as one")
    columns = synthetic_columns(spec)
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise DataError(f"{name}: the synthetic table has no column {missing[0]!r} (the release publishes "
                        f"{', '.join(columns)})")
    extra = [c for c in table.columns if c not in columns]
    if extra:
        raise DataError(f"{name}: the synthetic table has column {str(extra[0])!r}, which the release does not "
                        "publish (no silent pass-through)")
    for c in columns:
        if c in real.columns and _is_number(real[c]) and not _is_number(table[c]):
            raise DataError(f"{name}: column {c!r} holds numbers in the data but not in the synthetic table")
    return table[columns].reset_index(drop=True)


def asset_table_message(spec: Any) -> str | None:
    """What is said when the synthetic table is a Dagster asset's (``table: {asset: key}``) and
    none was handed over (``anon-dagster check``): the asset that supplies it. None otherwise."""
    settings = spec.anonymization.synthetic
    table = settings.table if settings is not None else None
    if table is None or isinstance(table, str):
        return None
    return (f"{spec.label}: anonymization.synthetic.table is {table.described}, supplied by Dagster: materialize "
            "the release in its Dagster project, where the anonymized asset loads it")


def table_file(spec: Any, real: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The table of ``anonymization.synthetic.table``'s file (``{partition}`` filled with
    :func:`partition_of_rows`) as read, and its file's name: :func:`table_synthesis` checks it.
    Raises DataError naming a file that is not there; UserError when the table is a Dagster
    asset's (:func:`asset_table_message`)."""
    text = spec.anonymization.synthetic.table
    message = asset_table_message(spec)
    if message is not None:
        raise UserError(message)
    if "{partition}" in text:
        key = partition_of_rows(spec, real)
        path, text = spec.resolve(text, partition=key), text.replace("{partition}", key)
    else:
        path = spec.resolve(text)
    if not path.is_file():
        raise DataError(f"{text}: no such synthetic table (anonymization.synthetic.table)")
    return read_table(path), str(text)


def table_synthesis(spec: Any, real: pd.DataFrame, table: object, name: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A synthetic release made by another generator: its table ``table`` (a DataFrame, named
    ``name`` in errors and in the record) checked by :func:`checked_table` against the partition
    ``real``, and the record's ``synthetic`` entry. The file variant reads the file, then calls this."""
    checked = checked_table(spec, table, real, name)
    return checked, {"synthetic": {"generator": "table", "table": name, "order": list(checked.columns),
                                   "min_samples_leaf": None, "seed": None, "rows": len(checked)}}


def run_synthetic(work: pd.DataFrame, spec: Any, input_hash: str,
                  supplied: pd.DataFrame | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The synthetic table of the partition ``work`` and the record's ``synthetic`` entry.

    ``supplied``: the synthetic table a Dagster asset handed over (``table: {asset: key}``); a
    file's is read here; neither given for an asset's table is a UserError naming the asset."""
    settings = spec.anonymization.synthetic
    seed = synthesis_seed(input_hash, spec.anonymization.seed)
    declared = settings.table if settings is not None else None
    if supplied is not None and (declared is None or isinstance(declared, str)):
        raise UserError(f"{spec.label}: a synthetic table was handed over, and anonymization.synthetic.table "
                        "names no asset")
    if isinstance(declared, str):
        return table_synthesis(spec, work, *table_file(spec, work))
    if declared is not None:
        if supplied is None:
            raise UserError(asset_table_message(spec) or "")
        return table_synthesis(spec, work, supplied, declared.described)
    order = synthesis_order(spec)
    missing = [c for c in order if c not in work.columns]
    if missing:
        raise DataError(f"{spec.label}: column {missing[0]!r} is declared in the spec but missing from the data")
    leaf = settings.min_samples_leaf if settings is not None else 5
    rows = settings.rows if settings is not None else None
    date_columns = {c: _date_format(spec, c) for c in order if _declares_date(spec, c)}
    kinds = {c: "date" for c in date_columns}
    table = cart_synthesis(work, order, min_samples_leaf=leaf, seed=seed, rows=rows, kinds=kinds,
                           date_formats=date_columns)
    return table, {"synthetic": {"generator": "cart", "table": None, "order": order, "min_samples_leaf": leaf,
                                 "seed": seed, "rows": len(table)}}


def _declares_date(spec: Any, column: str) -> bool:
    hierarchy = spec.columns[column].hierarchy
    partitions = spec.partitions
    return getattr(hierarchy, "type", None) == "date" or (partitions is not None and partitions.column == column)


def _date_format(spec: Any, column: str) -> str | None:
    fmt = getattr(spec.columns[column].hierarchy, "format", None)
    if fmt is None and spec.partitions is not None and spec.partitions.column == column:
        fmt = spec.partitions.format
    return fmt


__all__ = ["SEED_PURPOSE", "asset_table_message", "cart_synthesis", "checked_table", "column_kind",
           "draw_from_leaves", "encode", "partition_of_rows", "run_synthetic", "synthesis_seed", "table_file",
           "table_synthesis"]
