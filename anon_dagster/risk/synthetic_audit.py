"""The privacy audit of a synthetic table: what it keeps of the real records it was made from.

Three sets of rows take part: the **synthetic** rows; the **train** records (the real records the
synthetic table was made from); the **control** records (real records of the same population
the synthesis never saw, withheld before it: :func:`anon_dagster.release.attacks.control_split`).
A generator that learnt the population and not its people makes rows as near to the control
records as to the train records; every figure below is a difference between the two.

The train and control sides are compared at **equal size** (at most ``max_rows``, 3,000): both
are cut to the smaller one's size, keeping the rows of smallest keyed hash of their content (:func:`content_sample`; one
key per table, drawn from the three tables' content, so that equal rows of two tables are not
kept together). Against
a larger reference set, a synthetic row finds an equal or nearer record by chance more often, so
the same size on both sides is what makes 0 the closer-to-train figure of a generator that
copies nobody. The synthetic rows whose closest records are measured are cut the same way to
``max_rows``; the membership attacker looks at the whole synthetic table; the exact copies are
counted over every record of both sides and the whole synthetic table. A cut by content, not position,
makes every figure independent of the tables' row order.

**Distance** between two records (Gower's): the mean over the columns of ``|a - b| / range``
for a number or a date (range over the train and control records; 0 when it is 0) and of
``a != b`` for a category; a missing value equals a missing value and differs from any other by 1.

- **Exact-copy rate gap** (``copy_rate_gap``): the share of train records that some synthetic
  row equals in every column (the synthetic table holds an exact copy of them) minus the same
  share of the control records. 1 when the synthetic table copies every train record and no
  control record; about 0 for a generator independent of both (a control record is copied by
  chance as often as a train record: the population's common records). Counted per real
  record, it does not depend on how many records each side holds.
- **Closer-to-train gap** (``closer_to_train_gap``): for each synthetic row its distance to the
  closest record (DCR) among the train and among the control records; the share of synthetic
  rows closer to train (ties count 1/2) minus 0.5.
- **Membership-inference AUC** (``mia_auc``): an attacker holding a real record scores it by
  minus its DCR to the synthetic table (the nearer a synthetic row, the likelier it was a
  member); the AUC of that score separating the train records (members) from the control
  records, by the rank formula (Mann-Whitney, ties at their mean rank):
  ``AUC = (R_train - n_train (n_train + 1) / 2) / (n_train n_control)``. 0.5 is guessing, 1
  separates them completely.

The figures hold rates and counts only, never a value of any row. :func:`audit` computes them;
the attacks of :mod:`.attacks` on the synthetic table are run by the release gate beside them
(:mod:`anon_dagster.release.synthetic`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError

DEFAULT_MAX_ROWS = 3_000
# pairs of a distance block (rows x references): bounds the memory of one block to ~64 MB
_BLOCK_PAIRS = 8_000_000


@dataclass(frozen=True)
class SyntheticAudit:
    """The audit's figures (module docstring) and the sizes they were computed on."""

    copy_rate_train: float
    copy_rate_control: float
    closer_to_train: float
    mia_auc: float
    rows: dict[str, int]
    columns: list[str]

    @property
    def copy_rate_gap(self) -> float:
        return self.copy_rate_train - self.copy_rate_control

    @property
    def closer_to_train_gap(self) -> float:
        return self.closer_to_train - 0.5

    def figures(self) -> dict[str, Any]:
        """Plain values (what the criteria of ``policy.synthetic`` read, and the report shows)."""
        return {"copy_rate_gap": self.copy_rate_gap, "copy_rate_train": self.copy_rate_train,
                "copy_rate_control": self.copy_rate_control, "closer_to_train_gap": self.closer_to_train_gap,
                "closer_to_train": self.closer_to_train, "mia_auc": self.mia_auc, "rows": dict(self.rows),
                "columns": list(self.columns)}


def _numeric(series: pd.Series) -> bool:
    return ((pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype))
            or pd.api.types.is_datetime64_any_dtype(series.dtype))


def encode_tables(tables: Sequence[pd.DataFrame], columns: Sequence[str]) -> tuple[list[np.ndarray], np.ndarray]:
    """The tables as one numeric matrix each (rows x columns) and each column's kind (True for a
    number or a date): numbers scaled by their range over every table (a date as its instant), a
    category as the code of its label in the joint sorted labels; missing as NaN."""
    sizes = [len(t) for t in tables]
    numeric = np.zeros(len(columns), dtype=bool)
    out = [np.zeros((n, len(columns))) for n in sizes]
    for j, name in enumerate(columns):
        joint = pd.concat([t[name].reset_index(drop=True) for t in tables], ignore_index=True)
        if all(_numeric(t[name]) for t in tables):
            numeric[j] = True
            if pd.api.types.is_datetime64_any_dtype(joint.dtype):
                values = joint.astype("int64").to_numpy(dtype=np.float64)
                values[joint.isna().to_numpy()] = np.nan
            else:
                values = pd.to_numeric(joint).to_numpy(dtype=np.float64)
            low, high = (np.nanmin(values), np.nanmax(values)) if not np.isnan(values).all() else (0.0, 0.0)
            values = (values - low) / (high - low) if high > low else np.where(np.isnan(values), np.nan, 0.0)
        else:
            codes, _ = pd.factorize(joint.astype("string"), sort=True)
            values = np.where(codes < 0, np.nan, codes).astype(np.float64)
        start = 0
        for t, n in enumerate(sizes):
            out[t][:, j] = values[start:start + n]
            start += n
    return out, numeric


def _row_keys(matrix: np.ndarray) -> np.ndarray:
    """One uint64 per row identifying its content (NaN equal to NaN)."""
    frame = pd.DataFrame(np.where(np.isnan(matrix), -np.inf, matrix))
    return pd.util.hash_pandas_object(frame, index=False).to_numpy()


def content_sample(matrix: np.ndarray, size: int, key: str) -> np.ndarray:
    """Positions of the ``size`` rows of smallest keyed hash of their content (all rows when
    fewer): a sample that is the same multiset of rows whatever the row order."""
    if len(matrix) <= size:
        return np.arange(len(matrix))
    # equal rows are told apart by their occurrence (the 1st, 2nd, ... of that content): which of
    # them is which does not matter, they are equal, so the sample keeps its multiset whatever
    # the order, and a frequent content is sampled row by row, not all or nothing
    rows = _row_keys(matrix)
    occurrence = pd.Series(rows).groupby(rows).cumcount().to_numpy().astype(np.uint64)
    z = _mix(_mix(rows ^ np.uint64(int(key, 16))) + occurrence)
    return np.argsort(z, kind="stable")[:size]


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: a keyed hash of the rows' hashes (pandas keys the hash of text only)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def nearest_distance(rows: np.ndarray, references: np.ndarray, numeric: np.ndarray) -> np.ndarray:
    """Each row's Gower distance (module docstring) to its closest reference (inf without one)."""
    out = np.full(len(rows), np.inf)
    if not len(references) or not len(rows):
        return out
    p = max(rows.shape[1], 1)
    missing = bool(np.isnan(rows).any() or np.isnan(references).any())
    step = max(1, _BLOCK_PAIRS // max(len(references), 1))
    for start in range(0, len(rows), step):
        block = rows[start:start + step]
        total = np.zeros((len(block), len(references)))
        for j in range(rows.shape[1]):
            a, b = block[:, j][:, None], references[:, j][None, :]
            diff = np.abs(a - b) if numeric[j] else (a != b).astype(np.float64)
            if missing:  # NaN != NaN: a missing value equals a missing one, differs from others by 1
                diff = np.where(np.isnan(a) & np.isnan(b), 0.0, np.where(np.isnan(diff), 1.0, diff))
            total += diff
        out[start:start + step] = total.min(axis=1) / p
    return out


def auc(members: np.ndarray, others: np.ndarray) -> float:
    """The AUC of a score separating ``members`` from ``others`` (higher: member), by the rank
    formula with ties at their mean rank; NaN when a side is empty."""
    n1, n0 = len(members), len(others)
    if not n1 or not n0:
        return float("nan")
    # imported here: scipy.stats takes a second to import, and every release's definitions load
    # this module (the gate's evaluate step), synthetic or not
    from scipy.stats import rankdata

    ranks = rankdata(np.concatenate([members, others]))
    return float((ranks[:n1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def audit_key(synthetic: np.ndarray, train: np.ndarray, control: np.ndarray) -> str:
    """The 16-character hash key of the samples: SHA-256 of the three tables' sorted row keys,
    so the same tables in any row order sample the same rows."""
    digest = hashlib.sha256(b"anon_dagster/synthetic-audit/1")
    for m in (synthetic, train, control):
        digest.update(np.sort(_row_keys(m)).tobytes() + b"\0")
    return digest.hexdigest()[:16]


def _side_key(key: str, side: str) -> str:
    return hashlib.sha256(f"{key}\0{side}".encode()).hexdigest()[:16]


def audit(synthetic: pd.DataFrame, train: pd.DataFrame, control: pd.DataFrame, *,
          columns: Sequence[str] | None = None, max_rows: int = DEFAULT_MAX_ROWS) -> SyntheticAudit:
    """The audit of ``synthetic`` against the ``train`` records it was made from and the
    ``control`` records it never saw, over ``columns`` (default: the synthetic table's); module
    docstring. Raises DataError when a table lacks a column or a side is empty."""
    columns = list(columns if columns is not None else synthetic.columns)
    for what, frame in (("synthetic table", synthetic), ("train records", train), ("control records", control)):
        absent = [c for c in columns if c not in frame.columns]
        if absent:
            raise DataError(f"the synthetic audit: column {absent[0]!r} is not in the {what}")
        if not len(frame):
            raise DataError(f"the synthetic audit needs {what}, and there are none")
    (syn, tr, co), numeric = encode_tables([synthetic, train, control], columns)
    key = audit_key(syn, tr, co)
    keys_syn = _row_keys(syn)  # every record of each side: a share per record needs no equal sizes
    copy_train = float(np.isin(_row_keys(tr), keys_syn).mean())
    copy_control = float(np.isin(_row_keys(co), keys_syn).mean())
    size = min(len(tr), len(co), max_rows)
    # one hash key per table: the same key would pick equal rows of two tables together
    tr, co = tr[content_sample(tr, size, _side_key(key, "train"))], co[content_sample(co, size, _side_key(key, "control"))]
    syn_cut = syn[content_sample(syn, max_rows, _side_key(key, "synthetic"))]
    to_train, to_control = nearest_distance(syn_cut, tr, numeric), nearest_distance(syn_cut, co, numeric)
    closer = float(np.mean(np.where(to_train < to_control, 1.0, np.where(to_train == to_control, 0.5, 0.0))))
    # the attacker's score: minus the distance to the closest synthetic row
    score_train, score_control = -nearest_distance(tr, syn, numeric), -nearest_distance(co, syn, numeric)
    return SyntheticAudit(copy_rate_train=copy_train, copy_rate_control=copy_control, closer_to_train=closer,
                          mia_auc=auc(score_train, score_control),
                          rows={"synthetic": len(synthetic), "synthetic_compared": len(syn_cut),
                                "train": len(train), "control": len(control), "compared": size},
                          columns=columns)


__all__ = ["DEFAULT_MAX_ROWS", "SyntheticAudit", "audit", "audit_key", "auc", "content_sample", "encode_tables",
           "nearest_distance"]
