"""The process-wide counter of equivalence-class builds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from anon_dagster.risk.classes import EquivalenceClasses, class_builds, counting_class_builds


def test_counter_counts_each_build_inside_the_block_only():
    df = pd.DataFrame({"age": [30, 30, 40], "sex": ["F", "M", "F"]})
    EquivalenceClasses.from_frame(df, ["age"])  # before the block: not counted
    before = class_builds()
    with counting_class_builds() as builds:
        assert builds.count == 0
        EquivalenceClasses.from_frame(df, ["age", "sex"])
        assert builds.count == 1
        EquivalenceClasses.from_codes([np.array([0, 1, 0])], [2])
        assert builds.count == 2
    EquivalenceClasses.from_frame(df, ["sex"])  # after the block: the block's count stays
    assert builds.count == 2
    assert class_builds() == before + 3


def test_nested_blocks_count_independently():
    df = pd.DataFrame({"a": [1, 2]})
    with counting_class_builds() as outer:
        EquivalenceClasses.from_frame(df, ["a"])
        with counting_class_builds() as inner:
            EquivalenceClasses.from_frame(df, ["a"])
        assert (outer.count, inner.count) == (2, 1)
