"""The documentation's threshold and adversary tables say what the criteria registry says."""

from __future__ import annotations

from pathlib import Path

from anon_dagster.criteria import HEADLINE_RISKS, REGISTRY

DOCS = Path(__file__).resolve().parents[2] / "docs"


def table_rows(path: Path, heading: str) -> list[list[str]]:
    """The cells of the first Markdown table after ``heading`` (header and separator skipped)."""
    text = path.read_text(encoding="utf-8")
    assert heading in text, f"{path.name}: no section {heading!r}"
    lines = text.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def plain(cell: str) -> str:
    return cell.replace("`", "").replace("≥", ">=").replace("≤", "<=")


def test_thresholds_table_matches_the_registry():
    rows = table_rows(DOCS / "contracts.md", "### Thresholds (`policy.thresholds`)")
    assert [plain(r[0]) for r in rows] == list(REGISTRY), "one row per criterion, in registry order"
    for key, check, passes, value in rows:
        c = REGISTRY[plain(key)]
        assert plain(check) == c.check_name, key
        if c.comparison in (">=", "<="):
            assert c.comparison in plain(passes), f"{key}: the comparison is {c.comparison}"
        assert plain(value) in c.threshold_type.text, f"{key}: the spec accepts {c.threshold_type.text}"


def test_adversary_table_matches_the_headline_risks():
    rows = table_rows(DOCS / "release.md", "**Headline risk**")
    documented = {plain(r[0]).split()[0]: [plain(f).strip() for f in r[2].split(",")] for r in rows}
    assert documented == {a: list(keys) for a, keys in HEADLINE_RISKS.items()}
