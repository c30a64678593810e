"""The ``approval`` block of release spec v1: who must approve a release before it is published.

``approval: {required: true, approvers: [names...], min_approvals: 1, distinct_from_runner: true}``

- ``required``: a passing evaluation is published only once approved (default false: the block
  is then only declared, nothing waits);
- ``approvers``: the names that may approve or reject (at least ``min_approvals`` of them when
  required); a name is letters, digits and ``. _ @ -`` (an account or an e-mail address);
  names are compared in their canonical form (:func:`canonical_name`), so ``DPO`` and ``dpo``
  are one approver (listing both is refused as listing one twice);
- ``min_approvals``: how many distinct approvers must approve the same evaluation (default 1);
- ``distinct_from_runner``: an approver may not be who ran the evaluation (default true).

The governance workflow itself is in :mod:`anon_dagster.release.governance`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field

from .columns import Integer, _Model

APPROVER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@-]*$"
APPROVAL_KEYS = ("required", "approvers", "min_approvals", "distinct_from_runner")

Approver = Annotated[str, Field(pattern=APPROVER_PATTERN, max_length=128)]


def canonical_name(name: str) -> str:
    """The canonical form of a person's or an account's name, the one form approvers, runners
    and decisions are compared in: Unicode NFKC (compatibility forms and NFC/NFD spellings become
    one), case folded, surrounding white space removed. ValueError (naming the code point, never
    the name) for an empty name or one holding a control or format character (a zero-width
    space, a direction mark): such a name looks like another one it is not."""
    for char in name:
        if unicodedata.category(char) in ("Cc", "Cf") and char not in " \t":
            raise ValueError(f"holds the control or format character U+{ord(char):04X}")
    canonical = unicodedata.normalize("NFKC", name).casefold().strip()
    if not canonical:
        raise ValueError("is empty")
    return canonical


class ApprovalSpec(_Model):
    """Who must approve a passing evaluation before it is published (see the module docstring)."""

    required: bool = False
    approvers: list[Approver] = []
    min_approvals: Integer = Field(default=1, ge=1)
    distinct_from_runner: bool = True


def approval_message(loc: tuple[Any, ...], error: Mapping[str, Any]) -> str | None:
    """The message for a pydantic error under ``approval`` (None elsewhere): an unknown key lists
    the known ones, a bad approver name says what a name is."""
    if not loc or loc[0] != "approval":
        return None
    if error.get("type") == "extra_forbidden" and len(loc) == 2:
        return f"unknown key {str(loc[1])!r} (approval takes: {', '.join(APPROVAL_KEYS)})"
    if len(loc) == 3 and loc[1] == "approvers" and error.get("type") in ("string_pattern_mismatch", "string_type",
                                                                        "string_too_long"):
        return ("an approver is a name of letters, digits and . _ @ - (an account or an e-mail address), "
                "at most 128 characters")
    return None


def approval_problems(approval: ApprovalSpec | None) -> list[tuple[str, str]]:
    """``(key, message)`` for every problem of a parsed ``approval`` block the types cannot see."""
    if approval is None:
        return []
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for i, name in enumerate(approval.approvers):
        canonical = canonical_name(name)  # the pattern admits only names that have one
        if canonical in seen:
            out.append((f"approval.approvers.{i}", f"approver {name!r} is listed twice (names are compared "
                                                   "ignoring case)"))
        seen.add(canonical)
    if approval.required and not approval.approvers:
        out.append(("approval.approvers", "approval is required: list who may approve"))
    elif approval.required and approval.min_approvals > len(seen):
        out.append(("approval.min_approvals", f"{approval.min_approvals} approvals are required but "
                                              f"{len(seen)} approver(s) are listed: it could never be approved"))
    return out


__all__ = ["APPROVAL_KEYS", "APPROVER_PATTERN", "ApprovalSpec", "canonical_name", "approval_message", "approval_problems"]
