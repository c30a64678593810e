"""Privacy criteria the anonymizer must reach, evaluated on class counts (never on rows).

A :class:`Policy` gathers the targets of a release spec: ``anonymization.k`` and every
threshold of ``policy.thresholds`` the anonymizer can reach by generalizing and suppressing.

Per-class criteria (a class that misses one is *failing*; its rows are suppressed if the
suppression budget allows):

- k: class size >= k, where k = max(anonymization.k, thresholds.k, ceil(1 / prosecutor_max))
  (a class of size s has prosecutor risk 1/s).
- l-distinct: at least l distinct sensitive values in the class.
- entropy-l: exp(Shannon entropy of the class's sensitive values, natural log) >= l.
- recursive (c, l): r1 < c * (r_l + r_{l+1} + ... + r_m), with r_i the i-th largest count.
- t-closeness: total-variation distance between the class's sensitive distribution and the
  input table's <= t (the equal-distance EMD, for which t-closeness is monotone).

Table-level criterion: prosecutor_avg, the mean over published rows of 1/|class| (= published
classes / published rows) <= threshold.

Monotonicity (what the lattice search may prune on). Under generalization alone every criterion
above is monotone: merging classes that each satisfy one yields a class that satisfies it (for
entropy, recursive (c,l) and t-closeness by concavity/convexity; for prosecutor_avg because
merging lowers the number of classes). When rows may be suppressed, only k (with
prosecutor_max) and l-distinct stay monotone: the rows of a passing class stay in a passing
class after generalizing, so the rows to suppress can only shrink. Entropy-l, recursive (c,l),
t-closeness and prosecutor_avg are then checked exactly on every candidate node, never pruned on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..criteria import declared_thresholds

# Tolerance for floating-point thresholds (a class exactly at the threshold passes).
EPS = 1e-9


@dataclass(frozen=True)
class Policy:
    """The criteria an anonymization must satisfy, and its row-suppression budget."""

    k: int = 1
    l_distinct: int | None = None
    l_entropy: float | None = None
    recursive_cl: tuple[float, int] | None = None
    t_closeness: float | None = None
    prosecutor_avg: float | None = None
    max_suppression: float = 0.0
    sensitive: tuple[str, ...] = ()

    @classmethod
    def from_spec(cls, spec) -> Policy:
        """The policy of a release spec: anonymization.k, max_suppression, and every declared
        threshold the registry marks targetable (``Criterion.target`` gives the field it sets;
        several criteria setting ``k``, like prosecutor_max's ceil(1 / p), take the largest)."""
        fields: dict[str, Any] = {"k": spec.anonymization.k}
        needs_sensitive = False
        for criterion, threshold in declared_thresholds(spec.policy.thresholds):
            if not criterion.targetable:
                continue
            name, value = criterion.target(threshold)
            fields[name] = max(fields[name], value) if name == "k" else value
            needs_sensitive |= criterion.needs_sensitive
        return cls(
            **fields,
            max_suppression=spec.anonymization.max_suppression,
            sensitive=tuple(spec.sensitive) if needs_sensitive else (),
        )

    @property
    def needs_sensitive(self) -> bool:
        return bool(self.sensitive) and any(
            v is not None
            for v in (self.l_distinct, self.l_entropy, self.recursive_cl, self.t_closeness)
        )

    def monotone(self, suppression: bool) -> Policy:
        """The part of the policy that is monotone (see module docstring)."""
        if not suppression:
            return self
        return Policy(
            k=self.k,
            l_distinct=self.l_distinct,
            max_suppression=self.max_suppression,
            sensitive=self.sensitive if self.l_distinct else (),
        )

    def is_monotone(self, suppression: bool) -> bool:
        """Whether every criterion is monotone in this setting."""
        return self.monotone(suppression) == self

    def names(self) -> list[str]:
        """Criteria in force, as they appear in records and messages."""
        out = [f"k={self.k}"]
        if self.l_distinct:
            out.append(f"l_distinct={self.l_distinct}")
        if self.l_entropy:
            out.append(f"l_entropy={self.l_entropy:g}")
        if self.recursive_cl:
            out.append(f"recursive_cl=({self.recursive_cl[0]:g},{self.recursive_cl[1]})")
        if self.t_closeness is not None:
            out.append(f"t_closeness={self.t_closeness:g}")
        if self.prosecutor_avg is not None:
            out.append(f"prosecutor_avg={self.prosecutor_avg:g}")
        return out

    def to_dict(self) -> dict:
        return {
            "k": self.k,
            "l_distinct": self.l_distinct,
            "l_entropy": self.l_entropy,
            "recursive_cl": list(self.recursive_cl) if self.recursive_cl else None,
            "t_closeness": self.t_closeness,
            "prosecutor_avg": self.prosecutor_avg,
            "max_suppression": self.max_suppression,
            "sensitive": list(self.sensitive),
        }


@dataclass
class SensitivePairs:
    """Non-zero cells of a class × sensitive-value count matrix (sparse).

    ``cls[i]`` holds ``count[i]`` rows with sensitive code ``value[i]``; ``n_values`` is the
    number of sensitive codes and ``global_dist`` the input table's distribution over them.
    """

    cls: np.ndarray
    value: np.ndarray
    count: np.ndarray
    n_values: int
    global_dist: np.ndarray

    def rollup(self, class_map: np.ndarray, n_classes: int) -> SensitivePairs:
        """The pairs after mapping classes through ``class_map`` (old class → new class)."""
        new_cls = class_map[self.cls]
        key = new_cls * self.n_values + self.value
        from .coding import group

        uniq, _, counts = group(key, n_classes * self.n_values, self.count)
        return SensitivePairs(uniq // self.n_values, uniq % self.n_values, counts,
                              self.n_values, self.global_dist)


def pairs_from_rows(row_class: np.ndarray, n_classes: int, codes: np.ndarray, n_values: int,
                    global_dist: np.ndarray | None = None) -> SensitivePairs:
    """Sparse class × value counts from each row's class and sensitive code."""
    from .coding import group

    key = row_class * n_values + codes
    uniq, _, counts = group(key, n_classes * n_values)
    if global_dist is None:
        global_dist = np.bincount(codes, minlength=n_values) / max(len(codes), 1)
    return SensitivePairs(uniq // n_values, uniq % n_values, counts, n_values, global_dist)


@dataclass
class Evaluation:
    """Per-class verdicts of a policy on one set of classes.

    ``failing`` marks classes that miss a per-class criterion; ``rows_failing`` counts, for each
    criterion name, the rows in classes missing it (a class can miss several).
    """

    failing: np.ndarray
    rows_failing: dict[str, int] = field(default_factory=dict)


def evaluate_classes(policy: Policy, sizes: np.ndarray,
                     pairs: list[SensitivePairs] | None = None) -> Evaluation:
    """Which classes miss a per-class criterion of ``policy`` (see the module docstring)."""
    n_classes = len(sizes)
    failing = sizes < policy.k
    rows = {"k": int(sizes[failing].sum())}
    if policy.needs_sensitive and pairs:
        safe_sizes = np.maximum(sizes, 1)
        for sp in pairs:
            distinct = np.bincount(sp.cls, minlength=n_classes)
            if policy.l_distinct:
                f = distinct < policy.l_distinct
                rows["l_distinct"] = rows.get("l_distinct", 0) + int(sizes[f].sum())
                failing |= f
            p = sp.count / safe_sizes[sp.cls]
            if policy.l_entropy:
                h = -np.bincount(sp.cls, weights=p * np.log(p), minlength=n_classes)
                f = np.exp(h) < policy.l_entropy - EPS
                rows["l_entropy"] = rows.get("l_entropy", 0) + int(sizes[f].sum())
                failing |= f
            if policy.recursive_cl:
                c, l_ = policy.recursive_cl
                order = np.lexsort((-sp.count, sp.cls))
                cls_sorted, cnt_sorted = sp.cls[order], sp.count[order]
                starts = np.searchsorted(cls_sorted, np.arange(n_classes))
                rank = np.arange(len(cls_sorted)) - starts[cls_sorted]
                r1 = np.zeros(n_classes)
                r1[cls_sorted[rank == 0]] = cnt_sorted[rank == 0]
                tail = np.bincount(cls_sorted, weights=cnt_sorted * (rank >= l_ - 1),
                                   minlength=n_classes)
                f = ~(r1 < c * tail)
                rows["recursive_cl"] = rows.get("recursive_cl", 0) + int(sizes[f].sum())
                failing |= f
            if policy.t_closeness is not None:
                g = sp.global_dist[sp.value]
                d = 0.5 * (np.bincount(sp.cls, weights=np.abs(p - g) - g, minlength=n_classes) + 1.0)
                f = d > policy.t_closeness + EPS
                rows["t_closeness"] = rows.get("t_closeness", 0) + int(sizes[f].sum())
                failing |= f
    return Evaluation(failing, rows)


def suppression_budget(policy: Policy, n_rows: int) -> int:
    """Rows that may be suppressed: floor(max_suppression × rows)."""
    return int(math.floor(policy.max_suppression * n_rows + EPS))


def avg_risk_ok(policy: Policy, kept_classes: int, kept_rows: int) -> bool:
    """prosecutor_avg (published classes / published rows) within its threshold, if declared."""
    if policy.prosecutor_avg is None or kept_rows == 0:
        return True
    return kept_classes / kept_rows <= policy.prosecutor_avg + EPS
