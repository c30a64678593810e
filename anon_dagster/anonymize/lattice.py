"""Optimal global recoding: a best-first search of the generalization lattice (Flash/Incognito).

Definitions. A *node* is a level vector, one hierarchy level per QI (partition keys are pinned
at level 0). Node b *generalizes* node a when b >= a on every QI. A node *satisfies* the policy
when the rows of its classes that miss a per-class criterion number at most the suppression
budget (floor(max_suppression × rows)) and the table-level criteria hold on the rest. The
search returns the satisfying node of least information loss under the spec's utility.

How the search stays fast:

- **Roll-up, not rows.** The rows are grouped once, at the bottom node: each row's key is the
  mixed radix of its QI codes (the risk kernel's fold, re-densified by
  :func:`anon_dagster.risk.classes.combine_codes` beyond int64), grouped by one hash pass, so
  the distinct keys are the classes' packed keys. Any other node's classes come from a cached
  finer node's classes (one packed key per class, sizes, sparse sensitive histograms), mapped
  and regrouped: the cost is the number of classes of the finer node, never the number of rows.
  The QIs are grouped in consecutive blocks of at most 64 level combinations; a roll-up maps one
  code per block through a table (built once per pair of combinations as an outer sum of the
  QIs' maps) and from the bottom, whose classes are about as many as the rows, reads each
  block's codes at the target's levels, kept once computed. Keys are mixed-radix numbers,
  grouped by a bincount over a small key space or by one hash pass.
- **Pairs first.** When the monotone part is judged on class sizes alone, the nodes below the
  top on at most two QIs (the *pair nodes*) are counted before the search from each pair's
  joint table, every level combination of a pair at once (:meth:`Lattice._settle_pairs`), and
  tag the lattice as checks do (Incognito's subset property): on Adult with k=5 and no
  suppression they settle all but 122 of the 12,960 nodes, and the search checks 20-26 nodes
  instead of 100-150.
- **Predictive tagging.** For the monotone part of the policy (see
  :mod:`anon_dagster.anonymize.criteria`), a node that satisfies tags every generalization as
  satisfying, one that fails tags every specialization as failing (a box of the level grid).
  An unknown node is resolved by a binary search along a chain from it to the top (Flash),
  carried to the chain's boundary, so each check tags whole regions. A chain climbs the step
  of least ``bound increase × ln(codes before / codes after)``, a gentle climb that merges
  little per step (on Adult, a third fewer checks than the bound alone); without a bound, the
  step that merges least.
- **Best-first with a bound.** ``loss`` and ``entropy`` without suppression are sums over QIs of
  per-level totals, known for every node before any check, and a lower bound of the metric with
  suppression. Nodes are visited in increasing bound (those known to fail skipped a chunk at a
  time); the search stops once the bound reaches the best loss found. Without suppression the
  first satisfying node is the optimum. Metrics without such a bound (discernibility, aecs,
  query error) evaluate every node that satisfies the monotone part (only the minimal ones when
  nothing may be suppressed and the metric is monotone).

What is pruned with suppression allowed: only on k (with prosecutor_max) and l-distinct, which
stay monotone with suppression (as in ARX). The other criteria are checked exactly on each
candidate, so pruning never returns a node that misses one.

**k per person.** When the published rows of a person are linked (``persons``: each row's
person), a person's *key* at a node is the multiset of the node's classes of their rows, and a
*person class* the persons of equal keys (:mod:`anon_dagster.risk.person`). With ``persons`` a
node satisfies when, B being the budget:

- every person whose person class holds fewer than k persons is removed, all their rows;
- the rows of the classes missing a per-class criterion are removed, as without persons (the
  classes judged on all the node's rows);
- the rows removed, each counted once, number at most B, and the table-level criteria hold on
  the rows left. The metric counts every removed row as suppressed (a class may lose some of
  its rows only: those of persons below k).

Why the search stays exact:

- *Monotone.* A coarser node's classes are unions of the finer node's, so a person's key there
  is the image of their finer key: persons of equal keys still have equal keys, the coarser
  person classes are unions of the finer ones, and a person below k at the coarser node was
  below k at the finer one. The classes failing the monotone part shrink too (k and l-distinct,
  as above), so the rows removed can only shrink under generalization, and predictive tagging
  holds for the combined predicate: a node that satisfies tags its generalizations, one that
  fails its specializations.
- *The published table is k-anonymous per person.* Persons of equal keys have their rows in the
  same classes, so removing whole classes takes the same rows from each of them: it never splits
  a person class, and row suppression leaves every person class of at least k persons with at
  least k. Once both removals are done every person class left holds at least k persons, and
  every class left at least k rows (each of its rows' persons shares it with the k or more
  persons of their person class). The persons are judged on the node's classes before the row
  suppression: after it, persons whose keys differ only in suppressed classes may share a key,
  but judging them there is not monotone (a generalization that lets a suppressed class pass
  keeps the row of it that singles its person out), so it could not prune.
- *Row-level first.* The rows removed include those of the failing classes, so the row-level
  part within the same budget is a necessary condition: the person classes are computed only at
  nodes that pass it on their cached classes, and a node failing it is tagged as without
  persons. The pairs' counts tag their failing nodes only (a passing pair node may still fail
  per person).

Cost: the persons' keys at the bottom are aggregated once, as the distinct (person, class)
elements (:class:`~anon_dagster.risk.person.PersonKeys`, the measurement's kernel); at a node the
bottom classes' roll-up maps them and the multiplicities that meet are added up (about as many
elements as rows). Without ``persons`` nothing of this runs.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..errors import UserError
from ..risk.classes import combine_codes
from ..risk.person import PersonKeys, person_codes
from ..risk.sensitive import CodedSensitive
from ..risk.utility import aecs, discernibility
from .coding import CodedQI, combine, group
from .criteria import (
    EPS,
    Policy,
    SensitivePairs,
    as_coded,
    avg_risk_ok,
    pairs_from_rows,
    published_evaluation,
    suppression_budget,
)
from .utility import SEPARABLE, QueryCodes, label_log_counts, label_loss

MAX_LATTICE_NODES = 5_000_000
_INT64_MAX = np.iinfo(np.int64).max
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
    per_person: bool = False
    # the declared minimum levels (anonymization.min_levels) the search started from, one per QI;
    # None for a search over the whole lattice
    min_levels: tuple[int, ...] | None = None

    @property
    def solved(self) -> bool:
        return self.levels is not None

    def above(self, offsets: Sequence[int]) -> SearchResult:
        """This search over the sub-lattice whose bottom is the node ``offsets``, its nodes named
        by their levels in the whole lattice (each QI's level plus its offset): the search of a
        lattice built from :func:`qi_above` QIs. All offsets 0: the search itself."""
        shift = tuple(int(v) for v in offsets)
        if not any(shift):
            return self

        def up(levels: Sequence[int]) -> tuple[int, ...]:
            return tuple(int(a) + b for a, b in zip(levels, shift, strict=True))

        def node(info: NodeInfo | None) -> NodeInfo | None:
            return None if info is None else replace(info, levels=up(info.levels))

        return replace(self, levels=None if self.levels is None else up(self.levels),
                       best=node(self.best), closest=node(self.closest),
                       frontier=[node(f) for f in self.frontier], min_levels=shift)

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
            **({"k_per_person": True} if self.per_person else {}),
            **({"min_levels": dict(zip(self.qis, self.min_levels, strict=True))} if self.min_levels else {}),
        }


def qi_above(qi: CodedQI, level: int, values: Sequence[object] | None = None) -> CodedQI:
    """``qi`` from ``level`` up: the QI whose level 0 is ``qi``'s level ``level`` (its values that
    level's labels) and whose level ``l`` is ``qi``'s level ``level + l``. A lattice of such QIs is
    the sub-lattice above the node of those levels (a search restricted by
    ``anonymization.min_levels``); its classes at a node are ``qi``'s at the node's levels.

    ``values``: the rows' values when they are already labels of ``level`` (a frequency table
    built at that level), each coded as its label; without them, ``qi``'s rows mapped up.
    """
    if level == 0 and values is None:
        return qi
    labels = [np.asarray(lab) for lab in qi.labels[level:]]
    maps = [qi.map_between(level, b) for b in range(level, qi.n_levels)]
    if values is None:
        codes = qi.row_codes(level)
    else:
        index = pd.Index([str(v) for v in labels[0]])
        codes = index.get_indexer([str(v) for v in values])
        if len(codes) and codes.min() < 0:
            raise UserError(f"column {qi.name!r}: a value is not a label of level {level} of its hierarchy")
    return CodedQI(qi.name, np.asarray(codes, dtype=np.int64), labels[0].copy(), maps, labels, qi.hierarchy)


@dataclass
class _State:
    """Classes of one node: sizes, each class's key, and the sparse sensitive histograms.

    ``packed[c]`` is class ``c``'s codes at the node's levels in mixed radix over the QIs'
    cardinalities at those levels (QI order); the QIs are grouped in consecutive blocks, and
    ``bcards`` are the blocks' cardinalities (products of their QIs'), so the same number is the
    mixed radix of the block codes: ``blocks`` and ``keys`` unpack it on demand. When the key
    space exceeds int64, ``packed`` is None and the per-QI keys are held as they are.
    """

    idx: int
    levels: np.ndarray        # (q,) int64
    sizes: np.ndarray         # (classes,) int64
    packed: np.ndarray | None
    bcards: tuple[int, ...]
    card_of: list[list[int]]  # card_of[j][level]: QI j's cardinality at a level
    pairs: list[SensitivePairs]
    _keys: list[np.ndarray] | None = None
    _blocks: list[np.ndarray] | None = field(default=None, repr=False)
    _weights: np.ndarray | None = field(default=None, repr=False)

    @property
    def weights(self) -> np.ndarray:
        """The sizes as float64, the weights bincount sums (converted once, not per roll-up)."""
        if self._weights is None:
            self._weights = self.sizes.astype(np.float64)
        return self._weights

    @property
    def cards(self) -> tuple[int, ...]:
        """The QIs' cardinalities at the node's levels."""
        return tuple(c[lv] for c, lv in zip(self.card_of, self.levels.tolist(), strict=True))

    @property
    def keys(self) -> list[np.ndarray]:
        """Per QI, each class's code at the node's level."""
        if self._keys is None:
            self._keys = list(np.unravel_index(self.packed, self.cards)) if self.card_of else []
        return self._keys

    @property
    def blocks(self) -> list[np.ndarray]:
        """Per block of QIs, each class's block code (the block's QI codes in mixed radix)."""
        if self._blocks is None:
            rest, out = self.packed, []
            for card in self.bcards[:0:-1]:
                if card == 1:  # one code: 0 for every class
                    out.append(np.zeros(len(rest), dtype=np.int64))
                    continue
                out.append(rest % card)
                rest = rest // card
            out.append(rest)
            self._blocks = out[::-1]
        return self._blocks


@dataclass
class _PersonsAt:
    """The persons at one node: the node's classes rolled up from the bottom (``state``), each
    bottom class's class there (``inverse``), whether each person is below k (``below``) and,
    per class, the rows of the persons below k (``rows_below``)."""

    state: _State
    inverse: np.ndarray
    below: np.ndarray
    rows_below: np.ndarray

    @property
    def persons_below(self) -> int:
        return int(self.below.sum())


def _fits(cards: Sequence[int]) -> bool:
    """Whether a mixed-radix key over ``cards`` fits in int64 (``np.ravel_multi_index``)."""
    space = 1
    for c in cards:
        space *= max(int(c), 1)
    return space <= _INT64_MAX


def _radix_key(cols: Sequence[np.ndarray], cards: Sequence[int]) -> np.ndarray:
    """``np.ravel_multi_index(cols, cards)`` (C order) without its bounds checks: the codes are
    in range by construction, and the multiply-adds in place cost a quarter of it."""
    key = np.array(cols[0], dtype=np.int64)
    for col, card in zip(cols[1:], cards[1:], strict=True):
        key *= int(card)
        key += col
    return key


def _group(key: np.ndarray, space: int, weights: np.ndarray | None,
           inverse: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Distinct keys, the summed ``weights`` of each (the count without weights), and (when
    asked) each input's group.

    A bincount over the key space when it is small next to the input (the distinct keys come
    sorted), else one hash pass (``pd.factorize``: distinct keys in order of appearance; a sort,
    as ``np.unique`` does, costs several times more on the bottom node's ~20,000 classes).
    """
    if space <= 4 * len(key) + 4096:
        counts = np.bincount(key, weights=weights, minlength=space)
        present = np.flatnonzero(counts)
        sizes = counts[present].astype(np.int64)
        if not inverse:
            return present, sizes, None
        dense = np.empty(space, dtype=np.int64)
        dense[present] = np.arange(len(present), dtype=np.int64)
        return present, sizes, dense[key]
    ids, uniques = pd.factorize(key, sort=False)
    sizes = np.bincount(ids, weights=weights, minlength=len(uniques)).astype(np.int64)
    return np.asarray(uniques, dtype=np.int64), sizes, ids.astype(np.int64, copy=False)


def _weighted_pairs(row_class: np.ndarray, n_classes: int, coded: CodedSensitive,
                    weights: np.ndarray) -> SensitivePairs:
    """:func:`~anon_dagster.anonymize.criteria.pairs_from_rows` of a frequency table: each
    (class, value) counts the rows its frequency rows stand for."""
    values = np.asarray(coded.codes).astype(np.int64, copy=False)
    n_values = coded.n_values
    key = np.asarray(row_class, dtype=np.int64) * n_values + values
    uniq, _, counts = group(key, n_classes * n_values, weights)
    total = np.rint(np.bincount(values, weights=weights, minlength=n_values)).astype(np.int64)
    return SensitivePairs(uniq // n_values, uniq % n_values, np.rint(counts).astype(np.int64), n_values,
                          total, coded)


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

    def codes(self, qis: Sequence[CodedQI], weights: np.ndarray | None = None) -> QueryCodes:
        """The query coded over the original's rows then the published table's (``weights``: the
        rows are a frequency table's, row ``i`` standing for ``weights[i]`` rows)."""
        def both(original: np.ndarray, published: np.ndarray | None) -> tuple[np.ndarray, int]:
            codes = np.concatenate([original, original if published is None else published])
            return codes.astype(np.int64, copy=False), int(codes.max()) + 1 if len(codes) else 1

        published = self.group_fixed_published or [None] * len(self.group_fixed)
        fixed = [both(c, p) for c, p in zip(self.group_fixed, published, strict=True)]
        if self.target_qi is not None:
            return QueryCodes(qis, self.group_qi, fixed, target_qi=self.target_qi, weights=weights)
        return QueryCodes(qis, self.group_qi, fixed, target=both(self.target, self.target_published), weights=weights)


class Lattice:
    """The generalization lattice of coded QIs, with cached class roll-ups."""

    def __init__(self, qis: Sequence[CodedQI], policy: Policy,
                 sensitive: Sequence[CodedSensitive | np.ndarray] = (), metric: str = "entropy",
                 query: QuerySpec | None = None, generalized: Sequence[bool] | None = None,
                 persons: pd.Series | np.ndarray | None = None, weights: np.ndarray | None = None):
        """``persons``: each row's person (by position; a missing value a person of its own),
        when the published rows of a person are linked: the search then targets k per person
        (module docstring). ``weights``: the rows are those of a frequency table, row ``i``
        standing for ``weights[i]`` rows of the table (:meth:`from_frequencies`)."""
        self.qis = list(qis)
        self.n_inputs = len(self.qis[0].codes) if self.qis else 0
        self._row_weights = self._frequency_weights(weights, persons)
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
        self._levels = np.indices(tuple(self.dims)).reshape(self.q, -1)  # (q, size): QI j's level
        self.nodes = self._levels.T.astype(np.int16)
        self.height = self._levels.sum(axis=0)
        self.status = np.zeros(size, dtype=np.int8)
        self._status_grid = self.status.reshape(tuple(int(d) for d in self.dims))  # a view
        self._next: np.ndarray | None = None
        self.n_rows = (self.n_inputs if self._row_weights is None
                       else int(np.rint(self._row_weights.sum())))
        self.budget = suppression_budget(policy, self.n_rows)
        self.suppression = self.budget > 0
        self.mono = policy.monotone(self.suppression)
        self.checked = 0
        self.pair_nodes = 0  # nodes of those checked that the pairs' counts settled
        self.infos: dict[int, NodeInfo] = {}
        self._step_cost: list[np.ndarray] | None = None
        self._query_cache: dict[tuple[int, ...], float] = {}
        self._query_codes = query.codes(self.qis, self._row_weights) if query is not None else None
        self._cache: dict[int, _State] = {}
        self._radix = np.cumprod(self.dims[::-1])[::-1]
        self._radix = np.append(self._radix[1:], 1)

        self._code_tabs: list[list[np.ndarray]] | None = None  # the metric per code (_per_code)
        # per QI, the QI whose figures the metric reads and the level this one's 0 is there
        self._whole: list[tuple[CodedQI, int]] = [(q, 0) for q in self.qis]
        self._log_values = 0.0
        self._bottom_state(sensitive)
        self._keys: PersonKeys | None = None
        self._persons_at: dict[int, _PersonsAt] = {}
        if persons is not None:
            if len(persons) != self.n_inputs:
                raise ValueError(f"{len(persons)} person values for {self.n_inputs} rows")
            self._person_of_row = person_codes(persons)
            # a frequency row counts its person's rows of its combination: the key's multiplicity
            self._keys = PersonKeys.of_rows(self._person_of_row, self.bottom_row_class,
                                            len(self._cache[0].sizes), self._row_weights)

    @classmethod
    def from_frequencies(cls, qis: Sequence[CodedQI], counts: np.ndarray, policy: Policy,
                         sensitive: Sequence[CodedSensitive | np.ndarray] = (), metric: str = "entropy",
                         generalized: Sequence[bool] | None = None,
                         persons: pd.Series | np.ndarray | None = None,
                         whole: Sequence[tuple[CodedQI, int] | None] | None = None,
                         query: QuerySpec | None = None) -> Lattice:
        """The lattice of a table given by its frequency table at the bottom node.

        ``qis`` and ``sensitive`` code the frequency table's rows (one per distinct combination
        of the QIs at level 0, the partition keys and the sensitive attributes), ``counts`` the
        table's rows each stands for. The search is the one over the rows: the classes of a node
        are rolled up from the bottom with their sizes summed (the search never reads rows beyond
        the bottom's classes), the suppression budget, the metric's per-value counts
        (:meth:`CodedQI.value_counts`, set here to the weighted counts), the sensitive
        histograms and a utility query's prevalences (``query``, coded over the frequency rows)
        count the table's rows. ``persons`` gives each
        frequency row's person (the table then counts rows per person and combination, and a row
        without a person stands for one row, :func:`~anon_dagster.risk.person.split_unlinked`):
        the search targets k per person as over the rows, the persons' keys counting rows.

        ``whole``: for a QI built by :func:`qi_above` (a sub-lattice's), the whole lattice's QI
        (its value counts those of the rows) and the level the sub-lattice starts from; the
        separable metric's figures (each label's loss, the entropy's constant, the search's
        bound) are then the whole lattice's, so the losses of nodes of different sub-lattices
        compare as in the search of the whole lattice. None (or a None entry): the QI's own.
        """
        counts = np.asarray(counts)
        for q in qis:
            q._counts = np.rint(np.bincount(q.codes, weights=counts.astype(np.float64),
                                            minlength=len(q.uniques))).astype(np.int64)
        lattice = cls(qis, policy, sensitive, metric, query, generalized=generalized, weights=counts,
                      persons=persons)
        if whole is not None:
            lattice._whole = [w or (q, 0) for q, w in zip(lattice.qis, whole, strict=True)]
        return lattice

    def _frequency_weights(self, weights: np.ndarray | None, persons: object) -> np.ndarray | None:
        """``weights`` as float64 (what bincount sums), checked against the rows; None for rows."""
        if weights is None:
            return None
        if persons is not None and len(persons) == len(weights):
            missing = pd.isna(pd.Series(persons)).to_numpy()
            if (np.asarray(weights)[missing] > 1).any():
                raise ValueError("a frequency row without a person stands for several persons: split_unlinked first")
        w = np.asarray(weights, dtype=np.float64)
        if len(w) != self.n_inputs or (len(w) and (w.min() < 1 or not np.all(w == np.floor(w)))):
            raise ValueError(f"weights must be {self.n_inputs} whole numbers >= 1, one per frequency row")
        return w

    def failing_classes(self, levels: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """At the node ``levels``: each input row's class, the classes' sizes (in rows of the table)
        and which classes miss a per-class criterion, judged as the search judged the node."""
        idx = self.index(levels)
        row_class, st = self.row_class(idx)
        _, failing, _ = self._verdict(st, self.policy)
        return row_class, st.sizes, failing

    # ----- nodes -------------------------------------------------------------------------------
    def index(self, levels: Sequence[int]) -> int:
        return int(np.dot(np.asarray(levels, dtype=np.int64), self._radix))

    def _bottom_state(self, sensitive: Sequence[CodedSensitive | np.ndarray]) -> None:
        """The rows grouped once: each row's key is the mixed radix of its QI codes (the risk
        kernel's fold), grouped by one hash pass (:func:`_group`), so the distinct keys are the
        classes' packed keys. A key space beyond int64 is folded and re-densified by the risk
        kernel (:func:`~anon_dagster.risk.classes.combine_codes`) and the per-QI keys kept."""
        codes = [q.codes for q in self.qis]
        cards = tuple(q.cardinality(0) for q in self.qis)
        self._card_of = [[q.cardinality(lv) for lv in range(q.n_levels)] for q in self.qis]
        self._setup_blocks(cards)
        keys: list[np.ndarray] | None = None
        weights = self._row_weights
        if self._narrow and codes:
            packed, sizes, row_class = _group(_radix_key(codes, cards), math.prod(cards), weights, True)
        else:
            row_class, sizes = combine_codes(codes, cards, self.n_inputs)
            if weights is not None:
                sizes = np.rint(np.bincount(row_class, weights=weights, minlength=len(sizes))).astype(np.int64)
            first = np.empty(len(sizes), dtype=np.int64)
            first[row_class[::-1]] = np.arange(self.n_inputs - 1, -1, -1)
            keys = [c[first] for c in codes]
            packed = None
        n_classes = len(sizes)
        pairs = []
        if self.policy.needs_sensitive:
            pairs = [_weighted_pairs(row_class, n_classes, as_coded(s), weights) if weights is not None
                     else pairs_from_rows(row_class, n_classes, as_coded(s)) for s in sensitive]
        self.bottom_row_class = row_class
        bcards = tuple(int(c[0]) for c in self._combo_cards)
        bottom = _State(0, np.zeros(self.q, dtype=np.int64), sizes, packed, bcards, self._card_of,
                        pairs, keys)
        self._cache_ids = np.zeros(_CACHE_LIMIT, dtype=np.int64)
        self._cache_levels = np.zeros((_CACHE_LIMIT, self.q), dtype=np.int64)
        self._cache_n = np.zeros(_CACHE_LIMIT, dtype=np.int64)
        self._cache_live = np.zeros(_CACHE_LIMIT, dtype=bool)
        self._cache_used = 0
        self._remember(0, bottom)

    def _setup_blocks(self, cards0: Sequence[int]) -> None:
        """Group consecutive QIs in blocks of at most 64 level combinations, and number them.

        A roll-up then maps one code per block (through a table from the source's block code
        to the target's, computed once per pair of combinations) instead of one per QI; from the
        bottom, whose classes are about as many as the rows, it reads each block's codes at the
        target's levels, kept once computed. ``_node_combo[idx, b]`` is node ``idx``'s level combination in block
        ``b``, ``_combo_cards[b][combo]`` the block's cardinality there.
        """
        blocks: list[list[int]] = []
        combos = 0
        for j, d in enumerate(int(x) for x in self.dims):
            if blocks and combos * d <= 64:
                blocks[-1].append(j)
                combos *= d
            else:
                blocks.append([j])
                combos = d
        self._blocks = blocks
        self._narrow = _fits(cards0)  # level 0 has the most codes: then every node fits
        # a node's combination in a block: the mixed radix of its levels there (C order)
        combos = np.zeros((len(blocks), self.size), dtype=np.int64)
        self._combo_levels: list[np.ndarray] = []
        self._combo_cards: list[np.ndarray] = []
        for blk, combo in zip(blocks, combos, strict=True):
            for j in blk:
                combo *= int(self.dims[j])
                combo += self._levels[j]
            grid = np.indices(tuple(int(d) for d in self.dims[blk])).reshape(len(blk), -1)
            self._combo_levels.append(grid.T)
            card = np.ones(grid.shape[1], dtype=np.float64)
            for i, j in enumerate(blk):
                card *= np.asarray(self._card_of[j], dtype=np.float64)[grid[i]]
            self._combo_cards.append(card.astype(np.int64) if self._narrow else card)
        self._node_combo = np.ascontiguousarray(combos.T)
        self._combo_card_lists = [c.tolist() for c in self._combo_cards]
        self._bottom_codes: dict[tuple[int, int], np.ndarray] = {}
        self._tables: dict[tuple[int, int, int], np.ndarray] = {}
        self._figures: dict[tuple[int, int], np.ndarray] = {}

    def _bottom_code(self, b: int, combo: int) -> np.ndarray:
        """The bottom classes' codes in block ``b`` at level combination ``combo`` (kept: the
        bottom is the source of many roll-ups)."""
        code = self._bottom_codes.get((b, combo))
        if code is None:
            code = self._table(b, 0, combo)[self._cache[0].blocks[b]]
            self._bottom_codes[(b, combo)] = code
        return code

    def _table(self, b: int, a: int, d: int) -> np.ndarray:
        """Block ``b``'s code at combination ``d`` of each of its codes at combination ``a``.

        The mixed radix is linear, so the table is an outer sum of the QIs' own maps (each as
        long as the QI's codes at ``a``), built by broadcasting: no pass over every block code
        per QI.
        """
        table = self._tables.get((b, a, d))
        if table is None:
            blk = self._blocks[b]
            la, ld = self._combo_levels[b][a].tolist(), self._combo_levels[b][d].tolist()
            table = np.zeros(1, dtype=np.int64)
            for j, x, y in zip(blk, la, ld, strict=True):
                step = self.qis[j].map_between(x, y)
                table = (table[:, None] * self._card_of[j][y] + step[None, :]).ravel()
            self._tables[(b, a, d)] = table
        return table

    def _rollup(self, src: _State, idx: int, inverse: bool = False
                ) -> tuple[_State, np.ndarray | None]:
        """Classes of node ``idx`` from the finer state ``src``; with ``inverse``, each source
        class's new class (always when sensitive histograms are rolled up too)."""
        levels = self.nodes[idx].astype(np.int64)
        inverse = inverse or bool(src.pairs)
        if not self.qis:
            return src, np.zeros(len(src.sizes), dtype=np.int64)
        if not self._narrow:
            return self._rollup_wide(src, idx, levels)
        dst = self._node_combo[idx].tolist()
        bcards = tuple(cards[c] for cards, c in zip(self._combo_card_lists, dst, strict=True))
        live = [b for b, card in enumerate(bcards) if card > 1]  # a block of one code adds 0 to the key
        if src.idx == 0:
            cols = [self._bottom_code(b, dst[b]) for b in live]
        else:
            cols = []
            at = self._node_combo[src.idx].tolist()
            for b in live:
                code = src.blocks[b]
                cols.append(code if at[b] == dst[b] else self._table(b, at[b], dst[b])[code])
        key = _radix_key(cols, [bcards[b] for b in live]) if live else np.zeros(len(src.sizes), dtype=np.int64)
        packed, sizes, inv = _group(key, math.prod(bcards), src.weights, inverse)
        pairs = [p.rollup(inv, len(sizes)) for p in src.pairs] if inv is not None else []
        return _State(idx, levels, sizes, packed, bcards, self._card_of, pairs), inv

    def _rollup_wide(self, src: _State, idx: int, levels: np.ndarray) -> tuple[_State, np.ndarray]:
        """:meth:`_rollup` when the key space exceeds int64 (re-densified as it is combined)."""
        cols = [qi.map_between(int(a), int(b))[k] if a != b else k
                for qi, a, b, k in zip(self.qis, src.levels, levels, src.keys, strict=True)]
        key, space = combine(cols, [c[lv] for c, lv in zip(self._card_of, levels.tolist(), strict=True)])
        _, inv, sizes = group(key, space, src.sizes)
        first = np.empty(len(sizes), dtype=np.int64)
        first[inv[::-1]] = np.arange(len(inv) - 1, -1, -1)
        pairs = [p.rollup(inv, len(sizes)) for p in src.pairs]
        return _State(idx, levels, sizes, None, (), self._card_of, pairs, [c[first] for c in cols]), inv

    def state(self, idx: int) -> _State:
        """Classes of node ``idx``, rolled up from the cached node below it with fewest classes."""
        st = self._cache.get(idx)
        if st is not None:
            return st
        st, _ = self._rollup(self._source(idx)[0], idx)
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
    def _verdict(self, st: _State, policy: Policy, persons: _PersonsAt | None = None
                 ) -> tuple[bool, np.ndarray, list[str]]:
        """Whether ``policy`` holds at the classes ``st`` within the budget, the failing classes,
        and what is missing; with ``persons`` (at the same classes), the rows of the persons
        below k are removed too (module docstring)."""
        if policy.needs_sensitive and st.pairs:
            ev = published_evaluation(policy, st.sizes, st.pairs)
            failing, rows_failing = ev.failing, ev.rows_failing
        else:
            failing, rows_failing = st.sizes < policy.k, None
        suppressed = in_classes = int(st.sizes[failing].sum())
        if persons is not None:
            kept = np.where(failing, 0, st.sizes - persons.rows_below)
            suppressed = self.n_rows - int(kept.sum())
        ok = suppressed <= self.budget
        missing = []
        if in_classes > self.budget:
            for name, rows in (rows_failing or {"k": in_classes}).items():
                if rows:
                    missing.append(f"{name}: {rows} rows in classes missing it (budget {self.budget})")
        if not ok and persons is not None and persons.persons_below:
            missing.append(
                f"k per person: {persons.persons_below} persons in person classes of fewer than "
                f"{policy.k} persons, {int(persons.rows_below.sum())} rows ({suppressed} rows "
                f"with the classes missing a criterion, budget {self.budget})")
        if policy.prosecutor_avg is not None:
            kept_classes = (len(st.sizes) - int(failing.sum()) if persons is None
                            else int(np.count_nonzero(kept)))
            if not avg_risk_ok(policy, kept_classes, self.n_rows - suppressed):
                ok = False
                missing.append(
                    f"prosecutor_avg: {kept_classes / max(self.n_rows - suppressed, 1):.4g} > "
                    f"{policy.prosecutor_avg:g}"
                )
        return ok, failing, missing

    def _persons(self, idx: int) -> _PersonsAt:
        """The persons at node ``idx`` (the last 64 nodes' kept): its classes rolled up from the
        bottom, the bottom's person keys mapped there (:meth:`PersonKeys.coarsen`), grouped."""
        at = self._persons_at.get(idx)
        if at is not None:
            return at
        st, inverse = self._rollup(self._cache[0], idx, inverse=True)
        keys = self._keys.coarsen(inverse, len(st.sizes))
        below = keys.class_sizes() < self.policy.k
        held = below[keys.person]
        rows_below = np.bincount(keys.cls[held], weights=keys.count[held],
                                 minlength=len(st.sizes)).astype(np.int64)
        at = _PersonsAt(st, inverse, below, rows_below)
        if len(self._persons_at) >= 64:
            del self._persons_at[next(iter(self._persons_at))]
        self._persons_at[idx] = at
        return at

    def check_monotone(self, idx: int) -> bool:
        """Check the monotone part of the policy at node ``idx`` and tag the lattice (with
        persons: per person too, where the row-level part holds; module docstring)."""
        st = self.state(idx)
        self.checked += 1
        ok, failing, missing = self._verdict(st, self.mono)
        suppressed = int(st.sizes[failing].sum())
        if ok and self._keys is not None:
            at = self._persons(idx)
            ok, failing, missing = self._verdict(at.state, self.mono, at)
            suppressed = int(np.where(failing, at.state.sizes, at.rows_below).sum())
        node = self.nodes[idx].tolist()
        self.infos[idx] = NodeInfo(tuple(node), len(st.sizes), suppressed, ok, None, missing)
        # the generalizations of a node (or its specializations) are a box of the level grid
        if ok:
            self._status_grid[tuple(slice(v, None) for v in node)] = PASS
        else:
            self._status_grid[tuple(slice(0, v + 1) for v in node)] = FAIL
        return ok

    def evaluate(self, idx: int) -> NodeInfo:
        """The full policy and the metric at node ``idx`` (which passed the monotone part)."""
        if self._keys is None:
            st, at = self.state(idx), None
            ok, failing, missing = self._verdict(st, self.policy)
            suppressed = int(st.sizes[failing].sum())
        else:
            at = self._persons(idx)
            st = at.state
            ok, failing, missing = self._verdict(st, self.policy, at)
            suppressed = int(np.where(failing, st.sizes, at.rows_below).sum())
        loss = self.loss(idx, st, failing, at) if ok else None
        info = NodeInfo(tuple(int(v) for v in self.nodes[idx]), len(st.sizes), suppressed, ok,
                        loss, missing)
        self.infos[idx] = info
        return info

    def _per_code(self) -> list[list[np.ndarray]]:
        """Per QI and level, the separable metric's figure of each code: the label's loss
        (``loss``) or log2 of the input rows under it (``entropy``); built on first use."""
        if self._code_tabs is None:
            # a sub-lattice's code at level lv is its whole QI's code at level lv + offset
            pairs = list(zip(self.qis, self._whole, strict=True))
            if self.metric == "loss":
                self._code_tabs = [[label_loss(w, lv + off) for lv in range(q.n_levels)] for q, (w, off) in pairs]
            else:
                self._code_tabs = [[label_log_counts(w, lv + off, w.value_counts()) for lv in range(q.n_levels)]
                                   for q, (w, off) in pairs]
                # sum over rows and generalized QIs of log2 count(value), the metric's constant
                self._log_values = float(sum(w.value_counts() @ np.log2(np.maximum(w.value_counts(), 1))
                                             for (w, _), g in zip(self._whole, self.generalized, strict=True)
                                             if g))
        return self._code_tabs

    def _level_totals(self) -> list[np.ndarray]:
        """Per QI, per level: the separable metric's total over all rows with nothing suppressed
        (:func:`~anon_dagster.anonymize.utility.separable_bounds`, the same sums, from the
        per-code figures :meth:`loss` reads)."""
        out = []
        for qi, tabs, (whole, off) in zip(self.qis, self._per_code(), self._whole, strict=True):
            vc = whole.value_counts()
            per_level = np.zeros(qi.n_levels)
            for lvl in range(qi.n_levels):
                codes = whole.level_maps[lvl + off]
                if self.metric == "loss":
                    per_level[lvl] = float(vc @ tabs[lvl][codes])
                else:
                    per_level[lvl] = float(vc @ (tabs[lvl][codes] - np.log2(np.maximum(vc, 1))))
            out.append(per_level)
        return out

    def bound_at(self, levels: Sequence[int]) -> float | None:
        """The search's lower bound of the separable metric at the node ``levels`` (the sum over
        the generalized QIs of their level totals, per row and QI for ``loss``), the first key of
        the order :meth:`search` visits nodes in; None for a metric without one."""
        if self.metric not in SEPARABLE:
            return None
        per_qi = self._level_totals()
        bound = np.zeros(1)  # summed as the search sums it, QI by QI
        for j in range(self.q):
            if self.generalized[j]:
                bound += per_qi[j][int(levels[j])]
        if self.metric == "loss":
            bound /= self.n_rows * self.n_gen
        return float(bound[0])

    def _block_figures(self, b: int, combo: int) -> np.ndarray:
        """The separable metric's figure of each code of block ``b`` at level combination
        ``combo``: the sum of its generalized QIs' per-code figures (:meth:`_per_code`), an outer
        sum in the block code's mixed radix as :meth:`_table` builds its maps."""
        figures = self._figures.get((b, combo))
        if figures is None:
            tabs = self._per_code()
            figures = np.zeros(1)
            for j, lv in zip(self._blocks[b], self._combo_levels[b][combo].tolist(), strict=True):
                part = tabs[j][lv] if self.generalized[j] else np.zeros(self._card_of[j][lv])
                figures = (figures[:, None] + part[None, :]).ravel()
            self._figures[(b, combo)] = figures
        return figures

    def loss(self, idx: int, st: _State, failing: np.ndarray, persons: _PersonsAt | None = None) -> float:
        """The metric at a node whose failing classes are suppressed (module utility definitions),
        and with ``persons`` (at the classes ``st``) the rows of the persons below k too."""
        if persons is not None:
            return self._loss_persons(idx, st, failing, persons)
        kept = ~failing
        n, q = self.n_rows, self.n_gen
        sup_rows = int(st.sizes[failing].sum())
        if self.metric in SEPARABLE:
            per_class = self._per_class(st)
            if self.metric == "loss":
                return float(st.sizes[kept] @ per_class[kept] + sup_rows * q) / (n * q)
            # entropy: sum over cells of log2 count(label) - log2 count(value): the per-class
            # label sums, a suppressed row's labels all *, minus the constant sum over every
            # row's values
            labels = float(st.sizes[kept] @ per_class[kept]) + sup_rows * q * math.log2(max(n, 1))
            return labels - self._log_values
        if self.metric == "discernibility":
            return discernibility(st.sizes[kept], sup_rows)
        if self.metric == "aecs":
            return aecs(st.sizes[kept], sup_rows)
        if self.metric.startswith("query:"):
            return self.query_error(idx, failing)
        raise UserError(f"unknown utility {self.metric!r}")

    def _per_class(self, st: _State) -> np.ndarray:
        """The separable metric's figure of one row of each class of ``st``."""
        per_class = np.zeros(len(st.sizes))
        if st.packed is not None and self.q:
            # one lookup per block of QIs (their figures summed per block code)
            for b, (combo, code) in enumerate(zip(self._node_combo[st.idx].tolist(), st.blocks, strict=True)):
                per_class += self._block_figures(b, combo)[code]
        else:
            tabs = self._per_code()
            for j in range(self.q):
                if self.generalized[j]:
                    per_class += tabs[j][int(st.levels[j])][st.keys[j]]
        return per_class

    def _loss_persons(self, idx: int, st: _State, failing: np.ndarray, persons: _PersonsAt) -> float:
        """:meth:`loss` when the rows of the persons below k are removed too: a class keeps its
        rows but theirs (none when it fails), and every removed row counts as suppressed."""
        kept = np.where(failing, 0, st.sizes - persons.rows_below)
        n, q = self.n_rows, self.n_gen
        sup_rows = n - int(kept.sum())
        if self.metric in SEPARABLE:
            labels = float(kept @ self._per_class(st))
            if self.metric == "loss":
                return (labels + sup_rows * q) / (n * q)
            return labels + sup_rows * q * math.log2(max(n, 1)) - self._log_values
        if self.metric == "discernibility":
            return discernibility(kept[kept > 0], sup_rows)
        if self.metric == "aecs":
            return aecs(kept[kept > 0], sup_rows)
        if self.metric.startswith("query:"):
            if self._query_codes is None:
                raise UserError("this lattice has no utility query")
            if not sup_rows:
                return self.query_error(idx, failing)
            removed = failing[persons.inverse[self.bottom_row_class]] | persons.below[self._person_of_row]
            return self._query_codes.error(self.nodes[idx], ~removed)
        raise UserError(f"unknown utility {self.metric!r}")

    def _row_loss(self, idx: int) -> float:
        """The metric at node ``idx`` with only the failing classes suppressed (a lower bound of
        its value per person, separable metrics)."""
        st = self.state(idx)
        _, failing, _ = self._verdict(st, self.policy)
        return self.loss(idx, st, failing)

    def persons_below(self, idx: int) -> np.ndarray:
        """The rows (a boolean mask by position) of the persons whose person class at node
        ``idx`` holds fewer than k persons; none without persons."""
        if self._keys is None:
            return np.zeros(self.n_inputs, dtype=bool)
        return self._persons(idx).below[self._person_of_row]

    def row_class(self, idx: int) -> tuple[np.ndarray, _State]:
        """Each row's class id at node ``idx`` (via the bottom classes)."""
        st, inverse = self._rollup(self._cache[0], idx, inverse=True)
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

    # ----- pairs -------------------------------------------------------------------------------
    def _settle_pairs(self) -> None:
        """Settle the *pair nodes* from the pairs' joint counts, before any roll-up.

        Definition: the pair node (QI i at level a, QI j at level b) has every other QI at its
        top (a pinned QI at its only level), so its classes are the distinct (pinned codes,
        i's code at a, j's code at b). A failing pair node tags all its specializations failing,
        a passing one its generalizations passing: Incognito's subset property, for pairs. On
        Adult (9 QIs, k=5, no suppression) this settles most of the lattice, and the search
        then checks a fifth of the nodes it checks without.

        Counting: one bincount over the rows per pair gives its level-0 table; its codes laid
        out in hierarchy order (:meth:`_level_segments`), every label of every level is a run of
        rows (and columns), so one ``reduceat`` per axis yields the tables of all the pair's
        level combinations at once. Only when the monotone part is judged on class sizes alone
        (k, prosecutor_avg without suppression), with three or more QIs to generalize; a pair
        whose level-0 table would exceed ``max(4 × rows, 65,536)`` cells is left to the search.
        """
        mono = self.mono
        free = [j for j in range(self.q) if self.dims[j] > 1]
        if (len(free) < 3 or mono.needs_sensitive or self.budget >= self.n_rows
                or (mono.k <= 1 and mono.prosecutor_avg is None)):
            return
        segments = {j: self._level_segments(j) for j in free}
        free = [j for j in free if segments[j] is not None]
        if len(free) < 2:
            return
        checked = self.checked
        bottom = self._cache[0]
        if self.n_inputs <= 2 * len(bottom.sizes):
            rows = self._pair_source([q.codes for q in self.qis], self._row_weights)
        else:  # many rows per class: count the bottom classes, weighted by their sizes
            rows = self._pair_source(bottom.keys, bottom.weights)
        n_src = len(rows[4])  # rows or classes counted
        # the pairs without the QI of most codes are counted over the classes of the node that
        # generalizes only that QI, to the top, when it has at most half as many
        widest = max(free, key=lambda j: (self._card_of[j][0], -j))
        node = np.zeros(self.q, dtype=np.int64)
        node[widest] = self.dims[widest] - 1
        coarse = self.state(int(node @ self._radix))
        rest = self._pair_source(coarse.keys, coarse.weights) if 2 * len(coarse.sizes) <= n_src else rows
        limit = max(4 * n_src, 1 << 16)
        k, prosecutor = mono.k, mono.prosecutor_avg is not None
        # below[j][a]: how far a pair node with QI j at level a is below the top, in node index
        top = self.dims - 1
        below = {j: (top[j] - np.arange(top[j] + 1)) * self._radix[j] for j in free}
        passing: list[np.ndarray] = []  # indices of passing pair nodes
        counted: set[int] = set()  # QIs whose pair nodes were counted
        for i, j in itertools.combinations(free, 2):
            codes, weights, base, n_base, key = rows if widest in (i, j) else rest
            ci, cj = self._card_of[i][0], self._card_of[j][0]
            if n_base * ci * cj > limit:
                continue
            np.multiply(codes[i], cj, out=key)  # the source's buffer for its pairs' keys
            key += codes[j]
            if base is not None:
                key += base * (ci * cj)
            table = np.bincount(key, weights=weights, minlength=n_base * ci * cj).reshape(n_base, ci, cj)
            small = (table > 0) & (table < k)
            if self._size_verdicts(table[small].sum(), np.count_nonzero(table) if prosecutor else 0,
                                   np.count_nonzero(small) if prosecutor else 0):
                # the pair's finest node passes, so does every node of the pair
                passing.append((self.size - 1 - below[i][:, None] - below[j][None, :]).ravel())
                self.checked += 1
                continue
            (order_i, runs_i, levels_i), (order_j, runs_j, levels_j) = segments[i], segments[j]
            # codes in hierarchy order, and a zero row and column that the runs' separators read
            laid = np.zeros((n_base, ci + 1, cj + 1))
            laid[:, :ci, :cj] = table[:, order_i][:, :, order_j]
            counts = np.add.reduceat(np.add.reduceat(laid, runs_i, axis=1), runs_j, axis=2)
            small = (counts > 0) & (counts < k)

            def per_node(x: np.ndarray, levels_i: np.ndarray = levels_i, levels_j: np.ndarray = levels_j
                         ) -> np.ndarray:
                return np.add.reduceat(np.add.reduceat(x.sum(axis=0), levels_i, axis=0), levels_j, axis=1)

            ok = self._size_verdicts(per_node(np.where(small, counts, 0.0)),
                                     per_node(counts > 0) if prosecutor else 0,
                                     per_node(small) if prosecutor else 0)
            passing.append((self.size - 1 - below[i][:, None] - below[j][None, :])[ok])
            self._fail_pair(i, j, ok.tolist())
            self.checked += int(top[i]) * int(top[j])
            counted |= {i, j}
        if passing and self._keys is None:
            # a passing pair node's generalizations are pair nodes of its pair: all settled (not
            # per person: the pairs count rows, a necessary condition only)
            self.status[np.concatenate(passing)] = PASS
        # each pair's own nodes (below the top on both QIs) were counted above; those below the
        # top on one QI (or none) are shared by that QI's pairs
        self.checked += sum(int(top[j]) for j in counted) + (1 if counted else 0)
        self.pair_nodes = self.checked - checked

    def _pair_source(self, codes: list[np.ndarray], weights: np.ndarray | None
                     ) -> tuple[list[np.ndarray], np.ndarray | None, np.ndarray | None, int, np.ndarray]:
        """What pairs are counted over: per QI codes of rows or classes, their weights (None for
        rows), each one's dense code of the pinned QIs (None without) and their number, and a
        key buffer."""
        pinned = [j for j in range(self.q) if self.dims[j] == 1]
        base, n_base = None, 1
        if pinned:
            key, space = combine([codes[j] for j in pinned], [self._card_of[j][0] for j in pinned])
            _, base, counts = group(key, space)
            n_base = len(counts)
        return codes, weights, base, n_base, np.empty(len(codes[0]), dtype=np.int64)

    def _level_segments(self, j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """QI ``j``'s level-0 codes in hierarchy order, where every label of every level is a
        run (sorted by the codes of the coarsest level first: a level coarsens the one below,
        so a label's values share every coarser label). Returns the order, the runs' starts of
        all levels for ``np.add.reduceat`` over a table in that order with one zero row
        appended (each level's runs, then that row's index, which closes the last run), and
        where each level's runs start in the result. None when a label is not one run (a level
        that does not coarsen the one below)."""
        maps = self.qis[j].level_maps
        order = np.lexsort(maps)  # the last key, the coarsest level, sorts first
        n = len(order)
        runs, levels, at = [], [], 0
        for lvl, codes in enumerate(maps):
            laid = codes[order]
            starts = np.flatnonzero(np.append(True, laid[1:] != laid[:-1]))
            if len(starts) != self._card_of[j][lvl]:
                return None
            runs.append(starts)
            runs.append([n])
            levels.append(at)
            at += len(starts) + 1
        return order, np.concatenate(runs[:-1]).astype(np.intp), np.asarray(levels, dtype=np.intp)

    def _size_verdicts(self, small_rows: np.ndarray | float, classes: np.ndarray | int,
                       small_classes: np.ndarray | int) -> np.ndarray | bool:
        """:meth:`_verdict` of the monotone part for one node or many at once (arrays), from the
        rows in classes smaller than k, the classes and the classes smaller than k (the last
        two read for prosecutor_avg only)."""
        ok = small_rows <= self.budget
        avg = self.mono.prosecutor_avg
        if avg is not None:
            kept_rows = self.n_rows - small_rows
            with np.errstate(divide="ignore", invalid="ignore"):
                ok &= (kept_rows == 0) | ((classes - small_classes) / np.maximum(kept_rows, 1) <= avg + EPS)
        return ok

    def _fail_pair(self, i: int, j: int, ok: list[list[bool]]) -> None:
        """Tag as failing every specialization of the failing pair nodes of QIs i and j
        (``ok[a][b]`` their verdicts): one box per failing node that no failing one is above."""
        node = (self.dims - 1).tolist()
        last_a, last_b = len(ok) - 1, len(ok[0]) - 1
        for a, row in enumerate(ok):
            for b, passes in enumerate(row):
                if passes or (a < last_a and not ok[a + 1][b]) or (b < last_b and not row[b + 1]):
                    continue
                node[i], node[j] = a, b
                self._status_grid[tuple(slice(0, v + 1) for v in node)] = FAIL

    # ----- search ------------------------------------------------------------------------------
    def _chain(self, idx: int) -> list[int]:
        """Nodes from ``idx`` to the top, one level on one QI per step: the QI whose next level adds
        least to the bound (separable metrics), else the relatively lowest QI."""
        if self._next is None:
            self._next = self._chain_steps()
        nxt = self._next
        chain = [idx]
        while True:
            idx = int(nxt[idx])
            if idx < 0:
                return chain
            chain.append(idx)

    def _chain_steps(self) -> np.ndarray:
        """Every node's next node on its chain (-1 at the top), for all nodes at once: the step
        of least cost, ties to the first QI (as a scan in QI order would choose)."""
        least = np.full(self.size, np.inf)
        step = np.zeros(self.size, dtype=np.int64)
        for j in range(self.q):
            per_level = self._step_cost[j] if self._step_cost is not None else (
                np.arange(self.dims[j] - 1) / max(int(self.dims[j]) - 1, 1))
            cost = np.append(np.asarray(per_level, dtype=float), np.inf)[self._levels[j]]
            lower = cost < least
            np.copyto(least, cost, where=lower)
            step[lower] = j
        nxt = np.arange(self.size, dtype=np.int64) + self._radix[step]
        nxt[np.isinf(least)] = -1
        return nxt

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

    def _source(self, idx: int) -> tuple[_State, int]:
        """The cached state below node ``idx`` to roll up from, and its number of classes."""
        levels = self.nodes[idx]
        used = self._cache_used
        below = np.flatnonzero(np.all(self._cache_levels[:used] <= levels, axis=1)
                               & self._cache_live[:used])
        slot = below[np.argmin(self._cache_n[below])]
        if self._cache_n[slot] * 2 > self._cache_n[0]:
            slot = 0  # about as many classes as the bottom: its kept block codes are cheaper
        return self._cache[int(self._cache_ids[slot])], int(self._cache_n[slot])

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
        # a step's merge: ln(codes at the level / codes at the next), 0 when it merges nothing
        merge = [np.log(np.asarray(c[:-1], dtype=float) / np.maximum(c[1:], 1)) for c in self._card_of]
        if separable:
            per_qi = self._level_totals()
            # chains climb gently: the step adding least to the bound, weighted by how much it
            # merges (measured on Adult: a third fewer checks than the bound alone)
            self._step_cost = [np.diff(p) * m if g else np.full(max(len(p) - 1, 0), np.inf)
                               for p, m, g in zip(per_qi, merge, self.generalized, strict=True)]
        else:
            # without a bound, chains take the step that merges least
            self._step_cost = [m if g else np.full(len(m), np.inf)
                               for m, g in zip(merge, self.generalized, strict=True)]
        self._next = None  # chains follow this search's step costs
        self._settle_pairs()
        # the nodes not known to fail, in the order of the search (ties by index, as a stable
        # sort of the whole lattice would give)
        open_ = np.flatnonzero(self.status != FAIL)
        levels = self._levels[:, open_]
        height = self.height[open_]
        bound = None
        if separable:
            bound = np.zeros(len(open_))
            for j in range(self.q):
                if self.generalized[j]:
                    bound += per_qi[j][levels[j]]
            if self.metric == "loss":
                bound /= self.n_rows * self.n_gen
            perm = np.lexsort((height, bound))
            bound = bound[perm]
        elif self.query is not None:
            # nodes that keep the query's group-by QIs finest first: an exact answer (error 0,
            # the least possible) is then found early and ends the search
            group_height = levels[self.query.group_qi].sum(axis=0) if self.query.group_qi else height * 0
            perm = np.lexsort((height, group_height))
        else:
            perm = np.argsort(height, kind="stable")
        order = open_[perm]
        monotone_metric = self.metric in ("loss", "entropy", "discernibility", "aecs")
        only_minimal = (not self.suppression) and self.policy.is_monotone(False) and monotone_metric
        # per person, a separable metric at a node is at least its row-level value (the rows of
        # the persons below k cost a suppressed row's figure, the most a row can cost)
        bounded_by_rows = self._keys is not None and separable and self.suppression
        best_idx, best_loss = -1, math.inf
        status = self.status
        settled = self.size - len(order)
        pos, reported = 0, -1
        while pos < len(order):
            # skip the nodes already known to fail, a chunk at a time
            chunk = order[pos:pos + 256]
            live = np.flatnonzero(status[chunk] != FAIL)
            if not len(live):
                pos += len(chunk)
                continue
            pos += int(live[0])
            idx = int(order[pos])
            pos += 1
            if bound is not None and bound[pos - 1] >= best_loss - 1e-12:
                break
            if best_loss <= 0.0:  # every metric is >= 0: nothing can do better
                break
            if progress is not None and pos // 256 != reported:
                reported = pos // 256
                progress(settled + pos, self.size)
            if not self.resolve(idx):
                continue
            if only_minimal and not self._is_minimal(idx):
                continue
            if bounded_by_rows and self._row_loss(idx) >= best_loss - 1e-12:
                continue  # the persons' rows can only add to the loss at the node
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
            per_person=self._keys is not None,
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
