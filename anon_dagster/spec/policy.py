"""Release spec v1, the ``policy`` block: adversary, population, the declared thresholds, and
the attacks the release must withstand.

The thresholds model is derived from the criteria registry (:data:`anon_dagster.criteria.
REGISTRY`): one optional field per criterion, validated by the criterion's threshold type, so
the spec accepts exactly the thresholds the gate judges. The attacks model (``policy.attacks``,
optional) is derived the same way from :data:`anon_dagster.criteria.ATTACK_CRITERIA`: one
optional residual-risk bound per attack, with the secrets inference guesses, the control set
withheld from the release, the time budget and the checks' severity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, create_model, model_serializer

from ..criteria import ATTACK_CRITERIA, REGISTRY, SYNTHETIC_CRITERIA, RecursiveCL, adversary_problem
from .columns import Integer, Number, _Model
from .synthetic import synthetic_problems

__all__ = ["AttackControlSpec", "AttacksSpec", "PolicySpec", "PopulationSpec", "RecursiveCL", "SyntheticPolicySpec",
           "ThresholdsSpec",
           "attack_problems", "attack_secrets", "attacks_message", "policy_problems", "threshold_message"]


class PopulationSpec(_Model):
    """The population the published rows are drawn from: microdata or a frequency table."""

    path: str
    count_column: str | None = None
    # The population is matched on these QIs only (it lacks the others, e.g. an event date):
    # its class sizes are then an upper bound on F, so journalist risk is understated.
    qis: list[str] | None = None


ThresholdsSpec = create_model(
    "ThresholdsSpec",
    __base__=_Model,
    __module__=__name__,
    __doc__="Declared limits, one optional field per criterion of the registry; each one present "
            "becomes a blocking check.",
    **{key: (c.threshold_type.annotation | None, None) for key, c in REGISTRY.items()},
)


# the most of a partition the control slice may take (the attacks' own ceiling)
CONTROL_MAX_FRACTION = 0.5


class AttackControlSpec(_Model):
    """How many records are withheld from the release as the attacks' control set, when the
    declared population cannot provide it: ``fraction`` of the partition's rows, at least
    ``min_rows`` (never more than half the partition), whole persons."""

    fraction: Number = Field(default=0.10, gt=0, le=CONTROL_MAX_FRACTION)
    min_rows: Integer = Field(default=1000, ge=0)


class _AttacksBase(_Model):
    secrets: list[str] | None = None
    control: AttackControlSpec = AttackControlSpec()
    budget_seconds: Number | None = Field(default=None, gt=0)
    severity: Literal["error", "warn"] = "error"


AttacksSpec = create_model(
    "AttacksSpec",
    __base__=_AttacksBase,
    __module__=__name__,
    __doc__="The attacks the release must withstand: one optional residual-risk bound per attack of "
            "the attack criteria (each present becomes a check), the secret columns inference guesses "
            "(default: the sensitive columns), the control set, the time budget of all attacks "
            "together (seconds; default none) and the checks' severity.",
    **{key: (c.threshold_type.annotation | None, None) for key, c in ATTACK_CRITERIA.items()},
)


SyntheticPolicySpec = create_model(
    "SyntheticPolicySpec",
    __base__=_Model,
    __module__=__name__,
    __doc__="The bounds of a synthetic release's audit (anon_dagster.spec.synthetic): one optional "
            "bound per criterion of the synthetic criteria (each present becomes a blocking check), "
            "and the real records withheld from the synthesis as the audit's control set (as "
            "policy.attacks.control; when both are declared, policy.attacks.control is the one used).",
    control=(AttackControlSpec, AttackControlSpec()),
    **{key: (c.threshold_type.annotation | None, None) for key, c in SYNTHETIC_CRITERIA.items()},
)


class PolicySpec(_Model):
    """The risk policy, declared before anyone measures."""

    adversary: Literal["prosecutor", "journalist", "marketer"] = "prosecutor"
    population: PopulationSpec | None = None
    sampling_fraction: Number | None = Field(default=None, gt=0, le=1)
    thresholds: ThresholdsSpec = ThresholdsSpec()  # type: ignore[valid-type]
    severity: Literal["low", "medium", "high", "very_high"] = "high"
    review_after_days: Integer = Field(default=365, ge=1)
    attacks: AttacksSpec | None = None  # type: ignore[valid-type]
    synthetic: SyntheticPolicySpec | None = None  # type: ignore[valid-type]

    @model_serializer(mode="wrap")
    def _without_absent_attacks(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # an optional block of release spec v1: a spec without it dumps (and hashes) as before
        out = handler(self)
        if isinstance(out, dict) and out.get("attacks") is None:
            out.pop("attacks", None)
        if isinstance(out, dict) and out.get("synthetic") is None:
            out.pop("synthetic", None)
        return out


_ATTACK_KEYS = (*ATTACK_CRITERIA, "secrets", "control", "budget_seconds", "severity")


def attacks_message(loc: tuple[Any, ...], error: Mapping[str, Any]) -> str | None:
    """The message for a pydantic error under ``policy.attacks`` (None elsewhere): an unknown
    key lists the known ones; a bad bound or control fraction says what is accepted."""
    if len(loc) < 3 or tuple(loc[:2]) != ("policy", "attacks"):
        return None
    key = str(loc[2])
    if error.get("type") == "extra_forbidden" and len(loc) == 3:
        return f"unknown key {key!r} (policy.attacks takes: {', '.join(_ATTACK_KEYS)})"
    if key in ATTACK_CRITERIA and len(loc) == 3:
        text = ATTACK_CRITERIA[key].threshold_type.text
        if isinstance(error.get("input"), bool):
            return f"must be {text}, not the boolean {str(error['input']).lower()}"
        return f"must be {text}, the largest residual risk allowed ({error['msg'][:1].lower()}{error['msg'][1:]})"
    if loc[2:] == ("control", "fraction") and error.get("type") != "extra_forbidden":
        return (f"must be a share in (0, {CONTROL_MAX_FRACTION:g}] of the partition's rows: the control records "
                f"are withheld from the release ({error['msg'][:1].lower()}{error['msg'][1:]})")
    return None


def threshold_message(loc: tuple[Any, ...], error: Mapping[str, Any]) -> str | None:
    """The message for a pydantic error under ``policy.thresholds`` (None elsewhere).

    An unknown key lists the known thresholds; a bad value says what the criterion accepts.
    """
    if len(loc) < 3 or tuple(loc[:2]) != ("policy", "thresholds"):
        return None
    key = str(loc[2])
    if key not in REGISTRY:
        return f"unknown threshold {key!r} (known thresholds: {', '.join(REGISTRY)})"
    if error.get("type") == "extra_forbidden":
        return None  # an unknown key inside a threshold's own mapping: the generic message
    if isinstance(error.get("input"), bool):
        return f"must be {REGISTRY[key].threshold_type.text}, not the boolean {str(error['input']).lower()}"
    return f"must be {REGISTRY[key].threshold_type.text} ({error['msg'][:1].lower()}{error['msg'][1:]})"


def policy_problems(spec: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for every inconsistency of the policy with the rest of ``spec``."""
    problems: list[tuple[str, str]] = []
    policy = spec.policy
    declared = [c for key, c in REGISTRY.items() if getattr(policy.thresholds, key) is not None]
    if any(c.needs_population for c in declared) and policy.population is None and policy.sampling_fraction is None:
        names = ", ".join(c.key for c in declared if c.needs_population)
        problems.append(("policy.population", f"thresholds {names} need a population or a sampling_fraction"))
    reason = adversary_problem(policy.adversary, policy.population, policy.sampling_fraction)
    if reason:
        problems.append(("policy.adversary", reason))
    if any(c.needs_sensitive for c in declared) and not spec.sensitive:
        names = ", ".join(c.key for c in declared if c.needs_sensitive)
        problems.append(("policy.thresholds", f"thresholds {names} (l-diversity, t-closeness) need a column "
                                              "with role 'sensitive'"))
    pop = policy.population
    if pop is not None and pop.qis is not None:
        if not pop.qis:
            problems.append(("policy.population.qis", "an empty list matches nothing: name the QIs the population holds"))
        for q in pop.qis:
            if q not in spec.quasi_identifiers:
                problems.append(("policy.population.qis", f"{q!r} is not a quasi-identifier of the spec"))
    problems += attack_problems(spec)
    problems += synthetic_problems(spec)
    k = policy.thresholds.k
    if k is not None and spec.anonymization.method != "none" and spec.anonymization.k < k:
        problems.append(("anonymization.k", f"k={spec.anonymization.k} is below the policy threshold k={k}: "
                                            "the release could never pass"))
    return problems


def attack_secrets(spec: Any) -> list[str]:
    """The secret columns inference guesses: ``policy.attacks.secrets``, else the sensitive
    columns (each once, in order)."""
    attacks = spec.policy.attacks
    declared = attacks.secrets if attacks is not None and attacks.secrets is not None else spec.sensitive
    return list(dict.fromkeys(declared))


def attack_problems(spec: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for every inconsistency of ``policy.attacks`` with the rest of ``spec``."""
    attacks = spec.policy.attacks
    if attacks is None:
        return []
    problems: list[tuple[str, str]] = []
    add = lambda key, msg: problems.append((f"policy.attacks{key}", msg))  # noqa: E731
    declared = [key for key in ATTACK_CRITERIA if getattr(attacks, key) is not None]
    if not declared:
        add("", f"declares no attack: give a residual-risk bound for at least one of {', '.join(ATTACK_CRITERIA)}")
    if spec.publication.mode == "aggregates":
        add("", "publication.mode 'aggregates' publishes no rows: the attacks are judged on published rows")
    qis = list(spec.quasi_identifiers)
    if not qis:
        add("", "the attacker knows the quasi-identifiers and the spec declares none: nothing to attack with")
    if attacks.linkability is not None and 0 < len(qis) < 2:
        add(".linkability", "linkability joins two parts of a record sharing no column: it needs at least two "
                            "quasi-identifiers")
    for i, name in enumerate(attacks.secrets or []):
        col = spec.columns.get(name)
        if col is None:
            add(f".secrets.{i}", f"column {name!r} is not declared under columns")
        elif col.role == "identifier":
            add(f".secrets.{i}", f"column {name!r} is an identifier: inference guesses an attribute of a person")
        elif qis and [q for q in qis if q != name] == []:
            add(f".secrets.{i}", f"column {name!r} is the only quasi-identifier: nothing is left to infer it from")
    if attacks.inference is not None and not attack_secrets(spec):
        add(".inference", "inference guesses a secret column: list policy.attacks.secrets or give a column "
                          "role 'sensitive'")
    return problems
