"""Mondrian judges t-closeness as the release gate measures the published table.

The distance is the sensitive attribute's kind (total variation for a nominal attribute, the
ordered EMD for an ordinal one with its declared order, the hierarchical EMD with a table
hierarchy) and the reference is the distribution of the rows published: when a partition-key
part cannot be published its rows leave the reference, as they leave the table the gate
measures. So whatever Mondrian publishes passes the gate's t-closeness.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.anonymize import NoSolution, anonymize
from anon_dagster.release import gate
from tests.support.specs import release_spec

ORDER = ["3", "1", "0", "2", "5", "4", "7", "6"]  # a declared order unlike the sorted one
# values 0..7 in pairs, then quads, then *: unlike the declared order above
HIERARCHY = "".join(f"{v};{v - v % 2}-{v - v % 2 + 1};{v - v % 4}-{v - v % 4 + 3};*\n" for v in range(8))


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("closeness")
    (folder / "s.csv").write_text(HIERARCHY)
    return folder


def spec_for(kind: str, t: float, base: Path, partitioned: bool, max_suppression: float = 0.0):
    sensitive: dict = {"role": "sensitive"}
    if kind == "ordinal":
        sensitive.update(kind="ordinal", order=ORDER)
    elif kind == "hierarchical":
        sensitive.update(hierarchy={"type": "table", "path": "s.csv"})
    columns = {
        "age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [4, 8]}},
        "sex": {"role": "quasi"},
        "s": sensitive,
    }
    if partitioned:
        columns["region"] = {"role": "quasi", "partition_key": True}
    return release_spec(columns, release="closeness", thresholds={"k": 2, "t_closeness": t},
                        publication="o.parquet", base=base,
                        anonymization={"method": "mondrian", "k": 2, "max_suppression": max_suppression})


@st.composite
def tables(draw):
    n = draw(st.integers(6, 80))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # the sensitive value drifts with age, so halves of the age range differ in distribution;
    # a small region of high values is likely to miss the policy on its own, and the rows it
    # takes out of the published table shift the reference
    age = rng.integers(0, 40, n)
    spread = draw(st.integers(0, 4))
    s = np.clip(age // 5 + rng.integers(-spread, spread + 1, n), 0, 7)
    region = rng.choice(["N", "S"], n, p=[0.85, 0.15])
    s = np.where(region == "S", np.maximum(s, 7 - draw(st.integers(0, 2))), s)
    return pd.DataFrame({"age": age, "sex": rng.choice(["F", "M"], n), "s": s.astype(str), "region": region})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=tables(), kind=st.sampled_from(["ordinal", "hierarchical", "nominal"]),
       t=st.sampled_from([0.2, 0.3, 0.45, 0.6]), partitioned=st.sampled_from([True, True, False]))
def test_what_mondrian_publishes_passes_the_gates_t_closeness(base, df, kind, t, partitioned):
    spec = spec_for(kind, t, base, partitioned, max_suppression=0.3 if partitioned else 0.0)
    try:
        result = anonymize(df, spec)
    except NoSolution:
        return
    if len(result.data) == 0:
        return
    measured = gate.measure(spec, result.data)
    outcome = {o.name: o for o in gate.threshold_outcomes(spec, measured)}
    assert outcome["t_closeness"].passed, outcome["t_closeness"].summary
    assert result.record.mondrian is not None and result.record.mondrian.classes >= 1


def test_an_ordinal_attribute_is_cut_by_its_ordered_distance(base):
    # Ages 0..3 hold s = 3 and 1 (twice each, alternating), ages 4..7 hold s = 6: in ORDER the
    # values present rank 3 < 1 < 6, the table's distribution is (1/4, 1/4, 1/2). Cut at the age
    # median, the left half is (1/2, 1/2, 0), the right (0, 0, 1): total variation 1/2 each,
    # ordered distance (|1/2 - 1/4| + |1 - 1/2|) / 2 = 3/8 and (1/4 + 1/2) / 2 = 3/8. At t = 0.4
    # the nominal attribute refuses the cut (one class); the ordinal one, judged by its order,
    # accepts it.
    df = pd.DataFrame({"age": [0, 1, 2, 3, 4, 5, 6, 7], "sex": ["F"] * 8,
                       "s": ["3", "1", "3", "1", "6", "6", "6", "6"], "region": ["N"] * 8})
    results = {kind: (spec_for(kind, 0.4, base, False), None) for kind in ("nominal", "ordinal")}
    for kind, (spec, _) in results.items():
        results[kind] = (spec, anonymize(df, spec))
    assert results["nominal"][1].record.mondrian.classes == 1
    assert results["ordinal"][1].record.mondrian.classes >= 2
    for spec, result in results.values():
        outcome = {o.name: o for o in gate.threshold_outcomes(spec, gate.measure(spec, result.data))}
        assert outcome["t_closeness"].passed


def test_a_part_set_aside_leaves_the_reference(base):
    # Region S (2 rows, s = 7) is at total variation 4/5 from the table's (2/5, 2/5, 1/5) and is
    # suppressed; the published rows are region N's, s = 0 at ages 0..3 and 1 at ages 4..7.
    # Cut at the age median, each half of N holds one value: total variation 1/2 from N's
    # (1/2, 1/2, 0), the gate's reference, but 3/5 from the whole table's. At t = 0.55 only the
    # published reference lets Mondrian cut N.
    df = pd.DataFrame({"age": [0, 1, 2, 3, 4, 5, 6, 7, 0, 1], "sex": ["F"] * 10,
                       "s": ["0"] * 4 + ["1"] * 4 + ["7"] * 2, "region": ["N"] * 8 + ["S"] * 2})
    spec = spec_for("nominal", 0.55, base, True, max_suppression=0.2)
    result = anonymize(df, spec)
    assert result.record.suppression.rows == 2
    assert result.record.mondrian.classes >= 2
    outcome = {o.name: o for o in gate.threshold_outcomes(spec, gate.measure(spec, result.data))}
    assert outcome["t_closeness"].passed
