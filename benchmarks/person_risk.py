"""Person-level risk beside the row-level measurement of the same table, in the same run.

    .venv/bin/python benchmarks/person_risk.py [--rows 1000000] [--persons 300000] [--repeat 5]

A seeded table of ``--rows`` rows (6 QIs of a discharge register, a 20-value diagnosis) whose
rows belong to ``--persons`` persons (a long-tailed number of stays per person). Times
``measure_risk`` as the gate calls it (every figure: population-uniqueness models, attribute
disclosure), ``measure_risk`` restricted to k / uniques / prosecutor / l / t, and
``person_figures`` on the classes that measurement built (person classes from the multiset of
each person's row classes, k / prosecutor / uniques / l / t per person), interleaved, and prints
the medians of wall and CPU time and the ratios. Target: person-level <= 1.5 x the row-level
measurement. Most of the person-level time is factorizing the person column (a million
pseudonym strings), which the row level never touches.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anon_dagster import measure_risk  # noqa: E402
from anon_dagster.risk.person import person_figures  # noqa: E402
from anon_dagster.risk.sensitive import code_sensitive  # noqa: E402

QIS = ["age", "sex", "postal_code", "profession", "month", "province"]


def table(rows: int, persons: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    stays = rng.zipf(2.2, persons).clip(1, 60)
    person = np.repeat(np.arange(persons), stays)
    person = rng.permutation(np.resize(person, rows))
    return pd.DataFrame({
        "person": pd.Series(person).map(lambda i: f"v1:{i:032x}"),
        "age": rng.integers(0, 18, rows) * 5, "sex": rng.choice(["F", "M"], rows),
        "postal_code": rng.integers(280, 290, rows).astype(str), "profession": rng.integers(0, 8, rows),
        "month": rng.integers(1, 13, rows), "province": rng.choice(["M", "B", "V"], rows),
        "diagnosis": rng.integers(0, 20, rows).astype(str),
    })


def timed(fn) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--persons", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    df = table(args.rows, args.persons)
    print(f"{len(df):,} rows, {df['person'].nunique():,} persons, QIs {', '.join(QIS)}")
    core_w, core_c, full_w, full_c, per_w, per_c = [], [], [], [], [], []
    for _ in range(args.repeat):
        w, c, measured = timed(lambda: measure_risk(df, QIS, sensitive="diagnosis", uniqueness=False,
                                                    attribute_disclosure=False))
        core_w.append(w)
        core_c.append(c)
        w, c, _ = timed(lambda: measure_risk(df, QIS, sensitive="diagnosis"))
        full_w.append(w)
        full_c.append(c)
        ec = measured.equivalence_classes
        # the sensitive column as the row-level measurement coded it (measure_risk shares it)
        coded = code_sensitive(df["diagnosis"], "diagnosis")
        w, c, figures = timed(lambda ec=ec, coded=coded: person_figures(ec, df["person"],
                                                                         [(coded.codes, coded.n_values)]))
        per_w.append(w)
        per_c.append(c)
    med = statistics.median
    print(f"row level, k/prosecutor/l/t only   wall {med(core_w):.3f} s  cpu {med(core_c):.3f} s  "
          f"(k {measured.k}, {measured.classes:,} classes)")
    print(f"row level, every figure (the gate) wall {med(full_w):.3f} s  cpu {med(full_c):.3f} s")
    print(f"person level, person_figures       wall {med(per_w):.3f} s  cpu {med(per_c):.3f} s  "
          f"(k {figures['k']}, {figures['person_classes']:,} person classes)")
    print(f"person / row (every figure): wall {med(per_w) / med(full_w):.2f}, cpu {med(per_c) / med(full_c):.2f} "
          "(target <= 1.5)")
    print(f"person / row (k/prosecutor/l/t only): wall {med(per_w) / med(core_w):.2f}, cpu {med(per_c) / med(core_c):.2f}")


if __name__ == "__main__":
    main()
