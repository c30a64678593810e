"""The checks step and the publication step of a release partition, whatever runs them.

:func:`check_step` evaluates the declared checks of the stored tables (all of them, or a
selection) and, for a complete evaluation, keeps its evidence (a refused one's report beside the
transformation record) and remembers it (:mod:`.evaluation_memo`) for the publication step.

:func:`publication_step` decides the partition's outcome: under the population's lock
(:func:`~.population_order.population_lock`) it takes up the checks' evaluation of these very
tables against this very ledger state, or evaluates the gate again, and publishes only a passing
evaluation (:func:`~.publication.publish_release`). A refusal writes nothing: its reasons are
those of :class:`~.refusals.PublicationRefused`, and a refused evaluation keeps its evidence.

The outcome is one of three (:data:`PUBLISHED`, :data:`REFUSED`, :data:`AWAITING`): with
``approval.required``, a passing evaluation not yet approved is *awaiting approval* — neither
published (nothing is written to the target) nor refused (its checks passed): the evaluation is
recorded in the ledger as awaiting, its report is kept for the approvers, and the outcome
carries the command that approves it (:class:`~.governance.AwaitingApproval` turned into a value).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..spec import ReleaseSpec
from . import evaluation_memo
from .alerts import Refusal, reason_lines
from .evaluation import Evaluation
from .governance import AwaitingApproval
from .ledger import Ledger
from .population_order import population_lock
from .publication import (
    AggregatesRelease,
    PublicationRefused,
    ReleasePublished,
    keep_evaluation,
    kept_report,
    publish_release,
    reports_folder,
)
from .published_rows import PublishedRows
from .stored import evaluate_stored


@dataclass
class CheckStep:
    """The checks' evaluation; ``report`` is a refused complete evaluation's kept report (None
    otherwise), ``problem`` one line saying why its evidence could not be kept."""

    evaluation: Evaluation
    report: Path | None = None
    problem: str | None = None

    @property
    def warning(self) -> str | None:
        """The line to log when the evaluation's evidence could not be kept (None: nothing to say)."""
        return not_kept(self.problem)


def not_kept(problem: str | None) -> str | None:
    """The line saying why an evaluation's evidence could not be kept (None without a problem)."""
    return f"the evaluation's report could not be kept: {problem}" if problem else None


def check_step(spec: ReleaseSpec, *, anonymized: Any, pseudonymized: Any, raw: Any,
               ledger: Ledger, partition: str | None, only: set[str], declared: Collection[str],
               reports_dir: str | None = None, digests: Callable[[], Sequence[str]] | None = None,
               evaluate: Callable[[], Evaluation] | None = None) -> CheckStep:
    """Evaluate the checks named in ``only`` of the stored tables. When ``only`` is every
    ``declared`` check, the evaluation is complete: it is remembered for the publication step
    (if the ledger did not change meanwhile) and its evidence is kept.

    ``digests()`` (default: :func:`~.evaluation_memo.table_digests` of the pandas tables) and
    ``evaluate()`` (default: :func:`~.stored.evaluate_stored` of them, the checks of ``only``)
    are the engine's: the same bookkeeping whatever evaluates the tables."""
    complete = only == set(declared)
    if complete:  # the tables and the ledger as they are before the evaluation
        tables = tuple(digests()) if digests is not None else evaluation_memo.table_digests(
            anonymized=anonymized, pseudonymized=pseudonymized, raw=raw)
        before = evaluation_memo.evaluation_key(spec, partition, tables, ledger)
    evaluation = evaluate() if evaluate is not None else evaluate_stored(
        spec, anonymized, pseudonymized=pseudonymized, raw=raw, ledger=ledger, partition=partition, only=only)
    if not complete:
        return CheckStep(evaluation)
    if before == evaluation_memo.evaluation_key(spec, partition, tables, ledger):  # the ledger did not change
        evaluation_memo.remember(before, evaluation)
    kept = keep_evaluation(spec, evaluation, ledger, reports_folder(spec, reports_dir, partition))
    return CheckStep(evaluation, kept.report, kept.problem)


def refusal_of(spec: ReleaseSpec, partition: str | None, evaluation: Evaluation, refusals: list[str],
               run_id: str | None) -> Refusal:
    """The refusal of a publication: the failed checks of the re-verification and one reason per
    refusal (the evaluation's refusals, or why the publication itself was refused)."""
    failed = [c.name for c in evaluation.checks if c.blocks]
    return Refusal(spec.release, partition, failed, reason_lines(refusals), evaluation.id, run_id)


PUBLISHED = "published"
REFUSED = "refused"
AWAITING = "awaiting approval"


@dataclass(frozen=True)
class Awaiting:
    """A passing evaluation awaiting approval: nothing published.

    ``command`` is the command an approver runs (:func:`~.governance.approve_command`),
    ``approvals`` and ``needed`` how many approvals count and how many are required, ``entry``
    the ledger event recording the evaluation, ``message`` the one-paragraph statement of it.
    """

    command: str
    approvals: int
    needed: int
    entry: int
    message: str


@dataclass
class PublicationStep:
    """The outcome of a partition: ``published`` (what was written), ``awaiting`` (passed, not
    yet approved: nothing written) or ``refusals`` (why not).

    ``report`` is where the whole evidence is (the publication's report, an awaiting or refused
    evaluation's kept one); ``problem`` says why a refused evaluation's evidence could not be kept.
    """

    spec: ReleaseSpec
    partition: str | None
    evaluation: Evaluation
    published: ReleasePublished | None = None
    refusals: list[str] | None = None
    report: Path | None = None
    problem: str | None = None
    columns: list[tuple[str, str]] | None = None  # the published columns and their dtypes
    awaiting: Awaiting | None = None

    @property
    def outcome(self) -> str:
        """:data:`PUBLISHED`, :data:`AWAITING` or :data:`REFUSED`."""
        if self.published is not None:
            return PUBLISHED
        return AWAITING if self.awaiting is not None else REFUSED

    @property
    def refused(self) -> bool:
        return self.outcome == REFUSED

    @property
    def warning(self) -> str | None:
        """The line to log when a refused evaluation's evidence could not be kept (:func:`not_kept`)."""
        return not_kept(self.problem) if self.refused else None

    @property
    def reason_lines(self) -> list[str]:
        """The first line of each refusal, empty ones left out."""
        return [line for r in self.refusals or [] for line in r.strip().splitlines()[:1]]

    def refusal(self, run_id: str | None) -> Refusal:
        """The refusal as alerts and the refusal sensor carry it (:func:`refusal_of`)."""
        return refusal_of(self.spec, self.partition, self.evaluation, list(self.refusals or []), run_id)


def published_columns(done: ReleasePublished) -> list[tuple[str, str]]:
    """The published columns with the dtype a reader of the file gets (``unknown`` for an
    aggregate's, whose publication records none)."""
    return [(c, done.published.dtypes.get(c, "unknown")) for c in done.published.columns]


@dataclass(frozen=True)
class PublicationInputs:
    """What :func:`~.publication.publish_release` reads of the stored tables, as an engine hands
    them: ``anonymized`` and ``pseudonymized`` as pandas (on Spark only the rows of erased
    persons), and the engine's published ``rows`` and ``aggregates_of`` (None: from the tables)."""

    anonymized: pd.DataFrame
    pseudonymized: pd.DataFrame
    rows: PublishedRows | None = None
    aggregates_of: AggregatesRelease | None = None


def publication_step(spec: ReleaseSpec, *, anonymized: Any, pseudonymized: Any, raw: Any,
                     ledger: Ledger, partition: str | None, keystore: Any = None,
                     storage: Sequence[str | Path] = (), reports_dir: str | None = None,
                     run_id: str | None = None, digests: Callable[[], Sequence[str]] | None = None,
                     evaluate: Callable[[], Evaluation] | None = None,
                     inputs: Callable[[Evaluation], PublicationInputs] | None = None) -> PublicationStep:
    """Decide and, when the gate passes (and, with ``approval.required``, once approved), publish
    the partition (see the module docstring).

    ``keystore`` and ``storage`` (the folders intermediate tables are stored in) are kept clear
    of the target; ``run_id`` (the orchestrator's run) is recorded with an evaluation that
    awaits approval. Raises TimeoutError (one line naming the release and partition) when another
    publication of the population holds its lock too long.

    ``digests()``, ``evaluate()`` (as :func:`check_step`'s) and ``inputs(evaluation)`` (default:
    the pandas tables themselves) are the engine's: the same lock, memo, approval and refusal
    handling whatever holds the rows.
    """
    reports = reports_folder(spec, reports_dir, partition)
    try:
        with population_lock(spec, ledger.path):
            tables = tuple(digests()) if digests is not None else evaluation_memo.table_digests(
                anonymized=anonymized, pseudonymized=pseudonymized, raw=raw)
            key = evaluation_memo.evaluation_key(spec, partition, tables, ledger)
            evaluation = evaluation_memo.recall(key) or (evaluate() if evaluate is not None else evaluate_stored(
                spec, anonymized, pseudonymized=pseudonymized, raw=raw, ledger=ledger, partition=partition))
            given = inputs(evaluation) if inputs is not None else PublicationInputs(anonymized, pseudonymized)
            try:
                done = publish_release(spec, evaluation, anonymized=given.anonymized, pseudonymized=given.pseudonymized,
                                       ledger=ledger, keystore=keystore, storage=storage, reports=reports,
                                       run_id=run_id, aggregates_of=given.aggregates_of, rows=given.rows)
            except AwaitingApproval as exc:  # passed, not approved yet: its report is kept for the approvers
                return PublicationStep(spec, partition, evaluation, report=exc.report_path,
                                       awaiting=Awaiting(exc.command, exc.approvals, exc.needed, exc.entry, str(exc)))
            except PublicationRefused as exc:
                problem = None
                if not evaluation.passed:  # a refused evaluation of every check: its evidence is kept
                    problem = keep_evaluation(spec, evaluation, ledger, reports).problem
                return PublicationStep(spec, partition, evaluation, refusals=list(exc.refusals),
                                       report=kept_report(spec, reports_dir, partition), problem=problem)
    except TimeoutError as exc:
        raise TimeoutError(f"{spec.release} {partition or ''}: {exc}") from None
    return PublicationStep(spec, partition, evaluation, published=done, report=done.published.report_path,
                           columns=published_columns(done))


__all__ = ["AWAITING", "PUBLISHED", "REFUSED", "Awaiting", "CheckStep", "PublicationInputs", "PublicationStep", "check_step", "not_kept", "publication_step",
           "published_columns", "refusal_of"]
