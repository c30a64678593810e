"""Publishing an evaluated release, or keeping the evidence of a refused one.

The publication protocol, written once for both kinds of release (rows, DP aggregates):

1. refuse unless the evaluation passes, unless the target stays clear of everything the
   release reads or keeps private (:mod:`.targets`), and unless the release keeps the
   population its earlier publications belong to (nothing is written);
2. take the target's lock (one publisher of a partition at a time) and reconcile what an
   earlier publisher of it left pending (below);
3. stage the table and its risk report (md, html, json) under unique hidden names beside the
   target (0600), fsync them and the folder;
4. record the entry in the ledger as **pending** (one transaction: the entry with the SHA-256
   of the staged file, the class assignment keyed by linkage pseudonyms, the report inputs;
   for DP aggregates the ε spend);
5. keep the files being replaced as hard links, rename the table into place, then the three
   reports (each 0644), fsync the folder;
6. mark the entry **published** (it supersedes the previous one), remove the kept links.

*Reconciling* a pending entry (step 2, :func:`reconcile_pending`, ``anon-dagster ledger
reconcile``) makes the ledger and the folder agree, rolling forward or back by what is in
place: if the file at the target has the pending entry's SHA-256, its data reached the portal,
so the entry is marked published and its reports are rewritten from the ledger (roll forward);
otherwise the table never took its place, so the entry is marked abandoned and the reports are
rewritten from the current publication, if any (roll back). Either way the leftovers are removed.

A failure (a full disk, a lost ledger lock) at any step before 6 removes the staged files,
puts the kept files back and abandons the pending entry: the folder and the current
publication are as they were. A process killed at any step leaves a pending entry at worst,
which the next publication of the partition reconciles; until then it counts for composition
and the ε budget (fail safe: its data may already be in place).

A refused evaluation is recorded in the ledger as failed (it never counts for composition) and
keeps its report in the partition's report folder (owner-only): :func:`keep_evaluation` keeps
the evidence of an evaluation of every check, whichever its verdict, and :func:`publish_release`
publishes a passing one as the spec's ``publication.mode`` says, with the figures a reviewer
reads beside it. The Dagster assets call these two; they decide nothing themselves.

This module holds the protocol's steps 2–6 and the two publications (rows, aggregates); the
refusals of step 1 are in :mod:`.refusals`, the evidence of an evaluation in
:mod:`.kept_evaluation`, the report folder and report files in :mod:`.report_files` (their
names stay importable from here).

*One report per evaluation*: a refused evaluation's report is in the partition's report folder
(``risk_report.md|html|json``, beside the transformation record); a passing evaluation's report
is its publication's (``<stem>.report.md|html|json`` beside the published file), written by the
publication. So a passing evaluation keeps no report in the report folder, and it removes the
one an earlier evaluation of the partition left there, as does its publication.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..byte_sink import Produce
from ..io import plain_json
from ..spec import ReleaseSpec
from . import portal
from .evaluation import Evaluation, EvidenceTable
from .gate import publishable_view
from .kept_evaluation import Kept, keep_evaluation, record_refusal
from .ledger import Ledger, RecordOutcome, dataset_hash
from .publish import record_evaluation
from .published_rows import PublishedRows, frame_rows, table_bytes
from .reconcile import Reconciled, agree_reports, reconcile_pending, reconcile_target
from .refusals import (
    PublicationRefused,
    checked_target,
    recorded_population,
    refuse_population_change,
    refuse_unless_passed,
)
from .report import build_report, render
from .report_files import (
    RECORD_FILE,
    REPORT_STEM,
    evaluation_report_inputs,
    evaluation_report_path,
    kept_report,
    publication_target,
    remove_kept_report,
    report_base,
    reports_folder,
    write_evaluation_report,
    write_record,
    write_report_files,
)
from .targets import REPORT_FORMATS, Target

if TYPE_CHECKING:
    from .dp import DPAggregates

# Test hook: called with the name of each step of the protocol once it is done ("staged",
# "pending", "kept", "data-placed", "report-placed:md", ..., "published", "cleaned"). Tests
# set it in a child process to kill it there; production leaves it None.
_step_hook: Callable[[str], None] | None = None


def _step(name: str) -> None:
    if _step_hook is not None:
        _step_hook(name)


@dataclass
class Published:
    """What a publication wrote: the file, its ledger entry and its report; ``dtypes`` is each
    column's dtype as a reader of the file gets it (a row publication's; none for aggregates)."""

    path: Path
    rows: int
    columns: list[str]
    data_hash: str
    ledger_entry: int | None
    ledger_action: str
    report_path: Path
    dtypes: dict[str, str] = field(default_factory=dict)


@dataclass
class ReleasePublished:
    """A publication made as the spec's ``publication.mode`` says, with the figures shown beside it.

    ``class_size_histogram`` is a row publication's; ``epsilon`` and ``expected_error`` (each
    aggregate's expected error under the noise drawn) an aggregates publication's.
    """

    published: Published
    mode: str
    evaluation: str  # the id of the evaluation published
    class_size_histogram: EvidenceTable | None = None
    epsilon: float | None = None
    expected_error: dict[str, Any] | None = None

    def figures(self) -> dict[str, Any]:
        """The figures by name, in plain values: ``path``; ``rows``, ``columns`` and
        ``class_size_histogram`` (rows) or ``cells``, ``epsilon`` and ``expected_error``
        (aggregates); ``data_hash``, ``ledger_entry``, ``ledger_action``, ``report``, ``evaluation``."""
        done = self.published
        if self.mode == "aggregates":
            shape: dict[str, Any] = {"cells": done.rows, "epsilon": self.epsilon, "expected_error": self.expected_error}
        else:
            shape = {"rows": done.rows, "columns": done.columns, "class_size_histogram": self.class_size_histogram}
        return {"path": done.path, **shape, "data_hash": done.data_hash, "ledger_entry": done.ledger_entry,
                "ledger_action": done.ledger_action, "report": done.report_path, "evaluation": self.evaluation}


def publish(spec: ReleaseSpec, evaluation: Evaluation, anonymized: pd.DataFrame, ledger: Ledger, *,
            keystore: Any = None, storage: Sequence[str | Path] = (),
            approval: dict[str, Any] | None = None, rows: PublishedRows | None = None) -> Published:
    """Publish the rows of a passing evaluation (see the module docstring); PublicationRefused otherwise.

    ``anonymized`` is the table the evaluation judged; its published columns are written, or
    ``rows``, the same rows as an engine writes them (the Spark engine's, streamed).
    ``keystore`` and ``storage`` (the IO manager's folders) are kept clear of the target, with
    the release's inputs. ``approval`` (:func:`~.governance.admit`'s) goes into the report.
    """
    refuse_unless_passed(spec, evaluation)
    target = checked_target(spec, evaluation.partition, ledger, keystore, storage)
    refuse_population_change(spec, ledger)
    out = rows or frame_rows(publishable_view(anonymized)[list(spec.published_columns)])
    if out.names != list(spec.published_columns):
        raise ValueError(f"{spec.label}: the rows to publish hold {out.names}, not {list(spec.published_columns)}")
    inputs = evaluation_report_inputs(spec, evaluation, published_path=str(target.path),
                                      report_path=str(target.report_path()))
    if approval is not None:  # only with approval.required: other reports' inputs are as they were
        inputs["approval"] = approval
    report = build_report(_stored(inputs))
    if not report["verdict"]["publishable"]:  # the report judges the same checks: a second opinion
        raise PublicationRefused(f"{spec.release} {evaluation.partition or ''}: the report's verdict is "
                                 f"{report['verdict']['verdict']!r}: nothing written", [report["verdict"]["verdict"]])
    outcome = _place(ledger, spec.release, evaluation.partition, target, lambda sink: out.write(sink, target.name),
                     inputs, lambda file_hash: record_evaluation(
                         ledger, spec, inputs, assignment=evaluation.assignment, rows=out.rows,
                         report_path=str(target.report_path()), pending=_placement(target, file_hash))[0])
    return Published(target.path, out.rows, out.names, inputs["data_hash"], outcome.publication_id,
                     outcome.action, target.report_path(), out.dtypes())


# The aggregates of a release and their report entry, as :func:`~.publish.dp_release` returns them.
AggregatesRelease = Callable[[], "tuple[DPAggregates, dict[str, Any]]"]


def publish_aggregates(spec: ReleaseSpec, evaluation: Evaluation, pseudonymized: pd.DataFrame,
                       ledger: Ledger, *, keystore: Any = None, storage: Sequence[str | Path] = (),
                       approval: dict[str, Any] | None = None,
                       aggregates_of: AggregatesRelease | None = None) -> tuple[Published, dict[str, Any]]:
    """Publish the noisy aggregates of a passing ``publication.mode: aggregates`` evaluation.

    The budget was checked by the evaluation; the noise is drawn once, here, and the budget is
    spent with the pending ledger entry in one transaction (refused again if another release
    spent it meanwhile). ``aggregates_of`` computes the aggregates and their report entry where
    the rows are (the Spark engine's :func:`~anon_dagster.engine.spark_aggregates.dp_release`);
    it is called at the point the pandas ``dp_release`` of ``pseudonymized`` is, the default, so
    a refusal before it computes nothing. Returns the publication and the aggregates' expected errors.
    """
    from .dp import epsilon_spend
    from .publish import dp_release

    refuse_unless_passed(spec, evaluation)
    target = checked_target(spec, evaluation.partition, ledger, keystore, storage)
    refuse_population_change(spec, ledger)
    aggregates, dp_info = (aggregates_of() if aggregates_of is not None
                           else dp_release(spec, publishable_view(pseudonymized), ledger))
    inputs = evaluation_report_inputs(spec, evaluation, published_path=str(target.path),
                                      report_path=str(target.report_path()), dp=dp_info,
                                      data_hash=dataset_hash(aggregates.table))
    if approval is not None:
        inputs["approval"] = approval
    outcome = _place(ledger, spec.release, evaluation.partition, target,
                     lambda sink: sink.write(table_bytes(aggregates.table, target.name)), inputs,
                     lambda file_hash: record_evaluation(
                         ledger, spec, inputs, rows=len(aggregates.table), report_path=str(target.report_path()),
                         epsilon_spend=epsilon_spend(spec), pending=_placement(target, file_hash))[0])
    published = Published(target.path, len(aggregates.table), list(aggregates.table.columns), inputs["data_hash"],
                          outcome.publication_id, outcome.action, target.report_path())
    return published, plain_json(aggregates.measures)


def publish_release(spec: ReleaseSpec, evaluation: Evaluation, *, anonymized: pd.DataFrame,
                    pseudonymized: pd.DataFrame, ledger: Ledger, keystore: Any = None,
                    storage: Sequence[str | Path] = (), reports: Path | None = None,
                    run_id: str | None = None, aggregates_of: AggregatesRelease | None = None,
                    rows: PublishedRows | None = None) -> ReleasePublished:
    """Publish a passing evaluation as ``publication.mode`` says: the rows of ``anonymized``
    (:func:`publish`), or the noisy aggregates of ``pseudonymized`` (:func:`publish_aggregates`);
    PublicationRefused otherwise, nothing written. ``keystore`` and ``storage`` are kept clear
    of the target, with the release's inputs. Once published, the report an earlier evaluation
    left in the partition's report folder (``reports``, default :func:`reports_folder` without
    ``reports_dir``) is removed: the publication's report is the one. ``aggregates_of`` is
    :func:`publish_aggregates`'s (the aggregates computed where the rows are), ``rows``
    :func:`publish`'s (the rows written where they are; ``anonymized`` then needs only the rows
    of erased persons, which are refused).

    With ``approval.required`` (:mod:`.governance`), a passing evaluation is published only once
    approved (its report states by whom, when and why): until then
    :class:`~.governance.AwaitingApproval` is raised, nothing published, the evaluation recorded
    in the ledger (with ``run_id``, the orchestrator's run, when given) and its report written to
    ``reports``; a rejection is a refusal."""
    from .governance import admit
    from .governance.suppression import erased_rows

    erased = erased_rows(spec, [anonymized, pseudonymized], keystore)
    if erased:  # erased after this run pseudonymized: it must not publish them
        reason = (f"{spec.label}: {erased} row(s) of persons erased since this run read its data: run the "
                  "partition again, it leaves them out")
        raise PublicationRefused(reason, [reason])
    approval = admit(spec, evaluation, ledger, keystore=keystore, reports=reports, run_id=run_id)
    if spec.publication.mode == "aggregates":
        done, errors = publish_aggregates(spec, evaluation, pseudonymized, ledger, keystore=keystore, storage=storage,
                                          approval=approval, aggregates_of=aggregates_of)
        out = ReleasePublished(done, "aggregates", evaluation.id, epsilon=float(spec.publication.epsilon or 0),
                               expected_error=errors)
    else:
        done = publish(spec, evaluation, anonymized, ledger, keystore=keystore, storage=storage, approval=approval,
                       rows=rows)
        out = ReleasePublished(done, "rows", evaluation.id, class_size_histogram=evaluation.class_size_table())
    try:
        remove_kept_report(reports if reports is not None else reports_folder(spec, None, evaluation.partition))
    except OSError:  # the publication stands; an older evaluation's report says its date
        pass
    return out


def _stored(inputs: dict[str, Any]) -> dict[str, Any]:
    """The inputs as the ledger gives them back (a JSON round trip), so the staged report is
    byte for byte the one rebuilt from the ledger."""
    return json.loads(json.dumps(inputs))


def _placement(target: Target, file_hash: str) -> dict[str, str]:
    return {"published_path": str(target.path), "published_root": str(target.root), "file_hash": file_hash}


def _place(ledger: Ledger, release: str, partition: str | None, target: Target, data: Produce,
           inputs: dict[str, Any], record: Callable[[str], RecordOutcome]) -> RecordOutcome:
    """Steps 2–6 of the protocol (see the module docstring); ``data`` streams the table's file."""
    try:
        return _place_locked(ledger, release, partition, target, data, inputs, record)
    except portal.PortalError as exc:  # a symlink or a non-file in the way: refused before any write
        raise PublicationRefused(str(exc), [str(exc)]) from None


def _place_locked(ledger: Ledger, release: str, partition: str | None, target: Target, data: Produce,
                  inputs: dict[str, Any], record: Callable[[str], RecordOutcome]) -> RecordOutcome:
    reconcile_pending(ledger, release, skip=target)
    report = build_report(_stored(inputs))
    reports = {fmt: render(report, fmt).encode() for fmt in REPORT_FORMATS}
    with portal.open_folder(target.root, target.parts, create=True) as folder:
        assert folder is not None  # created
        with portal.lock(folder, target.name):
            for name in (target.name, *(target.report_name(f) for f in REPORT_FORMATS)):
                portal.check_regular(folder, name)
            reconcile_target(ledger, release, partition, target, folder)
            current = ledger.current(release, partition)
            if (current is not None and current.data_hash == inputs["data_hash"]
                    and current.file_hash is not None and portal.file_hash(folder, target.name) == current.file_hash):
                agree_reports(folder, target, current, None)  # same data in place: only the reports are made sure of
                return RecordOutcome("unchanged", current.id)
            staged: dict[str, str] = {}
            try:
                staged["data"], file_hash = portal.stage_with(folder, target.name, "data", data)
                for fmt in REPORT_FORMATS:
                    staged[fmt] = portal.stage(folder, target.name, fmt, reports[fmt])
                portal.sync(folder)
                _step("staged")
                pending = record(file_hash)
            except BaseException:
                for name in staged.values():
                    portal.remove(folder, name)
                raise
            _step("pending")
            return _swap(ledger, folder, target, pending.publication_id, staged)


def _swap(ledger: Ledger, folder: portal.Folder, target: Target, entry: int, staged: dict[str, str]) -> RecordOutcome:
    """Steps 5–6: the staged files renamed into place, the entry marked published; on any
    failure the replaced files are put back and the entry abandoned."""
    finals = {"data": target.name, **{fmt: target.report_name(fmt) for fmt in REPORT_FORMATS}}
    kept: dict[str, str | None] = {}
    placed: list[str] = []
    try:
        for part, final in finals.items():
            name = f".{target.name}.{entry}.{part}.bak"
            kept[part] = name if portal.backup(folder, final, name) else None
        portal.sync(folder)
        _step("kept")
        for part in finals:  # the data first: once it is in place the entry rolls forward
            portal.place(folder, staged[part], finals[part])
            placed.append(part)
            _step("data-placed" if part == "data" else f"report-placed:{part}")
        portal.sync(folder)
        outcome = ledger.mark_published(entry)
    except BaseException:
        for part in reversed(placed):  # the data last: until then the entry would roll forward
            portal.restore(folder, kept.get(part), finals[part])
        for name in (*staged.values(), *(k for k in kept.values() if k)):
            portal.remove(folder, name)
        portal.sync(folder)
        try:
            ledger.abandon(entry)
        except Exception:  # noqa: BLE001 - still pending: the next publication reconciles it with the folder
            pass
        raise
    _step("published")
    for name in kept.values():
        if name:
            portal.remove(folder, name)
    portal.sync(folder)
    _step("cleaned")
    return outcome


__all__ = [
    "RECORD_FILE", "REPORT_STEM", "AggregatesRelease", "Kept", "PublicationRefused", "Published", "PublishedRows",
    "Reconciled", "ReleasePublished",
    "evaluation_report_inputs", "evaluation_report_path", "keep_evaluation", "kept_report", "publication_target",
    "publish", "publish_aggregates", "publish_release", "reconcile_pending", "record_refusal", "recorded_population",
    "refuse_population_change", "remove_kept_report", "report_base", "reports_folder", "table_bytes",
    "write_evaluation_report", "write_record", "write_report_files",
]
