"""Release spec v1, synthetic releases: unknown keys of anonymization.synthetic and
policy.synthetic listed with the keys each takes; anonymization.synthetic.table validated when
the spec loads (file and key), a path with {partition} left to each partition."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from anon_dagster.errors import SpecError
from anon_dagster.spec import load_spec


def _write(folder: Path, *, synthetic: dict | None = None, policy: dict | None = None,
           partitions: bool = False) -> Path:
    raw = {"release": "people", "source": {"path": "people.csv"},
           "columns": {"age": {"role": "quasi"}, "admitted": {"role": "insensitive"},
                       "diagnosis": {"role": "sensitive"}},
           "anonymization": {"method": "synthetic", **({"synthetic": synthetic} if synthetic else {})},
           "policy": {"synthetic": policy or {"copy_rate_gap": 0.02}},
           "publication": {"path": "out/{release}-{partition}.csv"}}
    if partitions:
        raw["partitions"] = {"cadence": "yearly", "start": "2023-01-01", "column": "admitted"}
    path = folder / "people.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _problems(path: Path) -> list[tuple[str, str, str]]:
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return [(p.file, p.key, p.message) for p in info.value.problems]


def test_an_unknown_key_of_anonymization_synthetic_lists_the_keys_it_takes(tmp_path):
    path = _write(tmp_path, synthetic={"min_leaf": 5})
    assert _problems(path) == [(str(path), "anonymization.synthetic.min_leaf",
                                "unknown key 'min_leaf' (anonymization.synthetic takes: order, min_samples_leaf, "
                                "rows, table)")]


def test_an_unknown_key_of_policy_synthetic_lists_the_keys_it_takes(tmp_path):
    path = _write(tmp_path, policy={"copy_rate_gap": 0.02, "auc": 0.6})
    assert _problems(path) == [(str(path), "policy.synthetic.auc",
                                "unknown key 'auc' (policy.synthetic takes: copy_rate_gap, closer_to_train_gap, "
                                "mia_auc, control)")]


def test_a_missing_synthetic_table_is_a_spec_error_with_file_and_key(tmp_path):
    path = _write(tmp_path, synthetic={"table": "made/{release}.csv"})
    [(file, key, message)] = _problems(path)
    assert (file, key) == (str(path), "anonymization.synthetic.table")
    assert message.startswith("'made/{release}.csv': no such file") and "people.csv" in message
    (tmp_path / "made").mkdir()
    (tmp_path / "made" / "people.csv").write_text("age,admitted,diagnosis\n")
    assert load_spec(path).anonymization.synthetic.table == "made/{release}.csv"


def test_a_table_per_partition_is_looked_for_when_the_partition_is_made(tmp_path):
    spec = load_spec(_write(tmp_path, synthetic={"table": "made/{partition}.csv"}, partitions=True))
    assert spec.anonymization.synthetic.table == "made/{partition}.csv"


@pytest.mark.parametrize("table, said", [("made/{year}.csv", "may hold {release} and {partition} only"),
                                         ("s3://bucket/made.csv", "read from a local path")])
def test_a_table_that_cannot_be_read_locally_is_refused(tmp_path, table, said):
    [(_, key, message)] = _problems(_write(tmp_path, synthetic={"table": table}))
    assert key == "anonymization.synthetic.table" and said in message
