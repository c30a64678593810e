"""Tiny tables drawn by hypothesis, with the values engines disagree about: missing values, empty
strings, integers beside floats, categoricals with unused categories."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import strategies as st

QIS = ["age", "sex", "zone", "grade"]
SENSITIVE = ["diagnosis", "score"]
SCORE_ORDER = [0, 1, 2, 3]


@st.composite
def tiny_frames(draw, min_rows: int = 1, max_rows: int = 14) -> pd.DataFrame:
    """A table of a few rows: ``age`` integers with gaps (float with NaN when one is missing),
    ``sex`` text with empty strings and None, ``zone`` floats some of which are whole numbers,
    ``grade`` a categorical with unused categories, ``diagnosis`` text with None and ``score``
    integers 0..3 (an ordinal)."""
    n = draw(st.integers(min_rows, max_rows))
    ages = draw(st.lists(st.one_of(st.sampled_from([30, 31, 40]), st.none()), min_size=n, max_size=n))
    sexes = draw(st.lists(st.sampled_from(["F", "M", "", None]), min_size=n, max_size=n))
    zones = draw(st.lists(st.sampled_from([1.0, 2.0, 2.5, np.nan]), min_size=n, max_size=n))
    grades = draw(st.lists(st.sampled_from(["a", "b", None]), min_size=n, max_size=n))
    diagnoses = draw(st.lists(st.sampled_from(["flu", "hiv", "", None]), min_size=n, max_size=n))
    scores = draw(st.lists(st.sampled_from(SCORE_ORDER), min_size=n, max_size=n))
    age = pd.Series(ages, dtype="float64") if any(a is None for a in ages) else pd.Series(ages, dtype="int64")
    return pd.DataFrame({
        "age": age,
        "sex": pd.Series(sexes, dtype=object),
        "zone": pd.Series(zones, dtype="float64"),
        # categories in first-appearance order beside unused ones: "z" and "y" are never drawn
        "grade": pd.Categorical(grades, categories=_categories(grades)),
        "diagnosis": pd.Series(diagnoses, dtype=object),
        "score": pd.Series(scores, dtype="int64"),
    })


def _categories(values: list[object]) -> list[str]:
    seen = [v for v in dict.fromkeys(values) if v is not None]
    return ["z", *seen, "y"]
