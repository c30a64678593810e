"""How a release spec becomes Dagster objects: one translator decides every attribute.

Like dagster-dbt's ``DagsterDbtTranslator``: :class:`ReleaseTranslator` gives asset keys, group,
descriptions, kinds, owners, tags, code versions, definition metadata, the check specs (names,
descriptions and spec keys from the criteria registry; the ``publication`` and ``freshness``
checks of the published asset), and the job, schedule and sensor names. Subclass it and override
a method to change one convention; pass the instance to :func:`~anon_dagster.dagster.assets.build_release`,
:func:`~anon_dagster.dagster.components.load_release_definitions`, the component
(:meth:`AnonReleaseComponent.get_translator`) and the runner.
"""

from __future__ import annotations

import warnings
from functools import cache
from importlib import metadata as package_metadata
from typing import Any

from dagster import AssetCheckSpec, AssetKey, PartitionsDefinition

from ..io import table_format
from ..objectstore import is_remote
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
                  "(re-verified here, whatever the run selected); a refusal is materialized too, "
                  "with outcome `refused` and its reasons, and fails the `publication` check."),
}

PUBLICATION_CHECK = "publication"
FRESHNESS_CHECK = "freshness"

_PUBLICATION_TEXT = ("Whether the partition was published: every check of the gate re-verified at publication "
                     "time (composition against the ledger as it is then); fails with one line per failed check.")
_FRESHNESS_TEXT = ("The latest publication of {release} is at most policy.review_after_days = {days} days old "
                   "(from the ledger; refusals do not count).")


@cache
def package_version() -> str:
    """The installed anon_dagster's version (``0`` when it is not installed as a package)."""
    try:
        return package_metadata.version("anon_dagster")
    except package_metadata.PackageNotFoundError:
        return "0"


class ReleaseTranslator:
    """The conventions that turn a :class:`ReleaseSpec` into Dagster objects."""

    def asset_key(self, spec: ReleaseSpec, step: str) -> AssetKey:
        """``<release>/<step>`` for the steps raw, pseudonymized, anonymized, published."""
        return AssetKey([spec.release, step])

    def group_name(self, spec: ReleaseSpec) -> str:
        return spec.release

    def description(self, spec: ReleaseSpec, step: str) -> str:
        """The spec's ``description`` (when it has one), then what the step does."""
        text = _DESCRIPTIONS[step].format(release=spec.release)
        return f"{spec.description.strip()}\n\n{text}" if spec.description.strip() else text

    def kinds(self, spec: ReleaseSpec, step: str) -> set[str]:
        """``pandas`` and ``parquet`` (how the steps are kept); the source's format on raw, the
        publication's format on published (``s3``, ``gcs``, ``azure`` for object storage)."""
        if step == "published":
            return {table_format(spec.publication.path), *_store_kind(spec.publication.path)}
        if step == "raw" and spec.source.path is None:  # an asset of the project (source.asset)
            return {"pandas"}
        if step == "raw":
            return {"pandas", spec.source.format or table_format(spec.source.path), *_store_kind(spec.source.path)}
        return {"pandas", "parquet"}

    def owners(self, spec: ReleaseSpec, step: str) -> list[str]:
        """The spec's ``owners`` (e-mail addresses or ``team:<name>``), on every step."""
        return list(getattr(spec, "owners", None) or [])

    def tags(self, spec: ReleaseSpec, step: str) -> dict[str, str]:
        """The spec's ``tags``, on every step."""
        return dict(getattr(spec, "tags", None) or {})

    def code_version(self, spec: ReleaseSpec, step: str) -> str:
        """The package version and the spec's hash (content and table hierarchies): a changed spec
        or an upgrade shows every step as changed in Dagster."""
        return f"{package_version()}-{spec.spec_hash()[:16]}"

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
        return _PUBLICATION_TEXT

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
        return _FRESHNESS_TEXT.format(release=spec.release, days=spec.policy.review_after_days)

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


def _store_kind(path: str) -> set[str]:
    """The kind of an object store (``s3``, ``gcs``, ``azure``) a path is on; none for a local path."""
    if not is_remote(path):
        return set()
    scheme = path.split(":", 1)[0].lower()
    return {"s3": {"s3"}, "gs": {"gcs"}, "gcs": {"gcs"}}.get(scheme, {"azure"})


class _partition_aware_checks(warnings.catch_warnings):
    """Partition-aware checks are a Dagster preview feature, used knowingly: without them a check
    on a partitioned asset reports one unresolved result for all partitions."""

    def __enter__(self):
        out = super().__enter__()
        warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec")
        return out


__all__ = ["FRESHNESS_CHECK", "PUBLICATION_CHECK", "STEPS", "ReleaseTranslator", "package_version"]
