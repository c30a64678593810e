"""Release spec v1, synthetic releases: ``anonymization.synthetic`` (how the synthetic table is
made) and ``policy.synthetic`` (the audit's bounds), with their consistency rules.

A synthetic release (``anonymization.method: synthetic``) publishes rows drawn from a model of
the partition instead of the partition's rows: the built-in sequential CART synthesizer
(:mod:`anon_dagster.anonymize.synthetic_method`), or a table made by the user's own generator
(``anonymization.synthetic.table``). Its rows are nobody's, so the criteria that count the
published rows of a person's class (``policy.thresholds``: k, the risk models, l, t, uniques)
do not describe it, and the spec refuses them; the audit of :mod:`anon_dagster.risk.
synthetic_audit` judges it instead (``policy.synthetic``, derived from :data:`anon_dagster.
criteria.SYNTHETIC_CRITERIA`, its model in :mod:`.policy`), with ``policy.attacks`` when declared.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from ..criteria import REGISTRY, SYNTHETIC_CRITERIA
from ..objectstore import scheme_of, shown
from .columns import Integer, _Model

__all__ = ["POLICY_KEYS", "SYNTHETIC_KEYS", "SyntheticSpec", "SyntheticTableAsset", "synthesis_order",
           "synthetic_columns", "synthetic_message", "synthetic_problems", "table_problems"]

# the keys of each block, as an unknown key's message lists them
SYNTHETIC_KEYS = ("order", "min_samples_leaf", "rows", "table")
POLICY_KEYS = (*SYNTHETIC_CRITERIA, "control")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


class SyntheticTableAsset(_Model):
    """A synthetic table supplied by an asset of the Dagster project the release is part of
    (``anonymization.synthetic.table: {asset: key}``): the output of the user's own generator,
    loaded through that asset's IO manager. ``asset`` is its key, as ``a/b`` or as the list of
    its parts (the rules Dagster applies to them are checked with the spec's other problems)."""

    asset: str | list[str]

    @property
    def asset_key(self) -> tuple[str, ...]:
        """The parts of the asset's key (``"gen/people"`` → ``("gen", "people")``)."""
        return tuple(self.asset.split("/")) if isinstance(self.asset, str) else tuple(self.asset)

    @property
    def described(self) -> str:
        """The table in words: ``the Dagster asset 'a/b'``."""
        return f"the Dagster asset {'/'.join(self.asset_key)!r}"


class SyntheticSpec(_Model):
    """How the synthetic table is made (``anonymization.synthetic``).

    ``order``: the columns in the order the CART synthesizer draws them (default: the published
    columns in spec order; the first is drawn from its marginal, each next one from a tree on
    those before it); ``min_samples_leaf``: the fewest real rows in a tree's leaf, which the
    synthetic value is drawn from; ``rows``: the synthetic rows drawn (default: as many as the
    real rows); ``table``: a synthetic table made by another generator, published in place of
    the CART synthesis: a file (csv or parquet, relative to the spec, may hold ``{partition}``)
    or ``{asset: key}``, an asset of the Dagster project (:class:`SyntheticTableAsset`).
    """

    order: list[str] | None = None
    min_samples_leaf: Integer = Field(default=5, ge=1)
    rows: Integer | None = Field(default=None, ge=1)
    table: str | SyntheticTableAsset | None = None

    @field_validator("table", mode="before")
    @classmethod
    def _path_or_asset(cls, value: Any) -> Any:
        # one message for every other shape, instead of pydantic's one per member of the union
        if value is None or isinstance(value, str | SyntheticTableAsset):
            return value
        if isinstance(value, Mapping) and set(value) == {"asset"}:
            key = value["asset"]
            if isinstance(key, str) or (isinstance(key, list) and all(isinstance(p, str) for p in key)):
                return value
        raise PydanticCustomError("synthetic_table", "must be a path (a csv or parquet file) or {asset: <asset key>} "
                                  "(the key as 'a/b' or a list of its parts), not {shown}",
                                  {"shown": _shown_value(value)})


def synthetic_message(loc: tuple[Any, ...], error: Mapping[str, Any]) -> str | None:
    """The message for an unknown key directly under ``anonymization.synthetic`` or
    ``policy.synthetic`` (None elsewhere): it lists the keys the block takes."""
    if len(loc) != 3 or loc[1] != "synthetic" or error.get("type") != "extra_forbidden":
        return None
    keys = {"anonymization": SYNTHETIC_KEYS, "policy": POLICY_KEYS}.get(str(loc[0]))
    if keys is None:
        return None
    return f"unknown key {str(loc[2])!r} ({loc[0]}.synthetic takes: {', '.join(keys)})"


def table_problems(spec: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for an ``anonymization.synthetic.table`` that cannot be read. An asset's
    (``{asset: key}``): a key Dagster would refuse (:func:`~.project.synthetic_asset_problems`).
    A path: a placeholder other than ``{release}`` and ``{partition}``, an object-storage URI (the table is
    read from a local path), or, for a path without ``{partition}``, no file there (resolved
    against the spec's folder). A path with ``{partition}`` names each partition's own table, which
    is looked for when that partition is synthesized."""
    settings = getattr(spec.anonymization, "synthetic", None)
    text = settings.table if settings is not None else None
    if not isinstance(text, str):  # none, or an asset of the Dagster project: its key is checked
        # with the project's keys (that module imports the spec models, which import this one)
        from .project import synthetic_asset_problems

        return synthetic_asset_problems(spec) if text is not None else []
    key = "anonymization.synthetic.table"
    unknown = [p for p in _PLACEHOLDER.findall(text) if p not in ("release", "partition")]
    if unknown or text.count("{") != text.count("}"):
        return [(key, f"{shown(text)!r}: a path may hold {{release}} and {{partition}} only")]
    if scheme_of(text) is not None:
        return [(key, f"{shown(text)!r}: the synthetic table is read from a local path, not object storage")]
    if "{partition}" in text:
        return []
    path = spec.resolve(text)
    if not path.is_file():
        return [(key, f"{text!r}: no such file ({path.name} in {path.parent})")]
    return []


def _shown_value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def synthetic_problems(spec: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for every inconsistency of a synthetic release (or of
    ``policy.synthetic`` on another method) with the rest of ``spec``."""
    an, policy = spec.anonymization, spec.policy
    declared = getattr(policy, "synthetic", None)
    settings = getattr(an, "synthetic", None)
    if an.method != "synthetic":
        problems = []
        if declared is not None:
            problems.append(("policy.synthetic", f"bounds a synthetic release's audit, and anonymization.method is "
                                                 f"{an.method!r}: set it to 'synthetic' or drop policy.synthetic"))
        if settings is not None:
            problems.append(("anonymization.synthetic", f"configures the synthesizer, and anonymization.method is "
                                                        f"{an.method!r}: set it to 'synthetic' or drop this block"))
        return problems
    problems: list[tuple[str, str]] = []
    if declared is None or not any(getattr(declared, key) is not None for key in SYNTHETIC_CRITERIA):
        problems.append(("policy.synthetic", "a synthetic release is judged by its audit: give at least one of "
                                             f"{', '.join(SYNTHETIC_CRITERIA)}"))
    for key in REGISTRY:
        if getattr(policy.thresholds, key) is not None:
            problems.append((f"policy.thresholds.{key}",
                             "a synthetic release publishes no person's row, so the criteria of the published "
                             "rows' classes do not describe it: bound its audit under policy.synthetic instead"))
    if spec.publication.mode != "rows":
        problems.append(("publication.mode", "a synthetic release publishes rows: mode 'rows'"))
    if an.pram is not None:
        problems.append(("anonymization.pram", "PRAM perturbs real rows; a synthetic release publishes none"))
    for name in spec.pseudonymized:
        problems.append((f"columns.{name}.pseudonymize",
                         "a synthetic row is nobody's and cannot carry a person's pseudonym: drop pseudonymize "
                         "(the identifier is then not published)"))
    columns = synthetic_columns(spec)
    order = settings.order if settings is not None else None
    for i, name in enumerate(order or []):
        if name not in columns:
            problems.append((f"anonymization.synthetic.order.{i}", f"column {name!r} is not a published column "
                                                                   f"(published: {', '.join(columns)})"))
    if order is not None and len(set(order)) != len(order):
        problems.append(("anonymization.synthetic.order", "names a column twice"))
    problems += table_problems(spec)
    return problems


def synthetic_columns(spec: Any) -> list[str]:
    """The columns of a synthetic release, in spec order: every published column but the
    identifiers (a synthetic row has no person to identify)."""
    return [n for n in spec.published_columns if spec.columns[n].role != "identifier"]


def synthesis_order(spec: Any) -> list[str]:
    """The order the synthesizer draws the columns in: ``anonymization.synthetic.order``, then
    the other columns of :func:`synthetic_columns` in spec order."""
    settings = getattr(spec.anonymization, "synthetic", None)
    declared = list(settings.order or []) if settings is not None else []
    return declared + [c for c in synthetic_columns(spec) if c not in declared]
