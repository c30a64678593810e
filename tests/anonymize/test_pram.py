"""PRAM: matrix validation, seeded draws, deterministic matrices, published with the data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anon_dagster.anonymize import anonymize, apply_pram, parse_pram
from anon_dagster.errors import DataError, SpecError
from anon_dagster.spec import spec_from_dict

REPO = Path(__file__).resolve().parents[2]


def test_matrix_problems_are_all_reported():
    with pytest.raises(SpecError) as exc:
        parse_pram({"column": "d", "matrix": {"a": {"a": 0.5, "b": 0.4}, "b": {"c": 1.0}}})
    text = str(exc.value)
    assert "sum to 0.9" in text and "'c' has no row" in text


def test_swap_matrix_is_deterministic_and_identity_changes_nothing():
    s = pd.Series(["a", "b", "a", None], name="d")
    swap = parse_pram({"column": "d", "matrix": {"a": {"b": 1}, "b": {"a": 1}}})
    out, changed = apply_pram(s, swap, seed=1)
    assert out.tolist()[:3] == ["b", "a", "b"] and pd.isna(out.iloc[3]) and changed == 3
    ident = parse_pram({"column": "d", "matrix": {"a": {"a": 1}, "b": {"b": 1}}})
    out, changed = apply_pram(s, ident, seed=1)
    assert out.tolist()[:3] == ["a", "b", "a"] and changed == 0


def test_draws_follow_the_matrix_and_the_seed():
    s = pd.Series(["a"] * 20000 + ["b"] * 20000, name="d")
    p = parse_pram({"column": "d", "matrix": {"a": {"a": 0.8, "b": 0.2}, "b": {"a": 0.1, "b": 0.9}}})
    out, changed = apply_pram(s, p, seed=42)
    a_to_b = (out.iloc[:20000] == "b").mean()
    b_to_a = (out.iloc[20000:] == "a").mean()
    assert abs(a_to_b - 0.2) < 0.015 and abs(b_to_a - 0.1) < 0.015
    again, _ = apply_pram(s, p, seed=42)
    assert again.equals(out)
    other, _ = apply_pram(s, p, seed=43)
    assert not other.equals(out)
    # the analyst's correction: observed frequencies times P^-1 estimate the input's
    observed = np.array([(out == "a").mean(), (out == "b").mean()])
    estimate = observed @ np.linalg.inv(p.matrix)
    assert np.allclose(estimate, [0.5, 0.5], atol=0.01)


def test_value_without_a_row_is_named():
    p = parse_pram({"column": "d", "matrix": {"a": {"a": 1}}})
    with pytest.raises(DataError, match="'d'.*'zz'"):
        apply_pram(pd.Series(["a", "zz"], name="d"), p, seed=0)


def test_anonymize_publishes_the_matrix_in_the_record():
    df = pd.DataFrame({"age": np.arange(40) % 20 + 20, "d": ["a", "b"] * 20})
    raw = {
        "release": "p", "source": {"path": "x.csv"},
        "columns": {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5]}},
                    "d": {"role": "sensitive"}},
        "anonymization": {"method": "global", "k": 2, "seed": 7,
                          "pram": {"column": "d", "matrix": {"a": {"a": 0.7, "b": 0.3}, "b": {"b": 1.0}}}},
        "publication": {"path": "p.csv"},
    }
    r = anonymize(df, spec_from_dict(raw, REPO / "s.yaml"))
    assert r.record.pram.matrix == {"a": {"a": 0.7, "b": 0.3}, "b": {"b": 1.0}}
    assert r.record.pram.seed == 7
    changed = r.record.pram.rows_changed
    assert changed == int((r.data["d"] != df["d"]).sum()) and changed > 0
    assert (r.data.loc[df["d"] == "b", "d"] == "b").all()
