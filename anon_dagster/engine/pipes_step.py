"""A release's gate run inside an external job (Databricks, EMR, a subprocess), reporting to Dagster
through Dagster Pipes: ``python -m anon_dagster.engine.pipes_step``.

The job is launched by a Pipes client on the Dagster side (``anon_dagster.dagster.pipes``), which
passes the step's *extras* (:mod:`anon_dagster.release.pipes_values`): the spec's path, the
partition, the engine (``pandas`` or ``spark``) and its Spark master, the ledger, and the step:

- ``checks``: runs the engine's gate (:meth:`~anon_dagster.engine.base.Engine.run_gate`) and
  reports every declared check with the name, verdict, severity and metadata the in-process
  check step yields (:func:`~anon_dagster.release.shown_outcomes.check_shown`, converted once by
  :func:`~anon_dagster.release.pipes_values.plain_metadata`), then each check's description;
- ``frequencies``: runs the gate, writes the published table's frequency table as parquet where
  the extras say (:func:`~anon_dagster.release.pipes_verification.published_frequencies`; on
  Spark the engine counts it) and reports its path, SHA-256 and every verdict as a custom
  message, for the orchestrator to re-verify.

The key store is opened from the job's own environment, as ``anon-dagster check`` opens it; no
key and no variable of the key store is ever sent. Only ``dagster_pipes`` (a small package of
its own) is needed on the job's side, imported when the step runs; Dagster itself is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import UserError
from ..release import pipes_values as pv
from .base import DEFAULT_ENGINE, DEFAULT_SPARK_MASTER


@dataclass(frozen=True)
class StepExtras:
    """The extras of one step (:mod:`anon_dagster.release.pipes_values` names them)."""

    spec: str
    step: str
    partition: str | None = None
    engine: str = DEFAULT_ENGINE
    spark_master: str = DEFAULT_SPARK_MASTER
    input: str | None = None
    ledger: str | None = None
    asset_key: str | None = None
    frequencies: str | None = None

    @classmethod
    def from_extras(cls, extras: Mapping[str, Any]) -> StepExtras:
        """The step's extras, refused in one line when the spec or the step is missing or unknown."""
        spec, step = extras.get(pv.EXTRA_SPEC), extras.get(pv.EXTRA_STEP)
        if not isinstance(spec, str) or not spec:
            raise UserError(f"the Pipes extras name no release spec (extra {pv.EXTRA_SPEC!r})")
        if step not in pv.STEPS:
            raise UserError(f"the Pipes extra {pv.EXTRA_STEP!r} is {step!r}: one of {', '.join(pv.STEPS)}")
        if step == pv.STEP_FREQUENCIES and not extras.get(pv.EXTRA_FREQUENCIES):
            raise UserError(f"the frequencies step needs the extra {pv.EXTRA_FREQUENCIES!r}: where to write the table")

        def opt(key: str) -> str | None:
            value = extras.get(key)
            return None if value is None else str(value)

        return cls(spec, step, opt(pv.EXTRA_PARTITION), opt(pv.EXTRA_ENGINE) or DEFAULT_ENGINE,
                   opt(pv.EXTRA_SPARK_MASTER) or DEFAULT_SPARK_MASTER, opt(pv.EXTRA_INPUT), opt(pv.EXTRA_LEDGER),
                   opt(pv.EXTRA_ASSET), opt(pv.EXTRA_FREQUENCIES))


def open_state(spec: Any, ledger_path: str | None) -> tuple[Any, Any]:
    """The key store and the ledger the gate needs, opened as ``anon-dagster check`` opens them."""
    from ..pseudonymize import open_keystore
    from ..release.ledger import open_ledger
    from ..release.pipeline import needs_keystore

    wants_ledger = ledger_path is not None or spec.composition is not None or spec.publication.mode == "aggregates"
    keystore = open_keystore() if needs_keystore(spec) or wants_ledger else None
    return keystore, open_ledger(ledger_path, keystore) if wants_ledger else None


def shown_checks(evaluation: Any) -> list[tuple[str, Any]]:
    """Every check of ``evaluation`` with its verdict as the in-process checks step shows it."""
    from ..release.shown_outcomes import check_shown

    return [(c.name, check_shown(c, evaluation)) for c in evaluation.checks]


def published_frequency_table(engine: Any, spec: Any, run: Any) -> Any:
    """The published table's frequency table (``count`` and the first row's position) of a gate
    run: counted by Spark on the Spark engine, by pandas on the pandas engine."""
    from ..release.pipes_verification import (
        FIRST_ROW,
        frequency_columns,
        published_frequencies,
        with_categories,
    )

    anonymized = run.anonymized
    if getattr(engine, "name", "") != "spark":
        return published_frequencies(spec, anonymized.data)
    from .spark_frames import FIRST_COLUMN

    freq, _ = engine.frequencies(anonymized.df, frequency_columns(spec, anonymized.df),
                                 what="the published frequency table")
    return with_categories(freq.rename(columns={FIRST_COLUMN: FIRST_ROW}), anonymized.categories)


def run_step(pipes: Any, extras: StepExtras) -> None:
    """Run one step and report it on ``pipes`` (an open ``PipesContext``)."""
    from ..release.pipes_verification import write_frequencies
    from ..spec import load_spec
    from .choose import open_engine

    spec = load_spec(extras.spec)
    keystore, ledger = open_state(spec, extras.ledger)
    engine = open_engine(extras.engine, spark_master=extras.spark_master)
    try:
        run = engine.run_gate(spec, partition=extras.partition, input_path=extras.input, keystore=keystore,
                              ledger=ledger)
        evaluation = run.evaluation
        if extras.step == pv.STEP_CHECKS:
            shown = shown_checks(evaluation)
            for name, check in shown:
                pipes.report_asset_check(**pv.check_message(name, check, extras.asset_key))
            pipes.report_custom_message(pv.custom_message(
                pv.CHECKS_MESSAGE, evaluation=evaluation.id, descriptions={name: c.description for name, c in shown}))
            return
        assert extras.frequencies is not None  # from_extras refuses the step without it
        written = write_frequencies(published_frequency_table(engine, spec, run), extras.frequencies)
        pipes.report_custom_message(pv.custom_message(
            pv.FREQUENCIES_MESSAGE, path=str(written.path), sha256=written.sha256, rows=written.rows,
            evaluation=evaluation.id, checks=[c.to_json() for c in evaluation.checks]))
    finally:
        engine.close()


def main() -> int:
    """Open Dagster Pipes, run the step its extras name, report it; 0 once reported."""
    from dagster_pipes import open_dagster_pipes

    with open_dagster_pipes() as pipes:
        run_step(pipes, StepExtras.from_extras(pipes.extras))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
