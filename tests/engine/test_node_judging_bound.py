"""The class bound of nodes judged on Spark: a node with more than B + (N - B) // k classes
(B the suppression budget in rows) cannot meet k within the budget; the bound is reached."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from anon_dagster.anonymize.criteria import Policy, evaluate_classes, suppression_budget
from anon_dagster.engine.spark_node_judging import class_bound


def meets_k(policy: Policy, sizes: list[int]) -> bool:
    """Whether classes of these sizes meet the policy within its budget, as the search judges."""
    sizes_ = np.asarray(sizes, dtype=np.int64)
    failing = evaluate_classes(policy, sizes_).failing
    return int(sizes_[failing].sum()) <= suppression_budget(policy, int(sizes_.sum()))


def test_hand_computed_bound_and_a_node_reaching_it():
    # 10 rows, k=3, 20 %: B = 2 rows, 8 rows left hold at most 2 classes of 3 or more: 4
    policy = Policy(k=3, max_suppression=0.2)
    assert class_bound(policy, 10) == 4
    assert meets_k(policy, [3, 5, 1, 1])  # 4 classes, two single rows suppressed: it is reached
    assert not meets_k(policy, [3, 4, 1, 1, 1])  # 5 classes: 3 rows below k, over the budget
    # no suppression: N // k; everything may go: N (nothing is excluded)
    assert class_bound(Policy(k=4), 10) == 2
    assert class_bound(Policy(k=2, max_suppression=1.0), 7) == 7
    # the budget is the search's floor(max_suppression x N): 0.15 x 20 = 3 rows, not 2.9999...
    assert class_bound(Policy(k=5, max_suppression=0.15), 20) == 3 + 17 // 5


@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=40), k=st.integers(1, 6),
       share=st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0]))
def test_more_classes_than_the_bound_never_meet_k(sizes, k, share):
    policy = Policy(k=k, max_suppression=share)
    if len(sizes) > class_bound(policy, sum(sizes)):
        assert not meets_k(policy, sizes)
