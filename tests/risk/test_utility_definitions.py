"""One definition each of AECS, discernibility, generalization loss and the utility-query error:
hand-computed cases, and the anonymizer's figures equal the risk report's on what it publishes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anon_dagster.anonymize import anonymize
from anon_dagster.release import gate
from anon_dagster.risk import measure_risk, utility_query_error
from anon_dagster.risk.utility import aecs, discernibility, label_loss
from tests.support.specs import release_spec


def test_aecs_counts_the_suppressed_rows_as_one_class():
    sizes = np.array([2, 3])
    assert aecs(sizes) == 2.5  # 5 rows in 2 classes
    assert aecs(sizes, suppressed=1) == 2.0  # 6 rows in 2 classes and one of *
    assert aecs(np.array([], dtype=np.int64)) == 0.0


def test_discernibility_charges_a_suppressed_row_the_whole_input():
    # 2^2 + 3^2, and one suppressed row indistinguishable from all 6 input rows
    assert discernibility(np.array([2, 3])) == 13.0
    assert discernibility(np.array([2, 3]), suppressed=1) == 19.0


def test_label_loss():
    # 8 input values: a label covering 4 of them loses (4 - 1) / 7; a value 0; the top 1
    assert label_loss(np.array([4, 1]), 8, top=False).tolist() == pytest.approx([3 / 7, 0.0])
    assert label_loss(np.array([8]), 8, top=True).tolist() == [1.0]
    assert label_loss(np.array([1]), 1, top=False).tolist() == [0.0]


def test_query_error_asks_both_tables_and_matches_groups_by_label():
    original = pd.DataFrame({"sex": ["F", "F", "F", "M"], "y": ["a", "a", "b", "b"]})
    # F: a 2/3, b 1/3; M: b 1. Published with sex at *: * holds a 1/2, b 1/2. The input groups
    # F and M are not in the published table (0 %), * is not in the input (0 %): the largest
    # difference is M's b, 100 points
    generalized = original.assign(sex="*")
    assert utility_query_error(original, generalized, "sex", "y").max_error_points == pytest.approx(100.0)
    # sex kept, M's row suppressed: F is exact, M lost (b 100 % -> 0 %): 100 points
    kept = original.iloc[:3]
    err, table = utility_query_error(original, kept, "sex", "y")
    assert err == pytest.approx(100.0)
    assert table.loc[table["sex"] == "F", "error_points"].max() == 0.0
    # the F row with b suppressed: F becomes a 100 % (from 66.7): 33.3 points; M exact
    assert utility_query_error(original, original.iloc[[0, 1, 3]], "sex", "y").max_error_points == \
        pytest.approx(100 / 3)


def spec_for(utility: str, max_suppression: float):
    columns = {"age": {"role": "quasi", "hierarchy": {"type": "interval", "widths": [5]}},
               "sex": {"role": "quasi"}, "y": {"role": "sensitive"}}
    queries = [{"name": "y_by_sex", "group_by": ["sex"], "target": "y"}]
    return release_spec(columns, release="defs", thresholds={"k": 2}, utility_queries=queries,
                        anonymization={"method": "global", "k": 2, "utility": utility,
                                       "max_suppression": max_suppression})


TABLE = pd.DataFrame({"age": [21, 22, 23, 24, 31, 32, 33, 34, 50],
                      "sex": list("MMFFMMFFM"), "y": list("abababaab")})


@pytest.mark.parametrize("utility", ["loss", "aecs", "discernibility"])
@pytest.mark.parametrize("max_suppression", [0.0, 0.2])
def test_the_anonymizers_figure_is_the_risk_reports(utility, max_suppression):
    spec = spec_for(utility, max_suppression)
    result = anonymize(TABLE, spec)
    m = measure_risk(result.data, spec.quasi_identifiers, hierarchies=spec.hierarchies,
                     original=TABLE, suppressed=result.suppressed).to_dict()
    key = {"loss": "generalization_loss"}.get(utility, utility)
    assert result.record.utility.value == pytest.approx(m[key], rel=1e-12)


def test_hand_computed_loss_of_a_node():
    # k=2 without suppression: age to 20-24/30-34/50-54 leaves the 50-year-old alone, so age
    # goes to * or sex to *; ages 20-24 and 30-34 cover 4 of 9 values: (4-1)/8, 50-54 covers 1
    spec = spec_for("loss", 0.2)
    result = anonymize(TABLE, spec)
    # one row (age 50) may be suppressed (budget floor(0.2 * 9) = 1): node age=1, sex=0, the
    # 8 kept rows lose 3/8 on age and 0 on sex, the suppressed row 1 on both
    assert result.record.levels == {"age": 1, "sex": 0}
    assert result.suppressed == 1
    assert result.record.utility.value == pytest.approx((8 * 3 / 8 + 1 + 1) / (9 * 2))


def test_the_records_query_error_is_the_gates():
    spec = spec_for("loss", 0.2)
    result = anonymize(TABLE, spec)
    [outcome] = gate.utility_outcomes(spec, TABLE, result.data)
    assert result.record.utility.queries["y_by_sex"] == pytest.approx(outcome.value, abs=1e-6)
