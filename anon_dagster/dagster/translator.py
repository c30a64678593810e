"""How a release spec becomes Dagster objects: one translator decides every attribute.

Like dagster-dbt's ``DagsterDbtTranslator``: :class:`ReleaseTranslator` gives asset keys, group,
descriptions, kinds, definition metadata, the check specs (names, descriptions and spec keys
from the criteria registry), and the job and schedule names. Subclass it and override a method
to change one convention; pass the instance to :func:`~anon_dagster.dagster.assets.build_release`,
:func:`~anon_dagster.dagster.components.load_release_definitions`, the component
(:meth:`AnonReleaseComponent.get_translator`) and the runner.
"""

from __future__ import annotations

import warnings
from typing import Any

from dagster import AssetCheckSpec, AssetKey, PartitionsDefinition

from ..release.pipeline import DeclaredCheck, declared_checks
from ..release.stored import at_rest_policy
from ..spec import ReleaseSpec
from .io_manager import AT_REST_KEY

STEPS = ("raw", "pseudonymized", "anonymized", "published")

_DESCRIPTIONS = {
    "raw": "Rows of {release}'s source for the partition, checked against the spec.",
    "pseudonymized": "Identifiers replaced by keyed pseudonyms (or dropped); still personal data.",
    "anonymized": "Generalized and suppressed per the spec; its risk checks gate the publication.",
    "published": ("The release file, written only if every blocking check of the partition passes "
                  "(re-verified here, whatever the run selected)."),
}


class ReleaseTranslator:
    """The conventions that turn a :class:`ReleaseSpec` into Dagster objects."""

    def asset_key(self, spec: ReleaseSpec, step: str) -> AssetKey:
        """``<release>/<step>`` for the steps raw, pseudonymized, anonymized, published."""
        return AssetKey([spec.release, step])

    def group_name(self, spec: ReleaseSpec) -> str:
        return spec.release

    def description(self, spec: ReleaseSpec, step: str) -> str:
        return _DESCRIPTIONS[step].format(release=spec.release)

    def kinds(self, spec: ReleaseSpec, step: str) -> set[str]:
        return {"parquet"} if step == "published" else {"pandas", "parquet"}

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
        """One blocking, partition-aware check spec per declared check."""
        anonymized = self.asset_key(spec, "anonymized")
        with warnings.catch_warnings():
            # partition-aware checks are a Dagster preview feature, used knowingly: without them a
            # check on a partitioned asset reports one unresolved result for all partitions
            warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec")
            return [
                AssetCheckSpec(c.name, asset=anonymized, blocking=True, partitions_def=partitions_def,
                               additional_deps=[self.asset_key(spec, "raw"), self.asset_key(spec, "pseudonymized")],
                               description=self.check_description(spec, c),
                               metadata={"spec_key": c.spec_key, "severity": c.severity})
                for c in self.checks(spec)
            ]

    def job_name(self, spec: ReleaseSpec) -> str:
        return f"{spec.release}_release"

    def schedule_name(self, spec: ReleaseSpec) -> str:
        return f"{spec.release}_schedule"


__all__ = ["STEPS", "ReleaseTranslator"]
