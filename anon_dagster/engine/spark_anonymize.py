"""The anonymize step on Spark: what the engine carries out (:func:`check_supported`), the
method dispatched (global recoding, :mod:`.spark_recoding`; Mondrian, :mod:`.spark_mondrian`;
MDAV microaggregation, :mod:`.spark_microaggregation`; before it PRAM, :mod:`.spark_pram`), the
person pass after every method when published columns link a person's rows, as on pandas
(:func:`~.spark_persons.reach_k_per_person`) and an unreachable policy shown as the pandas pipeline shows it
(:func:`~anon_dagster.release.anonymize_step.anonymize`); a synthetic release made on the driver
(:mod:`.spark_synthetic`)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import DataError
from .base import UnsupportedOnEngine
from .spark_results import SparkAnonymized, SparkPseudonymized
from .spark_session import SparkDriver


def check_supported(spec: Any) -> None:
    """Refuse, in one line, what the Spark engine does not carry out yet (module docstring)."""
    an = spec.anonymization
    if an.pram is not None:
        from ..anonymize.global_method import searched_query

        column = an.pram.get("column") if isinstance(an.pram, dict) else None
        if column in spec.partition_keys or any(column in q.group_by for q in spec.utility_queries):
            # the record breaks the suppressed rows down by these columns' values before PRAM,
            # which the Spark engine's frequency tables of the perturbed table do not hold
            raise UnsupportedOnEngine(f"anonymization.pram of column {column!r}, a partition key or a utility "
                                      "query's group_by", hint="use --engine pandas")
        query = searched_query(spec) if an.method == "global" else None
        if query is not None and column == query.target:
            # the search compares the query's answers before and after PRAM, likewise
            raise UnsupportedOnEngine(f"anonymization.utility: {an.utility} whose target is the PRAM column",
                                      hint="use --engine pandas")


def anonymize(engine: SparkDriver, spec: Any, pseudonymized: SparkPseudonymized, progress: Any = None, *,
              relax: bool = True, synthetic_table: Any = None) -> SparkAnonymized:
    """The spec's anonymization on Spark; an unreachable policy as the pandas pipeline shows it:
    with ``relax``, the anonymization of :func:`~anon_dagster.release.anonymize_step.relaxed_spec`,
    measured against the full policy by the gate. A synthetic release is made on the driver
    (:mod:`.spark_synthetic`; ``synthetic_table``: its table given by a Dagster asset)."""
    from ..release.anonymize_step import run_or_relax
    from .spark_attacks import withhold_control
    from .spark_frames import DriverLimit
    from .spark_record import empty_record

    check_supported(spec)
    if spec.anonymization.method == "synthetic":
        from .spark_synthetic import synthesize

        return synthesize(engine, spec, pseudonymized, relax=relax, synthetic_table=synthetic_table)
    # policy.attacks: the control records set aside first, as on pandas (never anonymized, never published)
    pseudonymized, control = withhold_control(engine, spec, pseudonymized)
    # the record hashes the input: global recoding counts the bottom table's size over the same
    # rows first, and the digest rides on that aggregation
    engine.wants_digest(pseudonymized.df)
    perturbed = _perturbed(engine, spec, pseudonymized)

    def run(which: Any) -> SparkAnonymized:
        if isinstance(perturbed, DataError):  # inside: a PRAM the data refuses is an unreachable policy
            raise perturbed
        given, pram = perturbed
        done = _dispatch(engine, which, given, progress)
        if pram is not None:
            from ..anonymize.record import PramInfo

            done = replace(done, record=replace(done.record, pram=PramInfo.from_json(pram, prefix="pram.")))
        from .spark_persons import reach_k_per_person

        return reach_k_per_person(engine, spec, done, done.record.rows_in)

    done, unreachable = run_or_relax(spec, run, relax=relax, reraise=(UnsupportedOnEngine, DriverLimit))
    if done is None:
        rows = pseudonymized.df.count()
        done = SparkAnonymized(pseudonymized.df.limit(0), empty_record(engine, spec, pseudonymized.df), rows,
                               unreachable)
    elif unreachable is not None:
        done = replace(done, record=replace(done.record, policy_unreachable=unreachable), unreachable=unreachable)
    return done if control is None else replace(done, record=replace(done.record, attack_control=control))


def _perturbed(engine: SparkDriver, spec: Any,
               pseudonymized: SparkPseudonymized) -> tuple[SparkPseudonymized, dict[str, Any] | None] | DataError:
    """The table the method anonymizes and the record's ``pram`` entry: with ``anonymization.pram``
    the table after PRAM (:mod:`.spark_pram`), the table before it kept as the ``original`` the
    record compares with, or the DataError of a PRAM the data refuses (raised by each attempt of
    the policy, as on pandas); else the table as it is and None."""
    if spec.anonymization.pram is None:
        return pseudonymized, None
    from .spark_pram import apply_pram

    try:
        work, entry = apply_pram(engine, spec, pseudonymized.df)
    except DataError as exc:
        return exc
    return replace(pseudonymized, df=work, unperturbed=pseudonymized.df), entry


def _dispatch(engine: SparkDriver, spec: Any, pseudonymized: SparkPseudonymized, progress: Any) -> SparkAnonymized:
    """The method the spec declares, on Spark."""
    if spec.anonymization.method == "mondrian":
        from .spark_mondrian import anonymize_mondrian

        return anonymize_mondrian(engine, spec, pseudonymized, progress)
    if spec.anonymization.method == "microaggregation":
        from .spark_microaggregation import anonymize_microaggregation

        return anonymize_microaggregation(engine, spec, pseudonymized, progress)
    from .spark_recoding import anonymize_global

    return anonymize_global(engine, spec, pseudonymized, progress)


__all__ = ["anonymize", "check_supported"]
