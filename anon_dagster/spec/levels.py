"""The rules of ``anonymization.min_levels``: the level each listed quasi-identifier's lattice
search starts from (global recoding searches the sub-lattice above those levels)."""

from __future__ import annotations

from typing import Any

from ..errors import UserError
from .columns import build_hierarchy


def min_levels_problems(spec: Any) -> list[tuple[str, str]]:
    """``(key, message)`` for each rule ``anonymization.min_levels`` breaks: it applies to method
    global only; each key is a quasi-identifier the search generalizes (not a partition key);
    each level is within its hierarchy, ``0 <= level <= height`` (height = the hierarchy's
    levels - 1). A hierarchy that cannot be built is reported by the column's own rules."""
    declared = spec.anonymization.min_levels
    if not declared:
        return []
    if spec.anonymization.method != "global":
        return [("anonymization.min_levels",
                 f"applies to method global only (the lattice search), not {spec.anonymization.method}")]
    problems: list[tuple[str, str]] = []
    gen = list(spec.generalized_qis)
    for name, level in declared.items():
        key = f"anonymization.min_levels.{name}"
        if name not in gen:
            what = ("a partition key (never generalized)" if name in spec.partition_keys
                    else "not a quasi-identifier" if name in spec.columns else "not declared under columns")
            problems.append((key, f"column {name!r} is {what}: min_levels lists the generalized "
                                  f"quasi-identifiers ({', '.join(gen) or 'none'})"))
            continue
        if level < 0:
            problems.append((key, f"level {level} is negative: levels count from 0 (the values themselves)"))
            continue
        try:
            height = build_hierarchy(spec, name).n_levels - 1
        except (UserError, OSError, ValueError):
            continue
        if level > height:
            problems.append((key, f"level {level} is above the height of the hierarchy of column {name!r} "
                                  f"({height}: levels 0..{height})"))
    return problems


__all__ = ["min_levels_problems"]
