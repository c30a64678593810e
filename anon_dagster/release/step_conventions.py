"""What each step of a release is, in words and kinds, whatever orchestrator shows it.

The steps are ``raw``, ``pseudonymized``, ``anonymized`` and ``published``. A step's kinds say how
it is kept: ``pandas`` and ``parquet`` for the stored steps, the source's format on ``raw``
(``pandas`` only for a source that is an asset of the project), the publication's format on
``published``, and ``s3``, ``gcs`` or ``azure`` for a path on object storage. A step's code
version is the package version and the spec's hash: a changed spec or an upgrade changes it.
"""

from __future__ import annotations

from functools import cache
from importlib import metadata as package_metadata

from ..io import table_format
from ..objectstore import is_remote
from ..spec import ReleaseSpec

STEPS = ("raw", "pseudonymized", "anonymized", "published")
# the kinds of the table of record (``publication.table``): a pandas table handed to the project's IO manager
TABLE_KINDS = frozenset({"pandas", "table"})

DESCRIPTIONS = {
    "raw": "Rows of {release}'s source for the partition, checked against the spec.",
    "pseudonymized": "Identifiers replaced by keyed pseudonyms (or dropped); still personal data.",
    "anonymized": "Generalized and suppressed per the spec; its risk checks gate the publication.",
    "published": ("The release file, written only if every blocking check of the partition passes "
                  "(re-verified here, whatever the run selected); a refusal is materialized too, "
                  "with outcome `refused` and its reasons, and fails the `publication` check."),
}

PUBLICATION_TEXT = ("Whether the partition was published: every check of the gate re-verified at publication "
                    "time (composition against the ledger as it is then); fails with one line per failed check.")
# what the release's job and sensors do, as their descriptions say
OBJECT_TEXTS = {
    "job": "Release {release}: ingest, pseudonymize, anonymize, check, publish.",
    "source_sensor": "Runs {release}'s release for a partition when its source file appears or changes.",
    "freshness_sensor": "Judges the freshness check of {release}'s publications from the ledger.",
    "approval_sensor": "Requests the publication of every evaluation an approval recorded in the ledger made due.",
    "refusal_sensor": "Hands every refused publication to a function.",
}
FRESHNESS_TEXT = ("The latest publication of {release} is at most policy.review_after_days = {days} days old "
                  "(from the ledger; refusals do not count).")


@cache
def package_version() -> str:
    """The installed anon_dagster's version (``0`` when it is not installed as a package)."""
    try:
        return package_metadata.version("anon_dagster")
    except package_metadata.PackageNotFoundError:
        return "0"


def step_description(spec: ReleaseSpec, step: str) -> str:
    """The spec's ``description`` (when it has one), then what the step does."""
    text = DESCRIPTIONS[step].format(release=spec.release)
    return f"{spec.description.strip()}\n\n{text}" if spec.description.strip() else text


def object_description(kind: str, spec: ReleaseSpec | None = None) -> str:
    """What the release's object ``kind`` (a key of :data:`OBJECT_TEXTS`) does; ``spec`` names
    the release of a per-release object."""
    return OBJECT_TEXTS[kind].format(release=spec.release if spec is not None else "")


def freshness_text(spec: ReleaseSpec) -> str:
    """What the freshness check of ``spec`` judges."""
    return FRESHNESS_TEXT.format(release=spec.release, days=spec.policy.review_after_days)


def store_kind(path: str) -> set[str]:
    """The kind of an object store (``s3``, ``gcs``, ``azure``) a path is on; none for a local path."""
    if not is_remote(path):
        return set()
    scheme = path.split(":", 1)[0].lower()
    return {"s3": {"s3"}, "gs": {"gcs"}, "gcs": {"gcs"}}.get(scheme, {"azure"})


def step_kinds(spec: ReleaseSpec, step: str) -> set[str]:
    """The kinds of a step (see the module docstring)."""
    if step == "published":
        return {table_format(spec.publication.path), *store_kind(spec.publication.path)}
    if step == "raw" and spec.source.path is None:  # an asset of the project (source.asset)
        return {"pandas"}
    if step == "raw":
        return {"pandas", spec.source.format or table_format(spec.source.path), *store_kind(spec.source.path)}
    return {"pandas", "parquet"}


def code_version(spec: ReleaseSpec) -> str:
    """``<package version>-<first 16 hex digits of the spec's hash>``."""
    return f"{package_version()}-{spec.spec_hash()[:16]}"


__all__ = ["DESCRIPTIONS", "FRESHNESS_TEXT", "OBJECT_TEXTS", "PUBLICATION_TEXT", "STEPS", "TABLE_KINDS", "code_version",
           "freshness_text", "object_description", "package_version", "step_description", "step_kinds", "store_kind"]
