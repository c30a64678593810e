"""docs/security.md, the threat model: every test it points at exists, and it has its sections.

* every ``tests/<path>.py::<name>`` reference (and every bare ``tests/<path>.py``) names a file of
  the repository that defines that test function, so the document cannot cite evidence that is gone;
* the document has its four parts (assets and actors, guarantees, what the gate does not protect
  against, operating rules), each guarantee says what holds and cites at least one test, and the
  guarantees cover the gate's mechanisms;
* its links (to other pages and to its own headings) resolve, and the README lists it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "security.md"

REFERENCE = re.compile(r"(?<![\w/.])(tests/[\w/]+\.py)(?:::(\w+))?")


def references(text: str) -> list[tuple[str, str | None]]:
    """The ``(path, test name or None)`` references of ``text``, in order."""
    return [(m.group(1), m.group(2)) for m in REFERENCE.finditer(text)]


def defined_functions(path: Path) -> set[str]:
    """The names of the functions a Python file defines, at module level or in a class."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        names |= {n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    return names


def sections(text: str, level: int) -> dict[str, str]:
    """Heading text → body, for the headings of exactly ``level`` (``#`` count) outside code blocks."""
    out: dict[str, str] = {}
    current, lines, fenced = None, [], False
    marker = "#" * level + " "
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        is_heading = not fenced and re.match(r"#{1,6} ", line)
        if is_heading and len(line) - len(line.lstrip("#")) <= level:
            if current is not None:
                out[current] = "\n".join(lines)
            current, lines = (line[len(marker):].strip() if line.startswith(marker) else None), []
        elif current is not None:
            lines.append(line)
    if current is not None:
        out[current] = "\n".join(lines)
    return out


def slug(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (GitHub's rule)."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def test_the_reference_parser_finds_each_form():
    text = ("see `tests/release/test_ledger.py::test_a` and tests/core/test_io.py::test_b, "
            "the file tests/risk/test_person.py, not docs/tests/x.py nor a/tests/y.py")
    assert references(text) == [("tests/release/test_ledger.py", "test_a"), ("tests/core/test_io.py", "test_b"),
                                ("tests/risk/test_person.py", None)]
    assert "test_the_reference_parser_finds_each_form" in defined_functions(Path(__file__))


def test_every_referenced_test_exists(doc):
    found = references(doc)
    assert len({name for _, name in found if name}) >= 100, "the guarantees cite their tests by path::name"
    missing = []
    for path, name in found:
        file = REPO / path
        if not file.is_file():
            missing.append(f"{path}: no such file")
        elif name is not None and name not in defined_functions(file):
            missing.append(f"{path}::{name}: no such test")
        elif name is not None and not name.startswith("test_"):
            missing.append(f"{path}::{name}: not a test function")
    assert missing == []


def test_the_document_has_its_four_parts(doc):
    assert list(sections(doc, 2)) == [
        "Assets and actors", "Guarantees", "What the gate does not protect against", "Operating rules"]
    parts = sections(doc, 3)
    assert {"Assets", "Actors"} <= set(parts)
    actors = parts["Actors"].lower()
    for who in ("data engineer", "insider", "data recipient", "refused release", "prosecutor", "journalist",
                "marketer"):
        assert who in actors, who
    assets = parts["Assets"].lower()
    for what in ("raw personal data", "pseudonymized", "anonymized", "key store", "subkeys", "ledger", "portal",
                 "audit log"):
        assert what in assets, what


def test_each_guarantee_says_what_holds_and_cites_a_test(doc):
    guarantees = {h: body for h, body in sections(doc, 3).items() if re.match(r"G\d+\. ", h)}
    assert len(guarantees) >= 12
    numbers = [int(re.match(r"G(\d+)\.", h).group(1)) for h in guarantees]
    assert numbers == list(range(1, len(numbers) + 1))
    for heading, body in guarantees.items():
        assert "**Holds.**" in body, heading
        assert any(name for _, name in references(body)), f"{heading}: cites no test"
    covered = " ".join(guarantees).lower()
    for topic in ("gate", "per person", "composition", "ledger", "authenticated intermediates", "inputs",
                  "crash", "read as written", "secrets", "metadata", "audit log", "unkeyed hashes"):
        assert topic in covered, topic


def test_the_limits_and_rules_name_what_the_gate_relies_on(doc):
    parts = sections(doc, 2)
    limits = parts["What the gate does not protect against"].lower()
    for limit in ("backup", "compromised key store", "root", "outside the model", "attribute inference",
                  "without any key store", "row-level", "lower bound", "population-uniqueness", "side channels"):
        assert limit in limits, limit
    rules = parts["Operating rules"]
    for rule in ("ANON_DAGSTER_KEYSTORE_STATE", "apart", "One key source", "Owner-only", "key version 1"):
        assert rule in rules, rule


def test_links_resolve(doc):
    anchors = {slug(h) for level in (2, 3) for h in sections(doc, level)}
    for target in re.findall(r"\]\(([^)\s]+)\)", doc):
        page, _, anchor = target.partition("#")
        if page:
            assert (DOC.parent / page).is_file(), target
        else:
            assert anchor in anchors, target


def test_the_readme_lists_the_document():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    documentation = readme.split("\n## Documentation\n", 1)[1].split("\n## ", 1)[0]
    assert "[docs/security.md](docs/security.md)" in documentation
