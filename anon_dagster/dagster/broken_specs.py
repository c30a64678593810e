"""A broken release spec in Dagster: asset ``<name>/spec`` and its failing blocking check
``spec_valid`` (names and messages: :mod:`anon_dagster.spec.broken`; docs/dagster.md)."""

import dagster as dg

from ..spec.broken import SPEC_CHECK, SPEC_STEP, broken_message, problems_markdown
from ..spec.loading import SpecFile


def build_broken_spec(broken: SpecFile, name: str) -> tuple[dg.AssetsDefinition, dg.AssetChecksDefinition]:
    """The asset ``<name>/spec`` and its blocking check ``spec_valid`` for a broken spec file."""
    message = broken_message(broken)
    key = dg.AssetKey([name, SPEC_STEP])
    metadata = {"spec": dg.MetadataValue.path(str(broken.path)),
                "problems": dg.MetadataValue.md(problems_markdown(broken))}

    @dg.asset(key=key, group_name=name, description=message, metadata=metadata, kinds={"yaml"})
    def spec(context: dg.AssetExecutionContext) -> None:
        raise dg.Failure(description=message, allow_retries=False)

    @dg.asset_check(asset=key, name=SPEC_CHECK, blocking=True, description=message)
    def spec_valid(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.ERROR, description=message,
                                metadata=metadata)

    return spec, spec_valid


__all__ = ["build_broken_spec"]
