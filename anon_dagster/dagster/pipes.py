"""A release whose gate runs in an external job, reached through Dagster Pipes (docs/dagster.md,
"Steps in an external job"): the checks the job reports, and the published step's re-verification
of them, which the core decides (:mod:`anon_dagster.release.pipes_verification`)."""

from collections.abc import Mapping
from typing import Any

import dagster as dg

from ..release import pipes_values as pv
from ..release.pipes_verification import Reverification, read_and_rejudge
from ..release.release_names import PUBLICATION_CHECK, checks_name
from ..spec import ReleaseSpec
from .failures import one_line_failures
from .metadata import check_result
from .partitions import partitions_def_for
from .translator import ReleaseTranslator

RESOURCE_KEY = "pipes_client"


def run_step(context: Any, spec: ReleaseSpec, step: str, *, run_args: Mapping[str, Any], resource_key: str,
             extras: Mapping[str, Any]) -> Any:
    """Run ``step`` in the external job through the Pipes client at ``resource_key``: ``run_args``
    are the client's own (``command`` for a subprocess, ``task`` for Databricks, ...)."""
    partition = context.partition_key if context.has_partition_key else None
    op_context = getattr(context, "op_execution_context", context)  # a check's context runs as its op
    return getattr(context.resources, resource_key).run(context=op_context, **run_args,
                                                        extras=pv.step_extras(spec, step, partition, extras))


def pipes_release_checks(spec: ReleaseSpec, *, run_args: Mapping[str, Any], translator: ReleaseTranslator | None = None,
                         resource_key: str = RESOURCE_KEY, extras: Mapping[str, Any] | None = None) -> Any:
    """The release's checks (``<release>_checks``, the specs of ``ReleaseTranslator.check_specs``)
    judged by the external job: each result as it reported it (its metadata fitted to the event
    log there), its description restored. ``extras``: ``engine``, ``spark_master``,
    ``ledger``, ``spec`` (the spec's path as the job sees it), ... (:mod:`~anon_dagster.release.pipes_values`)."""
    t = translator or ReleaseTranslator()
    asset = t.asset_key(spec, "anonymized").to_escaped_user_string()  # as Pipes parses it

    @dg.multi_asset_check(specs=t.check_specs(spec, partitions_def_for(spec)), name=checks_name(spec),
                          required_resource_keys={resource_key})
    @one_line_failures
    def release_checks(context: dg.AssetCheckExecutionContext):
        done = run_step(context, spec, pv.STEP_CHECKS, run_args=run_args, resource_key=resource_key,
                        extras={pv.EXTRA_ASSET: asset, **(extras or {})})
        described = pv.check_descriptions(done.get_custom_messages())
        for r in done.get_results():
            yield dg.AssetCheckResult(passed=r.passed, severity=r.severity, description=described.get(r.check_name),
                                      metadata=r.metadata, asset_key=r.asset_key, check_name=r.check_name)

    return release_checks


def reverify_in_pipes(context: dg.AssetExecutionContext, spec: ReleaseSpec, *, location: str,
                      run_args: Mapping[str, Any], resource_key: str = RESOURCE_KEY,
                      extras: Mapping[str, Any] | None = None) -> Reverification:
    """Ask the external job for the published table's frequency table (written to ``location``, a
    local path or object-storage URI both sides read) and re-judge its frequency-derived checks here; refused when the file's
    SHA-256 or a verdict differs from what the job reported, or a re-judged check fails."""
    done = run_step(context, spec, pv.STEP_FREQUENCIES, run_args=run_args, resource_key=resource_key,
                    extras={pv.EXTRA_FREQUENCIES: location, **(extras or {})})
    return read_and_rejudge(spec, pv.find_message(done.get_custom_messages(), pv.FREQUENCIES_MESSAGE))


def reverification_result(verification: Reverification, check_name: str = PUBLICATION_CHECK) -> dg.AssetCheckResult:
    """The publication check's result of a re-verification (failed: publish nothing)."""
    return check_result(verification.shown(), check_name=check_name)


__all__ = ["RESOURCE_KEY", "pipes_release_checks", "reverification_result", "reverify_in_pipes", "run_step"]
