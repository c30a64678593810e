"""The epsilon ledger: privacy budget spent by differentially private releases, per population.

A spend that would exceed the population's total is refused inside the same transaction that
records it (:meth:`~.publications.Ledger.record`), so two concurrent releases cannot both
squeeze in. Spends compose by the basic or the advanced composition theorem
(:func:`compose_epsilons`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import UserError


class BudgetExceeded(UserError):
    """A differentially private release would spend more than its population's budget."""


@dataclass(frozen=True)
class BudgetState:
    """Epsilon spent by a population, and what a new spend would bring it to."""

    population: str
    spent: list[float]
    requested: float
    total: float
    composition: str
    delta: float | None
    composed_before: float
    composed_after: float
    allowed: bool

    @property
    def remaining(self) -> float:
        return max(self.total - self.composed_before, 0.0)

    def refusal(self, what: str) -> BudgetExceeded:
        """The error refusing this spend; ``what`` names what would have been published."""
        return BudgetExceeded(
            f"population {self.population!r}: publishing {what} with epsilon={self.requested:g} "
            f"would bring the budget to {self.composed_after:.4g} ({self.composition} composition "
            f"over {len(self.spent) + 1} releases), above total_epsilon={self.total:g} "
            f"(already spent {self.composed_before:.4g})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "population": self.population,
            "releases_counted": len(self.spent),
            "epsilon_spent": self.composed_before,
            "epsilon_requested": self.requested,
            "epsilon_after": self.composed_after,
            "total_epsilon": self.total,
            "composition": self.composition,
            "delta": self.delta,
            "allowed": self.allowed,
        }


def compose_epsilons(epsilons: Sequence[float], method: str = "basic", delta: float | None = None) -> float:
    """Total epsilon of running mechanisms with the given epsilons (each ε_i-DP).

    basic: Σ ε_i. advanced (Dwork-Rothblum-Vadhan, heterogeneous form): for any δ' > 0 the
    composition is (ε', δ')-DP with ε' = sqrt(2 ln(1/δ') Σ ε_i²) + Σ ε_i (e^ε_i − 1); the
    basic bound stays valid, so the smaller of the two is returned.
    """
    eps = [float(e) for e in epsilons]
    basic = float(sum(eps))
    if method == "basic":
        return basic
    if method != "advanced":
        raise UserError(f"unknown budget composition {method!r} (use basic or advanced)")
    if delta is None or not 0 < delta < 1:
        raise UserError("advanced composition needs publication.delta in (0, 1)")
    if not eps:
        return 0.0
    advanced = float(
        np.sqrt(2 * np.log(1 / delta) * sum(e * e for e in eps)) + sum(e * np.expm1(e) for e in eps)
    )
    return min(basic, advanced)


def budget_state(
    conn: sqlite3.Connection,
    population: str,
    epsilon: float,
    total: float,
    composition: str,
    delta: float | None,
) -> BudgetState:
    """The population's budget state, read on ``conn``, if a release spending ``epsilon`` were added."""
    spent = [float(r[0]) for r in conn.execute(
        "SELECT epsilon FROM epsilon_spend WHERE population = ? ORDER BY id", (population,)
    )]
    before = compose_epsilons(spent, composition, delta)
    after = compose_epsilons([*spent, float(epsilon)], composition, delta)
    # a tiny tolerance so a budget declared as a sum of decimals (0.1 × 10 = 1.0) is usable
    return BudgetState(population, spent, float(epsilon), float(total), composition, delta,
                       before, after, after <= total * (1 + 1e-9))
