"""anon_dagster: privacy-gated releases of personal data.

``measure_risk`` and ``RiskMeasures`` are exported here, and the dg component
``AnonReleaseComponent`` (so ``dg scaffold defs anon_dagster.AnonReleaseComponent NAME`` works);
they are imported on first use, so ``import anon_dagster.<module>`` stays light and the core
never loads Dagster unless the component is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["AnonReleaseComponent", "RiskMeasures", "measure_risk"]

if TYPE_CHECKING:  # pragma: no cover
    from .dagster.components import AnonReleaseComponent
    from .risk import RiskMeasures, measure_risk


def __getattr__(name: str) -> Any:
    if name == "AnonReleaseComponent":
        from .dagster.components import AnonReleaseComponent

        return AnonReleaseComponent
    if name in __all__:
        from . import risk

        return getattr(risk, name)
    raise AttributeError(f"module 'anon_dagster' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
