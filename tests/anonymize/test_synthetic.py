"""The synthetic method (anon_dagster.anonymize.synthetic_method): sequential CART, seeded from the
input; a table of another generator checked against the release's columns; the spec's rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from anon_dagster.anonymize import anonymize
from anon_dagster.anonymize.synthetic_method import draw_from_leaves, synthesis_seed
from anon_dagster.errors import DataError, SpecError
from anon_dagster.spec import spec_from_dict


def people(n: int = 400, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    return pd.DataFrame({
        "age": age,
        "sex": rng.choice(["F", "M"], n),
        "admitted": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, n), unit="D"),
        "income": np.round(age * 500 + rng.normal(0, 2000, n), 2),
        "diagnosis": np.where(age > 60, "x", rng.choice(["y", "z"], n)),
    })


def spec(tmp_path=None, synthetic: dict | None = None, **extra):
    raw = {
        "release": "people", "source": {"path": "people.csv"},
        "columns": {"age": {"role": "quasi"}, "sex": {"role": "quasi"}, "admitted": {"role": "insensitive"},
                    "income": {"role": "insensitive"}, "diagnosis": {"role": "sensitive"}},
        "anonymization": {"method": "synthetic", **({"synthetic": synthetic} if synthetic else {})},
        "policy": {"synthetic": {"copy_rate_gap": 0.02, "mia_auc": 0.55}},
        "publication": {"path": "out.csv"},
    }
    for key, value in extra.items():
        raw[key] = {**raw.get(key, {}), **value}
    return spec_from_dict(raw, tmp_path / "spec.yaml" if tmp_path is not None else None)


def test_the_same_input_synthesizes_the_same_table():
    df = people()
    first, second = anonymize(df, spec()), anonymize(df.copy(), spec())
    pd.testing.assert_frame_equal(first.data, second.data)
    assert first.record.synthetic.seed == second.record.synthetic.seed
    other = anonymize(df, spec(anonymization={"method": "synthetic", "seed": 9}))
    assert not other.data.equals(first.data)


def test_the_seed_is_the_input_hash_and_the_declared_seed():
    assert synthesis_seed("ab" * 32, 0) == synthesis_seed("ab" * 32, 0)
    assert synthesis_seed("ab" * 32, 0) != synthesis_seed("ab" * 32, 1)
    assert synthesis_seed("ab" * 32, 0) != synthesis_seed("cd" * 32, 0)


def test_every_synthetic_value_is_a_real_value_of_its_column():
    df = people()
    result = anonymize(df, spec())
    out = result.data
    assert list(out.columns) == list(df.columns) and len(out) == len(df)
    for c in df.columns:
        assert set(out[c]) <= set(df[c]), c
        assert out[c].dtype.kind == df[c].dtype.kind, c  # numbers, texts and dates stay what they are
    record = result.record
    assert record.method == "synthetic" and record.rows_out == len(df) and record.suppression.rows == 0
    assert record.synthetic.generator == "cart" and record.synthetic.min_samples_leaf == 5
    assert record.synthetic.order == ["age", "sex", "admitted", "income", "diagnosis"]


def test_the_trees_carry_the_relation_between_columns():
    # diagnosis is x exactly above 60: drawn from leaves of a tree on age, it stays so
    out = anonymize(people(2000), spec(synthetic={"min_samples_leaf": 5})).data
    assert (out.loc[out["age"] > 62, "diagnosis"] == "x").mean() > 0.95
    assert np.corrcoef(out["age"], out["income"])[0, 1] > 0.8


def test_a_declared_order_and_rows():
    result = anonymize(people(), spec(synthetic={"order": ["diagnosis", "age"], "rows": 50}))
    assert result.record.synthetic.order == ["diagnosis", "age", "sex", "admitted", "income"]
    assert len(result.data) == 50 and list(result.data.columns)[:2] == ["diagnosis", "age"]


def test_draw_from_leaves_by_hand():
    train_leaf = np.array([3, 7, 3, 7, 7])
    rng = np.random.default_rng(0)
    drawn = draw_from_leaves(train_leaf, np.array([3, 3, 7, 7, 7, 3]), rng)
    assert set(drawn[[0, 1, 5]]) <= {0, 2} and set(drawn[[2, 3, 4]]) <= {1, 3, 4}


def test_a_table_of_another_generator(tmp_path):
    df = people()
    made = df.sample(100, random_state=3).reset_index(drop=True)
    made.to_csv(tmp_path / "made.csv", index=False)
    result = anonymize(df, spec(tmp_path, synthetic={"table": "made.csv"}))
    assert len(result.data) == 100 and result.record.synthetic.generator == "table"
    assert result.record.synthetic.table == "made.csv"
    made.drop(columns="income").to_csv(tmp_path / "short.csv", index=False)
    with pytest.raises(DataError, match=r"short\.csv: the synthetic table has no column 'income'"):
        anonymize(df, spec(tmp_path, synthetic={"table": "short.csv"}))
    made.assign(name="x").to_csv(tmp_path / "wide.csv", index=False)
    with pytest.raises(DataError, match=r"wide\.csv: the synthetic table has column 'name'"):
        anonymize(df, spec(tmp_path, synthetic={"table": "wide.csv"}))
    made.assign(age="old").to_csv(tmp_path / "text.csv", index=False)
    with pytest.raises(DataError, match="column 'age' holds numbers in the data but not in the synthetic table"):
        anonymize(df, spec(tmp_path, synthetic={"table": "text.csv"}))


def _problems(**changes) -> list[str]:
    with pytest.raises(SpecError) as info:
        spec(**changes)
    return [str(p) for p in info.value.problems]


def test_the_spec_refuses_what_a_synthetic_release_cannot_mean():
    found = _problems(policy={"thresholds": {"k": 5}},
                      columns={"pid": {"role": "identifier", "pseudonymize": {"method": "hmac", "purpose": "r"}}})
    assert any("policy.thresholds.k" in p and "publishes no person's row" in p for p in found)
    assert any("columns.pid.pseudonymize" in p for p in found)
    assert any("anonymization.synthetic.order.0" in p for p in _problems(
        anonymization={"method": "synthetic", "synthetic": {"order": ["nope"]}}))
    assert any("policy.synthetic" in p and "at least one" in p for p in _problems(policy={"synthetic": {}}))
    assert any("policy.synthetic" in p and "'global'" in p for p in _problems(anonymization={"method": "global"}))


def test_a_spec_without_the_blocks_hashes_as_before():
    raw = spec(anonymization={"method": "global"}, policy={"synthetic": None}).model_dump(mode="json")
    assert "synthetic" not in raw["anonymization"] and "synthetic" not in raw["policy"]
