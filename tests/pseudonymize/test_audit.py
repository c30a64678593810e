"""Audited reversal: who and why are required, refusals are logged, tampering is detected."""

from __future__ import annotations

import base64
import json
import multiprocessing
import os

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anon_dagster.cli import main
from anon_dagster.pseudonymize import (
    AuditLog,
    AuditTampered,
    EnvKeyBackend,
    KeyStore,
    ReversalRefused,
    pseudonymize_values,
    reidentify,
    verify_audit_log,
)
from anon_dagster.pseudonymize.audit import GENESIS


@pytest.fixture
def master(monkeypatch, tmp_path) -> str:
    value = base64.b64encode(os.urandom(32)).decode()
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", value)
    monkeypatch.setenv("ANON_DAGSTER_KEYSTORE_STATE", str(tmp_path / "state"))
    return value


@pytest.fixture
def ks(master, tmp_path) -> KeyStore:
    return KeyStore(EnvKeyBackend(master), tmp_path / "state")


def entries(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def filled_log(ks, n=4) -> AuditLog:
    log = AuditLog(ks)
    for i in range(n):
        log.append({"action": "test", "i": i})
    return log


# ----- reversal -------------------------------------------------------------------------------


def test_granted_reversal_is_logged_with_actor_reason_and_counts(ks):
    pseud, _ = pseudonymize_values(pd.Series(["id-1", "id-2"]), ks, method="aes_siv", purpose="care")
    res = reidentify([*pseud, "v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", None], keystore=ks, method="aes_siv",
                     purpose="care", actor="dr.lee", reason="incident 114")
    assert res.identifiers == ["id-1", "id-2", None, None] and res.not_found == 1
    [entry] = entries(AuditLog(ks).path)
    ev = entry["event"]
    assert (ev["actor"], ev["reason"], ev["outcome"], ev["count"], ev["not_found"]) == (
        "dr.lee", "incident 114", "granted", 4, 1)
    assert "id-1" not in json.dumps(entry)  # the log names pseudonyms, never identifiers
    assert entry["seq"] == 0 and entry["prev"] == GENESIS


@pytest.mark.parametrize("method, actor, reason, why", [
    ("hmac", "a", "r", "one-way by design"),
    ("aes_siv", "", "r", "actor"),
    ("aes_siv", "a", "  ", "reason"),
    ("sha256", "a", "r", "unknown method"),
])
def test_refusals_are_logged_then_raised(ks, method, actor, reason, why):
    with pytest.raises(ReversalRefused, match=why):
        reidentify(["v1:x"], keystore=ks, method=method, purpose="p", actor=actor, reason=reason)
    [entry] = entries(AuditLog(ks).path)
    assert entry["event"]["outcome"] == "refused" and why in entry["event"]["refusal"]
    assert verify_audit_log(ks, AuditLog(ks).path).entries == 1


def test_tokens_reverse_through_the_vault(ks):
    tokens, _ = pseudonymize_values(pd.Series(["x@y.org", "z"]), ks, method="token", purpose="mail")
    res = reidentify(tokens.tolist() + ["tk_unknown"], keystore=ks, method="token", purpose="mail",
                     actor="a", reason="r")
    assert res.identifiers == ["x@y.org", "z", None]


def test_unprefixed_aes_siv_tries_every_version(tmp_path):
    text = ",".join(f"{v}:{base64.b64encode(os.urandom(32)).decode()}" for v in (1, 2))
    ks = KeyStore(EnvKeyBackend(text), tmp_path)
    old, _ = pseudonymize_values(pd.Series(["a"]), ks, method="aes_siv", key_version=1, prefix_version=False)
    res = reidentify(old.tolist(), keystore=ks, method="aes_siv", purpose="default", actor="a", reason="r")
    assert res.identifiers == ["a"] and res.versions == {1: 1}


# ----- tampering ------------------------------------------------------------------------------


def test_intact_log_verifies(ks):
    log = filled_log(ks)
    assert log.verify().entries == 4
    assert [e["seq"] for e in entries(log.path)] == [0, 1, 2, 3]


def rewrite(path, lines):
    path.write_text("".join(line + "\n" for line in lines))


@pytest.mark.parametrize("tamper, line, what", [
    ("edit", 3, "edited"),
    ("edit_actor_keep_mac", 2, "edited"),
    ("delete", 2, "deleted"),
    ("reorder", 2, "reordered|deleted"),
    ("truncate", 4, "removed from the end"),
    ("duplicate", 3, "reordered or duplicated"),
    ("blank", 2, "blank line"),
    ("garbage", 1, "well-formed"),
    ("respace", 2, "rewritten"),
])
def test_tampering_is_detected_with_the_line(ks, tamper, line, what):
    log = filled_log(ks)
    lines = log.path.read_text().splitlines()
    if tamper == "edit":
        lines[2] = lines[2].replace('"i": 2', '"i": 9')
    elif tamper == "edit_actor_keep_mac":
        e = json.loads(lines[1])
        e["event"]["action"] = "nothing to see"
        lines[1] = json.dumps(e, sort_keys=True, ensure_ascii=False)
    elif tamper == "delete":
        del lines[1]
    elif tamper == "reorder":
        lines[1], lines[2] = lines[2], lines[1]
    elif tamper == "truncate":
        del lines[-1]
    elif tamper == "duplicate":
        lines.insert(2, lines[1])
    elif tamper == "blank":
        lines.insert(1, "")
    elif tamper == "garbage":
        lines[0] = "{oops"
    elif tamper == "respace":
        lines[1] = lines[1].replace(", ", ",  ", 1)
    rewrite(log.path, lines)
    with pytest.raises(AuditTampered, match=what) as err:
        log.verify()
    assert err.value.line == line


def test_forged_entry_with_recomputed_chain_but_no_key_is_detected(ks):
    log = filled_log(ks, 2)
    lines = log.path.read_text().splitlines()
    e = json.loads(lines[1])
    e["event"]["i"] = 42
    import hashlib
    import hmac
    body = {k: e[k] for k in ("seq", "ts", "prev", "kv", "event")}
    e["mac"] = hmac.new(b"guessed key", json.dumps(body, sort_keys=True, separators=(",", ":")).encode(),
                        hashlib.sha256).hexdigest()
    lines[1] = json.dumps(e)
    rewrite(log.path, lines)
    with pytest.raises(AuditTampered, match="edited"):
        log.verify()


def test_edited_head_is_detected(ks):
    log = filled_log(ks, 2)
    head = json.loads(log.head_path.read_text())
    head["seq"] = 0
    log.head_path.write_text(json.dumps(head))
    with pytest.raises(AuditTampered, match="head"):
        log.verify()


def test_appending_to_a_tampered_log_is_refused(ks):
    log = filled_log(ks, 3)
    lines = log.path.read_text().splitlines()
    rewrite(log.path, lines[:1] + lines[2:])
    before = log.path.read_bytes()
    with pytest.raises(AuditTampered):
        log.append({"action": "x"})
    assert log.path.read_bytes() == before


def test_another_key_store_cannot_verify(ks, tmp_path):
    log = filled_log(ks, 1)
    other = KeyStore(EnvKeyBackend(base64.b64encode(os.urandom(32)).decode()), tmp_path / "o")
    with pytest.raises(AuditTampered, match="line 1"):
        verify_audit_log(other, log.path)


# ----- CLI ------------------------------------------------------------------------------------


def test_cli_reidentify_and_audit_verify(ks, capsys):
    pseud, _ = pseudonymize_values(pd.Series(["12345678Z"]), ks, method="aes_siv", purpose="care")
    code = main(["reidentify", "--method", "aes_siv", "--purpose", "care", "--actor", "dr.lee",
                 "--reason", "incident 114", pseud[0]])
    assert code == 0
    assert capsys.readouterr().out.strip() == f"{pseud[0]}\t12345678Z"
    assert main(["reidentify", "--method", "hmac", "--purpose", "care", "--actor", "a", "--reason", "r", "v1:x"]) == 2
    assert "one-way by design" in capsys.readouterr().err
    assert main(["audit", "verify"]) == 0
    assert "2 entries verified" in capsys.readouterr().out
    log = AuditLog(ks).path
    lines = log.read_text().splitlines()
    rewrite(log, [lines[1], lines[0]])
    assert main(["audit", "verify"]) == 1
    err = capsys.readouterr().err
    assert "TAMPERED" in err and "line 1" in err


def test_cli_reidentify_a_table_by_spec(ks, tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "release: r\nsource: {path: raw.csv}\npublication: {path: out.parquet}\n"
        "columns:\n  pid: {role: identifier, pseudonymize: {method: token, purpose: follow_up}}\n"
        "  age: {role: quasi}\n"
    )
    # the column's scope is release (the default), and the spec has no partitions: publication r/all
    tokens, _ = pseudonymize_values(pd.Series(["A", "B"]), ks, method="token", purpose="follow_up",
                                    scope="release", publication="r/all")
    flagged = tmp_path / "flagged.csv"
    pd.DataFrame({"pid": [tokens[1], tokens[0]], "note": ["x", "y"]}).to_csv(flagged, index=False)
    out = tmp_path / "identified.csv"
    assert main(["reidentify", "--spec", str(spec), "--column", "pid", "--actor", "a", "--reason", "r",
                 "--input", str(flagged), "--output", str(out)]) == 0
    assert pd.read_csv(out)["pid_identifier"].tolist() == ["B", "A"]
    assert oct(out.stat().st_mode & 0o777) == "0o600"


def test_cli_reidentify_requires_actor_and_reason(capsys):
    with pytest.raises(SystemExit):
        main(["reidentify", "--method", "aes_siv", "--purpose", "p", "v1:x"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=st.integers(0, 4), pos=st.integers(0, 10_000), byte=st.integers(1, 255))
def test_any_changed_byte_is_detected(ks, line, pos, byte):
    log = AuditLog(ks)
    if not log.path.exists():
        filled_log(ks, 5)
    original = log.path.read_bytes()
    lines = original.split(b"\n")
    target = bytearray(lines[line])
    i = pos % len(target)
    target[i] = (target[i] + byte) % 256
    lines[line] = bytes(target)
    try:
        log.path.write_bytes(b"\n".join(lines))
        with pytest.raises(AuditTampered):
            log.verify()
    finally:
        log.path.write_bytes(original)
    assert log.verify().entries == 5


def _append_many(master: str, state: str, worker: int, n: int) -> None:
    os.environ["ANON_DAGSTER_MASTER_KEY"] = master
    os.environ["ANON_DAGSTER_KEYSTORE_STATE"] = state
    from anon_dagster.pseudonymize import AuditLog as Log
    from anon_dagster.pseudonymize import open_keystore
    log = Log(open_keystore())
    for i in range(n):
        log.append({"action": "test", "worker": worker, "i": i})


def test_concurrent_writers_keep_the_chain(master, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(master, str(tmp_path / "state"), w, 15)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    ks = KeyStore(EnvKeyBackend(master), tmp_path / "state")
    assert verify_audit_log(ks, AuditLog(ks).path).entries == 45
    seen = {(e["event"]["worker"], e["event"]["i"]) for e in entries(AuditLog(ks).path)}
    assert len(seen) == 45
