"""How a release spec becomes Dagster objects: :class:`ReleaseTranslator`, whose conventions are the
core's (:mod:`anon_dagster.release.release_names`, :mod:`~anon_dagster.release.step_conventions`)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster import AssetCheckSpec, AssetKey, PartitionsDefinition

from ..release import release_names as names
from ..release import step_conventions as conventions
from ..release.pipeline import DeclaredCheck, declared_checks
from ..spec import ReleaseSpec


class ReleaseTranslator:
    """The conventions that turn a :class:`ReleaseSpec` into Dagster objects; subclass it and
    override one method to change one convention."""

    def asset_key(self, spec: ReleaseSpec, step: str) -> AssetKey:
        return AssetKey(names.asset_path(spec, step))

    def group_name(self, spec: ReleaseSpec) -> str:
        return spec.release

    def description(self, spec: ReleaseSpec, step: str) -> str:
        return conventions.step_description(spec, step)

    def kinds(self, spec: ReleaseSpec, step: str) -> set[str]:
        return conventions.step_kinds(spec, step)

    def owners(self, spec: ReleaseSpec, step: str) -> list[str]:
        return names.owners(spec)

    def tags(self, spec: ReleaseSpec, step: str) -> dict[str, str]:
        return names.tags(spec)

    def code_version(self, spec: ReleaseSpec, step: str) -> str:
        return conventions.code_version(spec)

    def metadata(self, spec: ReleaseSpec, step: str) -> dict[str, Any]:
        """Definition metadata; ``anon_dagster/at_rest`` tells the IO manager how to store the step."""
        return names.step_metadata(spec, step)

    def checks(self, spec: ReleaseSpec) -> list[DeclaredCheck]:
        return declared_checks(spec)

    def check_description(self, spec: ReleaseSpec, check: DeclaredCheck) -> str:
        return check.description

    def check_specs(self, spec: ReleaseSpec, partitions_def: PartitionsDefinition | None) -> list[AssetCheckSpec]:
        """One partition-aware check spec per declared check, on the anonymized asset; not blocking
        in Dagster's sense: the published step re-verifies them all (:meth:`publication_check_spec`)."""
        deps = [self.asset_key(spec, step) for step in names.CHECK_INPUTS]
        with used_knowingly(PARTITIONED_CHECKS):
            return [AssetCheckSpec(c.name, asset=self.asset_key(spec, "anonymized"), blocking=False,
                                   partitions_def=partitions_def, additional_deps=deps,
                                   description=self.check_description(spec, c), metadata=names.check_metadata(c))
                    for c in self.checks(spec)]

    def publication_check_name(self, spec: ReleaseSpec) -> str:
        return names.PUBLICATION_CHECK

    def publication_check_description(self, spec: ReleaseSpec) -> str:
        return conventions.PUBLICATION_TEXT

    def publication_check_spec(self, spec: ReleaseSpec, partitions_def: PartitionsDefinition | None) -> AssetCheckSpec:
        """The blocking, partition-aware check on the published asset holding the partition's outcome."""
        with used_knowingly(PARTITIONED_CHECKS):
            return AssetCheckSpec(self.publication_check_name(spec), asset=self.asset_key(spec, "published"),
                                  blocking=True, partitions_def=partitions_def,
                                  description=self.publication_check_description(spec))

    def freshness_check_name(self, spec: ReleaseSpec) -> str:
        return names.FRESHNESS_CHECK

    def freshness_check_description(self, spec: ReleaseSpec) -> str:
        return conventions.freshness_text(spec)

    def freshness_check_spec(self, spec: ReleaseSpec) -> AssetCheckSpec:
        """The release's (unpartitioned, not blocking) check of the latest publication's age."""
        return AssetCheckSpec(self.freshness_check_name(spec), asset=self.asset_key(spec, "published"),
                              blocking=False, description=self.freshness_check_description(spec))

    def job_name(self, spec: ReleaseSpec) -> str:
        return names.job_name(spec)

    def schedule_name(self, spec: ReleaseSpec) -> str:
        return names.schedule_name(spec)

    def source_sensor_name(self, spec: ReleaseSpec) -> str:
        return names.source_sensor_name(spec)

    def freshness_sensor_name(self, spec: ReleaseSpec) -> str:
        return names.freshness_sensor_name(spec)


def asset_attributes(t: ReleaseTranslator, spec: ReleaseSpec, step: str,
                     partitions_def: PartitionsDefinition | None) -> dict[str, Any]:
    """The keyword arguments of ``@asset`` for one step, every one from the translator ``t``."""
    return {"key": t.asset_key(spec, step), "group_name": t.group_name(spec), "partitions_def": partitions_def,
            "kinds": t.kinds(spec, step), "metadata": t.metadata(spec, step), "description": t.description(spec, step),
            "owners": t.owners(spec, step) or None, "tags": t.tags(spec, step) or None,
            "code_version": t.code_version(spec, step)}


# the warnings of Dagster features in preview or beta that the definitions use knowingly
PARTITIONED_CHECKS = "Specifying a partitions_def on an AssetCheckSpec"
ASSET_RESOURCES = "Parameter `resource_defs` of function `asset`"


@contextmanager
def used_knowingly(warning: str) -> Iterator[None]:
    """Dagster's warnings starting with ``warning`` silenced within the block."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=warning)
        yield


__all__ = ["ASSET_RESOURCES", "PARTITIONED_CHECKS", "ReleaseTranslator", "asset_attributes", "used_knowingly"]
