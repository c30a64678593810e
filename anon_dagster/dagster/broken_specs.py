"""A broken release spec in Dagster: asset ``<name>/spec`` and its failing blocking check
``spec_valid`` (names and messages: :mod:`anon_dagster.spec.broken`)."""

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

from ..spec.broken import (
    SPEC_CHECK,
    SPEC_STEP,
    broken_message,
    group_names,
    problem_lines,
    warning_line,
)
from ..spec.loading import SpecFile


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
