"""What an attack reports: rates with their intervals, the residual risk, the budget it ran under.

**Rates.** A target's score is its attack's chance of success, in [0, 1] (1/t for a tie of t,
an average over the target's predicates); a rate is the mean score over the targets, each target
one person. Its interval is Wilson's score interval with ``n`` the number of targets: a score in
[0, 1] with mean ``p`` has variance at most ``p (1 - p)``, the variance of a success or failure,
so the interval is the Bernoulli one or wider than needed, never narrower.

**Residual risk.** ``(main - control) / (1 - control)``: the share of what the attacker could
not already get from the population (the control rate) that the release gives them about the
people in it (0 when the control rate is 1). It falls with the control rate and rises with the
main rate, so its interval comes from the two rates' intervals: low end ``(main_low -
control_high) / (1 - control_high)``, high end ``(main_high - control_low) / (1 - control_low)``,
each rate's interval taken at 97.5 % so that both hold together with probability at least 95 %
(Bonferroni). The point estimate and the interval are clipped to [-1, 1].

Nothing here holds a target's value, a predicate or a matched record: only counts, rates and
column names, so a result can be shown and stored as it is.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

CONFIDENCE = 0.95


def wilson(p: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson's score interval of a rate ``p`` over ``n`` targets (``(0, 1)`` without any)."""
    if n <= 0 or math.isnan(p):
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if p <= 0 else max(0.0, centre - half)  # exact at the ends, not off by rounding
    high = 1.0 if p >= 1 else min(1.0, centre + half)
    return low, high


def residual(main: float, control: float) -> float:
    """``(main - control) / (1 - control)``, clipped to [-1, 1]; 0 when the control rate is 1."""
    if control >= 1.0:
        return 0.0
    return max(-1.0, min(1.0, (main - control) / (1.0 - control)))


def residual_interval(main: float, n_main: int, control: float, n_control: int,
                      confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The residual risk's interval (module docstring): each rate's Wilson interval at
    ``1 - (1 - confidence) / 2``, propagated through the residual, which is monotone in both."""
    each = 1 - (1 - confidence) / 2
    m_lo, m_hi = wilson(main, n_main, each)
    c_lo, c_hi = wilson(control, n_control, each)
    low = -1.0 if c_hi >= 1.0 else residual(m_lo, c_hi)
    return low, residual(m_hi, c_lo)


@dataclass(frozen=True)
class Rate:
    """A rate over ``n`` targets and its Wilson interval (:data:`CONFIDENCE`)."""

    value: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, total: float, n: int) -> Rate:
        p = total / n if n else float("nan")
        low, high = wilson(p, n)
        return cls(p, low, high, n)

    def to_json(self) -> dict[str, Any]:
        return {"rate": _num(self.value), "low": _num(self.low), "high": _num(self.high), "targets": self.n}


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else round(float(x), 6)


@dataclass(frozen=True)
class AttackResult:
    """One attack's figures (module docstring); ``settings`` holds column names and parameters
    only. ``complete`` is False when the budget stopped the attack before every target was
    attacked; ``cut`` then says which budget and how far it got."""

    attack: str
    main: Rate
    control: Rate
    baseline: Rate
    residual: float
    residual_low: float
    residual_high: float
    queries: int
    complete: bool = True
    cut: str | None = None
    secret: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.attack if self.secret is None else f"{self.attack}[{self.secret}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "attack": self.attack, "secret": self.secret, "main": self.main.to_json(),
            "control": self.control.to_json(), "baseline": self.baseline.to_json(),
            "residual": {"risk": _num(self.residual), "low": _num(self.residual_low),
                         "high": _num(self.residual_high), "confidence": CONFIDENCE},
            "targets": {"main": self.main.n, "control": self.control.n}, "queries": int(self.queries),
            "complete": bool(self.complete), "cut": self.cut, "settings": dict(self.settings),
        }


def attack_result(attack: str, main_total: float, n_main: int, control_total: float, n_control: int,
                  baseline_total: float, n_baseline: int, queries: int, cut: str | None = None,
                  secret: str | None = None, settings: dict[str, Any] | None = None) -> AttackResult:
    """An :class:`AttackResult` from the summed scores of the main, control and baseline targets."""
    main, control = Rate.of(main_total, n_main), Rate.of(control_total, n_control)
    baseline = Rate.of(baseline_total, n_baseline)
    if n_main and n_control:
        risk = residual(main.value, control.value)
        low, high = residual_interval(main.value, n_main, control.value, n_control)
    else:
        risk, low, high = float("nan"), -1.0, 1.0
    return AttackResult(attack, main, control, baseline, risk, low, high, queries, cut is None, cut,
                        secret, dict(settings or {}))


@dataclass(frozen=True)
class Budget:
    """The most an attack may spend: ``max_queries`` queries against the release (a predicate
    evaluated, a record linked, a secret guessed) and ``max_seconds`` of wall-clock time; each
    attack gets the whole budget. None: no limit."""

    max_queries: int | None = None
    max_seconds: float | None = None

    def start(self) -> Spending:
        return Spending(self, time.perf_counter())


@dataclass
class Spending:
    """What one attack has spent of its :class:`Budget`."""

    budget: Budget
    started: float
    queries: int = 0
    cut: str | None = None

    def allows(self, queries: int) -> int:
        """How many of the next ``queries`` queries fit (0 when the budget is spent)."""
        if self.cut is not None:
            return 0
        b = self.budget
        if b.max_seconds is not None and time.perf_counter() - self.started >= b.max_seconds:
            self.cut = f"time budget of {b.max_seconds:g} s reached"
            return 0
        if b.max_queries is not None and self.queries + queries > b.max_queries:
            left = max(b.max_queries - self.queries, 0)
            if left < queries:
                self.cut = f"query budget of {b.max_queries} queries reached"
            return left
        return queries


__all__ = ["CONFIDENCE", "AttackResult", "Budget", "Rate", "Spending", "attack_result", "residual",
           "residual_interval", "wilson"]
