"""Which releases an approval starts the publication of (anon_dagster.release.governance.requests)."""

from __future__ import annotations

from types import SimpleNamespace

from anon_dagster.release.governance.requests import governed


def release(name: str, approval: SimpleNamespace | None) -> SimpleNamespace:
    return SimpleNamespace(release=name, approval=approval)


def test_only_the_releases_requiring_approval_are_governed_by_name():
    specs = [release("visits", SimpleNamespace(required=True)), release("stays", SimpleNamespace(required=False)),
             release("claims", None)]
    assert governed(specs) == {"visits": specs[0]}
    assert governed([]) == {}
