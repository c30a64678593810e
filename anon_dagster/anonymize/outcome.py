"""What one anonymization run hands back: :class:`AnonymizationResult`, or :class:`NoSolution`
when no transformation reaches the policy; and the progress callback the searches report to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import UserError
from .lattice import SearchResult
from .record import TransformationRecord

Progress = Callable[[int, int], None]


class NoSolution(UserError):
    """No transformation reaches the policy within the suppression budget.

    ``details`` names the closest candidate and the criteria it misses (JSON-serializable).
    """

    def __init__(self, message: str, details: dict | None = None):
        super().__init__(message)
        self.details = details or {}


@dataclass
class AnonymizationResult:
    """Published rows, suppressed-row count and transformation record of one anonymization.

    ``data`` keeps the index labels of the kept input rows and every column it was given
    (columns not declared in the spec pass through untouched); suppressed rows are removed.
    """

    data: pd.DataFrame
    record: TransformationRecord
    suppressed: int
    search: SearchResult | None = None
    suppressed_mask: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
