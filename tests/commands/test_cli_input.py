"""The command line on hostile or unusual input: a closed output pipe, partition keys that are
paths, infinities under an interval hierarchy. Each ends in one line (or quietly), never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

from anon_dagster.cli import main

COMMAND = [sys.executable, "-m", "anon_dagster.cli"]


def big_risk_output(tmp_path) -> list[str]:
    """``risk --json`` broken down by 1,000 subgroups: far more output than a pipe holds."""
    rng = np.random.default_rng(0)
    n = 3000
    path = tmp_path / "t.csv"
    pd.DataFrame({"age": rng.integers(20, 80, n), "sex": rng.choice(["F", "M"], n),
                  "zone": rng.integers(0, 1000, n)}).to_csv(path, index=False)
    return [*COMMAND, "risk", str(path), "--qi", "age,sex", "--subgroup", "zone", "--json"]


def test_a_reader_that_reads_one_line_and_closes_stops_the_command_quietly(tmp_path):
    """``anon-dagster risk --json | head -1``."""
    with subprocess.Popen(big_risk_output(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    assert first.strip() == b"{"
    assert code in (0, 141)
    assert "Traceback" not in err and "BrokenPipeError" not in err and err == ""


def test_an_output_closed_before_the_first_write_is_status_141(tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(big_risk_output(tmp_path), stdout=write_end, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)
    assert proc.returncode == 141
    assert proc.stderr == b""


def partitioned(tmp_path) -> str:
    (tmp_path / "specs").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "etc").mkdir()
    (tmp_path / "data" / "2024.csv").write_text("age,day\n30,2024-01-01\n")
    (tmp_path / "etc" / "x.csv").write_text("age,day\n30,2024-01-01\n")  # what a traversal would reach
    spec = tmp_path / "specs" / "spec.yaml"
    spec.write_text(textwrap.dedent("""\
        release: trav
        source: {path: ../data/{partition}.csv}
        partitions: {cadence: yearly, start: "2023-01-01", end: "2025-01-01", column: day}
        columns:
          age: {role: quasi}
          day: {role: insensitive}
        anonymization: {method: none}
        publication: {path: ../out/{partition}.csv}
    """))
    return str(spec)


@pytest.mark.parametrize("command", [["risk", "--config"], ["check"], ["anonymize"]])
@pytest.mark.parametrize("key,words", [
    ("../etc/x", "is not a yearly partition key"), ("2024/../../etc/x", "is not a yearly partition key"),
    ("../../etc/x", "is not a yearly partition key"), ("2022", "before the first partition"),
    ("2025", "does not end by partitions.end"),
])
def test_a_partition_key_is_checked_before_it_is_a_path(tmp_path, capsys, command, key, words):
    spec = partitioned(tmp_path)
    extra = ["--output", str(tmp_path / "o.csv")] if command == ["anonymize"] else []
    code = main([*command, spec, "--partition", key, *extra])
    out, err = capsys.readouterr()
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and words in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "o.csv").exists()


def test_an_infinity_under_an_interval_hierarchy_is_one_line(tmp_path):
    (tmp_path / "data.csv").write_text("age,sex,diag\n30,F,a\n31,F,b\ninf,M,a\n40,M,c\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent("""\
        release: inf
        source: {path: data.csv}
        columns:
          age: {role: quasi, hierarchy: {type: interval, widths: [10, 20]}}
          sex: {role: quasi}
          diag: {role: sensitive}
        anonymization: {method: global, k: 2}
        policy: {thresholds: {k: 2}}
        publication: {path: out/{partition}.csv}
    """))
    for args in (["check", str(spec)], ["validate", str(spec), "--input", str(tmp_path / "data.csv")],
                 ["risk", "--config", str(spec)], ["anonymize", str(spec), "--output", str(tmp_path / "o.csv")]):
        proc = subprocess.run([*COMMAND, *args], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert "column 'age'" in proc.stderr and "finite numbers, got inf" in proc.stderr
