"""A release spec that does not validate, shown beside the others rather than hiding them.

Every problem of the file is one line (``file: key: reason``); the broken file is named by its
release name, else its file stem, made a valid asset-group name (letters, digits, ``_``; not
starting with a digit) and distinct from the loaded releases' groups and from each other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import SpecError
from .loading import SpecFile

SPEC_STEP = "spec"
SPEC_CHECK = "spec_valid"


def problem_lines(error: SpecError) -> list[str]:
    """One line per problem: ``file: key: reason``."""
    return [str(p) for p in error.problems]


def broken_message(broken: SpecFile) -> str:
    """The message of a broken spec: a heading, then one line per problem (a Markdown list)."""
    assert broken.error is not None
    lines = problem_lines(broken.error)
    count = f"{len(lines)} problem{'s' if len(lines) != 1 else ''}"
    return f"{broken.path} is not a valid release spec ({count}); nothing of it is loaded:\n" + \
        "\n".join(f"- {line}" for line in lines)


def problems_markdown(broken: SpecFile) -> str:
    """The problems as a Markdown list, each line as code (the check's ``problems`` entry)."""
    assert broken.error is not None
    return "\n".join(f"- `{line}`" for line in problem_lines(broken.error))


def warning_line(broken: SpecFile) -> str:
    """The one-line warning logged when the definitions load."""
    assert broken.error is not None
    lines = problem_lines(broken.error)
    return f"release spec not loaded, shown as a failing {SPEC_CHECK} check: {'; '.join(lines)}"


def group_names(broken: Iterable[SpecFile], taken: Iterable[str]) -> list[str]:
    """A distinct group name for each broken spec: its release name, else its file stem (made a
    valid Dagster name), never one of ``taken`` (the loaded releases' groups) nor another's."""
    used = set(taken)
    names = []
    for b in broken:
        candidates = [_dagster_name(c) for c in (b.release, b.path.stem) if c]
        name = next((c for c in candidates if c and c not in used), None)
        if name is None:
            base = candidates[-1] if candidates else "spec"
            name = next(f"{base}_{i}" for i in range(2, 10_000) if f"{base}_{i}" not in used)
        used.add(name)
        names.append(name)
    return names


def _dagster_name(text: str) -> str:
    """``text`` as a group name: other characters become ``_``; a leading digit gets ``spec_``."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_")
    return f"spec_{name}" if name[:1].isdigit() else name


__all__ = ["SPEC_CHECK", "SPEC_STEP", "broken_message", "group_names", "problem_lines", "problems_markdown",
           "warning_line"]
