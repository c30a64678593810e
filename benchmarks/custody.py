"""The cost of custody: a read of a stored intermediate table with and without its custody entry.

    .venv/bin/python benchmarks/custody.py [--rows 100000] [--repeat 7] [--log-entries 0,1000,10000]

A raw table of ``--rows`` rows (an identifier and three columns) is stored encrypted under its
partition's data key (:class:`anon_dagster.storage.TableStore`), then read ``--repeat`` times:

- baseline: the read without a custody hook (``on_read`` that does nothing);
- custody: the read with the core's hook, which appends a ``read`` entry to the custody log,
  for a log already holding each of ``--log-entries`` entries (an append verifies the whole
  log against its anchor first, so its cost grows with the log).

Per setting: the median wall-clock ms and its ratio to the baseline. Keys from a fixed test
master key, the state folder in a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

MASTER_KEY = "Ym9ndXMtYmVuY2htYXJrLWtleS0zMi1ieXRlcy0hISE="  # 32 bytes, benchmark only


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--log-entries", default="0,1000,10000")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    os.environ["ANON_DAGSTER_MASTER_KEY"] = MASTER_KEY
    os.environ["ANON_DAGSTER_KEYSTORE_STATE"] = str(tmp / "keystate")
    from anon_dagster import storage
    from anon_dagster.pseudonymize import open_keystore
    from anon_dagster.pseudonymize.audit import AuditLog
    from anon_dagster.release.governance import access

    keystore = open_keystore()
    kek = keystore.derive_key(storage.DATA_AT_REST_PURPOSE)
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"pid": [f"P{i:08d}" for i in range(args.rows)], "age": rng.integers(18, 90, args.rows),
                          "region": rng.choice(["N", "S", "E", "W"], args.rows), "code": rng.integers(0, 999, args.rows)})
    quiet = storage.TableStore(tmp / "store", on_read=lambda name, partition: None)
    quiet.write(("bench", "raw"), "2024", table, kek)
    governed = storage.TableStore(tmp / "store")
    baseline = median_ms(lambda: quiet.read(("bench", "raw"), "2024", lambda: kek), args.repeat)
    print(f"rows {args.rows}, repeat {args.repeat}")
    print(f"{'setting':<34} {'median ms':>10} {'ratio':>7}")
    print(f"{'read, no custody (baseline)':<34} {baseline:>10.1f} {1.0:>7.2f}")
    log = AuditLog(keystore)
    held = 0
    for target in (int(n) for n in args.log_entries.split(",")):
        while held < target:
            log.append({"action": "read", "actor": "bench", "run": "-", "why": "fill", "release": "bench"})
            held += 1
        with access.custody_context(keystore=keystore, run="bench", why="benchmark"):
            ms = median_ms(lambda: governed.read(("bench", "raw"), "2024", lambda: kek), args.repeat)
        held += args.repeat
        print(f"{f'read + custody entry, log of {target}':<34} {ms:>10.1f} {ms / baseline:>7.2f}")


if __name__ == "__main__":
    main()
