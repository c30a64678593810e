"""Inference: can the release tell the attacker a target's secret from what they know of them?

Definition. The attacker knows a target's values of the attack's columns (every column but the
secret) and guesses its secret column from the release. They find the target's candidates
(:mod:`.search`: the records of the class whose labels cover the target, or the nearest ones
when no class does) and guess from the candidates' secrets, each candidate person weighing 1
(split equally over the distinct secrets of their rows among the candidates):

- a **categorical** secret: the most frequent secret among the candidates (Bayes' rule with the
  class as the evidence). When ``m`` secrets are equally frequent the attacker draws one of them:
  the score is the share of those ``m`` that are right (1/m each, never the first);
- a **numeric** secret: the secret of one candidate drawn at random (nearest-neighbour guessing
  with every tie kept): the score is the candidates' weight within ``tolerance × |secret|`` of
  the target's secret (missing matches missing).

The target's secret is recoded into the release's labels like every other value
(:func:`~.coding.recode_targets`), so a guess is right when its label covers the secret (a
generalized secret is guessed at the release's level). Release rows whose secret is published as
``*`` reveal nothing and are left out of the candidates' secrets.

- **main** targets are persons of the release, **control** targets persons who are not: against
  them the attacker gets only what the population's regularities give (the secret most common
  among people like the target), so a release carrying only those regularities has equal main
  and control rates — residual risk 0;
- **baseline**: the secret of a release row drawn at random (positionally), whoever it is.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .engine import AttackSetup, drive
from .result import AttackResult, attack_result
from .search import ReleaseTuples, gather, set_rows

NAME = "inference"


def _weighted_secrets(tuples: ReleaseTuples, sets, ids: np.ndarray, codes: np.ndarray, n_labels: int,
                      keep_row: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per candidate set in ``ids``: its distinct secrets (label codes) and their weights (each
    person 1, split over their distinct secrets there). Returns ``(owner, label, weight)``,
    sorted by owner then label."""
    owner, rows = set_rows(tuples, sets, ids)
    if keep_row is not None:
        keep = keep_row[rows]
        owner, rows = owner[keep], rows[keep]
    person = tuples.person_of_row[rows]
    n_persons = int(tuples.person_of_row.max()) + 1 if len(tuples.person_of_row) else 1
    triple = np.unique((owner * n_persons + person) * n_labels + codes[rows])
    pair, label = triple // n_labels, triple % n_labels
    _, per_pair = np.unique(pair, return_counts=True)
    weight = 1.0 / np.repeat(per_pair, per_pair)
    o = pair // n_persons
    cell = np.unique(o * n_labels + label, return_inverse=True)
    w = np.bincount(cell[1], weights=weight)
    return cell[0] // n_labels, cell[0] % n_labels, w


def categorical_scores(recoded_secret, values: np.ndarray, owner_of_target: np.ndarray,
                       owner: np.ndarray, label: np.ndarray, weight: np.ndarray, n_owners: int) -> np.ndarray:
    """Each target's chance that a most frequent secret of its candidates, drawn at random
    among the equally frequent ones, covers its own (``values``: its distinct secret values)."""
    best = np.full(n_owners, -np.inf)
    np.maximum.at(best, owner, weight)
    mode = weight >= best[owner] - 1e-9
    m_owner, m_label = owner[mode], label[mode]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(m_owner, minlength=n_owners))]).astype(np.int64)
    has = owner_of_target >= 0
    out = np.zeros(len(owner_of_target))
    t_idx = np.flatnonzero(has)
    pair_t, guess = gather(ptr, m_label, owner_of_target[has])
    right = recoded_secret.covers(values[t_idx][pair_t], guess)
    n_modes = np.diff(ptr)[owner_of_target[has]]
    out[t_idx] = np.bincount(pair_t, weights=right.astype(np.float64), minlength=len(t_idx)) / np.maximum(n_modes, 1)
    return out


def numeric_scores(x: np.ndarray, owner_of_target: np.ndarray, owner: np.ndarray, label: np.ndarray,
                   weight: np.ndarray, numbers: np.ndarray, n_owners: int, tolerance: float) -> np.ndarray:
    """Each target's candidate weight within ``tolerance × |x|`` of its secret ``x`` (missing
    matches missing), over its candidates' total weight."""
    order = np.argsort(numbers, kind="stable")  # NaN last
    rank = np.empty(len(numbers), dtype=np.int64)
    rank[order] = np.arange(len(numbers))
    sorted_numbers = numbers[order]
    finite = int((~np.isnan(sorted_numbers)).sum())
    n_l = max(len(numbers), 1)
    key = owner * n_l + rank[label]
    sort = np.argsort(key, kind="stable")
    key, w = key[sort], weight[sort]
    cum = np.concatenate([[0.0], np.cumsum(w)])
    total = np.bincount(owner, weights=weight, minlength=n_owners)
    has = owner_of_target >= 0
    o = owner_of_target[has]
    xt = x[has]
    missing = np.isnan(xt)
    span = tolerance * np.abs(np.where(missing, 0.0, xt))
    lo = np.where(missing, finite, np.searchsorted(sorted_numbers[:finite], xt - span, side="left"))
    hi = np.where(missing, n_l, np.searchsorted(sorted_numbers[:finite], xt + span, side="right"))
    got = cum[np.searchsorted(key, o * n_l + hi)] - cum[np.searchsorted(key, o * n_l + lo)]
    out = np.zeros(len(owner_of_target))
    out[has] = got / np.maximum(total[o], 1e-12)
    return out


def inference(setup: AttackSetup, secret: str, columns: Sequence[str] | None = None,
              tolerance: float | None = None) -> AttackResult:
    """The inference attack on ``secret`` (module docstring) from ``columns`` (default: the
    setup's, the secret left out)."""
    if secret not in setup.recoded.columns:
        raise ValueError(f"inference: {secret!r} was not recoded with the targets (name it as a secret)")
    cols = [c for c in (columns or setup.columns) if c != secret]
    if not cols:
        raise ValueError(f"inference on {secret!r}: no other column to infer it from")
    tol = setup.config.tolerance if tolerance is None else float(tolerance)
    tuples = setup.tuples(cols)
    coding = setup.coding[secret]
    recoded_secret = setup.recoded[secret]
    keep_row = None if coding.numeric or coding.wildcard < 0 else coding.codes != coding.wildcard
    guessable = np.flatnonzero(keep_row) if keep_row is not None else np.arange(setup.coding.n_rows)
    base_rng = setup.rng(f"{NAME}/{secret}/baseline")

    def judge(values: np.ndarray, labels: np.ndarray) -> np.ndarray:
        if coding.numeric:
            assert coding.numbers is not None and recoded_secret.x is not None
            x, y = recoded_secret.x[values], coding.numbers[labels]
            with np.errstate(invalid="ignore"):
                near = np.abs(x - y) <= tol * np.abs(x)
            return (near | (np.isnan(x) & np.isnan(y))).astype(np.float64)
        return recoded_secret.covers(values, labels).astype(np.float64)

    def score(idx: np.ndarray, main: bool) -> tuple[np.ndarray, np.ndarray | None]:
        recoded = setup.recoded.take(idx)
        sets = setup.candidates(cols, idx, recoded)
        values = recoded[secret].value
        ids, owner_of_target = np.unique(sets.of_target, return_inverse=True)
        valid = ids >= 0
        remap = np.full(len(ids), -1, dtype=np.int64)
        remap[valid] = np.arange(int(valid.sum()))
        owner_of_target = remap[owner_of_target]
        owner, label, weight = _weighted_secrets(tuples, sets, ids[valid], coding.codes, coding.n_labels, keep_row)
        if coding.numeric:
            assert coding.numbers is not None and recoded_secret.x is not None
            scores = numeric_scores(recoded_secret.x[values], owner_of_target, owner, label, weight,
                                    coding.numbers, int(valid.sum()), tol)
        else:
            scores = categorical_scores(recoded_secret, values, owner_of_target, owner, label, weight,
                                        int(valid.sum()))
        if not main or not len(guessable):
            return scores, (np.zeros(len(idx)) if main else None)
        rows = guessable[base_rng.integers(0, len(guessable), len(idx))]
        return scores, judge(values, coding.codes[rows])

    driven = drive(setup, 1, score)
    return attack_result(NAME, driven.main, driven.n_main, driven.control, driven.n_control,
                         driven.baseline, driven.n_main, driven.queries, driven.cut, secret=secret,
                         settings={"columns": cols, "secret": secret,
                                   "kind": "numeric" if coding.numeric else "categorical",
                                   **({"tolerance": tol} if coding.numeric else {})})


__all__ = ["NAME", "categorical_scores", "inference", "numeric_scores"]
