"""The audit log's anchor in the key store: erasing, emptying, replacing or rolling back the log is caught.

Each attack is made the way an insider with write access to the log's folder would make it
(delete the files, point ``ANON_DAGSTER_AUDIT_LOG`` elsewhere, copy in another valid log made
with the same keys, restore an older copy, cut off the last entry, edit or remove the anchor),
against the three places an anchor lives: sealed in the encrypted key file, and the MACed
``audit.anchor`` file in the state folder for keys from the environment or an external service.
Then: a process killed between the steps of an append, reversals at once (threads, processes,
a rotation in between), a fresh installation, and adopting a log from before anchoring.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from anon_dagster.cli import main
from anon_dagster.errors import SecretError, UserError
from anon_dagster.pseudonymize import (
    AuditLog,
    AuditTampered,
    EnvKeyBackend,
    ExternalKeyBackend,
    FileKeyBackend,
    KeyInfo,
    KeyStore,
    ReversalRefused,
    init_keystore,
    open_keystore,
    pseudonymize_values,
    reidentify,
    verify_audit_log,
)
from anon_dagster.pseudonymize.audit import GENESIS, default_audit_path
from anon_dagster.pseudonymize.keystore import AnchorInvalid, AuditAnchor, StateFileAnchor
from tests.support.keys import MASTER_KEY

pytestmark = pytest.mark.filterwarnings("ignore:.*scrypt n=.*is weak")

PASSPHRASE = "anchor test passphrase 51c2"
FAST_N = 2**10  # tests only: the default scrypt cost is 0.3 s per unsealing
OTHER_KEY = base64.b64encode(bytes(range(100, 132))).decode()


class LocalExternal(ExternalKeyBackend):
    """An external backend (the shape of Vault Transit) whose "service" is a key in memory."""

    def __init__(self, key: bytes):
        super().__init__()
        self._key = key

    def versions(self) -> list[KeyInfo]:
        return [KeyInfo(1, None, self.kind)]

    def root_mac(self, version: int, label: bytes) -> bytes:
        return hmac.new(self._key, label, hashlib.sha256).digest()


@dataclass
class Deployment:
    """One installation: where its keys come from (``kind``), its folders, and how a process opens it."""

    kind: str  # "file" (encrypted key file), "env" (ANON_DAGSTER_MASTER_KEY), "external"
    root: Path

    @property
    def folder(self) -> Path:
        """The key store's state folder: the key file's folder, or ANON_DAGSTER_KEYSTORE_STATE."""
        return self.root / ("secure" if self.kind == "file" else "state")

    @property
    def key_file(self) -> Path:
        return self.folder / "keystore.json"

    @property
    def log(self) -> Path:
        return self.folder / "audit.jsonl"

    @property
    def head(self) -> Path:
        return self.folder / "audit.jsonl.head"

    @property
    def anchor_file(self) -> Path:
        return self.folder / "audit.anchor"

    @property
    def cli(self) -> bool:
        """Whether the command line can open it (an external service is opened by code only)."""
        return self.kind != "external"

    def environment(self) -> dict[str, str]:
        if self.kind == "file":
            return {"ANON_DAGSTER_KEYSTORE": str(self.key_file), "ANON_DAGSTER_KEYSTORE_PASSPHRASE": PASSPHRASE}
        return {"ANON_DAGSTER_MASTER_KEY": MASTER_KEY, "ANON_DAGSTER_KEYSTORE_STATE": str(self.folder)}

    def create(self) -> Deployment:
        if self.kind == "file":
            init_keystore(self.key_file, PASSPHRASE, scrypt_n=FAST_N)
        return self

    def open(self) -> KeyStore:
        """The key store as a new process opens it (nothing kept in memory from an earlier one)."""
        if self.kind == "file":
            backend = FileKeyBackend.open(self.key_file, PASSPHRASE)
            return KeyStore(backend, backend.file.parent)
        if self.kind == "env":
            return KeyStore(EnvKeyBackend(MASTER_KEY), self.folder)
        return KeyStore(LocalExternal(base64.b64decode(MASTER_KEY)), self.folder)


@pytest.fixture(params=["file", "env", "external"])
def dep(request, tmp_path, monkeypatch) -> Deployment:
    deployment = Deployment(request.param, tmp_path / "site").create()
    if deployment.cli:
        for name, value in deployment.environment().items():
            monkeypatch.setenv(name, value)
    return deployment


def twin_of(dep: Deployment, root: Path) -> Deployment:
    """Another installation holding the same keys (a copy of the key file, or the same variable)."""
    twin = Deployment(dep.kind, root)
    if dep.kind == "file":
        twin.folder.mkdir(parents=True, mode=0o700)
        shutil.copy2(dep.key_file, twin.key_file)
    return twin


def pseudonym(ks: KeyStore, value: str = "P-0001") -> str:
    out, _ = pseudonymize_values(pd.Series([value]), ks, method="aes_siv", purpose="care")
    return out[0]


def reverse(ks: KeyStore, audit: AuditLog | None = None):
    return reidentify([pseudonym(ks)], keystore=ks, method="aes_siv", purpose="care",
                      actor="custodian", reason="recall 7", audit=audit)


def files(*paths: Path) -> dict[Path, bytes | None]:
    return {p: p.read_bytes() if p.exists() else None for p in paths}


def restore(saved: dict[Path, bytes | None]) -> None:
    for path, data in saved.items():
        if data is None:
            path.unlink(missing_ok=True)
        else:
            path.write_bytes(data)


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# ----- the fresh installation -----------------------------------------------------------------


def test_a_fresh_installation_verifies_and_its_first_reversal_is_anchored(dep, capsys):
    ks = dep.open()
    result = verify_audit_log(ks, dep.log)
    assert (result.entries, result.anchored, result.unanchored) == (0, 0, 0)
    assert not dep.log.exists() and not dep.anchor_file.exists()  # verifying writes nothing
    if dep.cli:
        code, out, err = cli(capsys, "audit", "verify")
        assert code == 0, err
        assert "0 entries verified" in out
    assert reverse(ks).identifiers == ["P-0001"]
    anchor = ks.audit_anchor().read()
    assert anchor is not None and anchor.count == 1
    assert anchor.head == json.loads(dep.log.read_text().splitlines()[-1])["mac"]
    assert dep.anchor_file.exists() == (dep.kind != "file")  # the key file holds its own anchor
    if dep.kind == "file":
        reopened = dep.open()  # the key file still opens, with the same keys, and is owner-only
        assert reopened.fingerprint(1) == ks.fingerprint(1)
        assert dep.key_file.stat().st_mode & 0o777 == 0o600
        assert "audit_anchor" not in dep.key_file.read_text()  # sealed, not shown
    else:
        assert dep.anchor_file.stat().st_mode & 0o777 == 0o600


# ----- the attacks ----------------------------------------------------------------------------


def attack(name: str, dep: Deployment, older: dict, twin: Deployment, monkeypatch) -> None:
    """Make attack ``name`` on an installation whose log holds 3 entries (``older``: its files at 2)."""
    lines = dep.log.read_text().splitlines()
    if name == "delete log and head":
        dep.log.unlink()
        dep.head.unlink()
    elif name == "log variable names a missing file":
        monkeypatch.setenv("ANON_DAGSTER_AUDIT_LOG", str(dep.root / "elsewhere" / "audit.jsonl"))
    elif name == "log variable names an empty file":
        empty = dep.root / "empty.jsonl"
        empty.write_text("")
        monkeypatch.setenv("ANON_DAGSTER_AUDIT_LOG", str(empty))
    elif name == "empty the log, keep the head":
        dep.log.write_text("")
    elif name == "empty the log, delete the head":
        dep.log.write_text("")
        dep.head.unlink()
    elif name == "replace with another valid log":
        shutil.copy2(twin.log, dep.log)
        shutil.copy2(twin.head, dep.head)
    elif name == "replace with a longer valid log":
        ks = twin.open()
        AuditLog(ks, twin.log).append({"action": "filler"})
        shutil.copy2(twin.log, dep.log)
        shutil.copy2(twin.head, dep.head)
    elif name == "roll back to an older copy":
        restore(older)
    elif name == "truncate the last entry":
        dep.log.write_text("".join(line + "\n" for line in lines[:-1]))
    elif name == "truncate the last entry, head from an older copy":
        dep.log.write_text("".join(line + "\n" for line in lines[:-1]))
        dep.head.write_bytes(older[dep.head])
    else:
        raise AssertionError(name)


ATTACKS = {  # attack: what verification must say
    "delete log and head": "wiped",
    "log variable names a missing file": "wiped",
    "log variable names an empty file": "emptied",
    "empty the log, keep the head": "emptied",
    "empty the log, delete the head": "emptied",
    "replace with another valid log": "replaced",
    "replace with a longer valid log": "replaced",
    "roll back to an older copy": "rolled back",
    "truncate the last entry": "truncated",
    "truncate the last entry, head from an older copy": "rolled back",
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_each_attack_on_the_log_is_caught_and_blocks_further_reversals(name, dep, tmp_path, monkeypatch, capsys):
    twin = twin_of(dep, tmp_path / "twin")
    twin_ks = twin.open()
    for _ in range(3):  # another valid log, MACed with the very same audit key
        AuditLog(twin_ks, twin.log).append({"action": "reidentify", "actor": "someone else"})
    ks = dep.open()
    reverse(ks)
    reverse(ks)
    older = files(dep.log, dep.head)
    reverse(ks)
    assert verify_audit_log(ks, dep.log).entries == 3

    attack(name, dep, older, twin, monkeypatch)
    ks = dep.open()
    log = default_audit_path(ks)  # ANON_DAGSTER_AUDIT_LOG, if the attack set it
    with pytest.raises(AuditTampered) as err:
        verify_audit_log(ks, log)
    assert err.value.kind == ATTACKS[name]
    assert str(err.value).count("\n") == 0
    if dep.cli:
        code, out, stderr = cli(capsys, "audit", "verify")
        assert code == 1 and out == ""
        assert len(stderr.strip().splitlines()) == 1
        assert "TAMPERED" in stderr and f"{ATTACKS[name]}:" in stderr
    # nothing is chained onto what is left, nothing is decrypted, and the evidence stays as it was
    before = files(log, log.with_name(log.name + ".head"))
    with pytest.raises(ReversalRefused, match="does not verify"):
        reverse(ks, AuditLog(ks, log))
    assert files(log, log.with_name(log.name + ".head")) == before
    if dep.cli:
        code, out, stderr = cli(capsys, "reidentify", "--method", "aes_siv", "--purpose", "care",
                                "--actor", "a", "--reason", "r", pseudonym(ks))
        assert code == 2 and "P-0001" not in out + stderr and ATTACKS[name] in stderr
        assert files(log, log.with_name(log.name + ".head")) == before


@pytest.mark.parametrize("dep", ["env", "external"], indirect=True)
@pytest.mark.parametrize("name, kind", [
    ("edit the count", "anchor invalid"),
    ("edit the head", "anchor invalid"),
    ("recompute the MAC with a guessed key", "anchor invalid"),
    ("anchor of another key store", "anchor invalid"),
    ("not JSON", "anchor invalid"),
    ("delete the anchor", "anchor missing"),
    ("an older copy of the anchor", "anchor behind"),
    ("an anchor of the same keys, another log", "rolled back"),
])
def test_each_attack_on_the_anchor_file_is_caught(dep, name, kind, tmp_path, capsys):
    ks = dep.open()
    reverse(ks)
    oldest = dep.anchor_file.read_bytes()  # anchors 1 entry
    for _ in range(3):
        reverse(ks)
    doc = json.loads(dep.anchor_file.read_text())
    if name == "edit the count":
        doc["count"] = 3
    elif name == "edit the head":
        doc["head"] = doc["head"][::-1]
    elif name == "recompute the MAC with a guessed key":
        doc["count"] = 3
        body = {k: doc[k] for k in ("format", "count", "head", "kv")}
        doc["mac"] = hmac.new(b"guess", json.dumps(body, sort_keys=True, separators=(",", ":")).encode(),
                              hashlib.sha256).hexdigest()
    elif name == "anchor of another key store":
        other = KeyStore(EnvKeyBackend(OTHER_KEY), tmp_path / "other")
        StateFileAnchor(other, tmp_path / "other").write(AuditAnchor(doc["count"], doc["head"]))
        doc = json.loads((tmp_path / "other" / "audit.anchor").read_text())
    elif name == "an anchor of the same keys, another log":
        twin = twin_of(dep, tmp_path / "twin")
        for _ in range(6):
            AuditLog(twin.open(), twin.log).append({"action": "x"})
        doc = json.loads(twin.anchor_file.read_text())
    if name == "not JSON":
        dep.anchor_file.write_text("{oops")
    elif name == "delete the anchor":
        dep.anchor_file.unlink()
    elif name == "an older copy of the anchor":
        dep.anchor_file.write_bytes(oldest)
    else:
        dep.anchor_file.write_text(json.dumps(doc))
    with pytest.raises(AuditTampered) as err:
        verify_audit_log(dep.open(), dep.log)
    assert err.value.kind == kind
    with pytest.raises(ReversalRefused):
        reverse(dep.open())
    if dep.cli:
        code, _, stderr = cli(capsys, "audit", "verify")
        assert code == 1 and len(stderr.strip().splitlines()) == 1 and kind in stderr


@pytest.mark.parametrize("dep", ["file"], indirect=True)
def test_the_sealed_anchor_cannot_be_edited_and_a_restored_key_file_is_caught(dep, capsys):
    ks = dep.open()
    reverse(ks)
    older_store = dep.key_file.read_bytes()  # the key file as a backup taken after 1 reversal
    for _ in range(3):
        reverse(ks)
    sealed = dep.key_file.read_bytes()
    doc = json.loads(sealed)
    # the anchor is inside the seal: any change to it is a change to the key store, which then
    # does not open at all (exit 2, one line), and a process that had it open finds out too
    ciphertext = bytearray(base64.b64decode(doc["sealed"]["ciphertext"]))
    ciphertext[-20] ^= 1
    doc["sealed"]["ciphertext"] = base64.b64encode(bytes(ciphertext)).decode()
    dep.key_file.write_text(json.dumps(doc))
    with pytest.raises(SecretError, match="modified"):
        dep.open()
    code, _, stderr = cli(capsys, "audit", "verify")
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and "modified" in stderr
    with pytest.raises(AuditTampered) as err:
        verify_audit_log(ks, dep.log)
    assert err.value.kind == "anchor invalid"
    # a key file restored from an older backup: its anchor is 3 entries behind the log
    dep.key_file.write_bytes(older_store)
    with pytest.raises(AuditTampered) as err:
        verify_audit_log(dep.open(), dep.log)
    assert err.value.kind == "anchor behind"
    code, _, stderr = cli(capsys, "audit", "verify")
    assert code == 1 and "anchor behind" in stderr


def test_malformed_anchors_are_refused_even_before_their_mac():
    good = "ab" * 32
    assert AuditAnchor.from_dict({"count": 2, "head": good}) == AuditAnchor(2, good)
    assert AuditAnchor.from_dict({"count": 0, "head": GENESIS}) == AuditAnchor(0, GENESIS)
    for doc in ({"count": True, "head": good}, {"count": -1, "head": good}, {"count": "2", "head": good},
                {"count": 2.0, "head": good}, {"count": 2, "head": good.upper()}, {"count": 2, "head": good[:-1]},
                {"count": 0, "head": good}, {"count": 2}, [2, good], None):
        with pytest.raises(ValueError):
            AuditAnchor.from_dict(doc)


def test_an_anchor_under_a_retired_key_version_does_not_verify(tmp_path):
    two = ",".join(f"{v}:{base64.b64encode(bytes([v]) * 32).decode()}" for v in (1, 2))
    ks = KeyStore(EnvKeyBackend(two), tmp_path)
    reverse(ks)
    retired = KeyStore(EnvKeyBackend(f"1:{base64.b64encode(bytes([1]) * 32).decode()}"), tmp_path)
    with pytest.raises(AnchorInvalid, match="key version 2"):
        retired.audit_anchor().read()


# ----- no place for an anchor -----------------------------------------------------------------


def test_keys_from_the_environment_without_a_state_folder_refuse_reversal(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ANON_DAGSTER_MASTER_KEY", MASTER_KEY)
    log = tmp_path / "logs" / "audit.jsonl"
    monkeypatch.setenv("ANON_DAGSTER_AUDIT_LOG", str(log))
    ks = open_keystore()
    code, out, err = cli(capsys, "reidentify", "--method", "aes_siv", "--purpose", "care",
                         "--actor", "a", "--reason", "r", pseudonym(ks))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "ANON_DAGSTER_KEYSTORE_STATE" in err and MASTER_KEY not in err
    assert not log.exists()
    code, _, err = cli(capsys, "audit", "verify")
    assert code == 2 and "ANON_DAGSTER_KEYSTORE_STATE" in err


# ----- a process killed between the steps ------------------------------------------------------

# Runs the CLI with one step of the append replaced by SIGKILL: a real kill, no cleanup code runs.
CRASHING_CLI = """
import os, signal, sys
import anon_dagster.io
from anon_dagster.cli import main
from anon_dagster.pseudonymize import audit
from anon_dagster.pseudonymize.keystore import KeyFileAnchor, StateFileAnchor

step = sys.argv[1]

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

if step == "before the head":
    audit.AuditLog._write_head = die
elif step == "before the anchor":
    for cls in (KeyFileAnchor, StateFileAnchor):
        def write(self, anchor, _write=cls.write):
            if anchor.count:  # not the "no entry yet" anchor written before a first entry
                die()
            _write(self, anchor)
        cls.write = write
elif step == "inside the anchor's rename":
    rename = os.replace
    def replace(src, dst):
        if os.path.basename(str(dst)) in ("keystore.json", "audit.anchor"):
            die()
        rename(src, dst)
    anon_dagster.io.os.replace = replace
sys.exit(main(sys.argv[2:]))
"""


def run_crashing(dep: Deployment, step: str, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANON_DAGSTER_", "DAGSTER_"))}
    env.update(dep.environment())
    dep.root.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-c", CRASHING_CLI, step, *argv], env=env, capture_output=True,
                          text=True, timeout=120, cwd=dep.root)


@pytest.mark.parametrize("dep", ["file", "env"], indirect=True)
@pytest.mark.parametrize("step", ["before the head", "before the anchor", "inside the anchor's rename"])
def test_a_reversal_killed_between_its_entry_and_its_anchor(dep, step, tmp_path, capsys):
    twin = twin_of(dep, tmp_path / "twin")  # same keys, its own log and anchor
    ks = dep.open()
    reverse(ks)
    target = pseudonym(ks)
    killed = run_crashing(dep, step, "reidentify", "--method", "aes_siv", "--purpose", "care",
                          "--actor", "dr.lee", "--reason", "incident 9", target)
    assert killed.returncode == -signal.SIGKILL
    assert "P-0001" not in killed.stdout  # killed before its entry was anchored: nothing handed out
    assert len(dep.log.read_text().splitlines()) == 2  # the entry itself was written
    # the anchor (and maybe the head) is exactly one entry behind: accepted, and said so
    result = verify_audit_log(dep.open(), dep.log)
    assert (result.entries, result.anchored, result.unanchored) == (2, 1, 1)
    code, out, err = cli(capsys, "audit", "verify")
    assert code == 0, err
    assert "2 entries verified" in out and "not anchored yet" in out
    # a rename killed midway leaves the key store as it was, never half written
    assert dep.open().fingerprint(1) == ks.fingerprint(1)
    # the lag is no loophole: the unanchored entry cannot be swapped for one of another log
    twin_log = AuditLog(twin.open(), twin.log)
    for _ in range(2):
        twin_log.append({"action": "x"})
    saved = files(dep.log, dep.head)
    lines = dep.log.read_text().splitlines()
    dep.log.write_text(lines[0] + "\n" + twin.log.read_text().splitlines()[1] + "\n")
    with pytest.raises(AuditTampered):
        verify_audit_log(dep.open(), dep.log)
    restore(saved)
    # the next reversal chains onto the unanchored entry and anchors everything
    assert reverse(dep.open()).identifiers == ["P-0001"]
    result = verify_audit_log(dep.open(), dep.log)
    assert (result.entries, result.anchored, result.unanchored) == (3, 3, 0)


@pytest.mark.parametrize("dep", ["file", "env"], indirect=True)
def test_the_first_reversal_killed_before_its_anchor_leaves_a_verifiable_log(dep, capsys):
    ks = dep.open()
    killed = run_crashing(dep, "before the anchor", "reidentify", "--method", "aes_siv", "--purpose", "care",
                          "--actor", "a", "--reason", "r", pseudonym(ks))
    assert killed.returncode == -signal.SIGKILL and "P-0001" not in killed.stdout
    # "no entry yet" was anchored before the first entry: one entry beyond it, not an anchor missing
    result = verify_audit_log(dep.open(), dep.log)
    assert (result.entries, result.anchored) == (1, 0)
    assert cli(capsys, "audit", "verify")[0] == 0
    reverse(dep.open())
    assert verify_audit_log(dep.open(), dep.log).anchored == 2


def test_an_anchor_one_behind_is_accepted_only_with_the_entry_it_misses(tmp_path):
    dep = Deployment("env", tmp_path).create()
    ks = dep.open()
    for _ in range(3):
        reverse(ks)
    two_behind = files(dep.anchor_file)
    reverse(ks)
    one_behind = files(dep.anchor_file)
    reverse(ks)
    restore(one_behind)  # an older anchor, one behind: indistinguishable from a crash, and harmless
    assert verify_audit_log(ks, dep.log).unanchored == 1
    restore(two_behind)
    with pytest.raises(AuditTampered) as err:
        verify_audit_log(ks, dep.log)
    assert err.value.kind == "anchor behind"


# ----- reversals at once ----------------------------------------------------------------------


def _reverse_in_a_process(environment: dict[str, str], n: int) -> None:
    os.environ.update(environment)
    ks = open_keystore()
    for _ in range(n):
        reverse(ks)


@pytest.mark.parametrize("dep", ["file", "env"], indirect=True)
def test_concurrent_reversals_lose_no_anchor_update(dep):
    ks = dep.open()
    errors: list[BaseException] = []

    def worker():
        try:
            for _ in range(4):
                reverse(dep.open() if dep.kind == "file" else ks)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(5)]
    for t in threads:
        t.start()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_reverse_in_a_process, args=(dep.environment(), 4)) for _ in range(3)]
    for p in procs:
        p.start()
    for t in threads:
        t.join(120)
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert errors == []
    result = verify_audit_log(dep.open(), dep.log)
    assert (result.entries, result.anchored) == (32, 32)
    assert sorted(json.loads(line)["seq"] for line in dep.log.read_text().splitlines()) == list(range(32))


def test_rotations_and_reversals_at_once_keep_both_the_keys_and_the_anchor(tmp_path):
    dep = Deployment("file", tmp_path).create()
    stale = dep.open()  # opened before the rotation below: its view of the key file is out of date
    reverse(stale)
    dep.open().rotate()
    # it records its anchor in the file as it is now: version 2, which it never saw, stays
    reverse(stale)
    assert [k.version for k in dep.open().versions()] == [1, 2]
    assert verify_audit_log(dep.open(), dep.log).anchored == 2
    errors: list[BaseException] = []

    def rotate():
        try:
            for _ in range(3):
                dep.open().rotate()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def reversals():
        try:
            for _ in range(6):
                reverse(dep.open())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=rotate), threading.Thread(target=reversals), threading.Thread(target=reversals)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    ks = dep.open()
    assert [k.version for k in ks.versions()] == [1, 2, 3, 4, 5]
    result = verify_audit_log(ks, dep.log)
    assert (result.entries, result.anchored) == (14, 14)
    # one that opened the key file before a reversal rotates without rolling back its anchor
    before_reversal = dep.open()
    reverse(dep.open())
    before_reversal.rotate()
    assert verify_audit_log(dep.open(), dep.log).anchored == 15
    # one opened before the newer keys takes them in from the (sealed) file under the lock:
    # its entry verifies, and is MACed with the newest version, not with the one it opened at
    reverse(stale)
    assert json.loads(dep.log.read_text().splitlines()[-1])["kv"] == dep.open().current_version == 6
    assert verify_audit_log(dep.open(), dep.log).anchored == 16


def test_a_store_whose_key_file_was_replaced_since_it_was_opened_refuses_to_log(tmp_path):
    dep = Deployment("file", tmp_path).create()
    opened = dep.open()
    reverse(opened)
    backend = opened.backend
    meta, plain = backend._unseal_on_disk()
    # same passphrase and seal, another key under version 1: not a rotation, a replacement
    backend._write_sealed(meta, {**plain, "keys": {"1": base64.b64encode(bytes(32)).decode()}}, backend.file)
    with pytest.raises(ReversalRefused, match="replaced"):
        reverse(opened)


# ----- a log from before anchoring --------------------------------------------------------------


def drop_anchor(dep: Deployment) -> None:
    """Make the key store look as it did before anchoring existed (no anchor recorded)."""
    if dep.kind == "file":
        backend = dep.open().backend
        meta, plain = backend._unseal_on_disk()
        plain.pop("audit_anchor")
        backend._write_sealed(meta, plain, backend.file)
    else:
        dep.anchor_file.unlink()


@pytest.mark.parametrize("dep", ["file", "env"], indirect=True)
def test_a_log_from_before_anchoring_is_adopted_once_and_the_adoption_is_logged(dep, capsys):
    ks = dep.open()
    for _ in range(3):
        reverse(ks)
    drop_anchor(dep)
    code, _, err = cli(capsys, "audit", "verify")
    assert code == 1 and "anchor missing" in err and "audit anchor" in err
    with pytest.raises(ReversalRefused, match="anchor missing"):
        reverse(dep.open())
    with pytest.raises(SystemExit):  # who and why are required
        main(["audit", "anchor"])
    capsys.readouterr()
    code, out, err = cli(capsys, "audit", "anchor", "--actor", "custodian", "--reason", "upgrade")
    assert code == 0, err
    assert "3 entries anchored" in out
    last = json.loads(dep.log.read_text().splitlines()[-1])
    assert last["event"] == {"action": "adopt-log", "actor": "custodian", "reason": "upgrade", "entries": 3}
    assert verify_audit_log(dep.open(), dep.log).anchored == 4
    # once anchored, never again: an anchor is not overwritten, even by the custodian
    code, _, err = cli(capsys, "audit", "anchor", "--actor", "custodian", "--reason", "again")
    assert code == 2 and "already anchors" in err
    reverse(dep.open())
    assert verify_audit_log(dep.open(), dep.log).entries == 5


@pytest.mark.parametrize("dep", ["env"], indirect=True)
def test_adoption_refuses_a_tampered_log_and_a_blank_actor(dep, capsys):
    ks = dep.open()
    for _ in range(2):
        reverse(ks)
    drop_anchor(dep)
    with pytest.raises(UserError, match="actor"):
        AuditLog(ks).adopt("  ", "r")
    lines = dep.log.read_text().splitlines()
    dep.log.write_text(lines[0].replace("recall 7", "recall 8") + "\n" + lines[1] + "\n")
    code, _, err = cli(capsys, "audit", "anchor", "--actor", "a", "--reason", "r")
    assert code == 1 and "edited" in err
    assert not dep.anchor_file.exists()
