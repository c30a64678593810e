"""Reaching k per person: suppressing the persons whose person class is smaller than k.

When the published rows of a person are linked (a published pseudonym), a person's key is the
multiset of the classes of their rows (:mod:`anon_dagster.risk.person`), and a person whose
person class holds fewer than k persons is singled out even when every row class holds k rows.
Any anonymization method reaches k per person by removing those persons, all their rows:

- removing a person leaves every other person's key, hence their person class, unchanged, so
  one pass suffices: afterwards every person class holds at least k persons;
- every remaining row class then holds at least k rows too (each of its rows' persons shares
  it with the k or more persons of their person class), so row-level k still holds;
- the rows removed count against the same budget as the anonymizer's own suppression
  (``floor(max_suppression x rows in)``); when they do not fit, nothing is removed and the
  record says what it would take (the checks then refuse the release per person).

Global recoding with row suppression aims at the person-level criterion in its search: the
optimal node is chosen among those where the persons below k and the classes missing a
criterion fit in the budget together, and both are removed
(:mod:`anon_dagster.anonymize.lattice`), so this pass then finds nobody to remove. It stays the
mechanism of the other methods (Mondrian, microaggregation), of cell suppression, and of a
global recoding for which no node reaches k per person within the budget (the row-level optimum
is then published and this pass says what it would take). Here the persons are judged on the
published table, after the anonymizer's own suppression.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..risk import EquivalenceClasses
from ..risk.person import PersonClasses


@dataclass
class PersonSuppressionResult:
    """The rows kept (a boolean mask by position) and what was removed."""

    keep: np.ndarray
    persons: int
    rows: int
    reached: bool


def persons_below_k(classes: EquivalenceClasses, persons: pd.Series, k: int) -> tuple[np.ndarray, int]:
    """Rows (a boolean mask) of the persons whose person class holds fewer than ``k`` persons,
    and how many such persons there are."""
    pc = PersonClasses.build(classes, persons)
    small_person = pc.sizes[pc.person_class] < k
    return small_person[pc.person_of_row], int(small_person.sum())


def suppress_persons(classes: EquivalenceClasses, persons: pd.Series, k: int, budget_rows: int) -> PersonSuppressionResult:
    """Remove the persons below ``k`` if their rows fit in ``budget_rows`` (see the module docstring)."""
    rows, n_persons = persons_below_k(classes, persons, k)
    removed = int(rows.sum())
    if removed > budget_rows:
        return PersonSuppressionResult(np.ones(len(rows), dtype=bool), n_persons, removed, False)
    return PersonSuppressionResult(~rows, n_persons, removed, True)


__all__ = ["PersonSuppressionResult", "persons_below_k", "suppress_persons"]
