"""Which releases a scheduled retention applies (anon_dagster.release.governance.scheduled_retention)."""

from __future__ import annotations

from types import SimpleNamespace

from anon_dagster.release.governance.scheduled_retention import retained


def test_only_the_specs_with_a_retention_block_are_retained_in_their_order():
    specs = [SimpleNamespace(release="visits", retention=None), SimpleNamespace(release="stays", retention=object()),
             SimpleNamespace(release="claims", retention=object())]
    assert [s.release for s in retained(specs)] == ["stays", "claims"]
    assert retained(specs[:1]) == []
