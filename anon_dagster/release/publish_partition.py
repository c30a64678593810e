"""One partition taken from its source to its publication outside Dagster (``anon-dagster publish``).

The same steps as the Dagster assets, from the same functions: the gate
(:func:`~anon_dagster.release.pipeline.run_gate`), then, for a refused evaluation, its evidence
kept (:func:`~anon_dagster.release.kept_evaluation.keep_evaluation`) and
:class:`~anon_dagster.release.refusals.PublicationRefused` raised; for a passing one, the
publication (:func:`~anon_dagster.release.publication.publish_release`, which waits for the
approvals ``approval.required`` asks for: :class:`~anon_dagster.release.governance.AwaitingApproval`).
"""

from __future__ import annotations

from typing import Any

from ..spec import ReleaseSpec
from .ledger import Ledger
from .pipeline import run_gate
from .publication import ReleasePublished, keep_evaluation, publish_release, reports_folder


def publish_partition(spec: ReleaseSpec, *, partition: str | None, ledger: Ledger, keystore: Any,
                      input_path: str | None = None) -> ReleasePublished:
    """Evaluate ``partition`` and publish it (see the module docstring)."""
    run = run_gate(spec, partition=partition, input_path=input_path, keystore=keystore, ledger=ledger)
    folder = reports_folder(spec, None, partition)
    try:
        return publish_release(spec, run.evaluation, anonymized=run.anonymized.data,
                               pseudonymized=run.pseudonymized.data, ledger=ledger, keystore=keystore,
                               reports=folder)
    except Exception:
        if not run.evaluation.passed:  # a refused evaluation of every check: its evidence is kept
            keep_evaluation(spec, run.evaluation, ledger, folder)
        raise


__all__ = ["publish_partition"]
