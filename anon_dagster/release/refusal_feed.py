"""The refusals a release's publications recorded, read back from their outcomes.

Every publication records its outcome under :data:`OUTCOME_KEY` (``published`` or ``refused``);
a refused one also records the refusal's payload (:meth:`~.alerts.Refusal.payload`) under
:data:`REFUSAL_KEY`. :class:`RefusalFeed` reads those records in the order they were stored and
keeps, per published asset, the id of the last record read (its cursor, a JSON object), so that
each refusal is handed on once. A payload that lacks fields gives a refusal without them (no
failed checks, no reasons, no evaluation id), and its release and partition are the record's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import UserError
from .alerts import Refusal

OUTCOME_KEY = "outcome"
REFUSAL_KEY = "refusal"


def refusal_of(release: str, partition: str | None, outcome: Mapping[str, Any],
               run_id: str | None = None) -> Refusal | None:
    """The refusal an outcome (plain metadata values by name) records; None if it records none."""
    if outcome.get(OUTCOME_KEY) != "refused":
        return None
    payload = outcome.get(REFUSAL_KEY)
    # a field the payload lacks (or leaves empty) is the record's
    payload = {k: v for k, v in payload.items() if v is not None} if isinstance(payload, Mapping) else {}
    return Refusal.from_payload({"release": release, "partition": partition, **payload}, run_id=run_id)


def read_cursor(cursor: str | None) -> dict[str, int]:
    """The last record id read per asset, from a cursor (``None`` or empty: nothing read)."""
    if not cursor:
        return {}
    try:
        after = json.loads(cursor)
    except ValueError:
        after = None
    if not isinstance(after, dict) or not all(isinstance(v, int) for v in after.values()):
        raise UserError(f"refusal cursor: not a JSON object of record ids per asset: {cursor[:80]!r}")
    return after


class RefusalFeed:
    """The refusals found after a cursor, oldest first, and the cursor after them."""

    def __init__(self, cursor: str | None) -> None:
        self.after = read_cursor(cursor)
        self._found: list[tuple[int, Refusal]] = []

    def add(self, asset: str, record_id: int, release: str, partition: str | None,
            outcome: Mapping[str, Any] | None, run_id: str | None = None) -> None:
        """One stored record of ``asset`` (``outcome`` None: a record that is no publication)."""
        self.after[asset] = max(self.after.get(asset, 0), record_id)
        refusal = refusal_of(release, partition, outcome, run_id) if outcome is not None else None
        if refusal is not None:
            self._found.append((record_id, refusal))

    def refusals(self) -> list[Refusal]:
        return [r for _, r in sorted(self._found, key=lambda item: item[0])]

    def cursor(self) -> str:
        return json.dumps(self.after, sort_keys=True)


def handed_on(count: int) -> str:
    """Why a look at the refusals asked for no run: ``count`` refusals were handed on."""
    return f"{count} refusal(s) handed on"


__all__ = ["OUTCOME_KEY", "REFUSAL_KEY", "RefusalFeed", "handed_on", "read_cursor", "refusal_of"]
