"""A broken release spec in Dagster: its own small group, which says what is wrong.

When a spec of the folder does not validate, the other releases still load, and the broken file
becomes the group ``<name>`` (its release name, else its file stem) with one asset::

    <name>/spec   ── blocking check spec_valid: fails with every problem of the file

The check's description and result list every problem, one line each (file, key, reason), and
materializing ``<name>/spec`` refuses with the same lines. Nothing of the release is built: no
job, no schedule, no data is read. Fix the file and reload the definitions.
"""

import re
from collections.abc import Iterable

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    Failure,
    MetadataValue,
    asset,
    asset_check,
)

from ..errors import SpecError
from ..spec.loading import SpecFile

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
    name = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_")
    return f"spec_{name}" if name[:1].isdigit() else name


def build_broken_spec(broken: SpecFile, name: str) -> tuple[AssetsDefinition, AssetChecksDefinition]:
    """The asset ``<name>/spec`` and its blocking check ``spec_valid`` for a broken spec file."""
    message = broken_message(broken)
    key = AssetKey([name, SPEC_STEP])
    metadata = {"spec": MetadataValue.path(str(broken.path)),
                "problems": MetadataValue.md("\n".join(f"- `{line}`" for line in problem_lines(broken.error)))}

    @asset(key=key, group_name=name, description=message, metadata=metadata, kinds={"yaml"})
    def spec(context: AssetExecutionContext) -> None:
        raise Failure(description=message, allow_retries=False)

    @asset_check(asset=key, name=SPEC_CHECK, blocking=True, description=message)
    def spec_valid(context: AssetCheckExecutionContext) -> AssetCheckResult:
        return AssetCheckResult(passed=False, severity=AssetCheckSeverity.ERROR, description=message,
                                metadata=metadata)

    return spec, spec_valid


__all__ = ["SPEC_CHECK", "SPEC_STEP", "broken_message", "build_broken_spec", "group_names", "problem_lines",
           "warning_line"]
