"""A generated register of 4,000 people for the attacks of the release gate (``policy.attacks``):
age, a 5-digit postcode and sex as quasi-identifiers, a skewed diagnosis as the secret, a
pseudonymized person identifier; published raw (method ``none``) nearly everybody is unique."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ATTACK_CHECKS = ["singling_out_risk", "linkability_risk", "inference_risk"]
THRESHOLDS = {"singling_out": 0.05, "linkability": 0.05, "inference": 0.10}
ROWS = 4000


def register(n: int = ROWS, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "pid": [f"P{i:06d}" for i in range(n)],
        "age": rng.integers(18, 90, n),
        "zip": [f"{z:05d}" for z in rng.integers(10_000, 10_300, n)],
        "sex": rng.choice(["F", "M"], n),
        "diagnosis": rng.choice(["x", "y", "z"], n, p=[0.6, 0.3, 0.1]),
    })


def write_release(folder: Path, *, name: str = "register", method: str = "global", k: int = 10,
                  control: dict | None = None, severity: str | None = None) -> Path:
    """The register and its spec in ``folder`` (``specs/<name>.yaml``, ``data/register.csv``)."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "specs").mkdir(parents=True, exist_ok=True)
    data = folder / "data" / "register.csv"
    if not data.exists():
        register().to_csv(data, index=False)
    attacks: dict = dict(THRESHOLDS)
    if control is not None:
        attacks["control"] = control
    if severity is not None:
        attacks["severity"] = severity
    spec = {
        "release": name,
        "source": {"path": "../data/register.csv"},
        "columns": {
            "pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "research"}},
            "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10, 20, 40, 80]}},
            "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [3, 2, 1]}},
            "sex": {"role": "quasi"},
            "diagnosis": {"role": "sensitive"},
        },
        "anonymization": {"method": method, "k": k, "max_suppression": 0.05},
        "policy": {"attacks": attacks},
        "publication": {"path": "../published/{release}.csv"},
    }
    path = folder / "specs" / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def sampled_release(folder: Path) -> Path:
    """The release ``register_sampled`` of a sample of half of 8,000 people, the other half beside
    it in the declared population (``policy.population``: the control records)."""
    people = register(n=2 * ROWS, seed=11)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    people.iloc[::2].to_csv(folder / "data" / "register.csv", index=False)  # the sample: half of them
    people.drop(columns=["pid"]).to_csv(folder / "data" / "people.csv", index=False)
    path = write_release(folder, name="register_sampled")
    raw = yaml.safe_load(path.read_text())
    raw["policy"]["population"] = {"path": "../data/people.csv"}
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path
