"""anon_dagster: privacy-gated releases of personal data.

``measure_risk`` and ``RiskMeasures`` are exported here; they are imported on first use so that
``import anon_dagster.<module>`` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["RiskMeasures", "measure_risk"]

if TYPE_CHECKING:  # pragma: no cover
    from .risk import RiskMeasures, measure_risk


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import risk

        return getattr(risk, name)
    raise AttributeError(f"module 'anon_dagster' has no attribute {name!r}")
