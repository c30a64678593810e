"""The criteria registry: one entry per key of ``policy.thresholds``, the single description of
a threshold that the spec model, the release gate, the anonymizer's policy, the report and the
check descriptions are derived from.

A :class:`Criterion` states, for one threshold key:

- what the spec accepts as its value (:class:`ThresholdType`: a positive integer, a probability
  in (0, 1], a fraction in [0, 1], a number >= 1, or the recursive (c, l) mapping);
- how its figure is read from ``RiskMeasures.to_dict()`` (``measure(measures, threshold)``);
- how the figure is judged (``comparison``: ``>=`` the threshold, ``<=`` it, or ``holds``: the
  criterion's own condition, stated by ``bound`` and ``bound_comparison``);
- the check that judges it (``check_name``, stable: users select and alert on these names);
- whether it is monotone under generalization, and under generalization with suppression,
  and whether the anonymizer's search can target it (``target``).

Adding a criterion is one :class:`Criterion` entry in :data:`REGISTRY` plus its measure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict

# Tolerance of floating-point comparisons: a figure exactly at its threshold, up to rounding,
# passes (the anonymizer's search uses the same tolerance, so what it reaches the gate accepts).
TOLERANCE = 1e-9


class RecursiveCL(BaseModel):
    """Recursive (c, l)-diversity: ``r_1 < c * (r_l + ... + r_m)`` in every class."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    c: Annotated[float, Strict()] = Field(gt=0)
    l: Annotated[int, Strict()] = Field(ge=1)  # noqa: E741 - the criterion's own name


@dataclass(frozen=True)
class ThresholdType:
    """What the spec accepts as a threshold's value.

    ``annotation`` is the pydantic type the spec model validates with; ``text`` says it in
    words (error messages and the documentation); ``example`` is one valid value and
    ``invalid`` one the spec refuses.
    """

    name: str
    annotation: Any
    text: str
    example: Any
    invalid: Any


# Strict: a boolean is not a threshold (``k: true`` is not k = 1), nor is text ("5"); an
# integer is a number (``l_entropy: 2``)
POSITIVE_INT = ThresholdType("positive integer", Annotated[int, Strict(), Field(ge=1)], "an integer >= 1", 5, 0)
PROBABILITY = ThresholdType("probability", Annotated[float, Strict(), Field(gt=0, le=1)],
                            "a probability in (0, 1]", 0.2, 0.0)
FRACTION = ThresholdType("fraction", Annotated[float, Strict(), Field(ge=0, le=1)], "a fraction in [0, 1]",
                         0.05, 1.5)
AT_LEAST_ONE = ThresholdType("number >= 1", Annotated[float, Strict(), Field(ge=1)], "a number >= 1", 2.0, 0.5)
RECURSIVE_CL = ThresholdType("recursive (c, l)", RecursiveCL, "a mapping {c: number > 0, l: integer >= 1}",
                             {"c": 2.0, "l": 2}, {"c": 0, "l": 2})


def plain_threshold(threshold: Any) -> Any:
    """A threshold as plain JSON values (a model such as :class:`RecursiveCL` as its dict)."""
    if isinstance(threshold, BaseModel):
        return threshold.model_dump(mode="json")
    return threshold


def _number(value: Any) -> float | int | None:
    """``value`` if it is a real, finite-or-infinite number that is not NaN, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if isinstance(value, float) and math.isnan(value) else value


def read(key: str) -> Callable[[Mapping[str, Any], Any], Any]:
    """The measure that reads ``measures[key]`` (None when absent or not a number)."""
    def measure(measures: Mapping[str, Any], threshold: Any) -> Any:
        return _number(measures.get(key))
    measure.__doc__ = f"``measures[{key!r}]``"
    return measure


def most_pessimistic_uniqueness(measures: Mapping[str, Any], threshold: Any) -> Any:
    """The largest population-uniqueness estimate over the models (``population_uniqueness.max``).

    The estimators disagree, sometimes by a factor of several; the gate judges the one that
    estimates the most uniques so that no model's reading of the sample is ignored.
    """
    value = measures.get("population_uniqueness")
    if isinstance(value, Mapping):
        if _number(value.get("max")) is not None:
            return value["max"]
        estimates = value.get("estimates")
        fractions = [_number(e.get("fraction")) for e in (estimates or {}).values() if isinstance(e, Mapping)]
        fractions = [f for f in fractions if f is not None]
        return max(fractions) if fractions else None
    return _number(value)


def recursive_l_at_declared_c(measures: Mapping[str, Any], threshold: Any) -> Any:
    """``l_recursive``, the largest l every class meets at the measured c, when that c is the
    declared one (a figure measured at another c says nothing about this criterion)."""
    value = _number(measures.get("l_recursive"))
    measured_c = _number(measures.get("recursive_c"))
    declared_c = plain_threshold(threshold).get("c") if threshold is not None else None
    if value is None or measured_c is None or declared_c is None:
        return None
    return value if abs(measured_c - declared_c) <= TOLERANCE else None


def _identity(threshold: Any) -> Any:
    return threshold


def _exact(value: Any) -> str:
    """A threshold as written in the spec: integers as is, floats to 12 significant digits."""
    if isinstance(value, float):
        return format(value, ".12g")
    return str(value)


@dataclass(frozen=True)
class Judgement:
    """One threshold judged against measured figures: the figure, the verdict, one sentence."""

    value: Any
    passed: bool
    summary: str


@dataclass(frozen=True)
class Criterion:
    """One threshold of ``policy.thresholds`` (see the module docstring).

    ``measured_key`` names the figure of ``RiskMeasures.to_dict()`` the measure reads;
    ``definition`` says what is measured, in one line (documentation). ``needs_sensitive`` and
    ``needs_population`` state what the spec must declare for the figure to exist. ``target``
    maps the threshold to the anonymizer's :class:`~anon_dagster.anonymize.criteria.Policy`
    field it sets (``(field, value)``), None when the search cannot aim at it.
    """

    key: str
    check_name: str
    comparison: str
    label: str
    measure: Callable[[Mapping[str, Any], Any], Any]
    threshold_type: ThresholdType
    monotone_generalization: bool
    monotone_suppression: bool
    measured_key: str
    definition: str
    target: Callable[[Any], tuple[str, Any]] | None = None
    needs_sensitive: bool = False
    needs_population: bool = False
    # for comparison "holds": the number the figure is compared with, and how
    bound: Callable[[Any], Any] = _identity
    bound_comparison: str = ""
    threshold_words: Callable[[Any, Callable[[Any], str]], str] | None = None

    @property
    def spec_key(self) -> str:
        """The dotted key of the spec that declares this threshold."""
        return f"policy.thresholds.{self.key}"

    @property
    def targetable(self) -> bool:
        """Whether the anonymizer's search aims at this criterion (not only measures it)."""
        return self.target is not None

    def value(self, measures: Mapping[str, Any], threshold: Any) -> Any:
        """The figure this criterion judges, read from ``RiskMeasures.to_dict()``; None if absent.

        When the rows of a person are linked, the figure is measured per person too
        (``measures["person"]``, see :mod:`anon_dagster.risk.person`) and the worse of the two is
        judged: the person-level figure is what an adversary linking a person's rows faces, the
        row-level one what an adversary who knows one of their events faces.
        """
        plain = plain_threshold(threshold)
        row = self.measure(measures, plain)
        person = self.person_value(measures, plain)
        if person is None or row is None:
            return row
        return min(row, person) if self.comparison == ">=" else max(row, person)

    def person_value(self, measures: Mapping[str, Any], threshold: Any) -> Any:
        """The person-level figure, when measured (None otherwise)."""
        person = measures.get("person")
        if not isinstance(person, Mapping) or self.measured_key not in person or self.comparison not in (">=", "<="):
            return None
        return self.measure(person, plain_threshold(threshold))

    def passes(self, value: Any, threshold: Any) -> bool:
        """Whether ``value`` meets ``threshold``; an unmeasured (None, NaN) value never passes.

        Floating-point figures are compared with a tolerance of :data:`TOLERANCE`.
        """
        value = _number(value)
        if value is None:
            return False
        bound = self.bound(plain_threshold(threshold))
        sense = self.bound_comparison or self.comparison
        if sense == ">=":
            return bool(value >= bound - TOLERANCE)
        if sense == "<=":
            return bool(value <= bound + TOLERANCE)
        raise ValueError(f"criterion {self.key!r}: comparison {sense!r} is neither >= nor <=")

    def threshold_text(self, threshold: Any, fmt: Callable[[Any], str] = _exact) -> str:
        """The threshold in words, its numbers written by ``fmt`` (``5``, ``l=3 at c=2``)."""
        plain = plain_threshold(threshold)
        return self.threshold_words(plain, fmt) if self.threshold_words else fmt(plain)

    def describe(self, threshold: Any) -> str:
        """The check's description: what is compared with what, and the spec key declaring it."""
        return f"{self.label} {self.comparison} {self.threshold_text(threshold)}, declared in {self.spec_key}"

    def judge(self, measures: Mapping[str, Any], threshold: Any,
              fmt: Callable[[Any], str] = _exact) -> Judgement:
        """The verdict on ``measures``; an empty release (``rows == 0``) never passes."""
        value = self.value(measures, threshold)
        passed = self.passes(value, threshold)
        if value is None:
            return Judgement(None, False, f"{self.label}: not measured (the risk kernel gave no "
                                          f"'{self.measured_key}'), so it cannot pass")
        if measures.get("rows", 0) == 0:
            return Judgement(value, False, f"{self.label}: the release has no rows (everything suppressed?)")
        verdict = "meets" if passed else "violates"
        person = self.person_value(measures, threshold)
        levels = ("" if person is None else
                  f" (per row {fmt(self.measure(measures, plain_threshold(threshold)))}, per person {fmt(person)})")
        return Judgement(value, passed, f"{self.label} = {fmt(value)}{levels} {verdict} the threshold "
                                        f"{self.comparison} {self.threshold_text(threshold, fmt)}")


def _k_from_risk(threshold: float) -> tuple[str, int]:
    # a class of size s has prosecutor risk 1/s: risk <= p is size >= ceil(1/p)
    return "k", int(math.ceil(1.0 / threshold - TOLERANCE))


def _recursive_words(threshold: Mapping[str, Any], fmt: Callable[[Any], str]) -> str:
    return f"l={fmt(threshold['l'])} at c={fmt(threshold['c'])}"


REGISTRY: dict[str, Criterion] = {c.key: c for c in (
    Criterion(
        key="k", check_name="k_anonymity", comparison=">=", label="smallest equivalence class (k)",
        measure=read("k"), threshold_type=POSITIVE_INT, measured_key="k",
        definition="size of the smallest equivalence class over the quasi-identifiers",
        monotone_generalization=True, monotone_suppression=True, target=lambda t: ("k", int(t)),
    ),
    Criterion(
        key="prosecutor_avg", check_name="prosecutor_risk_avg", comparison="<=", label="average prosecutor risk",
        measure=read("prosecutor_avg"), threshold_type=PROBABILITY, measured_key="prosecutor_avg",
        definition="mean over published rows of 1 / (size of the row's class) = classes / rows",
        monotone_generalization=True, monotone_suppression=False,
        target=lambda t: ("prosecutor_avg", float(t)),
    ),
    Criterion(
        key="prosecutor_max", check_name="prosecutor_risk_max", comparison="<=", label="highest prosecutor risk",
        measure=read("prosecutor_max"), threshold_type=PROBABILITY, measured_key="prosecutor_max",
        definition="1 / (size of the smallest class)",
        monotone_generalization=True, monotone_suppression=True, target=_k_from_risk,
    ),
    Criterion(
        key="journalist_avg", check_name="journalist_risk_avg", comparison="<=", label="average journalist risk",
        measure=read("journalist_avg"), threshold_type=PROBABILITY, measured_key="journalist_avg",
        definition="mean over published rows of 1 / (population size of the row's class)",
        monotone_generalization=True, monotone_suppression=False, needs_population=True,
    ),
    Criterion(
        key="journalist_max", check_name="journalist_risk_max", comparison="<=", label="highest journalist risk",
        measure=read("journalist_max"), threshold_type=PROBABILITY, measured_key="journalist_max",
        definition="1 / (population size of the smallest class in the population)",
        monotone_generalization=True, monotone_suppression=True, needs_population=True,
    ),
    Criterion(
        key="marketer", check_name="marketer_risk", comparison="<=", label="marketer risk",
        measure=read("marketer"), threshold_type=PROBABILITY, measured_key="marketer",
        definition="expected share of published rows re-identified: (sum over classes of n_c / F_c) / rows",
        monotone_generalization=True, monotone_suppression=False, needs_population=True,
    ),
    Criterion(
        key="population_uniqueness", check_name="population_uniqueness", comparison="<=",
        label="estimated population uniqueness", measure=most_pessimistic_uniqueness,
        threshold_type=FRACTION, measured_key="population_uniqueness",
        definition="share of rows unique in the population, the most pessimistic estimator's figure",
        monotone_generalization=False, monotone_suppression=False,
    ),
    Criterion(
        key="l_distinct", check_name="l_diversity_distinct", comparison=">=", label="distinct l-diversity",
        measure=read("l_distinct"), threshold_type=POSITIVE_INT, measured_key="l_distinct",
        definition="fewest distinct sensitive values in a class",
        monotone_generalization=True, monotone_suppression=True, needs_sensitive=True,
        target=lambda t: ("l_distinct", int(t)),
    ),
    Criterion(
        key="l_entropy", check_name="l_diversity_entropy", comparison=">=", label="entropy l-diversity",
        measure=read("l_entropy"), threshold_type=AT_LEAST_ONE, measured_key="l_entropy",
        definition="exp of the smallest Shannon entropy (natural log) of a class's sensitive values",
        monotone_generalization=True, monotone_suppression=False, needs_sensitive=True,
        target=lambda t: ("l_entropy", float(t)),
    ),
    Criterion(
        key="recursive_cl", check_name="l_diversity_recursive_cl", comparison="holds",
        label="recursive (c,l)-diversity", measure=recursive_l_at_declared_c, threshold_type=RECURSIVE_CL,
        measured_key="l_recursive",
        definition="largest l every class meets at the declared c (r_1 < c (r_l + ... + r_m)) >= l",
        monotone_generalization=True, monotone_suppression=False, needs_sensitive=True,
        target=lambda t: ("recursive_cl", (float(t["c"]), int(t["l"]))),
        bound=lambda t: t["l"], bound_comparison=">=", threshold_words=_recursive_words,
    ),
    Criterion(
        key="t_closeness", check_name="t_closeness", comparison="<=",
        label="t-closeness (largest distance to the table)", measure=read("t_closeness"),
        threshold_type=FRACTION, measured_key="t_closeness",
        definition="largest earth mover's distance between a class's sensitive distribution and the table's",
        monotone_generalization=True, monotone_suppression=False, needs_sensitive=True,
        target=lambda t: ("t_closeness", float(t)),
    ),
    Criterion(
        key="uniques_fraction", check_name="uniques_fraction", comparison="<=",
        label="share of rows unique in the release", measure=read("uniques_fraction"),
        threshold_type=FRACTION, measured_key="uniques_fraction",
        definition="share of published rows alone in their class",
        monotone_generalization=True, monotone_suppression=False,
    ),
)}

_BY_CHECK = {c.check_name: c for c in REGISTRY.values()}


def criterion_for_check(name: str) -> Criterion | None:
    """The criterion judged by the check named ``name`` (None for a non-threshold check)."""
    return _BY_CHECK.get(name)


def declared_bounds(criteria: Mapping[str, Any], block: Any) -> list[tuple[Any, float]]:
    """``(criterion, bound)`` for every numeric bound a spec block declares (a model, a mapping,
    or None), in the order of ``criteria`` (a registry keyed by spec key); an absent or None
    entry is not declared."""
    if block is None:
        return []
    get = block.get if isinstance(block, Mapping) else (lambda k: getattr(block, k, None))
    return [(c, float(get(c.key))) for c in criteria.values() if get(c.key) is not None]


def declared_thresholds(thresholds: Any) -> list[tuple[Criterion, Any]]:
    """``(criterion, threshold)`` for every threshold declared, in registry order.

    ``thresholds`` is the spec's ``policy.thresholds`` (a model) or a mapping of it; an absent
    or None entry is not declared. Thresholds are plain JSON values.
    """
    get = thresholds.get if isinstance(thresholds, Mapping) else (lambda k: getattr(thresholds, k, None))
    out = []
    for c in REGISTRY.values():
        value = get(c.key)
        if value is not None:
            out.append((c, plain_threshold(value)))
    return out
