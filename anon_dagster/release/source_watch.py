"""Which partitions to run when a release's local source files appear or change.

The cursor is a JSON object remembering each watched file's signature (``<mtime_ns>:<size>``):

- unpartitioned: ``{"file": sig}``; one run per version of the file;
- a source path with ``{partition}``: ``{"partitions": {key: sig}}``; one run for each partition
  whose file appeared or changed;
- one file for every partition: ``{"file": sig, "requested": [keys]}``; when the file appears or
  changes, a run for each partition not yet run and for the latest one (its period is the one
  most likely to have been filled in); a partition that begins to exist (its period ended) gets
  its run too.

Partitions are asked for in the order of ``keys``, as an ordered release publishes them. A run's
key is ``<partition>@<signature>``, so one version of a file is run once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from ..partitions import UNPARTITIONED
from ..spec import ReleaseSpec

NOTHING_NEW = "no new or changed source file"  # why a look at the source files asks for no run

# a run the watch asks for: (partition key, or None when unpartitioned; run key)
SourceRun = tuple[str | None, str]


def file_signature(path: Any) -> str | None:
    """``<mtime_ns>:<size>`` of a local file, None when it does not exist."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_mtime_ns}:{st.st_size}"


def source_runs(spec: ReleaseSpec, cursor: str | None, keys: Sequence[str] | None) -> tuple[list[SourceRun], str]:
    """The runs a look at the source files asks for, and the new cursor (see the module docstring).

    ``keys`` are the partition keys that exist now, in order (None for an unpartitioned release).
    """
    state: dict[str, Any] = json.loads(cursor) if cursor else {}
    runs: list[SourceRun] = []
    if keys is None:
        sig = file_signature(spec.resolve(spec.source.path, partition=UNPARTITIONED))
        if sig is not None and state.get("file") != sig:
            runs.append((None, f"{UNPARTITIONED}@{sig}"))
            state["file"] = sig
        return runs, json.dumps(state, sort_keys=True)
    keys = list(keys)
    if "{partition}" in spec.source.path:
        seen = state.setdefault("partitions", {})
        for key in keys:
            sig = file_signature(spec.resolve(spec.source.path, partition=key))
            if sig is not None and seen.get(key) != sig:
                runs.append((key, f"{key}@{sig}"))
                seen[key] = sig
        return runs, json.dumps(state, sort_keys=True)
    sig = file_signature(spec.resolve(spec.source.path))
    if sig is None:
        return [], json.dumps(state, sort_keys=True)
    done = set(state.get("requested", []))
    wanted = [k for k in keys if k not in done]
    if state.get("file") != sig and keys and keys[-1] not in wanted:
        wanted.append(keys[-1])
    runs = [(key, f"{key}@{sig}") for key in sorted(wanted, key=keys.index)]
    state.update(file=sig, requested=sorted(done | set(wanted), key=keys.index))
    return runs, json.dumps(state, sort_keys=True)


__all__ = ["NOTHING_NEW", "SourceRun", "file_signature", "source_runs"]
