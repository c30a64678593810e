"""What the three attacks share: the release coded once, the targets recoded once, the budget.

:class:`AttackSetup` holds the release's coding, each release row's person, the main and control
targets (main first) recoded into the release's labels, and the seed. :func:`drive` attacks the
targets in chunks, main and control in turn, and stops at the chunk the budget no longer
allows: the targets are in random order, so the targets attacked are a random sample of both
sides, and the result says it was cut.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...anonymize.record import TransformationRecord
from ...errors import DataError
from ...hierarchies import Hierarchy
from ..person import person_codes
from .coding import Recoded, ReleaseCoding, recode_targets, seed_of
from .result import Budget
from .search import CandidateSets, ReleaseTuples, find
from .targets import Targets, control_targets, main_targets

DEFAULT_TARGETS = 2_000


@dataclass(frozen=True)
class AttackConfig:
    """How hard the attacks try.

    ``targets``: main and control targets each (persons; all of them when fewer);
    ``predicates``: multivariate singling-out predicates per target (1: the conjunction over
    every column; more: random subsets too, see :mod:`.singling_out`); ``tolerance``: a numeric
    secret is guessed right within ``tolerance × |value|``; ``budget``: each attack's
    :class:`~.result.Budget`; ``chunk``: targets attacked at a time.
    """

    targets: int | None = DEFAULT_TARGETS
    predicates: int = 1
    tolerance: float = 0.05
    budget: Budget = field(default_factory=Budget)
    chunk: int = 512


@dataclass
class AttackSetup:
    """The release, its persons and the targets, ready to be attacked (module docstring)."""

    coding: ReleaseCoding
    person_of_row: np.ndarray
    columns: list[str]
    main: Targets
    control: Targets
    recoded: Recoded
    seed: int
    config: AttackConfig
    # a synthetic release: its rows are nobody's, so a main target succeeds as a control target
    # does (a predicate isolating one row, parts meeting at one row), with nobody to be the target
    synthetic: bool = False
    _tuples: dict[tuple[str, ...], ReleaseTuples] = field(default_factory=dict)
    _sets: dict[tuple, CandidateSets] = field(default_factory=dict)

    @property
    def n_main(self) -> int:
        return len(self.main)

    @property
    def n_control(self) -> int:
        return len(self.control)

    @property
    def target_person(self) -> np.ndarray:
        return np.concatenate([self.main.person, self.control.person])

    def rng(self, purpose: str) -> np.random.Generator:
        """A generator for one purpose, from the release's seed (same release, same draws)."""
        return np.random.default_rng([self.seed & 0xFFFFFFFFFFFFFFFF, zlib.crc32(purpose.encode())])

    def tuples(self, columns: Sequence[str]) -> ReleaseTuples:
        """The release's distinct tuples of ``columns`` (built once per column set)."""
        key = tuple(columns)
        if key not in self._tuples:
            self._tuples[key] = ReleaseTuples(self.coding, key, self.person_of_row)
        return self._tuples[key]

    def candidates(self, columns: Sequence[str], idx: np.ndarray, recoded: Recoded,
                   exact_only: bool = False) -> CandidateSets:
        """The candidate sets (:func:`~.search.find`) of the targets ``idx`` (a chunk of
        :func:`drive`, ``recoded`` their recoding) on ``columns``, found once per chunk: a second
        attack on the same columns (inference on another secret) reuses them. Exact-only sets
        are the nearest ones at distance 0 when those were found already."""
        key = (tuple(columns), int(idx[0]) if len(idx) else 0, len(idx))
        found = self._sets.get(key)
        if found is None and exact_only:
            return find(self.tuples(columns), recoded, exact_only=True)
        if found is None:
            found = self._sets[key] = find(self.tuples(columns), recoded)
        if not exact_only:
            return found
        of_target = np.where(found.distance == 0, found.of_target, -1)
        return CandidateSets(of_target, found.n_base, found.extra_ptr, found.extra, found.distance)


def prepare(release: pd.DataFrame, originals: pd.DataFrame, control: pd.DataFrame, *,
            columns: Sequence[str], secrets: Sequence[str] = (), record: TransformationRecord | None = None,
            hierarchies: dict[str, Hierarchy] | None = None, persons: pd.Series | None = None,
            control_persons: pd.Series | None = None, config: AttackConfig | None = None,
            seed: int | None = None, synthetic: bool = False) -> AttackSetup:
    """The setup of the attacks on ``release`` (see :func:`anon_dagster.risk.attacks.run_attacks`).

    ``synthetic``: ``release`` is a synthetic table and ``originals`` the real records it was
    made from (any number, one person each): the main targets are drawn from them as the control
    targets are from theirs, and every attack scores both sides alike."""
    config = config or AttackConfig()
    if not synthetic and len(originals) != len(release):
        raise DataError(f"{len(originals)} original records for {len(release)} released rows: they must "
                        "be the released rows before anonymization, in the same order")
    columns = list(columns)
    if not columns:
        raise DataError("the attacks need at least one column the attacker knows")
    for name in [*columns, *secrets]:
        for what, frame in (("release", release), ("original records", originals), ("control records", control)):
            if name not in frame.columns:
                raise DataError(f"column {name!r} is not in the {what}")
    coding = ReleaseCoding(release, record, hierarchies)
    if persons is not None and len(persons) != len(release):
        raise DataError(f"{len(persons)} person values for {len(release)} released rows")
    person_of_row = (person_codes(persons) if persons is not None
                     else np.arange(len(release), dtype=np.int64))
    seed = seed if seed is not None else seed_of(record, release.reset_index(drop=True))
    base = np.random.default_rng([seed & 0xFFFFFFFFFFFFFFFF, zlib.crc32(b"targets")])
    main = (main_targets(originals.reset_index(drop=True), person_of_row, config.targets, base) if not synthetic
            else control_targets(originals.reset_index(drop=True), None, config.targets, base))
    ctrl = control_targets(control.reset_index(drop=True),
                           None if control_persons is None else pd.Series(control_persons).reset_index(drop=True),
                           config.targets, base)
    wanted = list(dict.fromkeys([*columns, *secrets]))
    both = pd.concat([main.records[wanted], ctrl.records[wanted]], ignore_index=True)
    recoded = recode_targets(coding, both, wanted)
    return AttackSetup(coding, person_of_row, columns, main, ctrl, recoded, seed, config, synthetic)


@dataclass
class Driven:
    """The summed scores of the targets attacked, the queries made and why it stopped early."""

    main: float = 0.0
    n_main: int = 0
    control: float = 0.0
    n_control: int = 0
    baseline: float = 0.0
    queries: int = 0
    cut: str | None = None


Score = Callable[[np.ndarray, bool], tuple[np.ndarray, np.ndarray | None]]


def drive(setup: AttackSetup, per_target: int, score: Score) -> Driven:
    """Attack every target (main then control, a chunk of each in turn) within the budget.

    ``score(targets, main)`` returns each target's score in [0, 1] and, for main targets, the
    baseline's score (the same attack without the release's information about the target);
    ``targets`` are indices into ``setup.recoded``. ``per_target`` is the queries one target takes.
    """
    out = Driven()
    spending = setup.config.budget.start()
    chunk = max(int(setup.config.chunk), 1)
    sides = [(np.arange(setup.n_main), True), (setup.n_main + np.arange(setup.n_control), False)]
    position = [0, 0]
    while any(position[s] < len(sides[s][0]) for s in (0, 1)):
        for s, (indices, is_main) in enumerate(sides):
            todo = indices[position[s]:position[s] + chunk]
            if not len(todo):
                continue
            fits = spending.allows(len(todo) * per_target) // max(per_target, 1)
            todo = todo[:fits]
            if not len(todo):
                out.cut = _cut_text(spending.cut, out)
                return out
            scores, baseline = score(todo, is_main)
            spending.queries += len(todo) * per_target
            out.queries += len(todo) * per_target
            position[s] += len(todo)
            if is_main:
                out.main += float(np.sum(scores))
                out.n_main += len(todo)
                out.baseline += float(np.sum(baseline)) if baseline is not None else 0.0
            else:
                out.control += float(np.sum(scores))
                out.n_control += len(todo)
    return out


def _cut_text(reason: str | None, out: Driven) -> str:
    return f"{reason or 'budget reached'}: {out.n_main} main and {out.n_control} control targets attacked"


__all__ = ["DEFAULT_TARGETS", "AttackConfig", "AttackSetup", "Driven", "drive", "prepare"]
