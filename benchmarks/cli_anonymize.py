"""Wall time of ``anon-dagster anonymize`` on 1,000,000 rows with one pseudonymized column.

    .venv/bin/python benchmarks/cli_anonymize.py [--rows 1000000] [--repeat 3] [--method global]

The whole command is timed as a user runs it (interpreter start-up, imports, reading, checking,
HMAC pseudonyms, anonymization, atomic write of OUT and OUT.transformations.json), beside a
plain-pandas baseline in the same run: a subprocess that only reads the input and writes it back
(the I/O floor). Target: <= 6 s wall for 1,000,000 rows. Medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "anon_dagster.cli"]

SPEC = """release: bench
source: {{path: data.parquet}}
columns:
  pid:  {{role: identifier, pseudonymize: {{method: hmac, purpose: research}}}}
  age:  {{role: quasi, hierarchy: {{type: interval, widths: [5, 10, 20]}}}}
  sex:  {{role: quasi}}
  zip:  {{role: quasi, hierarchy: {{type: mask, keep: [4, 3, 2]}}}}
  diag: {{role: sensitive}}
  los:  {{role: insensitive}}
anonymization: {{method: {method}, k: 5, max_suppression: 0.05}}
publication: {{path: out/{{partition}}.parquet}}
"""


def make_data(folder: Path, rows: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    pd.DataFrame({
        "pid": [f"P{i:08d}" for i in range(rows)],
        "age": rng.integers(0, 100, rows),
        "sex": rng.choice(["F", "M"], rows),
        "zip": [f"{z:05d}" for z in rng.integers(1000, 52999, rows)],
        "diag": rng.choice([f"D{i:02d}" for i in range(20)], rows),
        "los": rng.integers(1, 30, rows),
    }).to_parquet(folder / "data.parquet", index=False)


def timed(cmd: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--method", default="global", choices=["global", "mondrian"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_data(folder, args.rows)
        (folder / "spec.yaml").write_text(SPEC.format(method=args.method))
        env = {**os.environ, "ANON_DAGSTER_MASTER_KEY": base64.b64encode(os.urandom(32)).decode()}
        env.pop("ANON_DAGSTER_KEYSTORE", None)
        ours_cmd = [*CLI, "anonymize", str(folder / "spec.yaml"), "--output", str(folder / "o.parquet"), "--quiet"]
        base_cmd = [sys.executable, "-c",
                    "import sys, pandas as pd; pd.read_parquet(sys.argv[1]).to_parquet(sys.argv[2], index=False)",
                    str(folder / "data.parquet"), str(folder / "copy.parquet")]
        ours, base = [], []
        for _ in range(args.repeat):  # interleaved, so both see the same machine load
            ours.append(timed(ours_cmd, env))
            base.append(timed(base_cmd, env))
        out = pd.read_parquet(folder / "o.parquet")
    print(f"anon-dagster anonymize, {args.rows:,} rows, one HMAC column, {args.method} k=5 "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"  anonymize command    {statistics.median(ours):6.2f} s wall (median of {args.repeat})  target <= 6 s")
    print(f"  pandas read + write  {statistics.median(base):6.2f} s wall (I/O floor, same run)")
    print(f"  ratio                {statistics.median(ours) / statistics.median(base):6.1f}x; "
          f"{len(out):,} rows published")


if __name__ == "__main__":
    main()
