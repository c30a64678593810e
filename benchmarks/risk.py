"""Speed and memory of the risk kernel, side by side with a pandas group-by in the same run.

    .venv/bin/python benchmarks/risk.py [--rows 1000000] [--repeat 7] [--skip-adult]
    .venv/bin/python benchmarks/risk.py --baseline DIR [--repeat 7]   # against another checkout

1. Synthetic table (seeded): ``--rows`` rows, 6 QIs (age, sex, postal code, profession, admission
   month, province; long-tailed like a discharge register) and a sensitive column of 20 values,
   in three encodings: pandas' default strings, categoricals, Arrow dictionary columns.
   Times ``measure_risk`` with k, uniques, prosecutor, l (distinct + entropy) and t (total
   variation) against ``df.groupby(qi).size()``, alternating the two, and prints the medians and
   their ratio (target: <= 2.0). Then the full ``measure_risk`` (every figure, defaults).
   Memory: in a child process, the peak resident memory added by ``measure_risk`` (VmHWM reset
   before the call) against the DataFrame's own size (``memory_usage(deep=True)``), target <= 3.
2. Adult (30,162 rows, ``datasets/adult``): every figure in one
   ``measure_risk`` call (classes, prosecutor, journalist, marketer and k-map against the table
   as its own population, population uniqueness at f = 0.1 with the default 200 bootstrap
   replicates, a subgroup breakdown, loss and precision against ARX's hierarchies, a query
   error) over the 9 columns as QIs; and with 8 QIs + occupation as sensitive, adding l
   distinct/entropy/recursive, t, δ-disclosure and β-likeness; the same with population and
   original passed as copies (no factorization shared with the table); and population
   uniqueness alone. Target <= 50 ms (median), printed next to ``groupby(9 QIs).size()``.

Machines are shared: each figure is a median of ``--repeat`` runs, wall time beside the process's
CPU time, and the ratios compare runs interleaved in the same process, so a busy neighbour slows
both sides.

3. ``--baseline DIR``: the same measurements (the synthetic table's core figures and groupby per
   encoding, the Adult configurations) with the code of another checkout, e.g. an earlier commit
   (``git worktree add ../base <commit>``), side by side with this tree. Each side runs in a
   child process of its own and the two take turns job by job (the first side alternating), so
   both see the same load; printed: each side's medians, wall and CPU, and their ratios.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
# the code measured: this tree, or another checkout in a --baseline child process
CODE_ENV = "ANON_DAGSTER_BENCH_CODE"
sys.path.insert(0, os.environ.get(CODE_ENV) or str(ROOT))

from anon_dagster import measure_risk  # noqa: E402

QIS = ["age", "sex", "postal_code", "profession", "month", "province"]
SENSITIVE = "diagnosis"
CORE = {"uniqueness": False, "attribute_disclosure": False}  # k, uniques, prosecutor, l, t only


def synthetic(n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` rows, 6 QIs and a 20-value sensitive column; Zipf-like tails, seeded."""
    rng = np.random.default_rng(seed)

    def zipf(k: int, a: float) -> np.ndarray:
        w = 1.0 / np.arange(1, k + 1) ** a
        return rng.choice(k, n, p=w / w.sum())

    df = pd.DataFrame({
        "age": rng.integers(0, 100, n),
        "sex": np.array(["F", "M"])[rng.integers(0, 2, n)],
        "postal_code": np.char.add("28", np.char.zfill(zipf(2000, 0.8).astype(str), 3)),
        "profession": np.char.add("prof", zipf(300, 1.2).astype(str)),
        "month": np.char.add("2024-", np.char.zfill(rng.integers(1, 25, n).astype(str), 2)),
        "province": np.char.add("P", zipf(50, 1.2).astype(str)),
        SENSITIVE: np.char.add("D", zipf(20, 0.7).astype(str)),
    })
    for c in df.columns:
        if c != "age":
            df[c] = df[c].astype("str")
    return df


def encode(df: pd.DataFrame, encoding: str) -> pd.DataFrame:
    if encoding == "category":
        return df.astype("category")
    if encoding == "arrow-dictionary":
        return pd.DataFrame({
            c: pd.Series(pd.arrays.ArrowExtensionArray(
                pa.chunked_array([pa.array(df[c].to_numpy()).dictionary_encode()])))
            for c in df.columns
        })
    return df


def timed(fn) -> tuple[float, float]:
    """Wall and process CPU seconds of one call of ``fn``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def medians(times: list[tuple[float, float]]) -> tuple[float, float]:
    """Median wall and median CPU seconds of ``(wall, cpu)`` pairs."""
    return statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)


def groupby_size(df: pd.DataFrame):
    observed = {"observed": True} if any(isinstance(t, pd.CategoricalDtype) for t in df.dtypes) else {}
    return lambda: df.groupby(QIS, **observed).size()


def compare(df: pd.DataFrame, repeat: int) -> tuple[tuple[float, float], ...]:
    """Median (wall, CPU) seconds of groupby-size, core and full measure_risk, interleaved."""
    g, m, full = [], [], []
    group = groupby_size(df)
    for _ in range(repeat):
        gc.collect()
        g.append(timed(group))
        gc.collect()
        m.append(timed(lambda: measure_risk(df, QIS, SENSITIVE, **CORE)))
        gc.collect()
        full.append(timed(lambda: measure_risk(df, QIS, SENSITIVE, sampling_fraction=0.1)))
    return medians(g), medians(m), medians(full)


def memory_child(rows: int, encoding: str) -> None:
    """Child process: print JSON with the DataFrame size and the peak RSS measure_risk adds."""
    df = encode(synthetic(rows), encoding)
    size = int(df.memory_usage(deep=True).sum())
    gc.collect()
    measure_risk(df.head(1000), QIS, SENSITIVE, **CORE)  # import and warm-up outside the peak

    def status(key: str) -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1]) * 1024
        raise KeyError(key)

    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    before = status("VmRSS")
    measure_risk(df, QIS, SENSITIVE, **CORE)
    peak = status("VmHWM")
    print(json.dumps({"df_bytes": size, "peak_added_bytes": peak - before}))


def memory(rows: int, encoding: str) -> dict | None:
    if not Path("/proc/self/clear_refs").exists():
        return None
    out = subprocess.run(
        [sys.executable, __file__, "--memory-child", encoding, "--rows", str(rows)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def adult_dir() -> Path | None:
    env = os.environ.get("ANON_DAGSTER_ADULT_DIR")
    for candidate in ([Path(env)] if env else []) + [ROOT / "datasets" / "adult"]:
        if (candidate / "adult.csv").exists():
            return candidate
    return None


def adult_jobs(folder: Path) -> tuple[int, tuple[tuple[str, object], ...]]:
    """Adult's rows and its configurations (label, function), ``df.groupby(9 QIs).size()`` last."""
    from anon_dagster.hierarchies import TableHierarchy

    df = pd.read_csv(folder / "adult.csv", sep=";")
    qis9 = list(df.columns)
    qis8 = [c for c in qis9 if c != "occupation"]
    hierarchies = {c: TableHierarchy.from_csv(c, folder / f"adult_hierarchy_{c}.csv") for c in qis8}
    # the table is its own population (a valid join: journalist = prosecutor) and its own
    # "original" (so loss and the query error are computed, at zero)
    everything = dict(population=df, sampling_fraction=0.1, subgroup="sex",
                      hierarchies=hierarchies, original=df, k=5,
                      utility_queries=[("salary_by_sex", ["sex"], "salary-class")])
    # the same figures when population and original are other objects holding the same data:
    # nothing is shared between them and the table (the usual case of a real release)
    apart = {**everything, "population": df.copy(deep=True), "original": df.copy(deep=True)}

    def all_nine():
        measure_risk(df, qis9, **{k: v for k, v in everything.items() if k != "utility_queries"})

    def all_with_sensitive():
        measure_risk(df, qis8, "occupation", recursive_c=3, **everything)

    def separate_copies():
        measure_risk(df, qis8, "occupation", recursive_c=3, **apart)

    def no_uniqueness():
        measure_risk(df, qis8, "occupation", recursive_c=3, **{**everything, "uniqueness": False})

    from anon_dagster.risk.classes import EquivalenceClasses
    from anon_dagster.risk.population import population_uniqueness

    sizes8 = EquivalenceClasses.from_frame(df, qis8).sizes

    def uniqueness_default():
        population_uniqueness(sizes8, 0.1)

    def uniqueness_no_bootstrap():
        population_uniqueness(sizes8, 0.1, bootstrap=0)

    def groupby9():
        df.groupby(qis9).size()

    return len(df), (("9 QIs: every figure without a sensitive attribute", all_nine),
            ("8 QIs + occupation: every figure", all_with_sensitive),
            ("  the same, population and original as copies", separate_copies),
            ("  the same without population uniqueness", no_uniqueness),
            ("  population uniqueness alone (200 replicates)", uniqueness_default),
            ("  population uniqueness alone (no bootstrap)", uniqueness_no_bootstrap),
            ("df.groupby(9 QIs).size()", groupby9))


def adult(repeat: int) -> None:
    folder = adult_dir()
    if folder is None:
        print("Adult: data not found (datasets/adult), skipped")
        return
    n_rows, jobs = adult_jobs(folder)
    times: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in jobs}
    for _, fn in jobs:
        fn()  # warm-up
    for _ in range(repeat):  # interleaved, so a busy neighbour slows every line alike
        for label, fn in jobs:
            times[label].append(timed(fn))
    base_wall, base_cpu = medians(times["df.groupby(9 QIs).size()"])
    print(f"Adult {n_rows:,} rows (population, uniqueness at f = 0.1 with the default 200 "
          "bootstrap replicates, k-map, subgroup, loss/precision, query error; with occupation: "
          "l, recursive (3,l), t, δ, β); target <= 50 ms")
    print(f"  {'':<52}{'wall':>8}    {'CPU':>8}")
    for label, t in times.items():
        wall, cpu = medians(t)
        print(f"  {label:<52}{wall * 1000:8.1f} ms {cpu * 1000:8.1f} ms {wall / base_wall:6.1f}x groupby")


# ----- against another checkout ----------------------------------------------------------------

def worker_jobs(rows: int, encodings: list[str]) -> dict[str, object]:
    """The jobs a --baseline child runs on request: the synthetic core figures and groupby per
    encoding (the table built on first use), the Adult configurations."""
    built: dict[str, pd.DataFrame] = {}

    def table(encoding: str) -> pd.DataFrame:
        if encoding not in built:
            built[encoding] = encode(synthetic(rows), encoding)
        return built[encoding]

    jobs: dict[str, object] = {}
    for encoding in encodings:
        jobs[f"{encoding}: groupby.size"] = lambda e=encoding: groupby_size(table(e))()
        jobs[f"{encoding}: measure_risk"] = lambda e=encoding: measure_risk(table(e), QIS, SENSITIVE, **CORE)
    folder = adult_dir()
    if folder is not None:
        jobs.update({f"Adult: {label.strip()}": fn for label, fn in adult_jobs(folder)[1]})
    return jobs


def worker(rows: int, encodings: list[str]) -> None:
    """Child process: run the job named on each line of stdin, print its wall and CPU seconds."""
    jobs = worker_jobs(rows, encodings)
    print(json.dumps(list(jobs)), flush=True)
    for line in sys.stdin:
        gc.collect()
        print(json.dumps(timed(jobs[line.strip()])), flush=True)


def against(baseline: Path, rows: int, repeat: int, encodings: list[str]) -> None:
    """This tree and ``baseline`` side by side, job by job, each in a child process."""
    sides = {"this tree": ROOT, "baseline": baseline.resolve()}
    children = {}
    for side, code in sides.items():
        env = {**os.environ, CODE_ENV: str(code)}
        children[side] = subprocess.Popen(
            [sys.executable, __file__, "--worker", "--rows", str(rows), "--encodings", ",".join(encodings)],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    names = [json.loads(child.stdout.readline()) for child in children.values()]
    jobs = [j for j in names[0] if all(j in n for n in names[1:])]

    def run(side: str, job: str) -> tuple[float, float]:
        child = children[side]
        child.stdin.write(job + "\n")
        child.stdin.flush()
        return tuple(json.loads(child.stdout.readline()))

    times = {(side, job): [] for side in sides for job in jobs}
    for job in jobs:  # warm-up (and the synthetic tables built)
        for side in sides:
            run(side, job)
    order = list(sides)
    for _ in range(repeat):
        for job in jobs:
            for side in order:
                times[side, job].append(run(side, job))
        order.reverse()
    for child in children.values():
        child.stdin.close()
        child.wait()
    print(f"this tree against {sides['baseline']}: medians of {repeat} runs taken in turn, ms")
    print(f"  {'job':<56}{'this tree':>19}{'baseline':>19}{'ratio':>13}")
    print(f"  {'':<56}{'wall':>9}{'CPU':>10}{'wall':>9}{'CPU':>10}{'wall':>7}{'CPU':>6}")
    for job in jobs:
        (w, c), (bw, bc) = medians(times["this tree", job]), medians(times["baseline", job])
        print(f"  {job:<56}{w * 1e3:9.1f}{c * 1e3:10.1f}{bw * 1e3:9.1f}{bc * 1e3:10.1f}"
              f"{w / bw:7.2f}{c / bc:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--skip-adult", action="store_true")
    parser.add_argument("--encodings", default="str,category,arrow-dictionary")
    parser.add_argument("--baseline", type=Path,
                        help="a checkout of other code (e.g. a git worktree of an earlier commit) to time beside this tree")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.rows, args.memory_child)
        return
    if args.worker:
        worker(args.rows, args.encodings.split(","))
        return
    if args.baseline is not None:
        against(args.baseline, args.rows, args.repeat, args.encodings.split(","))
        return

    print(f"numpy {np.__version__}, pandas {pd.__version__}, pyarrow {pa.__version__}, "
          f"{os.cpu_count()} cores; medians of {args.repeat} interleaved runs")
    base = synthetic(args.rows)
    print(f"synthetic: {args.rows:,} rows, 6 QIs + 1 sensitive (20 values)")
    print(f"{'encoding':<18}{'groupby.size':>13}{'measure_risk':>14}{'ratio':>7}{'CPU ratio':>10}"
          f"{'full':>9}{'df MB':>8}{'peak+ MB':>10}{'mem ratio':>10}")
    for encoding in args.encodings.split(","):
        df = encode(base, encoding)
        (g, g_cpu), (m, m_cpu), (full, _) = compare(df, args.repeat)
        mem = memory(args.rows, encoding)
        df_mb = df.memory_usage(deep=True).sum() / 1e6
        peak = f"{mem['peak_added_bytes'] / 1e6:10.1f}{mem['peak_added_bytes'] / mem['df_bytes']:10.2f}" if mem else " " * 20
        print(f"{encoding:<18}{g:12.3f}s{m:13.3f}s{m / g:7.2f}{m_cpu / g_cpu:10.2f}{full:8.2f}s{df_mb:8.1f}{peak}")
        del df
    print("  ratio = measure_risk (k, uniques, prosecutor, l distinct+entropy, t TV) / groupby, wall "
          "and CPU time; target <= 2.0")
    print("  full = every default figure + population uniqueness at f = 0.1 (200 bootstrap) + δ, β")
    print("  mem ratio = peak resident memory added by measure_risk / DataFrame size; target <= 3")
    if not args.skip_adult:
        adult(max(args.repeat, 21))


if __name__ == "__main__":
    main()
