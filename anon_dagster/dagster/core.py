"""The core functions the Dagster layer calls, gathered in one place.

The Dagster layer never computes a privacy figure itself: it calls the core (risk, anonymize,
pseudonymize, release), which knows nothing of Dagster. While a core module is not available
yet, a minimal interim implementation stands in for it here so the asset graph can run; each
one is removed as soon as the real module exists.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SecretError
from ..spec import ReleaseSpec

try:  # risk kernel
    from ..risk import measure_risk  # type: ignore[attr-defined]
except ImportError:  # interim: k, prosecutor risk, uniques, l-distinct only

    def measure_risk(df: pd.DataFrame, quasi_identifiers: list[str], sensitive: list[str] | None = None,
                     population: Any = None, sampling_fraction: float | None = None,
                     count_column: str | None = None) -> _InterimMeasures:
        n = len(df)
        if n == 0 or not quasi_identifiers:
            codes = np.zeros(n, dtype=np.int64)
        else:
            codes = df.groupby(list(quasi_identifiers), dropna=False, sort=False).ngroup().to_numpy()
        sizes = np.bincount(codes) if n else np.zeros(0, dtype=np.int64)
        row_size = sizes[codes] if n else np.zeros(0)
        out: dict[str, Any] = {
            "rows": n, "classes": int(len(sizes)), "k": int(sizes.min()) if n else 0,
            "uniques_fraction": float((row_size == 1).mean()) if n else 0.0,
            "prosecutor_max": float(1 / sizes.min()) if n else 0.0,
            "prosecutor_avg": float(len(sizes) / n) if n else 0.0,
        }
        for s in sensitive or []:
            distinct = pd.Series(df[s].to_numpy(dtype=object)).groupby(codes).nunique(dropna=False)
            out["l_distinct"] = min(out.get("l_distinct", np.inf), int(distinct.min()) if n else 0)
        hist = pd.Series(sizes).value_counts().sort_index()
        out["class_size_histogram"] = [{"sizes": str(k), "classes": int(v), "rows": int(k * v)} for k, v in hist.items()]
        return _InterimMeasures(out)

    @dataclass
    class _InterimMeasures:
        values: dict[str, Any]

        def to_dict(self) -> dict[str, Any]:
            return dict(self.values)


try:  # utility of a release for the question it must answer
    from ..risk import utility_query_error  # type: ignore[attr-defined]
except ImportError:  # interim: prevalence of each target value per group, in points

    def utility_query_error(original: pd.DataFrame, anonymized: pd.DataFrame, group_by: list[str],
                            target: str) -> tuple[float, pd.DataFrame]:
        def prevalence(df: pd.DataFrame, totals: pd.Series) -> pd.Series:
            counts = df.groupby([*group_by, target], dropna=False, observed=True).size()
            return counts / totals.reindex(counts.index.droplevel(-1)).to_numpy() * 100

        totals = original.groupby(group_by, dropna=False, observed=True).size()
        before = prevalence(original, totals)
        after = prevalence(anonymized, totals).reindex(before.index, fill_value=0.0)
        table = pd.DataFrame({"original": before, "anonymized": after})
        table["error_points"] = (table["original"] - table["anonymized"]).abs()
        return float(table["error_points"].max()) if len(table) else 0.0, table.reset_index()


try:  # anonymization
    from ..anonymize import anonymize  # type: ignore[attr-defined]
except ImportError:  # interim: suppress the rows of classes smaller than k, within the budget

    @dataclass
    class _InterimResult:
        data: pd.DataFrame
        record: dict[str, Any] = field(default_factory=dict)
        suppressed: int = 0

    def anonymize(df: pd.DataFrame, spec: ReleaseSpec, progress: Any = None) -> _InterimResult:
        qis = spec.quasi_identifiers
        k = spec.anonymization.k
        if spec.anonymization.method == "none":
            return _InterimResult(df, {"method": "none"}, 0)
        sizes = df.groupby(qis, dropna=False, sort=False)[qis[0]].transform("size") if qis else None
        small = (sizes < k).to_numpy() if sizes is not None else np.zeros(len(df), bool)
        if small.sum() <= spec.anonymization.max_suppression * len(df):
            kept = df.loc[~small]
        else:
            kept = df
        record = {"method": "interim-suppression", "k": k, "suppressed": int(len(df) - len(kept))}
        return _InterimResult(kept, record, int(len(df) - len(kept)))


try:  # pseudonymization
    from ..pseudonymize import open_keystore, pseudonym_pattern, pseudonymize  # type: ignore[attr-defined]
except ImportError:  # interim: HMAC-SHA256 under a master key from the environment

    class _InterimKeyStore:
        def __init__(self, master: bytes):
            self._master = master

        def derive_key(self, purpose: str, version: int | None = None) -> bytes:
            return hmac.new(self._master, f"{purpose}:{version or 1}".encode(), hashlib.sha256).digest()

    def open_keystore(path: str | None = None) -> _InterimKeyStore:
        raw = os.environ.get("ANON_DAGSTER_MASTER_KEY")
        if path is not None and raw is None:
            try:
                raw = open(path, encoding="utf-8").read().strip()
            except OSError:
                raise SecretError(f"key store {path}: cannot be opened") from None
        if not raw:
            raise SecretError("no key store: set ANON_DAGSTER_KEYSTORE or ANON_DAGSTER_MASTER_KEY")
        try:
            return _InterimKeyStore(base64.b64decode(raw, validate=True))
        except ValueError:
            raise SecretError("the key store cannot be opened: malformed key") from None

    def pseudonym_pattern(method: str, prefix_version: bool = True) -> str:
        return r"^v\d+_[0-9a-f]{32}$" if prefix_version else r"^[0-9a-f]{32}$"

    def pseudonymize(df: pd.DataFrame, spec: ReleaseSpec, keystore: Any) -> tuple[pd.DataFrame, Any]:
        out = df.copy()
        for name in spec.identifiers:
            col = spec.columns[name]
            if col.pseudonymize is None:
                out = out.drop(columns=[name])
                continue
            key = keystore.derive_key(col.pseudonymize.purpose)
            out[name] = [
                "v1_" + hmac.new(key, str(v).encode(), hashlib.sha256).hexdigest()[:32]
                for v in df[name]
            ]
        return out, _InterimMeasures({"columns": spec.pseudonymized})


__all__ = [
    "anonymize", "measure_risk", "open_keystore", "pseudonym_pattern", "pseudonymize",
    "utility_query_error",
]
