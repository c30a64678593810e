"""What an approval is bound to: one evaluation of one partition, under one spec and one code version.

Definitions.

- The *code version* is ``<package version>+<git revision>`` of the installed anon_dagster
  (``unknown`` for a part that cannot be read): the code that ran the checks. An upgrade, or
  another commit of a checkout, is another code version.
- The *runner* of an evaluation is ``$ANON_DAGSTER_RUNNER`` when set (a deployment names the
  account its pipeline runs as, e.g. a Dagster code location's service account), else the OS
  user the process runs as (its effective user id, never ``$USER``), in its canonical form
  (:func:`~anon_dagster.spec.approval.canonical_name`: ``Dpo`` runs as ``dpo``), the form an
  approver's name is compared in.
- The *subject* of a decision is the tuple (release, partition, evaluation id, spec hash, data
  hash, code version). The evaluation id already binds spec, data and every check outcome
  (:attr:`~anon_dagster.release.evaluation.Evaluation.id`); the hashes are kept beside it so a
  decision says in plain figures what was approved. A decision counts for a publication only
  when its whole subject equals the publication's: any change to the data, the spec (its
  ``approval`` block included) or the code voids it.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from ...errors import UserError
from ...spec.approval import canonical_name
from ..report.inputs import git_revision, package_version

RUNNER_ENV = "ANON_DAGSTER_RUNNER"


@lru_cache(maxsize=1)
def _installed_code_version() -> str:
    return f"{package_version() or 'unknown'}+{git_revision() or 'unknown'}"


def code_version() -> str:
    """The code version of this process (see the module docstring); read once per process."""
    return _installed_code_version()


def runner() -> str:
    """Who runs this process: ``$ANON_DAGSTER_RUNNER``, else the OS user of its effective uid, in
    canonical form; UserError naming the variable when its value holds a control or format character."""
    named = (os.environ.get(RUNNER_ENV) or "").strip()
    if named:
        try:
            return canonical_name(named)
        except ValueError as exc:
            raise UserError(f"{RUNNER_ENV}: the runner's name {exc}: give the account's plain name") from None
    try:
        return canonical_name(pwd.getpwuid(os.geteuid()).pw_name)
    except (KeyError, ValueError):  # a uid without a usable passwd entry (some containers)
        return f"uid-{os.geteuid()}"


@dataclass(frozen=True)
class Subject:
    """One evaluation of one partition under one spec and code version (see the module docstring)."""

    release: str
    partition: str
    evaluation: str
    spec_hash: str
    data_hash: str
    code_version: str

    @classmethod
    def of(cls, event: dict[str, Any]) -> Subject:
        """The subject a recorded governance event names."""
        return cls(*(str(event.get(name) or "") for name in SUBJECT_FIELDS))

    def fields(self) -> dict[str, str]:
        """The subject as the fields of an event."""
        return asdict(self)

    def describe(self) -> str:
        where = f"{self.release}/{self.partition}" if self.partition else self.release
        return f"{where} evaluation {self.evaluation}"


SUBJECT_FIELDS = ("release", "partition", "evaluation", "spec_hash", "data_hash", "code_version")

__all__ = ["RUNNER_ENV", "SUBJECT_FIELDS", "Subject", "code_version", "runner"]
