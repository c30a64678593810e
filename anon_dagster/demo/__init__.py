"""Synthetic demo data: a regional population and hospital discharges drawn from it.

``python -m anon_dagster.demo generate`` writes ``data/demo/population.parquet`` and
``data/demo/discharges.parquet``; ``python -m anon_dagster.demo run`` also measures the demo
release's risk. See docs/demo.md.
"""

from .generate import (
    DEFAULT_DISCHARGES,
    DEFAULT_POPULATION,
    DEFAULT_SEED,
    DISCHARGE_COLUMNS,
    POPULATION_COLUMNS,
    DemoError,
    default_out_dir,
    generate,
    generate_frames,
    hierarchy_texts,
    is_current,
    write_hierarchies,
)

__all__ = [
    "DEFAULT_DISCHARGES", "DEFAULT_POPULATION", "DEFAULT_SEED", "DISCHARGE_COLUMNS",
    "POPULATION_COLUMNS", "DemoError", "default_out_dir", "generate", "generate_frames",
    "hierarchy_texts", "is_current", "write_hierarchies",
]
