"""The transformation record: what one anonymization did, typed, and its JSON file form.

:class:`TransformationRecord` is what :func:`~anon_dagster.anonymize.anonymize` returns in
``AnonymizationResult.record``, what ``anon-dagster anonymize`` writes as
``OUT.transformations.json`` and the Dagster layer as ``transformations.json`` in a partition's
report folder, and what the gate reads back to place a population into the published classes.
Every record carries ``format`` = :data:`RECORD_FORMAT`; a record of another or no format is
refused with one :class:`~anon_dagster.errors.DataError` naming the file. Keys this version
does not declare are kept in ``extra`` and written back (see :mod:`.record_json`), so
``from_json(d).to_json() == d`` for every record written by this format version, key order
included: a file read and written again with the same layout is byte-identical.

Also here: the stable table hash of ``input_hash``/``output_hash``, the suppression breakdowns
and the class-size histogram the record holds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ..hierarchies import _as_label
from ..io import plain_json, write_bytes_atomic
from ..risk.measures import class_size_histogram
from .cut_tree import CutTree
from .record_json import JsonObject, key

RECORD_FORMAT = "anon_dagster.transformations/1"
MAX_GROUPS = 1000


def table_hash(df: pd.DataFrame) -> str:
    """A stable SHA-256 of a table's content: column names, then pandas' per-row hashes.

    Definition: sha256 over the column names (in order, NUL-separated) followed by the uint64
    row hashes of :func:`pandas.util.hash_pandas_object` (index excluded, fixed default key),
    which hash values, not memory layout: the same table read back from csv or parquet, or held
    as categorical or plain strings, hashes the same provided the values and dtypes' kinds agree.

    Why not :func:`anon_dagster.release.ledger.dataset_hash`: that one includes the dtypes (it
    identifies a published file exactly), while the record's ``output_hash`` must match the
    same anonymized table however it was stored and read back (a categorical may return as text).
    """
    digest = hashlib.sha256()
    digest.update("\0".join(map(str, df.columns)).encode())
    if len(df):
        # hash every column as its labels so categorical and plain string columns agree
        frame = pd.DataFrame({
            c: (df[c].astype(object) if isinstance(df[c].dtype, pd.CategoricalDtype) else df[c])
            for c in df.columns
        })
        digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def breakdown(df: pd.DataFrame, mask: np.ndarray, columns: Sequence[str]) -> list[dict]:
    """Count of ``mask`` rows per combination of ``columns`` values (input values), largest first.

    Only groups with at least one such row are listed, at most MAX_GROUPS of them.
    """
    if not columns or not mask.any():
        return []
    sub = df.loc[mask, list(columns)]
    counts = sub.astype(object).groupby(list(columns), dropna=False, observed=True).size()
    totals = df[list(columns)].astype(object).groupby(list(columns), dropna=False, observed=True).size()
    counts = counts.sort_values(ascending=False).head(MAX_GROUPS)
    out = []
    for group, count in counts.items():
        values = group if isinstance(group, tuple) else (group,)
        total = int(totals.get(values if len(values) > 1 else values[0], 0))
        out.append({
            **{c: _as_label(v) for c, v in zip(columns, values, strict=True)},
            "suppressed": int(count),
            "rows": total,
            "share": round(int(count) / total, 6) if total else None,
        })
    return out


def class_histogram(sizes: np.ndarray) -> dict[str, int]:
    """Classes by size band, ``{band: classes}``, over the risk kernel's bands
    (:data:`anon_dagster.risk.measures.HISTOGRAM_BINS`: 1, 2, 3-4, ..., 100-999, 1000+), so the
    record and the risk report bin class sizes alike."""
    return {band["sizes"]: band["classes"] for band in class_size_histogram(np.asarray(sizes))}


# ----- the typed record --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Parameters(JsonObject):
    """The anonymization parameters of the spec, and the policy in force (``Policy.to_dict()``)."""

    k: int = key("int")
    max_suppression: float = key("number")
    utility: str = key("str")
    suppression: str = key("str")
    policy: dict[str, Any] = key("object")


@dataclass(frozen=True, kw_only=True)
class Suppression(JsonObject):
    """Suppressed rows (count, share of ``rows_in``, the policy's budget in rows), suppressed
    cells per column and in total, and who was suppressed: :func:`breakdown` per combination
    of partition keys and per utility query's group-by columns (input values)."""

    rows: int = key("int")
    share: float = key("number")
    budget_rows: int = key("int")
    cells: dict[str, int] = key("object")
    cells_total: int = key("int")
    by_partition_key: list[dict[str, Any]] = key("list")
    by_query: dict[str, list[dict[str, Any]]] = key("object")


@dataclass(frozen=True, kw_only=True)
class CellSuppression(JsonObject):
    """With ``suppression: cells``: rows that kept their place but lost cells, broken down
    like :class:`Suppression`."""

    rows_with_cells_suppressed: int = key("int")
    by_partition_key: list[dict[str, Any]] = key("list")
    by_query: dict[str, list[dict[str, Any]]] = key("object")


@dataclass(frozen=True, kw_only=True)
class Classes(JsonObject):
    """Equivalence classes of the published rows over the QIs: count, the smallest class's size
    (None without rows) and the class-size histogram (:func:`class_histogram`)."""

    count: int = key("int")
    k: int | None = key("int", nullable=True)
    histogram: dict[str, int] = key("object")


@dataclass(frozen=True, kw_only=True)
class Utility(JsonObject):
    """The method's utility metric and value (None when it has none), and each utility query's
    error in percentage points."""

    metric: str = key("str")
    value: float | None = key("number", nullable=True)
    queries: dict[str, float] = key("object")


@dataclass(frozen=True, kw_only=True)
class PramInfo(JsonObject):
    """PRAM of one column: the transition matrix (non-zero entries), rows whose value changed,
    and the seed of the draws."""

    column: str = key("str")
    matrix: dict[str, dict[str, float]] = key("object")
    rows_changed: int = key("int")
    seed: int | None = key("int", nullable=True)


@dataclass(frozen=True, kw_only=True)
class MondrianBoxes(JsonObject):
    """What each Mondrian class's labels mean in the QIs' own values, to place a population.

    ``classes`` classes; ``partition_keys[c][i]`` class ``i``'s value of partition key ``c`` (as
    a label); ``columns[q]`` QI ``q``'s distinct boxes and ``class_box`` (the box of each class;
    the layout is described in :func:`anon_dagster.anonymize.mondrian._boxes`); ``tree`` the cut
    tree (None in records written before it was recorded).
    """

    classes: int = key("int")
    partition_keys: dict[str, list[Any]] = key("object")
    columns: dict[str, dict[str, Any]] = key("object")
    tree: CutTree | None = key(optional=True, section=CutTree)


@dataclass(frozen=True, kw_only=True)
class MondrianInfo(JsonObject):
    """Mondrian's outcome: normalized certainty penalty, cuts made, classes, the minimum part size
    used, partition-key parts suppressed whole, the first classes' ranges (``ranges_truncated``
    more not listed) and the class boxes."""

    ncp: float = key("number")
    cuts: int = key("int")
    classes: int = key("int")
    min_part_size: int = key("int")
    parts_suppressed: list[dict[str, Any]] = key("list")
    ranges: list[dict[str, Any]] = key("list")
    ranges_truncated: int = key("int")
    boxes: MondrianBoxes = key(section=MondrianBoxes)


@dataclass(frozen=True, kw_only=True)
class MicroaggregationInfo(JsonObject):
    """MDAV microaggregation: the numeric QIs aggregated, the columns whose equal values form the
    blocks it runs in, groups formed, and the SSE share (SSE / SST of the standardized QIs)."""

    algorithm: str = key("str")
    columns: list[str] = key("list")
    blocks_by: list[str] = key("list")
    groups: int = key("int")
    sse_share: float = key("number")


@dataclass(frozen=True, kw_only=True)
class SyntheticInfo(JsonObject):
    """A synthetic release (:mod:`anon_dagster.anonymize.synthetic_method`): ``generator`` is
    ``cart`` (the built-in sequential CART synthesizer) or ``table`` (a table of another
    generator, ``table`` its spec path); ``order`` the columns in the order they were drawn;
    ``min_samples_leaf`` the fewest real rows of a tree's leaf and ``seed`` the synthesis's seed
    (CART only); ``rows`` the synthetic rows published. No value of any row."""

    generator: str = key("str")
    table: str | None = key("str", nullable=True)
    order: list[str] = key("list")
    min_samples_leaf: int | None = key("int", nullable=True)
    seed: int | None = key("int", nullable=True)
    rows: int = key("int")


@dataclass(frozen=True, kw_only=True)
class Source(JsonObject):
    """Where ``anon-dagster anonymize`` read the table: rows read and the partition asked for."""

    rows: int = key("int")
    partition: str | None = key("str", nullable=True)


@dataclass(frozen=True, kw_only=True)
class PersonSuppression(JsonObject):
    """Persons suppressed so that every person class holds at least ``k`` persons
    (:mod:`anon_dagster.anonymize.persons`): ``linked_by`` the published columns linking a
    person's rows; ``persons`` and ``rows`` removed; ``reached`` whether the budget allowed it
    (when not, nothing was removed and ``persons``/``rows`` say what it would take).

    ``search_targeted`` (absent in records written before it was recorded): true when the
    optimal search chose its node among those reaching k per person within the budget
    (:mod:`anon_dagster.anonymize.lattice`); ``persons`` and ``rows`` are then the persons below
    k at that node and their rows that the classes missing a criterion did not already remove,
    counted in ``suppression.rows`` within the same budget. False when the persons were removed
    after the anonymization."""

    k: int = key("int")
    linked_by: list[str] = key("list")
    persons: int = key("int")
    rows: int = key("int")
    budget_rows: int = key("int")
    reached: bool = key("bool")
    search_targeted: bool | None = key("bool", optional=True)


@dataclass(frozen=True, kw_only=True)
class AttackControl(JsonObject):
    """The control records of the release's attacks (``policy.attacks``), set aside before the
    anonymization (:func:`anon_dagster.release.pipeline.control_split`).

    ``source`` is ``population`` (the declared population's records not in the sample: nothing
    withheld) or ``withheld`` (a keyed slice of whole persons withheld from the release: they are
    not in it); ``rows_before`` the partition's rows before the slice, ``rows_withheld`` and
    ``persons_withheld`` what the slice took (0 from the population), ``control_rows`` the control
    records; ``fraction`` and ``min_rows`` the slice's declared size; ``note`` why this source;
    ``selection`` a SHA-256 of the withheld rows' positions in the partition, by which the
    evaluation checks that it re-derived the very same slice. Counts only: never who was withheld."""

    source: str = key("str")
    rows_before: int = key("int")
    rows_withheld: int = key("int")
    persons_withheld: int = key("int")
    control_rows: int = key("int")
    fraction: float = key("number")
    min_rows: int = key("int")
    note: str = key("str")
    selection: str = key("str")


@dataclass(frozen=True, kw_only=True)
class TransformationRecord(JsonObject):
    """What one anonymization of one table did (module docstring; keys in docs/anonymization.md).

    Every method records the fields up to ``utility`` and the hashes; ``levels`` and ``search``
    (and ``cell_suppression`` with cell suppression) are global recoding's, ``mondrian`` and
    ``microaggregation`` those methods', ``pram`` is there when PRAM ran. ``source`` is added by
    the CLI, ``policy_unreachable`` by the release pipeline when it shows a relaxed anonymization
    because the declared policy cannot be met, ``attack_control`` by the release pipeline when
    the spec declares ``policy.attacks`` or ``policy.synthetic`` (the control records set aside
    before this anonymization; ``rows_in`` then counts the rows after the slice), ``synthetic`` by
    a synthetic release (method ``synthetic``: how its rows were made).
    """

    format: str = key("str")
    release: str = key("str")
    method: str = key("str")
    parameters: Parameters = key(section=Parameters)
    seed: int | None = key("int", nullable=True)
    quasi_identifiers: list[str] = key("list")
    partition_keys: list[str] = key("list")
    rows_in: int = key("int")
    rows_out: int = key("int")
    suppression: Suppression = key(section=Suppression)
    classes: Classes = key(section=Classes)
    utility: Utility = key(section=Utility)
    pram: PramInfo | None = key(optional=True, section=PramInfo)
    levels: dict[str, int] | None = key("object", optional=True)
    search: dict[str, Any] | None = key("object", optional=True)
    cell_suppression: CellSuppression | None = key(optional=True, section=CellSuppression)
    mondrian: MondrianInfo | None = key(optional=True, section=MondrianInfo)
    microaggregation: MicroaggregationInfo | None = key(optional=True, section=MicroaggregationInfo)
    input_hash: str = key("str")
    output_hash: str = key("str")
    elapsed_s: float = key("number")
    source: Source | None = key(optional=True, section=Source)
    policy_unreachable: str | None = key("str", optional=True)
    person_suppression: PersonSuppression | None = key(optional=True, section=PersonSuppression)
    attack_control: AttackControl | None = key(optional=True, section=AttackControl)
    synthetic: SyntheticInfo | None = key(optional=True, section=SyntheticInfo)

    @classmethod
    def from_json(cls, data: Any, where: str | None = None, prefix: str = "") -> TransformationRecord:
        """The record of its JSON form; refuses another or no ``format`` first (one DataError
        naming ``where``), then checks every key (see :mod:`.record_json`)."""
        where = where or "transformation record"
        fmt = data.get("format") if isinstance(data, Mapping) else None
        if fmt != RECORD_FORMAT:
            found = "has no 'format' key" if fmt is None else f"has format {fmt!r}"
            raise DataError(f"{where}: the record {found}, this version reads only {RECORD_FORMAT!r}: "
                            "anonymize the table again to write one")
        return super().from_json(data, where, prefix)

    @classmethod
    def read(cls, path: str | Path) -> TransformationRecord:
        """The record stored in ``path`` (JSON); a DataError naming the file when it is not one."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"{path}: not a JSON transformation record ({exc})") from None
        return cls.from_json(data, str(path))

    def summary(self, boxes_in: str) -> dict[str, Any]:
        """The record's JSON without what can be large: Mondrian's per-class boxes are replaced
        by their count and ``boxes_in``, the file that keeps them (what Dagster's metadata shows)."""
        out = plain_json(self.to_json())
        if self.mondrian is not None:
            out["mondrian"] = {**out["mondrian"], "boxes": f"{self.mondrian.boxes.classes} class boxes, in {boxes_in}"}
        return out

    def write(self, path: str | Path, *, sort_keys: bool = False, final_newline: bool = True) -> Path:
        """Write the record as indented JSON to ``path``, atomically (mode 0600).

        The defaults are the layout of ``anon-dagster anonymize`` (keys in record order, a final
        newline); report folders hold sorted keys without one
        (:func:`anon_dagster.release.publication.write_record`).
        """
        text = json.dumps(plain_json(self.to_json()), indent=2, sort_keys=sort_keys)
        return write_bytes_atomic((text + ("\n" if final_newline else "")).encode(), path)
