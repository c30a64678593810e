"""Reconciling the portal with the ledger after an interrupted publication.

A publication records its ledger entry as *pending* before it renames anything into place
(:mod:`anon_dagster.release.publication`); a crash can leave that entry pending. Reconciling a
pending entry looks at what is in place: when the published file is the one the entry
describes (its SHA-256), the entry is marked published and its reports are put beside it
(roll forward); otherwise the entry is abandoned and the previous publication's reports are
made to agree with the file in place (roll back). Leftover staged files are swept. The same
holds on object storage, with the store's objects for files (:mod:`.portal`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import portal
from .ledger import Ledger, Publication
from .report import build_report, render
from .targets import REPORT_FORMATS, Target, lock_folder


def report_bytes(entry: Publication | None) -> dict[str, bytes] | None:
    """The report files of a ledger entry, rebuilt from the inputs stored with it."""
    if entry is None or entry.report_inputs is None:
        return None
    report = build_report(entry.report_inputs)
    return {fmt: render(report, fmt).encode() for fmt in REPORT_FORMATS}


@dataclass
class Reconciled:
    """What reconciling did to one pending entry: ``published`` (rolled forward),
    ``abandoned`` (rolled back) or ``busy`` (its publisher is still at work: left pending)."""

    entry: int
    release: str
    partition: str
    action: str


def reconcile_pending(ledger: Ledger, release: str | None = None, *, skip: Target | None = None) -> list[Reconciled]:
    """Reconcile every pending entry (of ``release``) with its folder (see the module docstring).

    Each target is reconciled under its lock, taken without waiting: a target whose lock is held
    has a live publisher, and its entry is left pending (``busy``). ``skip``: a target the caller
    reconciles itself, under its own lock.
    """
    done: list[Reconciled] = []
    for entry in ledger.pending(release):
        if entry.published_path is None or entry.published_root is None:
            ledger.abandon(entry.id)  # nothing was to be placed
            done.append(Reconciled(entry.id, entry.release, entry.partition, "abandoned"))
            continue
        target = Target.of_entry(entry.published_root, entry.published_path, locks=lock_folder(ledger.path))
        if skip is not None and target == skip:
            continue
        with portal.open_folder(target.root, target.parts, create=False) as folder:
            if folder is None:  # the folder was never made: nothing of the entry is in place
                ledger.abandon(entry.id)
                done.append(Reconciled(entry.id, entry.release, entry.partition, "abandoned"))
                continue
            with portal.lock(folder, target.name, wait=False) as held:
                if not held:
                    done.append(Reconciled(entry.id, entry.release, entry.partition, "busy"))
                    continue
                done += reconcile_target(ledger, entry.release, entry.partition, target, folder)
    _sweep(ledger, release, skip)
    return done


def _sweep(ledger: Ledger, release: str | None, skip: Target | None) -> None:
    """Remove what publishers that died left beside the current publications (staged and kept
    files), each target under its lock, taken without waiting (a held lock: a live publisher).
    One listing per folder: a daily release has its partitions side by side."""
    by_folder: dict[tuple[Path, tuple[str, ...]], list[Target]] = {}
    for entry in ledger.entries(release=release):
        if entry.status == "published" and entry.published_root and entry.published_path:
            target = Target.of_entry(entry.published_root, entry.published_path, locks=lock_folder(ledger.path))
            if target != skip:
                by_folder.setdefault((target.root, target.parts), []).append(target)
    for (root, parts), targets in by_folder.items():
        with portal.open_folder(root, parts, create=False) as folder:
            if folder is None:
                continue
            names = set(portal.names(folder))
            for target in targets:
                prefix = f".{target.name}."
                if not any(n.startswith(prefix) and n.endswith((".tmp", ".bak")) for n in names):
                    continue
                with portal.lock(folder, target.name, wait=False) as held:
                    if held:
                        portal.clean(folder, target.name)


def reconcile_target(ledger: Ledger, release: str, partition: str | None, target: Target,
                      folder: portal.AnyFolder) -> list[Reconciled]:
    """Reconcile the pending entries of one target, its lock held (see the module docstring)."""
    done = []
    pending = [e for e in ledger.pending(release) if e.partition == (partition or "")
               and e.published_path == str(target.path)]
    in_place = portal.file_hash(folder, target.name)
    winner = next((e for e in reversed(pending) if e.file_hash is not None and e.file_hash == in_place), None)
    for entry in pending:
        if entry is winner:
            agree_reports(folder, target, entry, None)
            ledger.mark_published(entry.id)
            done.append(Reconciled(entry.id, release, entry.partition, "published"))
        else:
            agree_reports(folder, target, ledger.current(release, partition), entry)
            ledger.abandon(entry.id)
            done.append(Reconciled(entry.id, release, entry.partition, "abandoned"))
    portal.clean(folder, target.name)
    return done


def agree_reports(folder: portal.AnyFolder, target: Target, entry: Publication | None,
                   withdrawn: Publication | None) -> None:
    """Make the reports beside ``target`` those of ``entry`` (rebuilt from the ledger). With no
    entry to show, a report of ``withdrawn`` (an abandoned entry) is removed; other files are left."""
    wanted = report_bytes(entry)
    if wanted is None and entry is not None:
        return  # an entry recorded without report inputs: its reports cannot be rebuilt, left as they are
    gone = report_bytes(withdrawn) if wanted is None else None
    for fmt in REPORT_FORMATS:
        name = target.report_name(fmt)
        have = portal.read_bytes(folder, name)
        if wanted is not None and have != wanted[fmt]:
            portal.write_in_place(folder, target.name, name, wanted[fmt])
        elif wanted is None and gone is not None and have == gone[fmt]:
            portal.remove(folder, name)
    portal.sync(folder)


__all__ = ["Reconciled", "agree_reports", "reconcile_pending", "reconcile_target", "report_bytes"]
