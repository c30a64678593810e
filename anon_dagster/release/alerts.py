"""Telling someone that a publication was refused: the refusal as plain data, and its webhook post.

A refusal (:class:`Refusal`) says which release and partition, which checks failed and why (one
line per failed check), the evaluation's id and the run: never a value of the data, never a
path of this machine (a reason that names a file has the path replaced by ``<path>``).

:func:`post_refusal` posts it as JSON to a webhook. Delivery is best effort: a timeout, a refused
connection or an error status comes back as one line saying why (never the URL, which often
holds a token), for the caller to report as one warning; the refusal itself stands.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# an absolute path of this machine (two components at least, not inside a word: "k1*k2/N" stays)
_PATH = re.compile(r"(?<![\w.:/])(?:~|[A-Za-z]:)?/(?:[^\s'\"/]+/)+[^\s'\",;)]*")


def without_paths(text: str) -> str:
    """``text`` with every absolute path replaced by ``<path>``."""
    return _PATH.sub("<path>", text)


def reason_lines(refusals: Sequence[str]) -> list[str]:
    """One line per refusal (``"<check>: <first line of its summary>"``), without paths."""
    return [without_paths(r.strip().splitlines()[0]) if r.strip() else "" for r in refusals]


@dataclass(frozen=True)
class Refusal:
    """A refused publication, as an alert tells it (no personal data, no paths)."""

    release: str
    partition: str | None
    failed_checks: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    evaluation_id: str | None = None
    run_id: str | None = None

    def payload(self) -> dict[str, Any]:
        """The JSON object posted: release, partition, failed_checks, reasons, evaluation_id, run_id."""
        return asdict(self)

    @classmethod
    def from_payload(cls, payload: dict[str, Any], run_id: str | None = None) -> Refusal:
        """The refusal a payload holds (``run_id``, when given, replaces the payload's)."""
        return cls(release=str(payload["release"]), partition=payload.get("partition"),
                   failed_checks=[str(c) for c in payload.get("failed_checks") or []],
                   reasons=[str(r) for r in payload.get("reasons") or []],
                   evaluation_id=payload.get("evaluation_id"), run_id=run_id or payload.get("run_id"))


def post_refusal(url: str | None, refusal: Refusal, timeout_seconds: float = 5.0) -> str | None:
    """Post ``refusal`` as JSON to ``url`` within ``timeout_seconds``; returns None when delivered
    (or when no URL is given), else one line saying why not (never the URL). Only ``http`` and
    ``https`` URLs are used."""
    if not url:
        return None
    if not url.lower().startswith(("http://", "https://")):
        return "the webhook URL is not an http(s) URL"
    request = urllib.request.Request(
        url, data=json.dumps(refusal.payload()).encode(), method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "anon_dagster"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_seconds) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        return f"the webhook answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return f"the webhook could not be reached ({type(exc).__name__}: {without_paths(str(reason))[:120]})"
    return None if 200 <= status < 300 else f"the webhook answered HTTP {status}"


__all__ = ["Refusal", "post_refusal", "reason_lines", "without_paths"]
