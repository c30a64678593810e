"""The refusals of step 1 of the publication protocol (:mod:`.publication`), before anything is
written: an evaluation that did not pass, a target in the way of what the release reads or keeps
private, a release whose earlier publications belong to another population."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..spec import ReleaseSpec
from .evaluation import Evaluation
from .ledger import Ledger
from .targets import Target, TargetRefused, check_target


class PublicationRefused(UserError):
    """The evaluation did not pass: nothing was written. ``refusals`` says why, check by check."""

    def __init__(self, message: str, refusals: list[str]):
        super().__init__(message)
        self.refusals = refusals


def refuse_unless_passed(spec: ReleaseSpec, evaluation: Evaluation) -> None:
    """Raise :class:`PublicationRefused` (with the evaluation's refusals) unless it passed."""
    if not evaluation.passed:
        where = f"{spec.release} {evaluation.partition or ''}".strip()
        raise PublicationRefused(f"{where}: publication refused, nothing written: " + "; ".join(evaluation.refusals),
                                 evaluation.refusals)


def recorded_population(spec: ReleaseSpec) -> str | None:
    """The population a publication of ``spec`` is recorded under (composition, else the ε budget's)."""
    if spec.composition is not None:
        return spec.composition.population
    if spec.publication.mode == "aggregates":
        from .dp import budget_population

        return budget_population(spec)
    return None


def refuse_population_change(spec: ReleaseSpec, ledger: Ledger) -> None:
    """Refuse a release whose earlier publications in the ledger belong to another population
    than the one this spec records (``composition:`` removed or renamed): it would be published
    without being composed with them."""
    earlier = ledger.populations(spec.release)
    mine = recorded_population(spec)
    others = sorted(earlier - {mine})
    if others:
        now = "declares no composition" if mine is None else f"records population {mine!r}"
        message = (f"{spec.label}: release {spec.release!r} has publications of population {others[0]!r} in the "
                   f"ledger, but the spec {now}: it would be published without being composed with them; "
                   f"restore composition.population: {others[0]} (nothing written)")
        raise PublicationRefused(message, [message])


def checked_target(spec: ReleaseSpec, partition: str | None, ledger: Ledger, keystore: Any,
                   storage: Sequence[str | Path]) -> Target:
    """The partition's target, clear of the release's inputs, ``keystore``, ``storage`` and the
    ledger; :class:`PublicationRefused` otherwise."""
    try:
        return check_target(spec, partition, storage=storage, keystore=keystore, ledger_path=ledger.path)
    except TargetRefused as exc:
        raise PublicationRefused(str(exc), [str(exc)]) from None
