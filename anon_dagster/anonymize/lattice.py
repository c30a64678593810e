"""Optimal global recoding: a best-first search of the generalization lattice (Flash/Incognito).

Definitions. A *node* is a level vector, one hierarchy level per QI (partition keys are pinned
at level 0). Node b *generalizes* node a when b >= a on every QI. A node *satisfies* the policy
when the rows of its classes that miss a per-class criterion number at most the suppression
budget (floor(max_suppression × rows)) and the table-level criteria hold on the rest. The
search returns the satisfying node of least information loss under the spec's utility.

How the search stays fast:

- **Roll-up, not rows.** The rows are grouped once, at the bottom node. Any other node's classes
  come from a cached finer node's classes (keys, sizes, sparse sensitive histograms and the
  per-class sums the metrics need), mapped through per-QI code maps and regrouped: the cost is
  the number of classes of the finer node, never the number of rows.
- **Predictive tagging.** For the monotone part of the policy (see
  :mod:`anon_dagster.anonymize.criteria`), a node that satisfies tags every generalization as
  satisfying, one that fails tags every specialization as failing. An unknown node is resolved by
  a binary search along a chain from it to the top (Flash), carried to the chain's boundary, so
  each check tags whole regions. The chain climbs the QI whose next level adds least to the bound.
- **Best-first with a bound.** ``loss`` and ``entropy`` without suppression are sums over QIs of
  per-level totals, known for every node before any check, and a lower bound of the metric with
  suppression. Nodes are visited in increasing bound; the search stops once the bound reaches the
  best loss found. Without suppression the first satisfying node is the optimum. Metrics without
  such a bound (discernibility, aecs, query error) evaluate every node that satisfies the monotone
  part (only the minimal ones when nothing may be suppressed and the metric is monotone).

What is pruned with suppression allowed: only on k (with prosecutor_max) and l-distinct, which
stay monotone with suppression (as in ARX). The other criteria are checked exactly on each
candidate, so pruning never returns a node that misses one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import UserError
from ..risk.sensitive import CodedSensitive
from ..risk.utility import aecs, discernibility
from .coding import CodedQI, combine, group
from .criteria import (
    Policy,
    SensitivePairs,
    as_coded,
    avg_risk_ok,
    pairs_from_rows,
    published_evaluation,
    suppression_budget,
)
from .utility import SEPARABLE, QueryCodes, label_log_counts, label_loss, separable_bounds

MAX_LATTICE_NODES = 5_000_000
_CACHE_LIMIT = 512

UNKNOWN, PASS, FAIL = 0, 1, -1


class LatticeTooLarge(UserError):
    """The generalization lattice has too many nodes for an exhaustive optimal search."""


@dataclass
class NodeInfo:
    """What one check found about a node."""

    levels: tuple[int, ...]
    classes: int
    suppressed: int
    satisfied: bool
    loss: float | None = None
    missing: list[str] = field(default_factory=list)

    def to_dict(self, names: Sequence[str]) -> dict:
        return {
            "levels": dict(zip(names, (int(v) for v in self.levels), strict=True)),
            "classes": int(self.classes),
            "suppressed_rows": int(self.suppressed),
            "satisfied": bool(self.satisfied),
            "loss": None if self.loss is None else float(self.loss),
            "missing": list(self.missing),
        }


@dataclass
class SearchResult:
    """Outcome of the lattice search.

    ``levels`` is the chosen node (None when no node satisfies: then ``closest`` names the node
    that came nearest, with the criteria it misses). ``frontier`` lists the minimal satisfying
    nodes with their loss (the risk-utility frontier), when requested; ``frontier_complete`` says
    whether it is all of them (every node's status settled) or only those the search settled.
    """

    qis: list[str]
    levels: tuple[int, ...] | None
    loss: float | None
    metric: str
    nodes_checked: int
    lattice_size: int
    best: NodeInfo | None
    closest: NodeInfo | None
    frontier: list[NodeInfo]
    elapsed_s: float
    frontier_complete: bool = False

    @property
    def solved(self) -> bool:
        return self.levels is not None

    def to_dict(self) -> dict:
        return {
            "qis": list(self.qis),
            "metric": self.metric,
            "solved": self.solved,
            "levels": None if self.levels is None else dict(zip(self.qis, map(int, self.levels), strict=True)),
            "loss": self.loss,
            "nodes_checked": self.nodes_checked,
            "lattice_size": self.lattice_size,
            "best": self.best.to_dict(self.qis) if self.best else None,
            "closest": self.closest.to_dict(self.qis) if self.closest else None,
            "frontier": [f.to_dict(self.qis) for f in self.frontier],
            "frontier_complete": bool(self.frontier_complete),
            "elapsed_s": round(self.elapsed_s, 4),
        }


@dataclass
class _State:
    """Classes of one node: keys (codes at the node's levels), sizes, metric sums, histograms."""

    levels: np.ndarray
    keys: list[np.ndarray]    # per QI: each class's code at the node's level
    sizes: np.ndarray         # (classes,) int64
    logv: np.ndarray          # (classes,) sum over rows and QIs of log2 count(value)
    pairs: list[SensitivePairs]


@dataclass
class QuerySpec:
    """A utility query on coded columns: group-by columns (QI index or fixed codes), target.

    ``group_fixed`` and ``target`` are the codes per row of columns the search does not
    generalize; ``group_fixed_published`` and ``target_published`` their published codes when
    they differ (PRAM), in the same coding. ``target_qi`` names a target that is itself a
    generalized QI (``target`` is then ignored).
    """

    group_qi: list[int]                 # indices into the lattice's QIs, generalized with the node
    group_fixed: list[np.ndarray]       # other group-by columns' codes per row (never generalized)
    target: np.ndarray | None           # target codes per row
    target_qi: int | None = None
    group_fixed_published: list[np.ndarray] | None = None
    target_published: np.ndarray | None = None

    def codes(self, qis: Sequence[CodedQI]) -> QueryCodes:
        """The query coded over the original's rows then the published table's."""
        def both(original: np.ndarray, published: np.ndarray | None) -> tuple[np.ndarray, int]:
            codes = np.concatenate([original, original if published is None else published])
            return codes.astype(np.int64, copy=False), int(codes.max()) + 1 if len(codes) else 1

        published = self.group_fixed_published or [None] * len(self.group_fixed)
        fixed = [both(c, p) for c, p in zip(self.group_fixed, published, strict=True)]
        if self.target_qi is not None:
            return QueryCodes(qis, self.group_qi, fixed, target_qi=self.target_qi)
        return QueryCodes(qis, self.group_qi, fixed, target=both(self.target, self.target_published))


class Lattice:
    """The generalization lattice of coded QIs, with cached class roll-ups."""

    def __init__(self, qis: Sequence[CodedQI], policy: Policy,
                 sensitive: Sequence[CodedSensitive | np.ndarray] = (), metric: str = "entropy",
                 query: QuerySpec | None = None, generalized: Sequence[bool] | None = None):
        self.qis = list(qis)
        self.q = len(self.qis)
        self.policy = policy
        self.metric = metric
        self.query = query
        self.generalized = list(generalized) if generalized is not None else [q.n_levels > 1 for q in self.qis]
        self.n_gen = max(sum(self.generalized), 1)
        self.dims = np.array([q.n_levels for q in self.qis], dtype=np.int64)
        size = int(np.prod(self.dims.astype(float)))
        if size > MAX_LATTICE_NODES:
            raise LatticeTooLarge(
                f"the generalization lattice has {size:,} nodes (more than {MAX_LATTICE_NODES:,}): "
                "use anonymization.method: mondrian, or fewer hierarchy levels"
            )
        self.size = size
        self.nodes = np.indices(tuple(self.dims)).reshape(self.q, -1).T.astype(np.int16)
        self.height = self.nodes.sum(axis=1)
        self.status = np.zeros(size, dtype=np.int8)
        self.n_rows = len(self.qis[0].codes) if self.qis else 0
        self.budget = suppression_budget(policy, self.n_rows)
        self.suppression = self.budget > 0
        self.mono = policy.monotone(self.suppression)
        self.checked = 0
        self.infos: dict[int, NodeInfo] = {}
        self._step_cost: list[np.ndarray] | None = None
        self._query_cache: dict[tuple[int, ...], float] = {}
        self._query_codes = query.codes(self.qis) if query is not None else None
        self._cache: dict[int, _State] = {}
        self._radix = np.cumprod(self.dims[::-1])[::-1]
        self._radix = np.append(self._radix[1:], 1)

        # metric tables
        self._value_counts = [q.value_counts() for q in self.qis]
        self._loss_tab = [[label_loss(q, lv) for lv in range(q.n_levels)] for q in self.qis]
        self._logc_tab = [[label_log_counts(q, lv, vc) for lv in range(q.n_levels)]
                          for q, vc in zip(self.qis, self._value_counts, strict=True)]
        self._bottom_state(sensitive)

    # ----- nodes -------------------------------------------------------------------------------
    def index(self, levels: Sequence[int]) -> int:
        return int(np.dot(np.asarray(levels, dtype=np.int64), self._radix))

    def _bottom_state(self, sensitive: Sequence[np.ndarray]) -> None:
        codes = [q.codes for q in self.qis]
        cards = [q.cardinality(0) for q in self.qis]
        key, space = combine(codes, cards)
        uniq, row_class, sizes = group(key, space)
        n_classes = len(sizes)
        first = np.empty(n_classes, dtype=np.int64)
        first[row_class[::-1]] = np.arange(self.n_rows - 1, -1, -1)
        keys = [c[first] for c in codes]
        logv_row = np.zeros(self.n_rows)
        for q, vc, gen in zip(self.qis, self._value_counts, self.generalized, strict=True):
            if gen:
                logv_row += np.log2(np.maximum(vc, 1))[q.codes]
        logv = np.bincount(row_class, weights=logv_row, minlength=n_classes)
        pairs = []
        if self.policy.needs_sensitive:
            pairs = [pairs_from_rows(row_class, n_classes, as_coded(s)) for s in sensitive]
        self.bottom_row_class = row_class
        bottom = _State(np.zeros(self.q, dtype=np.int64), keys, sizes, logv, pairs)
        self._cache_ids = np.zeros(_CACHE_LIMIT, dtype=np.int64)
        self._cache_levels = np.zeros((_CACHE_LIMIT, self.q), dtype=np.int64)
        self._cache_n = np.zeros(_CACHE_LIMIT, dtype=np.int64)
        self._cache_live = np.zeros(_CACHE_LIMIT, dtype=bool)
        self._cache_used = 0
        self._remember(0, bottom)

    def _rollup(self, src: _State, levels: np.ndarray) -> tuple[_State, np.ndarray]:
        """Classes of node ``levels`` from the finer state ``src``; also the class map."""
        cols, cards = [], []
        for j, qi in enumerate(self.qis):
            a, b = int(src.levels[j]), int(levels[j])
            cols.append(qi.map_between(a, b)[src.keys[j]] if a != b else src.keys[j])
            cards.append(qi.cardinality(b))
        if not cols:
            return src, np.zeros(len(src.sizes), dtype=np.int64)
        key, space = combine(cols, cards)
        uniq, inverse, sizes = group(key, space, src.sizes)
        n_classes = len(sizes)
        # each new class's codes: those of its first source class (a scatter and q gathers,
        # cheaper than splitting the mixed-radix key with int64 divisions)
        first = np.empty(n_classes, dtype=np.int64)
        first[inverse[::-1]] = np.arange(len(inverse) - 1, -1, -1)
        keys = [c[first] for c in cols]
        logv = np.bincount(inverse, weights=src.logv, minlength=n_classes)
        pairs = [p.rollup(inverse, n_classes) for p in src.pairs]
        return _State(levels.astype(np.int64), keys, sizes, logv, pairs), inverse

    def state(self, idx: int) -> _State:
        """Classes of node ``idx``, rolled up from the cached node below it with fewest classes."""
        if idx in self._cache:
            return self._cache[idx]
        levels = self.nodes[idx].astype(np.int64)
        below = np.flatnonzero(np.all(self._cache_levels[: self._cache_used] <= levels, axis=1)
                               & self._cache_live[: self._cache_used])
        src_slot = below[np.argmin(self._cache_n[below])]
        st, _ = self._rollup(self._cache[int(self._cache_ids[src_slot])], levels)
        self._remember(idx, st)
        return st

    def _remember(self, idx: int, st: _State) -> None:
        if self._cache_used == len(self._cache_ids):
            # full: forget the cached state with most classes (never the bottom, slot 0)
            live = np.flatnonzero(self._cache_live)
            live = live[live > 0]
            victim = int(live[np.argmax(self._cache_n[live])])
            del self._cache[int(self._cache_ids[victim])]
            slot = victim
        else:
            slot = self._cache_used
            self._cache_used += 1
        self._cache[idx] = st
        self._cache_ids[slot] = idx
        self._cache_levels[slot] = st.levels
        self._cache_n[slot] = len(st.sizes)
        self._cache_live[slot] = True

    # ----- checks ------------------------------------------------------------------------------
    def _verdict(self, st: _State, policy: Policy) -> tuple[bool, np.ndarray, list[str]]:
        ev = published_evaluation(policy, st.sizes, st.pairs)
        suppressed = int(st.sizes[ev.failing].sum())
        kept_classes = int((~ev.failing).sum())
        missing = []
        if suppressed > self.budget:
            for name, rows in ev.rows_failing.items():
                if rows:
                    missing.append(f"{name}: {rows} rows in classes missing it (budget {self.budget})")
        ok = suppressed <= self.budget
        if not avg_risk_ok(policy, kept_classes, self.n_rows - suppressed):
            ok = False
            missing.append(
                f"prosecutor_avg: {kept_classes / max(self.n_rows - suppressed, 1):.4g} > "
                f"{policy.prosecutor_avg:g}"
            )
        return ok, ev.failing, missing

    def check_monotone(self, idx: int) -> bool:
        """Check the monotone part of the policy at node ``idx`` and tag the lattice."""
        st = self.state(idx)
        self.checked += 1
        ok, failing, missing = self._verdict(st, self.mono)
        self.infos[idx] = NodeInfo(tuple(int(v) for v in self.nodes[idx]), len(st.sizes),
                                   int(st.sizes[failing].sum()), ok, None, missing)
        node = self.nodes[idx]
        if ok:
            self.status[np.all(self.nodes >= node, axis=1)] = PASS
        else:
            self.status[np.all(self.nodes <= node, axis=1)] = FAIL
        return ok

    def evaluate(self, idx: int) -> NodeInfo:
        """The full policy and the metric at node ``idx`` (which passed the monotone part)."""
        st = self.state(idx)
        ok, failing, missing = self._verdict(st, self.policy)
        suppressed = int(st.sizes[failing].sum())
        loss = self.loss(idx, st, failing) if ok else None
        info = NodeInfo(tuple(int(v) for v in self.nodes[idx]), len(st.sizes), suppressed, ok,
                        loss, missing)
        self.infos[idx] = info
        return info

    def loss(self, idx: int, st: _State, failing: np.ndarray) -> float:
        """The metric at a node whose failing classes are suppressed (module utility definitions)."""
        kept = ~failing
        n, q = self.n_rows, self.n_gen
        sup_rows = int(st.sizes[failing].sum())
        if self.metric == "loss":
            per_class = np.zeros(len(st.sizes))
            for j in range(self.q):
                if self.generalized[j]:
                    per_class += self._loss_tab[j][int(st.levels[j])][st.keys[j]]
            return float((st.sizes[kept] * per_class[kept]).sum() + sup_rows * q) / (n * q)
        if self.metric == "entropy":
            per_class = np.zeros(len(st.sizes))
            for j in range(self.q):
                if self.generalized[j]:
                    per_class += self._logc_tab[j][int(st.levels[j])][st.keys[j]]
            gen = st.sizes * per_class - st.logv
            sup = st.sizes * q * math.log2(max(n, 1)) - st.logv
            return float(gen[kept].sum() + sup[failing].sum())
        if self.metric == "discernibility":
            return discernibility(st.sizes[kept], sup_rows)
        if self.metric == "aecs":
            return aecs(st.sizes[kept], sup_rows)
        if self.metric.startswith("query:"):
            return self.query_error(idx, failing)
        raise UserError(f"unknown utility {self.metric!r}")

    def row_class(self, idx: int) -> tuple[np.ndarray, _State]:
        """Each row's class id at node ``idx`` (via the bottom classes)."""
        levels = self.nodes[idx].astype(np.int64)
        st, inverse = self._rollup(self._cache[0], levels)
        return inverse[self.bottom_row_class], st

    def query_error(self, idx: int, failing: np.ndarray) -> float:
        """The utility query's error at node ``idx`` whose failing classes are suppressed."""
        if self._query_codes is None:
            raise UserError("this lattice has no utility query")
        levels = self.nodes[idx]
        if not failing.any():
            # nothing suppressed: the error depends only on the levels the query reads
            used = self._query_codes.levels_used(levels)
            if used not in self._query_cache:
                self._query_cache[used] = self._query_codes.error(levels)
            return self._query_cache[used]
        rc, st = self.row_class(idx)
        # failing was computed on the state from the cache; recompute on this state to align ids
        _, failing2, _ = self._verdict(st, self.policy)
        return self._query_codes.error(levels, ~failing2[rc])

    # ----- search ------------------------------------------------------------------------------
    def _chain(self, idx: int) -> list[int]:
        """Nodes from ``idx`` to the top, one level on one QI per step: the QI whose next level adds
        least to the bound (separable metrics), else the relatively lowest QI."""
        cur = [int(v) for v in self.nodes[idx]]
        top = [int(d) - 1 for d in self.dims]
        radix = [int(r) for r in self._radix]
        chain = [idx]
        steps = self._step_cost
        while True:
            best_j, best_rel = -1, math.inf
            for j in range(self.q):
                if cur[j] < top[j]:
                    rel = steps[j][cur[j]] if steps is not None else cur[j] / top[j]
                    if rel < best_rel:
                        best_j, best_rel = j, rel
            if best_j < 0:
                return chain
            cur[best_j] += 1
            idx += radix[best_j]
            chain.append(idx)

    def resolve(self, idx: int) -> bool:
        """Monotone status of ``idx``, found by binary search along its chain to the top."""
        if self.status[idx] == UNKNOWN:
            chain = self._chain(idx)
            lo, hi = 0, len(chain)
            for i, c in enumerate(chain):
                s = self.status[c]
                if s == FAIL:
                    lo = max(lo, i + 1)
                elif s == PASS:
                    hi = min(hi, i)
                    break
            while lo < hi:
                mid = (lo + hi) // 2
                c = chain[mid]
                ok = self.status[c] == PASS if self.status[c] != UNKNOWN else self.check_monotone(c)
                if ok:
                    hi = mid
                else:
                    lo = mid + 1
            if self.status[idx] == UNKNOWN:  # the chain is all failing above a failing node
                self.check_monotone(idx)
        return self.status[idx] == PASS

    def search(self, frontier: bool | str | None = True,
               progress: Callable[[int, int], None] | None = None) -> SearchResult:
        """Find the satisfying node of least loss (see module docstring).

        ``frontier``: ``"complete"`` resolves every node so the frontier holds every minimal
        satisfying node; ``"partial"`` lists only those whose status the search settled;
        ``True`` or ``None`` chooses complete without suppression or on lattices of at most
        4,096 nodes, partial otherwise; ``False`` computes none.
        """
        if frontier not in (True, False, None, "complete", "partial"):
            raise UserError(f"frontier must be 'complete' or 'partial', not {frontier!r}")
        t0 = time.perf_counter()
        separable = self.metric in SEPARABLE
        if separable:
            per_qi = separable_bounds(self.qis, self.metric, self.n_rows)
            # chains follow the cheapest way up, where the bound (and the search) goes
            self._step_cost = [np.diff(p) if g else np.full(max(len(p) - 1, 0), np.inf)
                               for p, g in zip(per_qi, self.generalized, strict=True)]
            bound = np.zeros(self.size)
            for j in range(self.q):
                if self.generalized[j]:
                    bound += per_qi[j][self.nodes[:, j]]
            if self.metric == "loss":
                bound /= self.n_rows * self.n_gen
            order = np.lexsort((self.height, bound))
        elif self.query is not None:
            # nodes that keep the query's group-by QIs finest first: an exact answer (error 0,
            # the least possible) is then found early and ends the search
            bound = None
            group_height = self.nodes[:, self.query.group_qi].sum(axis=1) if self.query.group_qi else self.height * 0
            order = np.lexsort((self.height, group_height))
        else:
            bound = None
            order = np.argsort(self.height, kind="stable")
        monotone_metric = self.metric in ("loss", "entropy", "discernibility", "aecs")
        only_minimal = (not self.suppression) and self.policy.is_monotone(False) and monotone_metric
        best_idx, best_loss = -1, math.inf
        for step, idx in enumerate(order):
            if bound is not None and bound[idx] >= best_loss - 1e-12:
                break
            if best_loss <= 0.0:  # every metric is >= 0: nothing can do better
                break
            if progress is not None and step % 256 == 0:
                progress(step, self.size)
            if not self.resolve(idx):
                continue
            if only_minimal and not self._is_minimal(idx):
                continue
            info = self.evaluate(idx)
            if info.satisfied and info.loss is not None and info.loss < best_loss - 1e-12:
                best_idx, best_loss = idx, info.loss
        front: list[NodeInfo] = []
        if frontier is not False:
            # Without suppression the frontier is cheap to complete; with it, by default only
            # nodes whose status is already known are reported (resolving all can cost seconds).
            if frontier in (True, None):
                resolve_all = not self.suppression or self.size <= 4096
            else:
                resolve_all = frontier == "complete"
            front = self._frontier(resolve_all=resolve_all)
        best = self.infos.get(best_idx) if best_idx >= 0 else None
        closest = None if best is not None else self._closest()
        return SearchResult(
            qis=[q.name for q in self.qis],
            levels=best.levels if best else None,
            loss=best.loss if best else None,
            metric=self.metric,
            nodes_checked=self.checked,
            lattice_size=self.size,
            best=best,
            closest=closest,
            frontier=front,
            elapsed_s=time.perf_counter() - t0,
            # complete exactly when no node's status is unknown: then every minimal node is listed
            frontier_complete=frontier is not False and not bool((self.status == UNKNOWN).any()),
        )

    def _predecessors(self, idx: int) -> list[int]:
        node = self.nodes[idx].astype(np.int64)
        out = []
        for j in range(self.q):
            if node[j] > 0:
                out.append(idx - int(self._radix[j]))
        return out

    def _is_minimal(self, idx: int) -> bool:
        """Whether no direct specialization satisfies the monotone part (resolving as needed)."""
        return not any(self.resolve(p) for p in self._predecessors(idx))

    def _frontier(self, resolve_all: bool = True) -> list[NodeInfo]:
        """Minimal nodes satisfying the monotone part, fully evaluated (the risk-utility frontier).

        With ``resolve_all`` false, only nodes whose own and predecessors' status the search
        already established are considered (a partial frontier).
        """
        if resolve_all:
            for idx in np.flatnonzero(self.status == UNKNOWN):
                self.resolve(int(idx))
        passing = self.status == PASS
        minimal = passing.copy()
        for j in range(self.q):
            has_pred = self.nodes[:, j] > 0
            pred = np.flatnonzero(has_pred)
            minimal[pred] &= self.status[pred - int(self._radix[j])] == FAIL
        out = []
        for idx in np.flatnonzero(minimal):
            info = self.infos.get(int(idx))
            if info is None or (info.satisfied and info.loss is None):
                info = self.evaluate(int(idx))
            out.append(info)
        out.sort(key=lambda i: (math.inf if i.loss is None else i.loss, i.levels))
        return out

    def _closest(self) -> NodeInfo | None:
        """The checked node needing the least suppression beyond budget (the nearest miss)."""
        if not self.infos:
            return None
        top = self.size - 1
        if top not in self.infos:
            self.check_monotone(top)
            self.evaluate(top)
        return min(self.infos.values(), key=lambda i: (i.suppressed, len(i.missing), sum(i.levels)))
