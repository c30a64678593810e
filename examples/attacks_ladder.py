"""The attacks ladder: singling out, linkability and inference on Adult, as the release is protected.

Run it with ``python examples/attacks_ladder.py`` (``--help`` for size, seed, ``--json``). Adult
(``datasets/adult``, 30,162 records) is split at random into two halves: one is released, the
other is the control set (people never released). The attacker knows a target's seven
quasi-identifiers (sex, age, race, marital status, education, native country, workclass); the
secrets are occupation and salary class. Three releases of the same half:

==================  ==============================================================
release             what is published
==================  ==============================================================
raw                 the records as they are
global k=10         optimal global recoding with ARX's hierarchies, k = 10, 5 % suppression
mondrian k=5        Mondrian's multidimensional partitioning, k = 5
cart synthetic      sequential CART synthesis of the half (synthpop's method, leaf 5)
==================  ==============================================================

Per release and attack (:mod:`anon_dagster.risk.attacks`): the success rate against people in
the release (main), against the control set (control), and the residual risk ``(main -
control) / (1 - control)`` with its 95 % interval. Expected shape: the raw release gives the
attacker something on every attack (singling out and inference far above the control rates,
linkability far above its control rate though low in absolute terms, since half of Adult's
quasi-identifiers leave several people per combination); global recoding at k = 10 leaves
residuals near 0; Mondrian at k = 5 leaves a clearly higher residual inference on salary class
than global k = 10 (its classes are smaller, so a target's own record weighs more in its class's
most frequent salary).

On the synthetic rung the attacks run with the released half as the main targets, scored as the
control targets are (nobody in a synthetic table is the target: :mod:`anon_dagster.risk.attacks`),
and the rung also reports the synthetic audit (:mod:`anon_dagster.risk.synthetic_audit`: exact-copy
rate gap, closer-to-train gap, membership-inference AUC).

``main(...)`` returns every figure as a dict, so tests and notebooks can use them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from anon_dagster.anonymize import anonymize
from anon_dagster.risk.attacks import AttackConfig, run_attacks
from anon_dagster.risk.synthetic_audit import audit
from anon_dagster.spec import spec_from_dict

ROOT = Path(__file__).resolve().parents[1]
QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]
SECRETS = ["occupation", "salary-class"]
ATTACKS = ("singling_out_multivariate", "linkability", "inference")
RELEASES = (("raw", "none", 1), ("global k=10", "global", 10), ("mondrian k=5", "mondrian", 5),
            ("cart synthetic", "synthetic", 5))
DEFAULT_SEED = 2024


def adult_dir() -> Path:
    """``datasets/adult``, or the folder ``$ANON_DAGSTER_ADULT_DIR`` names."""
    env = os.environ.get("ANON_DAGSTER_ADULT_DIR")
    folder = Path(env) if env else ROOT / "datasets" / "adult"
    if not (folder / "adult.csv").is_file():
        sys.exit(f"Adult data not found: {folder / 'adult.csv'} (set ANON_DAGSTER_ADULT_DIR)")
    return folder


def adult_spec(folder: Path, method: str, k: int):
    """The release spec of one rung: the seven QIs with ARX's hierarchies, the secrets sensitive."""
    columns: dict[str, Any] = {}
    for name in ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
                 "occupation", "salary-class"]:
        if name in QIS:
            columns[name] = {"role": "quasi",
                             "hierarchy": {"type": "table", "path": str(folder / f"adult_hierarchy_{name}.csv")}}
        else:
            columns[name] = {"role": "sensitive"}
    return spec_from_dict({
        "release": "adult", "source": {"path": str(folder / "adult.csv"), "separator": ";"}, "columns": columns,
        "anonymization": ({"method": method, "k": k, "max_suppression": 0.05, "utility": "loss"}
                          if method != "synthetic" else {"method": method, "synthetic": {"min_samples_leaf": k}}),
        "policy": {"synthetic": {"copy_rate_gap": 0.02}} if method == "synthetic" else {},
        "publication": {"path": "out/{release}.csv"},
    })


def split_halves(rows: int | None, seed: int, folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Adult (or ``rows`` of it drawn at random) split at random into released and control halves."""
    df = pd.read_csv(folder / "adult.csv", sep=";")
    if rows is not None and rows < len(df):
        df = df.sample(rows, random_state=seed)
    df = df.sample(frac=1.0, random_state=seed + 1).reset_index(drop=True)
    half = len(df) // 2
    return df.iloc[:half].reset_index(drop=True), df.iloc[half:].reset_index(drop=True)


def rung(name: str, method: str, k: int, released: pd.DataFrame, control: pd.DataFrame, folder: Path,
         targets: int | None) -> dict[str, Any]:
    """The attacks on one release of ``released``: per attack, main, control, residual and interval."""
    t0 = time.perf_counter()
    synthetic = method == "synthetic"
    extra: dict[str, Any] = {}
    if method == "none":
        published, originals, record, hierarchies = released, released, None, None
    elif synthetic:  # the synthetic rows are nobody's: the released half are the main targets
        published = anonymize(released, adult_spec(folder, method, k)).data
        originals, record, hierarchies = released, None, None
        extra["audit"] = {key: value for key, value in audit(published, released, control).figures().items()
                          if key in ("copy_rate_gap", "closer_to_train_gap", "mia_auc")}
    else:
        spec = adult_spec(folder, method, k)
        result = anonymize(released, spec)
        published, record, hierarchies = result.data, result.record, spec.hierarchies
        originals = released.loc[result.data.index]
    results = run_attacks(published, originals, control, columns=QIS, secrets=SECRETS, record=record,
                          hierarchies=hierarchies, config=AttackConfig(targets=targets), attacks=ATTACKS,
                          synthetic=synthetic)
    attacks = {}
    for r in results:
        attacks[r.name] = {"main": r.main.value, "control": r.control.value, "baseline": r.baseline.value,
                           "residual": r.residual, "low": r.residual_low, "high": r.residual_high,
                           "targets": [r.main.n, r.control.n]}
    return {"release": name, "rows": len(published), "seconds": round(time.perf_counter() - t0, 2),
            "attacks": attacks, **extra}


def main(rows: int | None = None, seed: int = DEFAULT_SEED, targets: int | None = None,
         verbose: bool = True) -> dict[str, Any]:
    """Every figure of the ladder (module docstring); printed as tables when ``verbose``."""
    folder = adult_dir()
    released, control = split_halves(rows, seed, folder)
    ladder = [rung(name, method, k, released, control, folder, targets) for name, method, k in RELEASES]
    out = {"released": len(released), "control": len(control), "quasi_identifiers": QIS, "secrets": SECRETS,
           "ladder": ladder}
    if verbose:
        print(f"Adult: {len(released):,} records released, {len(control):,} control records (never released).")
        print(f"The attacker knows: {', '.join(QIS)}; secrets: {', '.join(SECRETS)}.\n")
        header = f"{'release':<16}{'attack':<28}{'main':>7}{'control':>9}{'residual':>10}  95% interval"
        print(header)
        print("-" * len(header))
        for step in ladder:
            for attack, f in step["attacks"].items():
                label = attack.replace("singling_out_multivariate", "singling out")
                print(f"{step['release']:<16}{label:<28}{f['main']:>7.3f}{f['control']:>9.3f}{f['residual']:>10.3f}"
                      f"  [{f['low']:.3f}, {f['high']:.3f}]")
            print(f"{'':<16}({step['rows']:,} rows published, {step['seconds']:.1f} s)")
            if "audit" in step:
                print(f"{'':<16}audit: " + ", ".join(f"{k} {v:.3f}" for k, v in step["audit"].items()))
    return out


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Singling out, linkability and inference on Adult: raw, "
                                            "global recoding k=10, Mondrian k=5, CART synthesis.")
    p.add_argument("--rows", type=int, help="draw this many records of Adult first (default: all)")
    p.add_argument("--targets", type=int, help="main and control targets each (default: every person)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"the split's seed (default {DEFAULT_SEED})")
    p.add_argument("--json", action="store_true", help="print every figure as JSON")
    return p.parse_args(argv)


if __name__ == "__main__":
    args = _args(sys.argv[1:])
    figures = main(rows=args.rows, seed=args.seed, targets=args.targets, verbose=not args.json)
    if args.json:
        print(json.dumps(figures, indent=2))
