"""The risk-measuring kernel: equivalence classes computed once, every figure derived from them.

Entry points: :func:`measure_risk` (all figures of a table, :class:`RiskMeasures`),
:class:`EquivalenceClasses` (the shared representation), :func:`utility_query_error`.
Definitions of every metric are in docs/risk.md and in each module's docstring.
"""

from .classes import EquivalenceClasses
from .measures import CONTRACT_KEYS, RiskMeasures, measure_risk
from .utility import QueryError, utility_query_error

__all__ = [
    "CONTRACT_KEYS",
    "EquivalenceClasses",
    "QueryError",
    "RiskMeasures",
    "measure_risk",
    "utility_query_error",
]
