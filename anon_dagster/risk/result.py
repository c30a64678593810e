"""What ``measure_risk`` returns: :class:`RiskMeasures`, its contract keys and its JSON form.

The metric names of ``RiskMeasures.to_dict()`` are a contract (:data:`CONTRACT_KEYS`): rows,
classes, k, uniques_fraction, prosecutor_max, prosecutor_avg, journalist_max, journalist_avg,
marketer, l_distinct, l_entropy, t_closeness; ``None`` when not computable (no sensitive
attribute, no population). Further keys are listed in docs/risk.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .breakdown import subgroup_breakdown
from .classes import EquivalenceClasses
from .coding import FactorizeCache

CONTRACT_KEYS = (
    "rows", "classes", "k", "uniques_fraction", "prosecutor_max", "prosecutor_avg",
    "journalist_max", "journalist_avg", "marketer", "l_distinct", "l_entropy", "t_closeness",
)

DEFAULT_RISK_THRESHOLD = 0.2  # 1/5: a record in a class smaller than 5 is "at risk"


@dataclass
class SensitiveResult:
    """Per-class attribute-disclosure figures of one sensitive attribute."""

    name: str
    l_distinct: np.ndarray
    entropy: np.ndarray
    t: np.ndarray
    t_distance: str
    tv: np.ndarray
    l_recursive: np.ndarray | None = None
    disclosure: dict[str, Any] = field(default_factory=dict)

    def summary(self, recursive_c: float | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "l_distinct": int(self.l_distinct.min()),
            "l_entropy": float(math.exp(self.entropy.min())),
            "entropy_min_nats": float(self.entropy.min()),
            "t_closeness": float(self.t.max()),
            "t_closeness_distance": self.t_distance,
            "t_closeness_tv": float(self.tv.max()),
        }
        if self.l_recursive is not None:
            out["l_recursive"] = int(self.l_recursive.min())
            out["recursive_c"] = float(recursive_c)  # type: ignore[arg-type]
        out.update(self.disclosure)
        return out


@dataclass
class RiskMeasures:
    """The risk and utility figures of one table (see docs/risk.md for every definition).

    The twelve contract fields are those of :data:`CONTRACT_KEYS`; ``extras`` holds the rest (histogram,
    records at risk, per-class averages, population uniqueness, utility, breakdowns). ``classes``
    and the per-class arrays stay available for reports and breakdowns but are not serialized.
    """

    rows: int
    classes: int
    k: int
    uniques_fraction: float
    prosecutor_max: float
    prosecutor_avg: float
    journalist_max: float | None = None
    journalist_avg: float | None = None
    marketer: float | None = None
    l_distinct: int | None = None
    l_entropy: float | None = None
    t_closeness: float | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    equivalence_classes: EquivalenceClasses | None = field(default=None, repr=False)
    sensitive_results: list[SensitiveResult] = field(default_factory=list, repr=False)
    population_sizes: np.ndarray | None = field(default=None, repr=False)
    risk_threshold: float = DEFAULT_RISK_THRESHOLD

    def to_dict(self) -> dict[str, Any]:
        """The contract keys, then the extras; plain ints/floats/strings/lists only (JSON-safe)."""
        out = {key: getattr(self, key) for key in CONTRACT_KEYS}
        out.update(self.extras)
        return _json_safe(out)

    # ----- per class and per record ---------------------------------------------------------
    def class_table(self) -> pd.DataFrame:
        """One row per class: its QI values, size, prosecutor risk, and what else was measured."""
        ec = self._ec()
        table = ec.keys()
        table["size"] = ec.sizes
        table["prosecutor_risk"] = 1.0 / ec.sizes
        if self.population_sizes is not None:
            table["population_size"] = self.population_sizes
            table["journalist_risk"] = 1.0 / self.population_sizes
        for res in self.sensitive_results:
            prefix = "" if len(self.sensitive_results) == 1 else f"{res.name}:"
            table[f"{prefix}l_distinct"] = res.l_distinct
            table[f"{prefix}l_entropy"] = np.exp(res.entropy)
            table[f"{prefix}t"] = res.t
        return table

    def record_risk(self) -> np.ndarray:
        """Prosecutor risk ``1 / n_c`` of each row, by position."""
        ec = self._ec()
        return 1.0 / ec.sizes[ec.row_class]

    def breakdown(self, groups: pd.Series | np.ndarray | Sequence[object], name: str = "group",
                  cache: FactorizeCache | None = None) -> pd.DataFrame:
        """Every per-record figure aggregated per subgroup (one value per row, by position).

        Per group: rows, classes touched, k (smallest class of its rows), uniques_fraction,
        prosecutor max/avg (mean over the group's rows of ``1/n_c``), records_at_risk, and when
        measured l_distinct/l_entropy (worst class touched), t_closeness (largest),
        journalist_max and marketer. Missing group values form a group of their own. The
        classes are those of the whole table: a minority's figures are its own rows' risks.
        """
        return subgroup_breakdown(
            self._ec(), groups, name, cache, risk_threshold=self.risk_threshold,
            population_sizes=self.population_sizes, sensitive_results=self.sensitive_results)

    def _ec(self) -> EquivalenceClasses:
        if self.equivalence_classes is None:
            raise ValueError("these measures were loaded without their equivalence classes")
        return self.equivalence_classes


def _json_safe(value: Any) -> Any:
    """Plain Python types only: numpy scalars to int/float, NaN/inf to None, tuples to lists."""
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_json_safe(v) for v in value.tolist()]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        v = float(value)
        return v if math.isfinite(v) else None
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)
