"""The data contract runs in any process, whatever else is installed beside Great Expectations.

Dagster's run workers are processes whose ``__main__`` has no file. Great Expectations imports
pyspark when it is installed, and pyspark's Spark Connect module exits such a process (it takes
it for its own doctest run) unless the Spark Connect extras are installed; the ``spark`` extra
installs them. A ``python -c`` process has the same kind of ``__main__``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

CODE = """
import great_expectations, sys
main = sys.modules["__main__"]
assert main.__spec__ is None and not hasattr(main, "__file__")
import anon_dagster.release.contract  # noqa: F401
try:
    import pyspark.sql.connect.utils as u
    u.check_dependencies()
except ImportError:
    pass
print("alive")
"""


def test_importing_great_expectations_does_not_end_a_process_without_a_main_file():
    proc = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("alive"), (proc.stdout[-500:], proc.stderr[-500:])


def test_with_pyspark_installed_the_spark_connect_extras_are_there_too():
    pytest.importorskip("pyspark")
    from pyspark.testing.connectutils import connect_requirement_message, should_test_connect

    assert should_test_connect, connect_requirement_message
