"""Privacy criteria the anonymizer must reach, judged on class counts (never on rows) with the
risk kernel's own figures.

A :class:`Policy` gathers the targets of a release spec: ``anonymization.k`` and every
threshold of ``policy.thresholds`` the anonymizer can reach by generalizing and suppressing.
:class:`SensitiveAttribute` says how each sensitive attribute is measured (kind, order,
hierarchy), as the release gate passes it to ``measure_risk``.

Per-class criteria (a class that misses one is *failing*; its rows are suppressed if the
suppression budget allows). Every figure is computed by :mod:`anon_dagster.risk.sensitive` from
one class representation, the class sizes and the sparse class × sensitive-value counts
(:class:`SensitivePairs`, the search's roll-up of them), so the search and the gate compute the
same floats; thresholds are compared with the gate's tolerance (``criteria.TOLERANCE``):

- k: class size >= k, where k = max(anonymization.k, thresholds.k, ceil(1 / prosecutor_max))
  (a class of size s has prosecutor risk 1/s).
- l-distinct: at least l distinct sensitive values in the class.
- entropy-l: exp(Shannon entropy of the class's sensitive values, natural log) >= l.
- recursive (c, l): r1 < c * (r_l + r_{l+1} + ... + r_m), with r_i the i-th largest count.
- t-closeness: the earth mover's distance between the class's sensitive distribution and the
  published table's <= t, with the distance of the attribute's kind: total variation (nominal),
  ordered EMD (ordinal, numeric), hierarchical EMD (a sensitive hierarchy).

Table-level criterion: prosecutor_avg, the mean over published rows of 1/|class| (= published
classes / published rows) <= threshold.

The reference of t-closeness is the table the gate measures: the published rows. Without
suppression that is the input table. With suppression, :func:`published_evaluation` sets the
failing classes aside and judges the others again against the rows that remain, until none more
fails (an ordinal value held only by suppressed rows leaves the order, as it leaves the
published table).

Monotonicity (what the lattice search may prune on). Under generalization alone every criterion
above is monotone: merging classes that each satisfy one yields a class that satisfies it. For
entropy by concavity; for recursive (c,l) because the merged counts' tail sums add up; for
t-closeness because the reference is fixed (the input table) and each distance is convex in the
class's distribution (total variation and ordered EMD are L1 norms of linear maps of q - p, the
hierarchical EMD a mean of total variations of coarsenings), so a merged class is no farther
than the farther of its parts; for prosecutor_avg because merging lowers the number of classes.
When rows may be suppressed, only k (with prosecutor_max) and l-distinct stay monotone: the rows
of a passing class stay in a passing class after generalizing, so the rows to suppress can only
shrink. Entropy-l, recursive (c,l), t-closeness (whose reference then moves with what is
suppressed) and prosecutor_avg are checked exactly on every candidate node, never pruned on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..criteria import TOLERANCE, declared_thresholds
from ..hierarchies import Hierarchy
from ..risk.closeness import t_closeness, total_variation
from ..risk.sensitive import Cells, CodedSensitive, code_sensitive, diversity, recursive_l

# The release gate's tolerance: a figure at its threshold, up to rounding, passes both.
EPS = TOLERANCE


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


@dataclass(frozen=True)
class SensitiveAttribute:
    """What the search needs to know about one sensitive attribute to judge it as the gate does.

    ``kind`` (nominal, ordinal, numeric), ``order`` (an ordinal attribute's value order) and
    ``hierarchy`` choose the t-closeness distance exactly as ``measure_risk`` does for the
    release gate: total variation, ordered EMD, hierarchical EMD.
    """

    name: str
    kind: str = "nominal"
    order: tuple[object, ...] | None = None
    hierarchy: Hierarchy | None = None

    def code(self, series: pd.Series) -> CodedSensitive:
        """The column coded as the risk kernel codes it (missing values are a value)."""
        return code_sensitive(series, self.name, kind=self.kind, order=self.order,
                              hierarchy=self.hierarchy)


def sensitive_attributes(spec, names: Sequence[str]) -> tuple[SensitiveAttribute, ...]:
    """The spec's sensitive attributes ``names`` with the kind, order and hierarchy the gate
    passes to ``measure_risk`` (``release.gate.measure``)."""
    from ..spec import build_hierarchy

    out = []
    for name in names:
        col = spec.columns[name]
        out.append(SensitiveAttribute(
            name, col.kind or "nominal", tuple(col.order) if col.order else None,
            build_hierarchy(spec, name) if col.hierarchy is not None else None))
    return tuple(out)


def as_coded(sensitive: CodedSensitive | np.ndarray, name: str = "sensitive") -> CodedSensitive:
    """A sensitive attribute as :class:`CodedSensitive`; plain codes are a nominal attribute."""
    if isinstance(sensitive, CodedSensitive):
        return sensitive
    codes = np.asarray(sensitive, dtype=np.int64)
    n_values = int(codes.max()) + 1 if len(codes) else 1
    return CodedSensitive(name, codes, np.arange(n_values).astype(object))


@dataclass
class SensitivePairs:
    """Non-zero cells of a class × sensitive-value count matrix (sparse), as the search rolls
    them up, with what judging them needs.

    ``cls[i]`` holds ``count[i]`` rows with sensitive code ``value[i]``; ``n_values`` is the
    number of sensitive codes; ``total`` the table's rows per code (int64; or a distribution,
    see :class:`~anon_dagster.risk.sensitive.Cells`); ``coded`` the attribute (its kind, order
    or hierarchy choose the t-closeness distance; None: nominal).
    """

    cls: np.ndarray
    value: np.ndarray
    count: np.ndarray
    n_values: int
    total: np.ndarray
    coded: CodedSensitive | None = None

    @property
    def global_dist(self) -> np.ndarray:
        """The table's distribution over the codes."""
        return self.total / max(float(self.total.sum()), 1e-300)

    def rollup(self, class_map: np.ndarray, n_classes: int) -> SensitivePairs:
        """The pairs after mapping classes through ``class_map`` (old class → new class)."""
        new_cls = class_map[self.cls]
        key = new_cls * self.n_values + self.value
        from .coding import group

        uniq, _, counts = group(key, n_classes * self.n_values, self.count)
        return SensitivePairs(uniq // self.n_values, uniq % self.n_values, counts,
                              self.n_values, self.total, self.coded)

    def cells(self, sizes: np.ndarray, total: np.ndarray | None = None) -> Cells:
        """The risk kernel's cells of these pairs (``total``: another reference, e.g. the kept rows)."""
        return Cells.from_counts(sizes, self.cls, self.value, self.count, self.n_values,
                                 self.total if total is None else total)

    def kept_total(self, failing: np.ndarray) -> np.ndarray:
        """Rows per code once the classes marked ``failing`` are set aside."""
        lost = failing[self.cls]
        if not lost.any():
            return self.total
        removed = np.bincount(self.value[lost], weights=self.count[lost], minlength=self.n_values)
        return self.total - removed.astype(self.total.dtype)


def pairs_from_rows(row_class: np.ndarray, n_classes: int, codes: np.ndarray | CodedSensitive,
                    n_values: int | None = None, total: np.ndarray | None = None,
                    attribute: CodedSensitive | None = None, weights: np.ndarray | None = None) -> SensitivePairs:
    """Sparse class × value counts from each row's class and sensitive code (``weights``: the
    rows each stands for, a frequency table's counts).

    ``codes`` is a :class:`CodedSensitive` (its kind decides the distance) or plain codes,
    nominal unless ``attribute`` names the attribute they are codes of (a subset of its rows:
    its kind, order or hierarchy then decide the distance). ``total`` (rows per code, int64, or
    a distribution) replaces the rows' own counts as the reference of t-closeness: classes of
    some rows judged against the table they are published in.
    """
    from .coding import group

    coded = codes if isinstance(codes, CodedSensitive) else attribute
    values = np.asarray(codes.codes if isinstance(codes, CodedSensitive) else codes).astype(np.int64, copy=False)
    if n_values is None:
        n_values = coded.n_values if coded is not None else (int(values.max()) + 1 if len(values) else 1)
    key = row_class * n_values + values
    uniq, _, counts = group(key, n_classes * n_values, weights)
    if weights is not None:
        counts = np.rint(np.asarray(counts)).astype(np.int64)
    if total is None:
        total = np.bincount(values, weights=weights, minlength=n_values)
        total = (np.rint(total) if weights is not None else total).astype(np.int64)
    return SensitivePairs(uniq // n_values, uniq % n_values, counts, n_values, np.asarray(total), coded)


@dataclass
class Evaluation:
    """Per-class verdicts of a policy on one set of classes.

    ``failing`` marks classes that miss a per-class criterion; ``missed`` holds, per criterion
    name, the classes missing it (a class can miss several); ``rows_failing`` counts their rows.
    """

    failing: np.ndarray
    rows_failing: dict[str, int] = field(default_factory=dict)
    missed: dict[str, np.ndarray] = field(default_factory=dict, repr=False)


def _evaluation(sizes: np.ndarray, missed: dict[str, np.ndarray]) -> Evaluation:
    failing = np.zeros(len(sizes), dtype=bool)
    for mask in missed.values():
        failing |= mask
    return Evaluation(failing, {name: int(sizes[m].sum()) for name, m in missed.items()}, missed)


def evaluate_classes(policy: Policy, sizes: np.ndarray, pairs: Sequence[SensitivePairs] | None = None,
                     totals: Sequence[np.ndarray] | None = None) -> Evaluation:
    """Which classes miss a per-class criterion of ``policy`` (see the module docstring).

    The figures are the risk kernel's (:mod:`anon_dagster.risk.sensitive`), the ones
    ``measure_risk`` reports and the release gate judges, compared with the gate's tolerance.
    ``totals`` (one per pairs) replaces each attribute's reference distribution.
    """
    missed = {"k": sizes < policy.k}

    def miss(name: str, f: np.ndarray) -> None:
        missed[name] = missed[name] | f if name in missed else f

    if policy.needs_sensitive and pairs:
        for i, sp in enumerate(pairs):
            cells = sp.cells(sizes, totals[i] if totals is not None else None)
            if policy.l_distinct or policy.l_entropy:
                div = diversity(sizes, cells)
                if policy.l_distinct:
                    miss("l_distinct", div.l_distinct < policy.l_distinct)
                if policy.l_entropy:
                    miss("l_entropy", np.exp(div.entropy) < policy.l_entropy - EPS)
            if policy.recursive_cl:
                c, l_ = policy.recursive_cl
                miss("recursive_cl", recursive_l(sizes, cells, c) < l_)
            if policy.t_closeness is not None:
                if sp.coded is None:
                    t = total_variation(sizes, cells)
                else:
                    t, _ = t_closeness(sizes, sp.coded, cells)
                miss("t_closeness", t > policy.t_closeness + EPS)
    return _evaluation(sizes, missed)


def published_evaluation(policy: Policy, sizes: np.ndarray,
                         pairs: Sequence[SensitivePairs] | None = None) -> Evaluation:
    """The classes to suppress so that every published class meets the policy as the gate
    measures the published table.

    The gate measures t-closeness against the distribution of the *published* rows, which
    suppression changes: the failing classes are set aside and the others judged again against
    the rows that remain, until no more fails (a class once failing stays suppressed, so this
    ends after at most as many rounds as classes; in practice one or two). Without t-closeness,
    or when nothing fails, this is :func:`evaluate_classes`.
    """
    ev = evaluate_classes(policy, sizes, pairs)
    if policy.t_closeness is None or not policy.needs_sensitive or not pairs:
        return ev
    missed = dict(ev.missed)
    while ev.failing.any() and not ev.failing.all():
        totals = [sp.kept_total(ev.failing) for sp in pairs]
        again = evaluate_classes(policy, sizes, pairs, totals)
        if not (again.failing & ~ev.failing).any():
            break
        # only t-closeness depends on the reference; its misses accumulate over the rounds
        missed["t_closeness"] = missed["t_closeness"] | again.missed["t_closeness"]
        ev = _evaluation(sizes, missed)
    return ev


def suppression_budget(policy: Policy, n_rows: int) -> int:
    """Rows that may be suppressed: floor(max_suppression × rows)."""
    return int(math.floor(policy.max_suppression * n_rows + EPS))


def avg_risk_ok(policy: Policy, kept_classes: int, kept_rows: int) -> bool:
    """prosecutor_avg (published classes / published rows) within its threshold, if declared."""
    if policy.prosecutor_avg is None or kept_rows == 0:
        return True
    return kept_classes / kept_rows <= policy.prosecutor_avg + EPS
