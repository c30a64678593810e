"""Local (cell) suppression: importance order, hand-computed cells, via anonymize."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anon_dagster.anonymize import Policy, anonymize, local_suppression
from anon_dagster.spec import spec_from_dict

REPO = Path(__file__).resolve().parents[2]

DF = pd.DataFrame({"c1": ["a", "a", "b", "b", "a", "b"], "c2": ["1", "1", "2", "2", "3", "3"]})


def test_least_important_column_is_suppressed_first():
    out, cells, still = local_suppression(DF, ["c1", "c2"], [], {"c1": 0.5, "c2": 2.0}, Policy(k=2))
    # rows 4 and 5 are unique; suppressing c1 makes them (*, 3) twice: done
    assert cells == {"c1": 2, "c2": 0} and not still.any()
    assert out["c1"].tolist() == ["a", "a", "b", "b", "*", "*"]
    out, cells, still = local_suppression(DF, ["c1", "c2"], [], {"c1": 2.0, "c2": 0.5}, Policy(k=2))
    # suppressing c2 first leaves (a, *) and (b, *) unique; then c1 goes too
    assert cells == {"c1": 2, "c2": 2} and not still.any()
    assert out.iloc[4].tolist() == ["*", "*"] and out.iloc[5].tolist() == ["*", "*"]


def test_rows_still_failing_are_returned_and_fixed_columns_untouched():
    df = pd.DataFrame({"c": ["x", "y", "z"], "p": ["P", "P", "Q"]})
    out, cells, still = local_suppression(df, ["c"], ["p"], {}, Policy(k=2))
    assert out["p"].tolist() == ["P", "P", "Q"]
    assert out["c"].tolist()[:2] == ["*", "*"] and cells == {"c": 2}
    assert still.tolist() == [False, False, True]  # alone in its partition key: the caller drops it


def test_anonymize_with_cell_suppression_keeps_rows():
    rng = np.random.default_rng(5)
    n = 300
    df = pd.DataFrame({"age": rng.integers(20, 60, n), "zip": rng.choice([f"2{i:04d}" for i in range(40)], n)})
    df.loc[0, "age"] = 99  # an outlier
    raw = {
        "release": "c", "source": {"path": "x.csv"},
        "columns": {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10, 20]}, "importance": 5},
                    "zip": {"role": "quasi", "hierarchy": {"type": "mask", "keep": [3, 1]}}},
        "anonymization": {"method": "global", "k": 5, "max_suppression": 0.05, "suppression": "cells",
                          "utility": "loss"},
        "publication": {"path": "p.csv"},
    }
    r = anonymize(df, spec_from_dict(raw, REPO / "s.yaml"))
    rows_sup = r.suppressed
    cells = r.record.suppression.cells
    assert r.data.astype(str).groupby(["age", "zip"]).size().min() >= 5
    assert len(r.data) + rows_sup == n
    # the chosen node leaves rows in small classes: their cells, not the rows, are suppressed
    assert r.record.search["best"]["suppressed_rows"] > 0 and rows_sup == 0
    # zip is less important than age: suppressed first (age only where zip alone did not do)
    assert cells["zip"] >= cells["age"] and cells["zip"] > 0
    assert (r.data["zip"].astype(str) == "*").sum() == cells["zip"]


def test_record_breaks_cell_suppression_down_by_partition_key():
    df = pd.DataFrame({"age": [20, 21, 22, 23, 60, 24, 25, 26], "p": ["A"] * 5 + ["B"] * 3})
    raw = {
        "release": "c", "source": {"path": "x.csv"},
        "columns": {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [10]}},
                    "p": {"role": "quasi", "partition_key": True}},
        "anonymization": {"method": "global", "k": 2, "max_suppression": 0.2, "suppression": "cells"},
        "publication": {"path": "p.csv"},
    }
    r = anonymize(df, spec_from_dict(raw, REPO / "s.yaml"))
    # level 1 (20-29) leaves age 60 alone in A: its age cell becomes '*', joined by nobody ->
    # still alone, so the row goes whole; nothing else is touched
    assert r.record.levels == {"age": 1}
    assert r.suppressed == 1 and r.record.cell_suppression.rows_with_cells_suppressed == 0
    df2 = pd.concat([df, pd.DataFrame({"age": [70], "p": ["A"]})], ignore_index=True)
    raw["anonymization"]["max_suppression"] = 0.25  # the search's budget: 2 rows may need treatment
    r2 = anonymize(df2, spec_from_dict(raw, REPO / "s.yaml"))
    # 60 and 70 in A: each alone at level 1, together as ('*', A)
    assert r2.suppressed == 0 and r2.record.suppression.cells == {"age": 2}
    assert r2.record.cell_suppression.by_partition_key == [{"p": "A", "suppressed": 2, "rows": 6,
                                                                  "share": pytest.approx(2 / 6, abs=1e-6)}]
