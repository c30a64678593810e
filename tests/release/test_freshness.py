"""Freshness of a release's publications, judged from the ledger's entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from anon_dagster.release.freshness import judge_freshness, published_at, unreadable_ledger

SPEC = SimpleNamespace(release="visits", policy=SimpleNamespace(review_after_days=30))
T0 = datetime(2025, 1, 1, tzinfo=UTC)


class Entries:
    """A stand-in ledger holding ``entries`` (of every release)."""

    def __init__(self, *entries: SimpleNamespace) -> None:
        self._entries = entries

    def entries(self, *, release: str) -> list[SimpleNamespace]:
        return [e for e in self._entries if e.release == release]


def entry(partition: str | None, at: datetime | str, status: str = "published", release: str = "visits"):
    return SimpleNamespace(release=release, partition=partition, status=status,
                           published_at=at if isinstance(at, str) else at.isoformat())


def test_nothing_published_is_fresh():
    fresh = judge_freshness(SPEC, Entries(entry("2024", T0, status="refused"), entry("x", T0, release="other")),
                            now=T0 + timedelta(days=400))
    assert fresh.passed and fresh.description == "nothing published yet: nothing to review"
    assert fresh.metadata == {"review_after_days": 30}


def test_exactly_the_review_age_is_fresh_a_second_more_is_not():
    ledger = Entries(entry("2024", T0))
    at_boundary = judge_freshness(SPEC, ledger, now=T0 + timedelta(days=30))
    assert at_boundary.passed and at_boundary.metadata["age_days"] == 30.0
    late = judge_freshness(SPEC, ledger, now=T0 + timedelta(days=30, seconds=1))
    assert not late.passed and late.description.endswith(": review the release and publish it again")
    assert late.description.startswith("latest publication visits 2024 is 30 days old (2025-01-01T00:00:00+00:00)")


def test_the_latest_publication_of_any_partition_decides():
    ledger = Entries(entry("2023", T0), entry("2024", T0 + timedelta(days=10)), entry(None, T0 - timedelta(days=90)))
    fresh = judge_freshness(SPEC, ledger, now=T0 + timedelta(days=25, hours=12))
    assert fresh.passed
    assert fresh.metadata == {"latest_partition": "2024", "published_at": (T0 + timedelta(days=10)).isoformat(),
                              "age_days": 15.5, "review_after_days": 30}


def test_an_unpartitioned_publication_is_named_all_and_z_times_are_utc():
    assert published_at("2025-01-01T00:00:00Z") == published_at("2025-01-01T00:00:00") == T0
    fresh = judge_freshness(SPEC, Entries(entry(None, "2025-01-01T00:00:00Z")), now=T0 + timedelta(days=31))
    assert not fresh.passed and fresh.metadata["latest_partition"] == "all"
    assert fresh.description.startswith("latest publication visits is 31 days old")


def test_an_unreadable_ledger_is_one_line_with_the_errors_kind():
    error = ValueError("the ledger's seal does not match\nsecond line")
    assert unreadable_ledger(error) == "the ledger cannot be read: ValueError: the ledger's seal does not match"
