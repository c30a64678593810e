"""Cross-check k, l and t against pycanon on the Adult data, with time ratios.

    .venv/bin/python benchmarks/pycanon_crosscheck.py [--repeat 3] [--synthetic ROWS]

pycanon pins old pandas/numpy/scipy, so it never enters the project's environment: this script
creates ``benchmarks/.venv-pycanon`` (git-ignored) on first use with ``pip install pycanon``
and runs pycanon there, in a child process (``--worker``) that reads the same CSV files. The
project side runs in the interpreter that started the script.

Configurations on Adult (30,162 rows, ARX's form and hierarchies, datasets/adult):

- ``raw``: QIs sex, age, race, marital-status; sensitive occupation (nominal: total variation);
- ``generalized``: age, education, native-country, marital-status, workclass generalized with
  ARX's hierarchies (levels 2, 1, 1, 1, 1) plus sex and race, rows of classes smaller than 5
  suppressed (so k, l and t are not trivial); sensitive occupation;
- ``numeric``: the generalized QIs without age, classes smaller than 5 suppressed; sensitive
  age (numeric: ordered EMD).

Reported per configuration: k, l (distinct), entropy l (pycanon rounds it down to an int; ours
is the float, compared after flooring) and t from both, whether they agree, and the time of
each pycanon function against one ``measure_risk`` call that computes all of them. Then the
two peer bugs reproduced: pycanon on a frame with a non-default index, and on a frame sorted by
the sensitive attribute.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
VENV = HERE / ".venv-pycanon"
PYCANON = "pycanon==1.3.6"

GENERALIZE = {"age": 2, "education": 1, "native-country": 1, "marital-status": 1, "workclass": 1}
CONFIGS = {
    "raw": (["sex", "age", "race", "marital-status"], "occupation"),
    "generalized": (["sex", "age", "race", "marital-status", "education", "native-country", "workclass"], "occupation"),
    "numeric": (["sex", "race", "marital-status", "education", "native-country", "workclass"], "age"),
}


# ----- worker: runs inside the pycanon environment, imports nothing from the project ----------


def worker(spec_path: str) -> None:
    import numpy as np
    import pandas as pd
    from pycanon import anonymity

    spec = json.loads(Path(spec_path).read_text())
    out = {"versions": {"pandas": pd.__version__, "numpy": np.__version__}}
    for name, job in spec["jobs"].items():
        df = pd.read_csv(job["csv"], sep=";")
        qi, sa = job["qi"], [job["sensitive"]]
        res: dict = {}
        for metric, fn, fargs in (("k", anonymity.k_anonymity, (df, qi)),
                                  ("l_distinct", anonymity.l_diversity, (df, qi, sa)),
                                  ("l_entropy", anonymity.entropy_l_diversity, (df, qi, sa)),
                                  ("t_closeness", anonymity.t_closeness, (df, qi, sa))):
            if metric not in job["metrics"]:
                continue
            times = []
            for _ in range(job["repeat"] if metric == "k" else 1):
                start = time.perf_counter()
                value = fn(*fargs)
                times.append(time.perf_counter() - start)
            res[metric] = {"value": float(value), "seconds": statistics.median(times)}
        if job.get("bugs"):
            shifted = df.copy()
            shifted.index = shifted.index + 1000  # any non-RangeIndex frame
            try:
                res["non_range_index_k"] = {"value": float(anonymity.k_anonymity(shifted, qi))}
                res["non_range_index_l"] = {"value": float(anonymity.l_diversity(shifted, qi, sa))}
            except Exception as exc:  # noqa: BLE001 - the bug being demonstrated
                res["non_range_index_l"] = {"error": f"{type(exc).__name__}: {exc}"[:120]}
            sorted_df = df.sort_values(job["sensitive"])
            try:
                res["sorted_t"] = {"value": float(anonymity.t_closeness(sorted_df, qi, sa))}
            except Exception as exc:  # noqa: BLE001
                res["sorted_t"] = {"error": f"{type(exc).__name__}: {exc}"[:120]}
        out[name] = res
    print(json.dumps(out))


# ----- main: the project side --------------------------------------------------------------


def ensure_venv() -> Path:
    python = VENV / "bin" / "python"
    if not python.exists():
        print(f"creating {VENV.relative_to(ROOT)} with {PYCANON} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", PYCANON], check=True)
    return python


def adult_dir() -> Path:
    env = os.environ.get("ANON_DAGSTER_ADULT_DIR")
    for candidate in ([Path(env)] if env else []) + [ROOT / "datasets" / "adult"]:
        if (candidate / "adult.csv").exists():
            return candidate
    sys.exit("Adult data not found (expected datasets/adult, or set ANON_DAGSTER_ADULT_DIR)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--synthetic", type=int, default=0,
                        help="also time pycanon k and l on the synthetic table of benchmarks/risk.py")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return

    sys.path.insert(0, str(ROOT))
    import pandas as pd

    from anon_dagster import measure_risk
    from anon_dagster.hierarchies import TableHierarchy

    folder = adult_dir()
    raw = pd.read_csv(folder / "adult.csv", sep=";")
    generalized = raw.copy()
    for col, level in GENERALIZE.items():
        h = TableHierarchy.from_csv(col, folder / f"adult_hierarchy_{col}.csv")
        generalized[col] = h.generalize(raw[col], level).astype(str)
    generalized_numeric = generalized.copy()
    generalized_numeric["age"] = raw["age"]  # the numeric sensitive attribute, ungeneralized

    def suppress(df: pd.DataFrame, qi: list[str], k: int = 5) -> pd.DataFrame:
        size = df.groupby(qi)[qi[0]].transform("size")
        return df[size >= k].reset_index(drop=True)

    generalized = suppress(generalized, CONFIGS["generalized"][0])
    generalized_numeric = suppress(generalized_numeric, CONFIGS["numeric"][0])

    tmp = Path(tempfile.mkdtemp(prefix="pycanon-"))
    frames = {"raw": raw, "generalized": generalized, "numeric": generalized_numeric}
    jobs = {}
    for name, (qi, sensitive) in CONFIGS.items():
        path = tmp / f"{name}.csv"
        frames[name].to_csv(path, sep=";", index=False)
        jobs[name] = {"csv": str(path), "qi": qi, "sensitive": sensitive, "repeat": args.repeat,
                      "metrics": ["k", "l_distinct", "l_entropy", "t_closeness"], "bugs": name == "generalized"}
    if args.synthetic:
        from risk import QIS, SENSITIVE, synthetic  # benchmarks/risk.py

        syn = synthetic(args.synthetic)
        path = tmp / "synthetic.csv"
        syn.to_csv(path, sep=";", index=False)
        frames["synthetic"] = syn
        jobs["synthetic"] = {"csv": str(path), "qi": QIS, "sensitive": SENSITIVE, "repeat": 1,
                             "metrics": ["k", "l_distinct"], "bugs": False}
        CONFIGS["synthetic"] = (QIS, SENSITIVE)
    spec = tmp / "jobs.json"
    spec.write_text(json.dumps({"jobs": jobs}))

    python = ensure_venv()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    start = time.perf_counter()
    proc = subprocess.run([str(python), __file__, "--worker", str(spec)], capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"pycanon worker failed:\n{proc.stderr[-2000:]}")
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"pycanon side: pandas {theirs['versions']['pandas']}, numpy {theirs['versions']['numpy']} "
          f"(worker {time.perf_counter() - start:.1f} s); project side: pandas {pd.__version__}")

    all_agree = True
    for name, (qi, sensitive) in CONFIGS.items():
        df = frames[name]
        kind = "numeric" if name == "numeric" else "nominal"
        times_all, times_k = [], []
        for _ in range(max(args.repeat, 5)):
            t0 = time.perf_counter()
            ours = measure_risk(df, qi, sensitive, sensitive_kind=kind, uniqueness=False,
                                attribute_disclosure=False)
            times_all.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            measure_risk(df, qi, uniqueness=False)
            times_k.append(time.perf_counter() - t0)
        t_all, t_k = statistics.median(times_all), statistics.median(times_k)
        print(f"\n[{name}] {len(df):,} rows, QIs {', '.join(qi)}; sensitive {sensitive} ({kind})")
        print(f"  {'metric':<12}{'ours':>12}{'pycanon':>12}{'agree':>7}{'ours s':>10}{'pycanon s':>11}{'ratio':>9}")
        mine = {"k": ours.k, "l_distinct": ours.l_distinct, "l_entropy": ours.l_entropy,
                "t_closeness": ours.t_closeness}
        for metric, value in mine.items():
            res = theirs[name].get(metric)
            if res is None:
                continue
            other = res["value"]
            if metric == "l_entropy":
                agree = math.floor(value + 1e-9) == other  # pycanon truncates to an int
            else:
                agree = math.isclose(value, other, rel_tol=1e-9, abs_tol=1e-9)
            all_agree &= agree
            ours_s = t_k if metric == "k" else t_all
            print(f"  {metric:<12}{value:>12.6g}{other:>12.6g}{'yes' if agree else 'NO':>7}"
                  f"{ours_s:>10.4f}{res['seconds']:>11.3f}{res['seconds'] / ours_s:>9.0f}x")
        bugs = {k: v for k, v in theirs[name].items() if k.startswith(("non_range", "sorted"))}
        if bugs:
            shifted = df.copy()
            shifted.index = shifted.index + 1000
            ours_shifted = measure_risk(shifted, qi, sensitive, uniqueness=False, attribute_disclosure=False)
            ours_sorted = measure_risk(df.sort_values(sensitive), qi, sensitive, uniqueness=False,
                                       attribute_disclosure=False)
            print("  peer bugs reproduced:")
            nr = bugs.get("non_range_index_l", {})
            print(f"    non-RangeIndex frame, l: pycanon {nr.get('value', nr.get('error'))}; "
                  f"ours {ours_shifted.l_distinct} (unchanged: {ours_shifted.l_distinct == ours.l_distinct})")
            st = bugs.get("sorted_t", {})
            print(f"    frame sorted by {sensitive}, t: pycanon {st.get('value', st.get('error'))}; "
                  f"ours {ours_sorted.t_closeness:.6g} (unchanged: "
                  f"{math.isclose(ours_sorted.t_closeness, ours.t_closeness)})")
    print(f"\nall figures agree: {'yes' if all_agree else 'NO'}")


if __name__ == "__main__":
    main()
