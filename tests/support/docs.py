"""Examples taken from the project's documentation, so that the tests run what the docs show."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def contract_example_spec() -> str:
    """The annotated release spec of docs/contracts.md: the first YAML block under "Release spec v1"."""
    text = (DOCS / "contracts.md").read_text(encoding="utf-8")
    section = text.split("\n## Release spec v1\n", 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    if match is None:
        raise AssertionError("docs/contracts.md: no ```yaml block under 'Release spec v1'")
    return match.group(1)


def scope_example() -> str:
    """The spec excerpt of docs/pseudonymization.md's section on scopes (its first YAML block)."""
    text = (DOCS / "pseudonymization.md").read_text(encoding="utf-8")
    section = text.split("\n### Scope", 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    if match is None:
        raise AssertionError("docs/pseudonymization.md: no ```yaml block under 'Scope'")
    return match.group(1)
