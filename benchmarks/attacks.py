"""The three attacks (singling out, linkability, inference) on releases of 20,000 to 400,000 rows.

    .venv/bin/python benchmarks/attacks.py [--sizes 20000,100000,200000,400000] [--repeat 3]

Per size, the demo's discharge register (:mod:`anon_dagster.demo`, seeded: patients with one
or more stays, QIs age, sex, postal code, profession and admission date, secrets diagnosis and
length of stay) is split into control records (a keyed slice of whole patients, 10 % and at least
1,000 rows: :func:`~anon_dagster.risk.attacks.withheld_rows`) and the release, published as it is.
The raw release is the costly case: its tuples are nearly all distinct, so most control targets
match no published tuple exactly and each is compared with every tuple to find its nearest. Then
:func:`~anon_dagster.risk.attacks.run_attacks` runs singling out (multivariate), linkability and
inference on both secrets with the default 2,000 main and 2,000 control targets, persons linked
by patient. Prints the median wall and CPU seconds over ``--repeat`` runs and the CPU time per
100,000 released rows. Target: at most 10 s CPU at 20,000 rows; with the targets fixed the cost
grows with the number of published tuples, so roughly linearly in the rows.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anon_dagster.demo import generate_frames  # noqa: E402
from anon_dagster.risk.attacks import run_attacks, withheld_rows  # noqa: E402

QIS = ["age", "sex", "postal_code", "profession", "admission_date"]
SECRETS = ["diagnosis", "length_of_stay"]
ATTACKS = ("singling_out_multivariate", "linkability", "inference")
KEY = b"benchmark control key".ljust(32, b".")


def release_of(rows: int, seed: int = 3):
    """A discharge register of about ``rows`` released rows, its control records and persons."""
    discharges = int(rows / 0.9) + 1
    _, table = generate_frames(population=max(3 * discharges, 10_000), discharges=discharges, seed=seed)
    withheld = withheld_rows(table, key=KEY, persons=table["patient_id"])
    release = table[~withheld].reset_index(drop=True).drop(columns=["national_id", "full_name"])
    control = table[withheld].reset_index(drop=True)
    return release, control


def attack(release, control):
    return run_attacks(release, release, control, columns=QIS, secrets=SECRETS, persons=release["patient_id"],
                       control_persons=control["patient_id"], attacks=ATTACKS)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20000,100000,200000,400000", help="released rows, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"attacks on a raw discharge register: {', '.join(QIS)} known; secrets {', '.join(SECRETS)}")
    print(f"{'released':>10}{'control':>9}{'tuples':>9}{'wall s':>9}{'cpu s':>8}{'cpu s / 100k':>14}  figures")
    for size in sizes:
        release, control = release_of(size)
        walls, cpus = [], []
        results = []
        for _ in range(args.repeat):
            w, c = time.perf_counter(), time.process_time()
            results = attack(release, control)
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        tuples = len(release[QIS].drop_duplicates())
        figures = " ".join(f"{r.name}={r.residual:.3f}" for r in results)
        print(f"{len(release):>10,}{len(control):>9,}{tuples:>9,}{wall:>9.2f}{cpu:>8.2f}"
              f"{cpu / len(release) * 100_000:>14.2f}  {figures}")
        if len(release) <= 20_000 and cpu > 10:
            print("   over the 10 s CPU target")


if __name__ == "__main__":
    main()
