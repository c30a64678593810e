"""How a release spec becomes Dagster objects: one translator decides every attribute.

Like dagster-dbt's ``DagsterDbtTranslator``: subclass :class:`ReleaseTranslator` and override a
method to change one convention (asset keys, group, descriptions, kinds, owners, tags, code
versions, metadata, check specs, job, schedule and sensor names); pass the instance to
``build_release``, ``load_release_definitions``, the component and the runner. The words and
kinds of each step are the core's (:mod:`anon_dagster.release.step_conventions`).
"""

from __future__ import annotations

import warnings
from typing import Any

from dagster import AssetCheckSpec, AssetKey, PartitionsDefinition

from ..release.pipeline import DeclaredCheck, declared_checks
from ..release.step_conventions import (
    PUBLICATION_TEXT,
    STEPS,
    code_version,
    freshness_text,
    package_version,
    step_description,
    step_kinds,
)
from ..release.stored import at_rest_policy
from ..spec import ReleaseSpec
from .io_manager import AT_REST_KEY

PUBLICATION_CHECK = "publication"
FRESHNESS_CHECK = "freshness"


class ReleaseTranslator:
    """The conventions that turn a :class:`ReleaseSpec` into Dagster objects."""

    def asset_key(self, spec: ReleaseSpec, step: str) -> AssetKey:
        """``<release>/<step>`` for the steps raw, pseudonymized, anonymized, published."""
        return AssetKey([spec.release, step])

    def group_name(self, spec: ReleaseSpec) -> str:
        return spec.release

    def description(self, spec: ReleaseSpec, step: str) -> str:
        return step_description(spec, step)

    def kinds(self, spec: ReleaseSpec, step: str) -> set[str]:
        return step_kinds(spec, step)

    def owners(self, spec: ReleaseSpec, step: str) -> list[str]:
        """The spec's ``owners`` (e-mail addresses or ``team:<name>``), on every step."""
        return list(getattr(spec, "owners", None) or [])

    def tags(self, spec: ReleaseSpec, step: str) -> dict[str, str]:
        """The spec's ``tags``, on every step."""
        return dict(getattr(spec, "tags", None) or {})

    def code_version(self, spec: ReleaseSpec, step: str) -> str:
        return code_version(spec)

    def metadata(self, spec: ReleaseSpec, step: str) -> dict[str, Any]:
        """Definition metadata; ``anon_dagster/at_rest`` tells the IO manager how to store the step
        (the core's :func:`~anon_dagster.release.stored.at_rest_policy`: every stored step is still
        personal data)."""
        policy = at_rest_policy(spec, step)
        out: dict[str, Any] = {AT_REST_KEY: policy} if policy is not None else {}
        if step == "raw":
            out["spec"] = str(spec.spec_path) if spec.spec_path else spec.release
        return out

    def checks(self, spec: ReleaseSpec) -> list[DeclaredCheck]:
        """The checks on the anonymized asset (from the criteria registry), in order."""
        return declared_checks(spec)

    def check_description(self, spec: ReleaseSpec, check: DeclaredCheck) -> str:
        return check.description

    def check_specs(self, spec: ReleaseSpec, partitions_def: PartitionsDefinition | None) -> list[AssetCheckSpec]:
        """One partition-aware check spec per declared check, on the anonymized asset.

        Not blocking in Dagster's sense (a failed one does not skip the published step): the
        published step re-verifies every one of them and materializes its outcome, published or
        refused, with the blocking ``publication`` check (:meth:`publication_check_spec`). So a
        refusal shows on the published asset and never leaves a partition without an outcome
        (a later partition waits for it: see :mod:`anon_dagster.dagster.ordering`).
        """
        anonymized = self.asset_key(spec, "anonymized")
        with _partition_aware_checks():
            return [
                AssetCheckSpec(c.name, asset=anonymized, blocking=False, partitions_def=partitions_def,
                               additional_deps=[self.asset_key(spec, "raw"), self.asset_key(spec, "pseudonymized")],
                               description=self.check_description(spec, c),
                               metadata={"spec_key": c.spec_key, "severity": c.severity})
                for c in self.checks(spec)
            ]

    def publication_check_name(self, spec: ReleaseSpec) -> str:
        return PUBLICATION_CHECK

    def publication_check_description(self, spec: ReleaseSpec) -> str:
        return PUBLICATION_TEXT

    def publication_check_spec(self, spec: ReleaseSpec, partitions_def: PartitionsDefinition | None) -> AssetCheckSpec:
        """The blocking, partition-aware check on the published asset that holds the partition's
        outcome: passed when published, failed with the refusal's reasons."""
        with _partition_aware_checks():
            return AssetCheckSpec(self.publication_check_name(spec), asset=self.asset_key(spec, "published"),
                                  blocking=True, partitions_def=partitions_def,
                                  description=self.publication_check_description(spec))

    def freshness_check_name(self, spec: ReleaseSpec) -> str:
        return FRESHNESS_CHECK

    def freshness_check_description(self, spec: ReleaseSpec) -> str:
        return freshness_text(spec)

    def freshness_check_spec(self, spec: ReleaseSpec) -> AssetCheckSpec:
        """The check on the published asset judging the latest publication's age (not blocking,
        not partitioned: it is the release's, whichever partition was published last)."""
        return AssetCheckSpec(self.freshness_check_name(spec), asset=self.asset_key(spec, "published"),
                              blocking=False, description=self.freshness_check_description(spec))

    def job_name(self, spec: ReleaseSpec) -> str:
        return f"{spec.release}_release"

    def schedule_name(self, spec: ReleaseSpec) -> str:
        return f"{spec.release}_schedule"

    def source_sensor_name(self, spec: ReleaseSpec) -> str:
        return f"{spec.release}_source_sensor"

    def freshness_sensor_name(self, spec: ReleaseSpec) -> str:
        return f"{spec.release}_freshness_sensor"


class _partition_aware_checks(warnings.catch_warnings):
    """Partition-aware checks are a Dagster preview feature, used knowingly: without them a check
    on a partitioned asset reports one unresolved result for all partitions."""

    def __enter__(self):
        out = super().__enter__()
        warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec")
        return out


__all__ = ["FRESHNESS_CHECK", "PUBLICATION_CHECK", "STEPS", "ReleaseTranslator", "package_version"]
