"""``python -m anon_dagster.demo run``: generate the demo data, then measure the demo release.

Kept as one small function, :func:`run_demo`, so the orchestration layer can replace it with a
materialization of the release's asset graph.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from .generate import REPO_ROOT, default_out_dir, generate

DEMO_SPEC = REPO_ROOT / "assets_config" / "hospital_discharges.yaml"


def run_demo(spec: str | Path = DEMO_SPEC) -> int:
    """Generate the demo data (if not current) and print the demo release's risk figures.

    The figures are those of the release's first partition (what one publication holds),
    measured by ``anon-dagster risk --config SPEC --partition KEY``. When that command is not
    available, or fails on the spec's policy, a warning says so and the kernel's figures without
    the population are printed instead (journalist risk estimated from the sampling fraction).
    Returns an exit status.
    """
    from ..spec import load_spec

    manifest = generate(default_out_dir())
    state = "already current" if manifest["skipped"] else "written"
    sizes = ", ".join(f"{name} {info['rows']:,} rows" for name, info in manifest["files"].items())
    print(f"demo data in {default_out_dir()}: {state} ({sizes})", flush=True)
    release = load_spec(spec)
    partition = _first_partition(release)
    if importlib.util.find_spec("anon_dagster.commands.risk") is not None:
        from ..cli import main

        args = ["risk", "--config", str(spec)] + (["--partition", partition] if partition else [])
        code = main(args)
        if code == 0:
            return 0
        print(f"warning: `anon-dagster {' '.join(args)}` failed (see above); figures without "
              "the population follow", file=sys.stderr)
    return _kernel_figures(release, partition)


def _first_partition(release) -> str | None:
    """Key of the spec's first partition (``2024`` for yearly), or None when unpartitioned."""
    if release.partitions is None:
        return None
    start = release.partitions.start
    return {"yearly": start[:4], "monthly": start[:7]}.get(release.partitions.cadence, start[:10])


def _kernel_figures(release, partition: str | None) -> int:
    """The partition's figures over the spec's QIs, journalist risk from the sampling fraction."""
    import pandas as pd

    from ..io import read_table

    df = read_table(release.resolve(release.source.path))
    if partition is not None and release.partitions is not None:
        dates = pd.to_datetime(df[release.partitions.column])
        start = pd.Timestamp(release.partitions.start)
        offset = {"yearly": pd.DateOffset(years=1), "monthly": pd.DateOffset(months=1)}.get(
            release.partitions.cadence, pd.DateOffset(months=3))
        df = df[(dates >= start) & (dates < start + offset)]
    qis = release.quasi_identifiers
    try:
        from ..risk import measure_risk
    except ImportError:
        measure_risk = None
    print(f"release {release.release}, partition {partition or '(all)'}: {len(df):,} rows, "
          f"quasi-identifiers {', '.join(qis)}")
    if measure_risk is None:
        sizes = df.groupby(qis, dropna=False, observed=True).size()
        figures = {"classes": len(sizes), "k": int(sizes.min()),
                   "uniques_fraction": float((sizes == 1).sum() / len(df)),
                   "prosecutor_avg": len(sizes) / len(df)}
    else:
        figures = measure_risk(
            df, qis, sensitive=release.sensitive or None,
            sampling_fraction=release.policy.sampling_fraction, uniqueness=False,
        ).to_dict()
    for key in ("rows", "classes", "k", "uniques_fraction", "prosecutor_max", "prosecutor_avg",
                "journalist_max", "journalist_avg", "marketer", "l_distinct", "l_entropy",
                "t_closeness"):
        if figures.get(key) is not None:
            value = figures[key]
            print(f"  {key:<18}{value:.4g}" if isinstance(value, float) else f"  {key:<18}{value}")
    return 0
