"""One partition taken from its source to its publication outside Dagster (``anon-dagster publish``).

The same steps as the Dagster assets, from the same functions, on the engine the caller
chooses: the gate (the engine's ``run_gate``: :func:`~anon_dagster.release.pipeline.run_gate` on
pandas), then, for a refused evaluation, its evidence
kept (:func:`~anon_dagster.release.kept_evaluation.keep_evaluation`) and
:class:`~anon_dagster.release.refusals.PublicationRefused` raised; for a passing one, the
publication (:func:`~anon_dagster.release.publication.publish_release`, which waits for the
approvals ``approval.required`` asks for: :class:`~anon_dagster.release.governance.AwaitingApproval`).
"""

from __future__ import annotations

from typing import Any

from ..engine.base import Engine
from ..engine.pandas_engine import PandasEngine
from ..spec import ReleaseSpec
from .ledger import Ledger
from .publication import ReleasePublished, keep_evaluation, publish_release, reports_folder


def publish_partition(spec: ReleaseSpec, *, partition: str | None, ledger: Ledger, keystore: Any,
                      input_path: str | None = None, engine: Engine | None = None) -> ReleasePublished:
    """Evaluate ``partition`` on ``engine`` (default: pandas) and publish it (see the module
    docstring); on Spark the published rows are written by Spark, never read to the driver
    whole, and the engine's scratch folder is kept clear of the target."""
    engine = engine or PandasEngine()
    run = engine.run_gate(spec, partition=partition, input_path=input_path, keystore=keystore, ledger=ledger)
    given = engine.publication_inputs(spec, run, keystore=keystore, ledger=ledger)
    folder = reports_folder(spec, None, partition)
    scratch = getattr(engine, "scratch", None)
    try:
        return publish_release(spec, run.evaluation, anonymized=given.anonymized, pseudonymized=given.pseudonymized,
                               ledger=ledger, keystore=keystore, storage=[scratch] if scratch else (),
                               reports=folder, aggregates_of=given.aggregates_of, rows=given.rows)
    except Exception:
        if not run.evaluation.passed:  # a refused evaluation of every check: its evidence is kept
            keep_evaluation(spec, run.evaluation, ledger, folder)
        raise


__all__ = ["publish_partition"]
