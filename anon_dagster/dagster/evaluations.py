"""The checks' evaluation taken up by the publication step: :mod:`anon_dagster.release.evaluation_memo`."""

from ..release.evaluation_memo import (
    evaluation_key,
    forget,
    recall,
    remember,
    table_digest,
    table_digests,
)

__all__ = ["evaluation_key", "forget", "recall", "remember", "table_digest", "table_digests"]
