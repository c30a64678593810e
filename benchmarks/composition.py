"""Composition check and ledger throughput, side by side with a straightforward baseline.

Two releases of the same ``--persons`` people (one row each), each with classes of about
``--class-size`` persons drawn independently (the worst case for intersections). Medians of
``--repeats`` runs, same process, same input:

* composition: anon_dagster's ``check_composition`` (group by (new class, old class) in pandas,
  reading the earlier release from the ledger) vs the per-person baseline with Python sets
  (for each person, ``len(members_new[c_new] & members_old[c_old])``), both giving effective k;
* ledger write: ``Ledger.record`` of one release's class assignment (one transaction).

Target: the composition check of two 1 M-person releases in under 30 s on one core.

    python benchmarks/composition.py [--persons 200000] [--class-size 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import base64
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from anon_dagster.pseudonymize.keystore import EnvKeyBackend, KeyStore  # noqa: E402
from anon_dagster.release.composition import check_composition, class_assignment  # noqa: E402
from anon_dagster.release.ledger import LedgerSeal, init_ledger  # noqa: E402


def timed(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def baseline_effective_k(new: pd.DataFrame, old: pd.DataFrame) -> int:
    """Per-person set intersections (what one writes first)."""
    members_new, members_old = defaultdict(set), defaultdict(set)
    cls_new = dict(zip(new["person"], new["class_id"], strict=True))
    cls_old = dict(zip(old["person"], old["class_id"], strict=True))
    for p, c in cls_new.items():
        members_new[c].add(p)
    for p, c in cls_old.items():
        members_old[c].add(p)
    best = None
    for p, c in cls_new.items():
        size = len(members_new[c] & members_old[cls_old[p]]) if p in cls_old else len(members_new[c])
        best = size if best is None else min(best, size)
    return int(best)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persons", type=int, default=200_000)
    ap.add_argument("--class-size", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n, n_classes = args.persons, max(args.persons // args.class_size, 1)
    persons = [f"p{i:08d}" for i in range(n)]
    first = pd.DataFrame({"q": rng.integers(0, n_classes, n).astype(str)})
    second = pd.DataFrame({"r": rng.integers(0, n_classes, n).astype(str)})
    a1 = class_assignment(first, ["q"], persons)
    a2 = class_assignment(second, ["r"], persons)

    with tempfile.TemporaryDirectory() as tmp:
        # a throwaway key store for the ledger's MACs and anchor
        keys = KeyStore(EnvKeyBackend(base64.b64encode(bytes(32)).decode()), Path(tmp) / "keystate")
        seal = LedgerSeal.from_keystore(keys)
        ledger = init_ledger(Path(tmp) / "ledger.sqlite", seal).ledger
        t_write, _ = timed(lambda: ledger.record(
            release="first", partition=str(time.perf_counter_ns()), population="bench", spec_hash="s",
            data_hash=str(time.perf_counter_ns()), qis={}, k=None, assignment=a1), args.repeats)
        # keep exactly one current publication of the population for the check
        ledger2 = init_ledger(Path(tmp) / "ledger2.sqlite", seal).ledger
        ledger2.record(release="first", partition="", population="bench", spec_hash="s", data_hash="h",
                       qis={}, k=None, assignment=a1)
        t_ours, result = timed(lambda: check_composition(
            a2, ledger2, population="bench", release="second", partition="", min_k=5), args.repeats)
    t_base, base_k = timed(lambda: baseline_effective_k(a2.members, a1.members), args.repeats)
    assert base_k == result.effective_k, (base_k, result.effective_k)

    print(f"persons {n:,}, classes per release {n_classes:,} (about {args.class_size} persons each), "
          f"median of {args.repeats}")
    print(f"effective k {result.effective_k} (expected intersection k1*k2/N = "
          f"{args.class_size * args.class_size / n:.4f}); exposed persons {result.exposed_persons:,}")
    print(f"{'step':<34}{'anon_dagster':>14}{'baseline':>14}{'ratio':>8}")
    print(f"{'composition check (s)':<34}{t_ours:>14.3f}{t_base:>14.3f}{t_base / t_ours:>8.2f}")
    print(f"{'ledger write of one release (s)':<34}{t_write:>14.3f}{'-':>14}{'-':>8}")
    print(f"{'persons per second (check)':<34}{n / t_ours:>14,.0f}{n / t_base:>14,.0f}")


if __name__ == "__main__":
    main()
