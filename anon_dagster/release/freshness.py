"""The freshness of a release's publications: is the latest one older than ``policy.review_after_days``?

The ledger decides, not Dagster's last materialization: a refused publication is recorded as a
refusal and is no publication. The latest publication is the newest current one (status
``published``) of any partition; its age is ``now - published_at`` in days (86 400 s), and it is
fresh while ``age <= review_after_days``: exactly ``review_after_days`` days old is still fresh.
Nothing published yet is fresh (nothing to review).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..partitions import UNPARTITIONED
from ..spec import ReleaseSpec

SECONDS_PER_DAY = 86400


@dataclass(frozen=True)
class Freshness:
    """The freshness judgement: ``passed``, one line saying why, and its figures (plain values)."""

    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)


def published_at(text: str) -> datetime:
    """A ledger timestamp (ISO 8601, ``Z`` or an offset; naive means UTC) as an aware datetime."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def judge_freshness(spec: ReleaseSpec, ledger: Any, now: datetime | None = None) -> Freshness:
    """The freshness of ``spec``'s latest publication in ``ledger`` at ``now`` (default: now, UTC).

    Metadata: ``review_after_days``; with a publication also ``latest_partition``,
    ``published_at`` and ``age_days`` (rounded to 2 decimals).
    """
    now = now or datetime.now(UTC)
    days = spec.policy.review_after_days
    current = [e for e in ledger.entries(release=spec.release) if e.status == "published"]
    if not current:
        return Freshness(True, "nothing published yet: nothing to review", {"review_after_days": days})
    latest = max(current, key=lambda e: published_at(e.published_at))
    age = (now - published_at(latest.published_at)).total_seconds() / SECONDS_PER_DAY
    passed = age <= days
    text = (f"latest publication {spec.release} {latest.partition or ''}".rstrip() +
            f" is {age:.0f} days old ({latest.published_at}); review after {days} days" +
            ("" if passed else ": review the release and publish it again"))
    return Freshness(passed, text, {"latest_partition": latest.partition or UNPARTITIONED,
                                    "published_at": latest.published_at, "age_days": round(age, 2),
                                    "review_after_days": days})


def unreadable_ledger(exc: BaseException) -> str:
    """Why freshness was not judged: the ledger (none yet, or a broken one) could not be read, in one line."""
    from .evaluate_step import describe_error

    return f"the ledger cannot be read: {describe_error(exc)}"


__all__ = ["SECONDS_PER_DAY", "Freshness", "judge_freshness", "published_at", "unreadable_ledger"]
