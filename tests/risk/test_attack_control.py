"""The control records of the attacks: the population's records not in the sample, or a keyed slice."""

from __future__ import annotations

import numpy as np
import pandas as pd

from anon_dagster.risk.attacks import select_control, withheld_rows

KEY = b"k" * 32


def _table(n: int, rows_per_person: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"pid": [f"P{i // rows_per_person:06d}" for i in range(n)],
                         "age": rng.integers(18, 90, n), "sex": rng.choice(["F", "M"], n)})


def test_the_slice_holds_ten_percent_at_least_a_thousand_rows_and_whole_persons():
    table = _table(20_000, rows_per_person=2)
    withheld = withheld_rows(table, key=KEY, persons=table["pid"])
    assert withheld.sum() == 2_000
    assert not set(table.loc[withheld, "pid"]) & set(table.loc[~withheld, "pid"])
    small = _table(5_000, rows_per_person=2)
    assert withheld_rows(small, key=KEY, persons=small["pid"]).sum() == 1_000  # the minimum


def test_the_slice_never_takes_more_than_half_the_rows():
    table = _table(1_200)
    assert withheld_rows(table, key=KEY).sum() == 600
    assert withheld_rows(table.iloc[:0], key=KEY).sum() == 0


def test_the_slice_is_chosen_by_the_key_the_same_every_time():
    table = _table(12_000, rows_per_person=3)
    one = withheld_rows(table, key=KEY, persons=table["pid"])
    assert (one == withheld_rows(table, key=KEY, persons=table["pid"])).all()
    other = withheld_rows(table, key=b"other key", persons=table["pid"])
    assert other.sum() == one.sum() and (other != one).any()
    # the order of rows does not change who is withheld
    shuffled = table.sample(frac=1.0, random_state=3)
    again = withheld_rows(shuffled, key=KEY, persons=shuffled["pid"])
    assert set(shuffled.loc[again, "pid"]) == set(table.loc[one, "pid"])


def test_the_population_gives_its_records_not_in_the_sample():
    population = _table(3_000)
    sample = population.sample(1_000, random_state=1)
    split = select_control(sample, key=KEY, population=population, columns=["age", "sex"])
    assert split.source == "population" and split.released.all()
    assert len(split.control) == 2_000
    both = pd.concat([sample[["age", "sex"]], split.control[["age", "sex"]]])
    count = lambda df: df.value_counts().sort_index()  # noqa: E731
    assert count(both).equals(count(population[["age", "sex"]]))


def test_a_population_that_does_not_hold_the_sample_is_not_used():
    population = _table(3_000)
    sample = population.iloc[:1_500].assign(age=200)  # ages nobody in the population has
    split = select_control(sample, key=KEY, population=population, columns=["age", "sex"])
    assert split.source == "withheld" and "not all in the population" in split.note
    assert (~split.released).sum() == len(split.control) == 750
    lacking = select_control(sample, key=KEY, population=population[["age"]], columns=["age", "sex"])
    assert lacking.source == "withheld" and "lacks column 'sex'" in lacking.note
