"""The layout of the repository: tests mirror the source, no test imports another, nothing points outside.

* every folder of tests is a package (``__init__.py``), so two test files may share a basename;
* a test file never imports another test file or a ``conftest``: shared fixtures live in
  ``conftest.py``, shared helpers in ``tests/support/``;
* no tracked file names a document or a data folder outside the repository (the Adult benchmark
  ships in ``datasets/adult``; the contracts are in ``docs/contracts.md``).
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

# Built from pieces so that this file does not match itself.
OUTSIDE_REFERENCES = ("DESIGN" + ".md", ".." + "/shared", "shared" + "/data")


def is_test_module(name: str) -> bool:
    """Whether a dotted module name (leading dots for relative imports) names a test file or a conftest."""
    return any(part.startswith("test_") or part == "conftest" for part in name.split(".") if part)


def imported_test_modules(source: str) -> list[str]:
    """The test files and conftests a Python source imports, at any depth, as written (sorted, once each)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if is_test_module(alias.name)}
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if is_test_module(module):
                found.add(module)
            else:  # ``from package import test_x`` imports the module test_x
                joiner = "." if node.module else ""
                found |= {module + joiner + alias.name for alias in node.names if is_test_module(alias.name)}
    return sorted(found)


def test_the_detector_finds_each_form_of_importing_a_test_file():
    source = "\n".join([
        "import os",
        "import tests.support.keys",
        "from tests.support.releases import write_release",
        "from tests.support import population",
        "import test_dagster",
        "from test_dagster import MASTER_KEY",
        "from tests.dagster.test_dagster import run",
        "from tests.dagster import test_dagster as other",
        "from . import conftest",
        "from .test_spec import write_spec",
        "def later():",
        "    from test_demo import frames",
    ])
    assert imported_test_modules(source) == [
        ".conftest", ".test_spec", "test_dagster", "test_demo", "tests.dagster.test_dagster",
    ]
    assert imported_test_modules("import os\nfrom tests.support.specs import release_spec\n") == []


def test_no_test_file_imports_another_test_file():
    offenders = {}
    for path in sorted(TESTS.rglob("*.py")):
        found = imported_test_modules(path.read_text(encoding="utf-8"))
        if found:
            offenders[str(path.relative_to(REPO))] = found
    assert offenders == {}, "move shared helpers to tests/conftest.py or tests/support/"


def test_every_test_folder_is_a_package():
    folders = {p.parent for p in TESTS.rglob("*.py")} - {TESTS}
    missing = sorted(str(f.relative_to(REPO)) for f in folders | {TESTS} if not (f / "__init__.py").is_file())
    assert missing == []


def test_test_files_sit_in_a_folder_named_for_what_they_test():
    stray = sorted(p.name for p in TESTS.glob("test_*.py") if p.name != Path(__file__).name)
    assert stray == [], "put tests in tests/<package>/ (core/ for the top-level modules)"


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: no list of tracked files")
    return [REPO / name for name in out.decode().split("\0") if name]


def outside_references(text: str) -> list[str]:
    """The references to something outside the repository that ``text`` contains."""
    return [ref for ref in OUTSIDE_REFERENCES if ref in text]


def test_the_outside_reference_search_finds_each_form():
    assert outside_references("see " + "DESIGN" + ".md, section 2") == [OUTSIDE_REFERENCES[0]]
    assert outside_references("ADULT = ROOT / '.." + "/shared" + "/data/adult'") == list(OUTSIDE_REFERENCES[1:])
    assert outside_references("see docs/contracts.md; data in datasets/adult") == []


def test_no_tracked_file_points_outside_the_repository():
    offenders = []
    for path in tracked_files():
        if path == Path(__file__).resolve() or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        offenders += [f"{path.relative_to(REPO)}: {ref}" for ref in outside_references(text)]
    assert offenders == []
