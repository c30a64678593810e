"""Great Expectations is imported for the data contract without pyspark, which stays importable.

Importing pyspark cost about a second of CPU of every process validating a contract; the
contract validates pandas frames only. A process that already holds pyspark (the Spark
engine's) keeps it and Great Expectations sees it. Each case runs in a new interpreter, since
an import happens once per process.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("pyspark")

WITHOUT = """
import sys
from anon_dagster.release.contract import _great_expectations
gx = _great_expectations()
assert "great_expectations" in sys.modules
print("pyspark loaded by the contract:", "pyspark" in sys.modules)
import pyspark
print("importable after:", pyspark.__name__ == "pyspark")
"""

WITH = """
import sys
import pyspark
from anon_dagster.release.contract import _great_expectations
_great_expectations()
from great_expectations.compatibility import pyspark as seen
print("seen by Great Expectations:", seen.pyspark is sys.modules["pyspark"])
"""


def run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_the_contract_imports_great_expectations_without_pyspark_and_leaves_it_importable():
    assert run(WITHOUT).splitlines() == ["pyspark loaded by the contract: False", "importable after: True"]


def test_a_process_holding_pyspark_keeps_it_for_great_expectations():
    assert run(WITH).splitlines() == ["seen by Great Expectations: True"]
