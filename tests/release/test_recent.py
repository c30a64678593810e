"""The results kept in process (:class:`~anon_dagster.release.recent.Recent`): the least recently
used goes first, asking for a value counts as using it."""

from hypothesis import given
from hypothesis import strategies as st

from anon_dagster.release.recent import Recent


def test_the_value_unused_longest_is_forgotten_first():
    kept: Recent[str] = Recent(2)
    kept.put("a", "A")
    kept.put("b", "B")
    assert kept.get("a") == "A"  # a is now the most recently used
    kept.put("c", "C")
    assert kept.get("b") is None and kept.get("a") == "A" and kept.get("c") == "C"
    kept.put("a", "A2")  # storing again replaces, without growing
    assert len(kept) == 2 and kept.get("a") == "A2"
    kept.clear()
    assert len(kept) == 0 and kept.get("a") is None


@given(st.integers(1, 4), st.lists(st.tuples(st.booleans(), st.integers(0, 6)), max_size=40))
def test_it_keeps_what_a_plain_list_of_recent_keys_keeps(size, steps):
    kept: Recent[int] = Recent(size)
    order: list[int] = []  # the model: keys by last use, oldest first
    values: dict[int, int] = {}
    for i, (store, key) in enumerate(steps):
        if store:
            kept.put(key, i)
            values[key] = i
        elif key not in order:
            assert kept.get(key) is None
            continue
        else:
            assert kept.get(key) == values[key]
        order = [k for k in order if k != key] + [key]
        order = order[-size:]
    assert len(kept) == len(order)
    assert all(kept.get(k) == values[k] for k in list(order))
