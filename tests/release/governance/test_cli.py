"""The governance workflow from the command line: publish (awaiting), approve or reject, publish,
then the custody log listed and verified."""

from __future__ import annotations

import re

import pytest

from anon_dagster.cli import main
from anon_dagster.release.governance import RUNNER_ENV

AWAITING = 3


def run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def awaiting_id(capsys, spec: str) -> str:
    code, out, _ = run(capsys, "publish", spec, "--partition", "2023")
    assert code == AWAITING and out.startswith("awaiting approval: ") and "nothing published" in out
    found = re.search(r"anon-dagster approve \S+ --partition 2023 --evaluation ([0-9a-f]{16}) --as NAME", out)
    assert found, out
    return found.group(1)


def test_publish_awaits_approve_then_publish_publishes(governed, capsys, monkeypatch):
    spec = str(governed.spec_path)
    evaluation = awaiting_id(capsys, spec)
    target = governed.spec.resolve(governed.spec.publication.path, partition="2023")
    assert not target.exists()
    # user errors: one line on stderr, exit 2, nothing recorded
    code, _, err = run(capsys, "approve", spec, "--partition", "2023", "--evaluation", evaluation, "--as", "mallory")
    assert code == 2 and err.count("\n") == 1 and "'mallory' is not an approver" in err
    code, _, err = run(capsys, "approve", spec, "--partition", "2023", "--evaluation", evaluation, "--as", "dpo")
    assert code == 2 and "this process (it runs as pipeline) ran evaluation" in err  # still the runner's account
    code, _, err = run(capsys, "approve", spec, "--partition", "2023", "--evaluation", "feedfeedfeedfeed",
                       "--as", "dpo")
    assert code == 2 and "no evaluation 'feedfeedfeedfeed' awaits approval" in err
    monkeypatch.setenv(RUNNER_ENV, "dpo-desk")
    code, out, _ = run(capsys, "approve", spec, "--partition", "2023", "--evaluation", evaluation, "--as", "dpo",
                       "--reason", "reviewed the report")
    assert code == 0 and "approved by dpo; 1 of 1 approvals" in out
    monkeypatch.setenv(RUNNER_ENV, "pipeline")
    code, out, _ = run(capsys, "publish", spec, "--partition", "2023")
    assert code == 0 and out.startswith("published: ") and target.exists()
    assert "reviewed the report" in target.with_name("2023.report.md").read_text()
    # the custody log lists the decision (and nothing else), and verifies
    code, out, _ = run(capsys, "audit", "show")
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 2 and lines[-1].endswith("1 of 1 entries shown (verified)")
    assert "  approve  dpo  " in lines[0] and f"evaluation={evaluation}" in lines[0]
    assert "reason=reviewed the report" in lines[0] and "runner=pipeline" in lines[0]
    code, out, _ = run(capsys, "audit", "verify")
    assert code == 0 and "1 entries verified" in out


def test_reject_refuses_the_publication(governed, capsys, monkeypatch):
    spec = str(governed.spec_path)
    evaluation = awaiting_id(capsys, spec)
    with pytest.raises(SystemExit) as exited:  # a rejection without its reason: a usage error
        main(["reject", spec, "--partition", "2023", "--evaluation", evaluation, "--as", "ciso"])
    assert exited.value.code == 2
    monkeypatch.setenv(RUNNER_ENV, "ciso-desk")
    code, out, _ = run(capsys, "reject", spec, "--partition", "2023", "--evaluation", evaluation, "--as", "ciso",
                       "--reason", "the purpose is not stated")
    assert code == 0 and "rejected by ciso" in out
    code, _, err = run(capsys, "publish", spec, "--partition", "2023")
    assert code == 1 and "rejected by ciso" in err and "the purpose is not stated" in err
    code, out, _ = run(capsys, "audit", "show", "--action", "reject")
    assert code == 0 and "  reject  ciso  " in out
