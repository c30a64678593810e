"""``python -m anon_dagster.demo run``: generate the demo data, then measure the demo release.

Kept as one small function, :func:`run_demo`, so the orchestration layer can replace it with a
materialization of the release's asset graph.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .generate import REPO_ROOT, default_out_dir, generate

DEMO_SPEC = REPO_ROOT / "assets_config" / "hospital_discharges.yaml"


def run_demo(spec: str | Path = DEMO_SPEC) -> int:
    """Generate the demo data (if not current) and print the demo release's risk figures.

    Uses ``anon-dagster risk --config SPEC`` when that command is available, otherwise a plain
    pandas count of the equivalence classes over the spec's quasi-identifiers. Returns an exit
    status.
    """
    manifest = generate(default_out_dir())
    state = "already current" if manifest["skipped"] else "written"
    sizes = ", ".join(f"{name} {info['rows']:,} rows" for name, info in manifest["files"].items())
    print(f"demo data in {default_out_dir()}: {state} ({sizes})")
    if importlib.util.find_spec("anon_dagster.commands.risk") is not None:
        from ..cli import main

        return main(["risk", "--config", str(spec)])
    return _class_counts(Path(spec))


def _class_counts(spec_path: Path) -> int:
    """Fallback figures: class sizes over the spec's QIs (no generalization), with pandas."""
    from ..io import read_table
    from ..spec import load_spec

    spec = load_spec(spec_path)
    df = read_table(spec.resolve(spec.source.path))
    qis = spec.quasi_identifiers
    sizes = df.groupby(qis, dropna=False, observed=True).size()
    print(f"release {spec.release}: {len(df):,} rows, quasi-identifiers {', '.join(qis)}")
    print(f"  classes                  {len(sizes):,}")
    print(f"  k (smallest class)       {int(sizes.min()) if len(sizes) else 0}")
    print(f"  unique rows              {100 * (sizes == 1).sum() / max(len(df), 1):.2f} %")
    print(f"  average prosecutor risk  {len(sizes) / max(len(df), 1):.4f}")
    return 0
