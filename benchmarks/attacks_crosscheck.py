"""Cross-check the attacks against anonymeter 1.1.0 on the attacks ladder's releases of Adult.

    .venv/bin/python benchmarks/attacks_crosscheck.py [--rows N] [--attacks N] [--repeat R] [--seed S] [--json]

anonymeter pins numpy < 1.27 and pyarrow < 22, so it never enters the project's environment:
this script creates ``benchmarks/.venv-anonymeter`` (git-ignored) on first use with ``pip install
anonymeter==1.1.0 pandas`` and runs anonymeter there, in a child process (a script passed to
that interpreter with ``-c``: ``WORKER`` of ``crosscheck_anonymeter.py``, beside this file with
the report's explanation of each disagreement). When the environment cannot be made (no network,
say) it says why and exits 0.

The releases are the ladder's (``examples/attacks_ladder.py``): Adult split at random into a
released half and a control half, published raw, by global recoding (k = 10), by Mondrian
(k = 5) and as a CART synthetic table of the half (leaf 5); the attacker knows the seven
quasi-identifiers, the secrets are occupation and salary class. In this process
:func:`anon_dagster.risk.attacks.run_attacks`'s steps (``prepare`` then ``attack``) give the
ladder's figures, every person a target (on the synthetic table the training records are the
main targets, scored as control targets are). Then three tables are written to a temporary
folder as parquet, so that both tools see the same inputs:

- the release as published;
- the main records: the released persons' raw records in the release's row order, decoded into
  the release's labels (global recoding: each value's label at its column's hierarchy level;
  Mondrian: the labels of the published class whose box holds the record, the nearest class
  when none does; raw: the values);
- the control records (never released), decoded the same way.

The synthetic rung is anonymeter's own case and needs no decoding: the synthetic table, the
training records (ori) and the control records, as they are.

anonymeter's ``SinglingOutEvaluator`` (multivariate, ``n_cols`` = the seven QIs: the
conjunction over every column, as anon_dagster's multivariate predicate; QIs compared as text
so both tools use equality predicates), ``LinkabilityEvaluator`` (the same two parts of the
columns, ``n_neighbors=1``) and ``InferenceEvaluator`` (each secret, categorical) run on them,
with ``--attacks`` targets each (singling out: at most the release's number of distinct
tuples). The child also measures, on anonymeter's own inputs and draws, the mechanisms behind
each disagreement: the rows its singling out drops as duplicates and what its queries match on
the table as published (per person; on the synthetic table, how many distinct synthetic tuples are
a training or a control record's against how many training or control persons find their own
tuple on exactly one synthetic row); the ties its linkability breaks (every release record at
its nearest distance, on its own distance function) and the link rate with ties kept; what its
inference baseline compares (guesses matched to targets by index label) and the rate of a
positionally random guess.

Printed: one table, release × attack, anon_dagster's main / control / residual beside
anonymeter's attack / control / baseline / risk, then an explanation of each disagreement with
the figures computed in the run. ``--repeat R`` runs anonymeter R times (seeds ``seed``,
``seed + 1``, ...; medians printed, the risks' range beside them); anon_dagster's figures are
seeded by the release's hash and the same every run. anonymeter's unseeded draws (pandas'
``sample``, ``np.random.default_rng()``, polars' ``sample``) are seeded from the run's seed in the
child, and polars' ``Series.unique`` keeps first-seen order (the same values, so its random
baseline queries repeat): the same command prints the same figures.

At full size (the default) the run takes about 3.5 minutes on two cores shared with other work,
most of it anonymeter's nearest-neighbour searches; ``--rows 3000 --attacks 300`` about a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
VENV = HERE / ".venv-anonymeter"
PACKAGES = ["anonymeter==1.1.0", "pandas"]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import attacks_ladder as ladder  # noqa: E402  (examples/attacks_ladder.py)
from crosscheck_anonymeter import LABELS, WORKER, explanations  # noqa: E402  (beside this file)

from anon_dagster.anonymize import anonymize  # noqa: E402
from anon_dagster.risk.attacks import AttackConfig, attack, default_parts, prepare, recode_targets  # noqa: E402
from anon_dagster.risk.attacks.search import find, set_rows  # noqa: E402

QIS, SECRETS, RELEASES = ladder.QIS, ladder.SECRETS, ladder.RELEASES
ATTACKS = ladder.ATTACKS
DEFAULT_ATTACKS = 1000


def ensure_venv() -> Path | None:
    """The anonymeter environment's python, created once; None (with the reason printed) when it
    cannot be made."""
    python = VENV / "bin" / "python"
    check = [str(python), "-c", "import anonymeter.evaluators, pandas, polars"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"creating {VENV.relative_to(ROOT)} with {' '.join(PACKAGES)} (once)", flush=True)
    steps = [[sys.executable, "-m", "venv", str(VENV)],
             [str(python), "-m", "pip", "install", "--quiet", *PACKAGES]]
    for step in steps:
        try:
            proc = subprocess.run(step, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as exc:
            print(f"could not run {' '.join(step[:3])}: {exc}")
            return None
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            print(f"{' '.join(step[:4])} failed (exit {proc.returncode}):\n  " + "\n  ".join(tail))
            return None
    return python


# ----- the project side ---------------------------------------------------------------------------


def release_of(method: str, k: int, released: pd.DataFrame, folder: Path):
    """One rung of the ladder: the published rows, their raw records (same order; a synthetic
    table's: every training record, in no relation to the rows), the transformation record and
    the hierarchies (None for the raw and the synthetic release: values published as they are)."""
    if method == "none":
        return released, released, None, None
    spec = ladder.adult_spec(folder, method, k)
    result = anonymize(released, spec)
    if method == "synthetic":
        return result.data, released, None, None
    return result.data, released.loc[result.data.index], result.record, spec.hierarchies


def decode(setup, records: pd.DataFrame, rng: np.random.Generator,
           own: np.ndarray | None = None) -> tuple[pd.DataFrame, dict[str, int]]:
    """Raw records written in the release's labels, as the attacks recode them: a global
    recoding's label of each value at its column's level; with Mondrian, the labels of the
    published class whose box holds the record (``own[i]``, record ``i``'s own published tuple,
    when it is one of them; else one drawn at random when several do, the nearest class when
    none does); values of unchanged columns as they are."""
    coding = setup.coding
    records = records.reset_index(drop=True)
    out = pd.DataFrame(index=records.index)
    stats = {"records": len(records)}
    if coding.method == "mondrian":
        tuples = setup.tuples(QIS)
        sets = find(tuples, recode_targets(coding, records, QIS))
        ids, inv = np.unique(sets.of_target, return_inverse=True)
        owner, tup = sets.tuples_of(ids)
        order = np.argsort(owner, kind="stable")
        owner, tup = owner[order], tup[order]
        count = np.bincount(owner, minlength=len(ids))
        start = np.concatenate([[0], np.cumsum(count)[:-1]])
        chosen = tup[start[inv] + (rng.random(len(records)) * count[inv]).astype(np.int64)]
        exact = sets.distance == 0
        if own is not None:  # a released record: its own class, when its box holds it
            pair = pd.MultiIndex.from_arrays([owner, tup])
            holds = pair.get_indexer(pd.MultiIndex.from_arrays([inv, own])) >= 0
            chosen = np.where(holds & exact, own, chosen)
            stats["own_class"] = int((holds & exact).sum())
        for j, c in enumerate(QIS):
            out[c] = np.asarray(coding[c].labels, dtype=object)[tuples.codes[j][chosen]].astype(str)
        stats.update(one_class=int((exact & (count[inv] == 1)).sum()), several=int((exact & (count[inv] > 1)).sum()),
                     nearest=int((~exact).sum()))
    else:
        for c in QIS:
            level = coding.levels.get(c, 0)
            if level > 0:
                out[c] = setup.coding.hierarchies[c].generalize(records[c], level).astype(str).to_numpy()
            else:
                out[c] = records[c].to_numpy()
    for c in SECRETS:
        out[c] = records[c].astype(str).to_numpy()
    return out, stats


def as_written(frame: pd.DataFrame) -> pd.DataFrame:
    """Plain columns for parquet: text, but a numeric column stays numeric (the raw release's age)."""
    out = pd.DataFrame(index=range(len(frame)))
    for c in [*QIS, *SECRETS]:
        s = frame[c].reset_index(drop=True)
        numeric = pd.api.types.is_numeric_dtype(s.dtype) and not isinstance(s.dtype, pd.CategoricalDtype)
        out[c] = s.to_numpy() if numeric else s.astype(str).to_numpy(dtype=object)
    return out


def ours(name: str, method: str, k: int, released: pd.DataFrame, control: pd.DataFrame, folder: Path,
         tmp: Path, seed: int) -> dict[str, Any]:
    """anon_dagster's attacks on one rung and the three tables written for anonymeter."""
    published, originals, record, hierarchies = release_of(method, k, released, folder)
    synthetic = method == "synthetic"
    t0 = time.process_time()
    setup = prepare(published, originals, control, columns=QIS, secrets=SECRETS, record=record,
                    hierarchies=hierarchies, config=AttackConfig(targets=None), synthetic=synthetic)
    results = attack(setup, ATTACKS, SECRETS)
    cpu = time.process_time() - t0
    figures = {}
    for r in results:
        key = f"inference:{r.secret}" if r.secret is not None else r.attack
        key = "singling_out" if key.startswith("singling_out") else key
        figures[key] = {"main": r.main.value, "control": r.control.value, "baseline": r.baseline.value,
                        "main_ci": [r.main.low, r.main.high], "control_ci": [r.control.low, r.control.high],
                        "residual": r.residual, "low": r.residual_low, "high": r.residual_high,
                        "targets": [r.main.n, r.control.n]}
    if synthetic:  # anonymeter's own case: ori the training records, syn the table, nothing to decode
        main, ctl, decoded, reach = originals, control, {"synthetic": True}, {}
    else:
        rng = np.random.default_rng([seed, len(name)])
        main, main_stats = decode(setup, originals, rng, own=setup.tuples(QIS).row_tuple)
        ctl, ctl_stats = decode(setup, control, rng)
        same = (main[QIS].astype(str).to_numpy() == published[QIS].astype(str).to_numpy()).all(axis=1)
        decoded = {"main": main_stats, "control": ctl_stats, "main_equal_published": float(same.mean())}
        reach = {side: reached(setup, published, raw, decoded_side)
                 for side, raw, decoded_side in (("main", originals, main), ("control", control, ctl))}
    folder_out = tmp / name.replace(" ", "_").replace("=", "")
    folder_out.mkdir()
    files = {}
    for what, frame in (("release", published), ("main", main), ("control", ctl)):
        files[what] = str(folder_out / f"{what}.parquet")
        as_written(frame).to_parquet(files[what], index=False)
    return {"release": name, "rows": len(published), "cpu": cpu, "attacks": figures, "files": files,
            "synthetic": synthetic, "decoded": decoded, "reached": reach}


def reached(setup, published: pd.DataFrame, raw: pd.DataFrame, decoded: pd.DataFrame) -> dict[str, float]:
    """Per linkability part, the median number of release records a target's part reaches: as the
    attacks find them from the raw values (records covering them, else the nearest), and as
    records carrying the same labels as the decoded record (what label equality finds)."""
    out = {}
    release = published[QIS].astype(str).reset_index(drop=True)
    for name, part in zip("AB", default_parts(QIS), strict=True):
        tuples = setup.tuples(part)
        sets = find(tuples, recode_targets(setup.coding, raw, part))
        ids, inv = np.unique(sets.of_target, return_inverse=True)
        owner, rows = set_rows(tuples, sets, ids)
        ours_n = np.bincount(owner, minlength=len(ids))[inv]
        counts = release.groupby(part, observed=True).size()
        keys = pd.MultiIndex.from_frame(decoded[part].astype(str))
        equal_n = counts.reindex(keys).fillna(0).to_numpy()
        out[f"{name}_covering"] = float(np.median(ours_n))
        out[f"{name}_equal_labels"] = float(np.median(equal_n))
    return out


# ----- the report ---------------------------------------------------------------------------------

def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of every number over the runs (the first run's structure); risk ranges added."""
    def merge(values):
        first = values[0]
        if isinstance(first, dict):
            return {k: merge([v[k] for v in values]) for k in first}
        if isinstance(first, list):
            return [merge([v[i] for v in values]) for i in range(len(first))] if all(
                isinstance(x, (int, float)) for x in first) else first
        if isinstance(first, (int, float)) and not isinstance(first, bool):
            return statistics.median(values)
        return first
    out = merge(runs)
    for attack_name in LABELS:
        out[attack_name]["risk_range"] = [min(r[attack_name]["risk"] for r in runs),
                                          max(r[attack_name]["risk"] for r in runs)]
    out["warnings"] = sorted({w for r in runs for w in r["warnings"]})
    return out


def table(rungs: list[dict[str, Any]], theirs: dict[str, Any], repeat: int) -> list[str]:
    lines = ["| release | attack | anon_dagster main | control | residual [95 %] | anonymeter attack | control "
             "| baseline | risk [95 %] |", "|---|---|---:|---:|---|---:|---:|---:|---|"]
    for rung in rungs:
        m_all = theirs[rung["release"]]
        for key, label in LABELS.items():
            a, m = rung["attacks"][key], m_all[key]
            spread = f" (runs {m['risk_range'][0]:.3f}–{m['risk_range'][1]:.3f})" if repeat > 1 else ""
            if "error" in m:
                control, risk = f"{m['n_control']:,.0f}/{m['n_attacks'][0]:,} > 1", "fails (see below)"
            else:
                control = f"{m['control']:.3f}"
                risk = f"{m['risk']:.3f} [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}]{spread}"
            lines.append(f"| {rung['release']} | {label} | {a['main']:.3f} | {a['control']:.3f} | {a['residual']:.3f} "
                         f"[{a['low']:.3f}, {a['high']:.3f}] | {m['attack']:.3f} | {control} "
                         f"| {m['baseline']:.3f} | {risk} |")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, help="draw this many records of Adult first (default: all 30,162)")
    p.add_argument("--attacks", type=int, default=DEFAULT_ATTACKS,
                   help=f"anonymeter's n_attacks per attack (default {DEFAULT_ATTACKS})")
    p.add_argument("--repeat", type=int, default=1, help="anonymeter runs, seeds seed, seed + 1, ... (medians)")
    p.add_argument("--seed", type=int, default=ladder.DEFAULT_SEED,
                   help=f"the split's and anonymeter's seed (default {ladder.DEFAULT_SEED})")
    p.add_argument("--json", action="store_true", help="print every figure as JSON")
    args = p.parse_args()

    python = ensure_venv()
    if python is None:
        print("anonymeter is not available here: cross-check skipped (nothing was compared).")
        return

    folder = ladder.adult_dir()
    released, control = ladder.split_halves(args.rows, args.seed, folder)
    with tempfile.TemporaryDirectory(prefix="anonymeter-crosscheck-") as folder_tmp:
        report(args, python, folder, released, control, Path(folder_tmp))


def report(args: argparse.Namespace, python: Path, folder: Path, released: pd.DataFrame, control: pd.DataFrame,
           tmp: Path) -> None:
    """Both sides on every rung (files in ``tmp``), then the table and the explanations."""
    rungs = [ours(name, method, k, released, control, folder, tmp, args.seed) for name, method, k in RELEASES]

    job = tmp / "job.json"
    job.write_text(json.dumps({"releases": {r["release"]: r["files"] for r in rungs}, "qis": QIS,
                               "parts": list(default_parts(QIS)), "secrets": SECRETS, "n_attacks": args.attacks,
                               "synthetic": [r["release"] for r in rungs if r["synthetic"]],
                               "seed": args.seed, "repeat": max(args.repeat, 1)}))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    start = time.perf_counter()
    proc = subprocess.run([str(python), "-c", WORKER, str(job)], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"anonymeter side failed:\n{proc.stderr[-3000:]}")
    raw = json.loads(proc.stdout.strip().splitlines()[-1])
    theirs = {name: median_run(runs) for name, runs in raw["releases"].items()}

    if args.json:
        print(json.dumps({"ours": rungs, "anonymeter": raw}, indent=2, default=float))
        return
    v = raw["versions"]
    print(f"Adult: {len(released):,} records released, {len(control):,} control records; attacker knows "
          f"{', '.join(QIS)}; secrets {', '.join(SECRETS)}.")
    print(f"anon_dagster: every person a target. anonymeter {v['anonymeter']} (pandas {v['pandas']}, numpy "
          f"{v['numpy']}, polars {v['polars']}): n_attacks {args.attacks}, seed {args.seed}, {max(args.repeat, 1)} run(s), "
          f"{wall:.0f} s.")
    for r in rungs:
        d = r["decoded"]
        t = theirs[r["release"]]["seconds"]
        timing = (f"anon_dagster {r['cpu']:.1f} s CPU, anonymeter {sum(t.values()):.1f} s (singling out "
                  f"{t['singling_out']:.1f}, linkability {t['linkability']:.1f}, inference {t['inference']:.1f})")
        if r["synthetic"]:
            print(f"  {r['release']}: {r['rows']:,} synthetic rows; anonymeter's ori = the {len(released):,} "
                  f"training records, control = the control records, as they are (nothing decoded); {timing}")
            continue
        extra = ""
        if "nearest" in d["control"]:
            extra = (f" (held by their own class's box: {d['main']['own_class']:,}; by several classes' boxes: "
                     f"{d['main']['several']:,}); control records held by one class's box "
                     f"{d['control']['one_class']:,}, by several {d['control']['several']:,} (one drawn), by none "
                     f"{d['control']['nearest']:,} (the nearest class)")
        print(f"  {r['release']}: {r['rows']:,} rows; main records decoded equal to their published row: "
              f"{d['main_equal_published']:.1%}{extra}; {timing}")
    print()
    for line in table(rungs, theirs, args.repeat):
        print(line)
    print()
    for line in explanations(rungs, theirs):
        indent = "  " if line.startswith(("- ", "  ")) else ""
        print(textwrap.fill(line, 110, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)
              if line else line)
    warned = sorted({w for t in theirs.values() for w in t["warnings"]})
    if warned:
        print("\nanonymeter's warnings: " + "; ".join(warned))


if __name__ == "__main__":
    main()
