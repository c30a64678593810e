"""The cost of a synthetic release: the sequential CART synthesis and its audit, beside baselines.

    .venv/bin/python benchmarks/synthetic.py [--sizes 20000,100000] [--repeat 3] [--leaf 5]

Tables: Adult (``datasets/adult/adult.csv``, 30,162 rows, 9 categorical and numeric columns) and
the demo's discharge register (:mod:`anon_dagster.demo`, seeded) at each of ``--sizes`` rows
(age, sex, postal code, profession, admission date, diagnosis, length of stay). Each table is
split into train records (90 %) and control records (10 %, at least 1,000), as a synthetic
release withholds its control slice by default.

Per table, the median over ``--repeat`` runs of wall and CPU seconds of

- ``cart``: :func:`~anon_dagster.anonymize.synthetic_method.cart_synthesis` of the train records
  (as many synthetic rows, ``min_samples_leaf`` ``--leaf``): one tree per column after the first;
- ``audit``: :func:`~anon_dagster.risk.synthetic_audit.audit` of that synthetic table against
  train and control (exact-copy rates over every record, closest-record distances and the
  membership scores over at most 3,000 rows a side);
- baselines on the same train records: ``tree``, one scikit-learn ``DecisionTreeClassifier``
  fit (the last column from the others, coded as the synthesizer codes them, same leaf size):
  the synthesis fits one such tree per column; ``sample``, pandas' ``DataFrame.sample`` of as
  many rows with replacement (a synthesizer that only draws the marginal of whole rows).

The audit's attacks on the synthetic table (singling out, linkability, inference) are the
attacks of ``benchmarks/attacks.py``: their cost is measured there.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.tree import (
    DecisionTreeClassifier,  # imported before any timing: the synthesis imports it too
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anon_dagster.anonymize.synthetic_method import cart_synthesis, column_kind, encode  # noqa: E402
from anon_dagster.demo import generate_frames  # noqa: E402
from anon_dagster.risk.synthetic_audit import audit  # noqa: E402

DEMO_COLUMNS = ["age", "sex", "postal_code", "profession", "admission_date", "diagnosis", "length_of_stay"]


def adult() -> pd.DataFrame:
    return pd.read_csv(ROOT / "datasets" / "adult" / "adult.csv", sep=";")


def discharges(rows: int, seed: int = 3) -> pd.DataFrame:
    _, table = generate_frames(population=max(3 * rows, 10_000), discharges=rows, seed=seed)
    return table[DEMO_COLUMNS].reset_index(drop=True)


def split(table: pd.DataFrame, seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train and control records: a random 10 % (at least 1,000 rows) withheld."""
    order = np.random.default_rng(seed).permutation(len(table))
    cut = max(len(table) // 10, 1_000)
    return table.iloc[order[cut:]].reset_index(drop=True), table.iloc[order[:cut]].reset_index(drop=True)


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, object]:
    """Median wall and CPU seconds of ``repeat`` calls of ``fn``, and the last call's value."""
    walls, cpus, value = [], [], None
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        value = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), value


def one_tree(train: pd.DataFrame, leaf: int) -> None:
    coded = [encode(train[c], column_kind(train[c]), c) for c in train.columns]
    DecisionTreeClassifier(min_samples_leaf=leaf, random_state=0).fit(np.column_stack(coded[:-1]), coded[-1])


def row(name: str, table: pd.DataFrame, leaf: int, repeat: int) -> str:
    """The table's line: the medians of the synthesis, its audit and the baselines, the figures."""
    train, control = split(table)
    order = list(train.columns)
    cart = timed(lambda: cart_synthesis(train, order, min_samples_leaf=leaf, seed=1), repeat)
    synthetic = cart[2]
    checked = timed(lambda: audit(synthetic, train, control), repeat)
    tree = timed(lambda: one_tree(train, leaf), repeat)
    sample = timed(lambda: train.sample(len(train), replace=True, random_state=1), repeat)
    figures = checked[2]
    return (f"{name:<14}{len(train):>8,}{len(control):>8,}{len(order):>5}  {cart[0]:>9.2f}{cart[1]:>7.2f}  "
            f"{checked[0]:>10.2f}{checked[1]:>7.2f}  {tree[0]:>9.3f}{tree[1]:>7.3f}  {sample[0]:>11.4f}"
            f"{sample[1]:>7.4f}  copy gap {figures.copy_rate_gap:.3f}, DCR gap {figures.closer_to_train_gap:.3f}, "
            f"AUC {figures.mia_auc:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20000,100000", help="rows of the generated tables, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--leaf", type=int, default=5, help="min_samples_leaf of the synthesis")
    args = ap.parse_args()
    tables = [("adult", adult())] + [(f"demo {int(s):,}", discharges(int(s))) for s in args.sizes.split(",")]
    print(f"CART synthesis (min_samples_leaf {args.leaf}) and its audit; medians of {args.repeat} runs, seconds")
    header = (f"{'table':<14}{'train':>8}{'control':>8}{'cols':>5}  {'cart wall':>9}{'cpu':>7}  {'audit wall':>10}"
              f"{'cpu':>7}  {'tree wall':>9}{'cpu':>7}  {'sample wall':>11}{'cpu':>7}  figures")
    print(header)
    print("-" * len(header))
    for name, table in tables:
        print(row(name, table, args.leaf, args.repeat))

if __name__ == "__main__":
    main()
