"""The uniform entry of the row steps (:func:`anon_dagster.release.engine_steps.row_step`) on the
pandas engine: each step hands on what the pipeline computes, from the inputs it is given."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from anon_dagster.engine import PandasEngine
from anon_dagster.release import engine_steps, pipeline
from anon_dagster.release.engine_steps import ROW_STEPS, StepCall, StepOutput, row_step
from anon_dagster.spec import load_spec
from tests.support.ledgers import fixed_keystore
from tests.support.releases import write_release

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")


def no_storage() -> Path:
    raise AssertionError("the pandas engine stores no table of its own")


def test_the_row_steps_in_their_order_hand_on_the_pipelines_tables(tmp_path):
    spec = load_spec(write_release(tmp_path))
    keystore = fixed_keystore(tmp_path / "keystate")
    assert [(s.name, s.upstream) for s in ROW_STEPS] == [("raw", None), ("pseudonymized", "raw"),
                                                         ("anonymized", "pseudonymized")]
    outputs: dict[str, StepOutput] = {}
    for step in ROW_STEPS:
        inputs = {step.upstream: outputs[step.upstream].value} if step.upstream else {}
        outputs[step.name] = row_step(step, StepCall(PandasEngine(), spec, "2023", keystore=lambda: keystore,
                                                     storage=no_storage, inputs=inputs))
    raw = pipeline.ingest(spec, "2023").data
    pseudonymized = pipeline.pseudonymize(spec, raw, keystore, partition="2023").data
    anonymized = pipeline.anonymize(spec, pseudonymized).data
    pd.testing.assert_frame_equal(outputs["raw"].value, raw)
    pd.testing.assert_frame_equal(outputs["pseudonymized"].value, pseudonymized)
    pd.testing.assert_frame_equal(outputs["anonymized"].value, anonymized)
    assert [outputs[s].rows for s in ("raw", "pseudonymized")] == [40, 40]
    assert outputs["raw"].record_file is None and outputs["anonymized"].record_file is not None
    assert outputs["anonymized"].warning is None


def test_a_warning_of_the_anonymized_step_names_the_release_and_the_partition(tmp_path, monkeypatch):
    spec = load_spec(write_release(tmp_path))
    monkeypatch.setattr(engine_steps, "anonymized_step",
                        lambda *a, **k: StepOutput(None, {}, 0, warning="policy unreachable"))
    anonymized = ROW_STEPS[2]
    call = StepCall(PandasEngine(), spec, "2023", keystore=lambda: None, storage=no_storage)
    assert row_step(anonymized, call).warning == "tiny 2023: policy unreachable"
