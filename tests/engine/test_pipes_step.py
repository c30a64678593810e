"""The external step of Dagster Pipes: its extras read with their defaults or refused in one line, and
what it reports (plain JSON, without Dagster in its process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from anon_dagster.engine.pipes_step import StepExtras
from anon_dagster.errors import UserError
from tests.support.releases import write_release


def test_the_extras_are_read_with_the_engines_defaults():
    extras = StepExtras.from_extras({"spec": "specs/tiny.yaml", "step": "checks", "partition": 2023})
    assert (extras.spec, extras.step, extras.partition, extras.engine, extras.spark_master) == \
        ("specs/tiny.yaml", "checks", "2023", "pandas", "local[2]")


@pytest.mark.parametrize(("extras", "says"), [
    ({"step": "checks"}, "no release spec"),
    ({"spec": "s.yaml", "step": "publish"}, "'publish': one of checks, frequencies"),
    ({"spec": "s.yaml", "step": "frequencies"}, "needs the extra 'frequencies'"),
])
def test_missing_or_unknown_extras_are_refused_in_one_line(extras, says):
    with pytest.raises(UserError, match=says) as caught:
        StepExtras.from_extras(extras)
    assert "\n" not in str(caught.value)


# the external step run on a recorder of what it reports, in a fresh interpreter
RECORDED = """
import json, sys
from anon_dagster.engine.pipes_step import StepExtras, run_step

class Recorder:
    def __init__(self):
        self.checks, self.messages = [], []
    def report_asset_check(self, **kwargs):
        self.checks.append(kwargs)
    def report_custom_message(self, payload):
        self.messages.append(payload)

recorder = Recorder()
run_step(recorder, StepExtras.from_extras({"spec": sys.argv[1], "step": "checks", "partition": "2024",
                                           "asset_key": "tiny/anonymized"}))
loaded = sorted(m for m in sys.modules if m == "dagster" or m.startswith("dagster."))
print(json.dumps({"checks": recorder.checks, "messages": recorder.messages, "dagster": loaded}))
"""


def test_the_step_reports_plain_json_and_never_imports_dagster(tmp_path, master_key):
    spec = write_release(tmp_path, composition=False, rows_2024=4, thresholds={"k": 2, "l_distinct": 2})
    done = subprocess.run([sys.executable, "-c", RECORDED, str(spec)], capture_output=True, text=True,
                          env={**os.environ, "ANON_DAGSTER_MASTER_KEY": master_key}, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["dagster"] == []
    assert [(c["check_name"], c["passed"], c["severity"]) for c in out["checks"]] == [
        ("k_anonymity", True, "ERROR"), ("l_diversity_distinct", False, "ERROR"), ("data_contract", True, "ERROR")]
    assert out["checks"][1]["metadata"]["measured"] == {"raw_value": 1, "type": "int"}
    (described,) = out["messages"]
    assert described["message"] == "check_descriptions"
    assert described["descriptions"]["l_diversity_distinct"].startswith("distinct l-diversity = 1")
