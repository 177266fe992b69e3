"""Worker slots (reliabench.sandbox.slots): the slot uid, its host-wide lock, lending the workdir, sweeps.

The backends' use of them (runs as the slot uid, nothing left behind) is tested in
tests/test_sandbox.py and by the containment self-check (tests/sandbox/test_selfcheck.py).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from reliabench.errors import SandboxError
from reliabench.sandbox import slots
from reliabench.sandbox.slots import SLOT_UID_BASE, slot_uid

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="slot uids are used as root only")
SLOT = 3977  # far from the slots other tests use: its sweeps kill every process of the uid
UID = slot_uid(SLOT)


@pytest.mark.parametrize("slot", [-1, 4000, 10**6])
def test_slot_uid_range(slot: int) -> None:
    with pytest.raises(SandboxError, match=rf"slot must be in \[0, 4000\), got {slot}"):
        slot_uid(slot)
    assert slot_uid(0) == SLOT_UID_BASE and slot_uid(3999) == SLOT_UID_BASE + 3999


def test_kill_uid_refuses_root_and_itself() -> None:
    with pytest.raises(SandboxError, match="refusing to kill every process of uid 0"):
        slots.kill_uid(0)
    with pytest.raises(SandboxError, match=f"refusing to kill every process of uid {os.getuid()}"):
        slots.kill_uid(os.getuid())


@needs_root
def test_kill_uid_ends_every_process_of_the_uid_setsid_included() -> None:
    code = ("import os, subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
            "time.sleep(60)\n")
    with slots.hold_slot(UID):
        proc = subprocess.Popen(["/usr/bin/python3", "-c", code], user=UID, group=UID, extra_groups=[],
                                cwd="/", env={"PATH": "/usr/bin:/bin"})
        deadline = time.monotonic() + 20
        while len(slots.procs_of_uid(UID)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(slots.procs_of_uid(UID)) == 2  # the child and its setsid grandchild
        slots.kill_uid(UID)
        proc.wait(timeout=10)
        assert slots.procs_of_uid(UID) == []


@needs_root
def test_the_slot_lock_is_host_wide() -> None:
    lock_dir = slots._lock_dir()
    st = lock_dir.stat()
    assert st.st_uid == 0 and not st.st_mode & 0o077  # an agent cannot take or hold one
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom reliabench.sandbox import slots\n"
         f"with slots.hold_slot({UID}):\n    print('held', flush=True)\n    time.sleep(1.0)\n"],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    assert holder.stdout.readline() == "held\n"
    start = time.monotonic()
    with slots.hold_slot(UID):
        waited = time.monotonic() - start
    holder.wait(timeout=10)
    holder.stdout.close()
    assert waited > 0.5  # the other process's run of the slot was not overlapped
    with slots.hold_slot(None):  # no uid (not root): nothing to hold
        pass


@needs_root
def test_lend_workdir_hands_the_tree_over_and_back(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "f.py").write_text("x = 1\n")
    os.chmod(ws, 0o755)
    with slots.lend_workdir(ws, UID):
        assert (ws.stat().st_uid, stat.S_IMODE(ws.stat().st_mode)) == (UID, 0o700)
        assert (ws / "sub" / "f.py").stat().st_uid == UID
        (ws / "new.py").write_text("y = 2\n")  # made during the run
        os.chown(ws / "new.py", UID, UID)
    assert (ws.stat().st_uid, stat.S_IMODE(ws.stat().st_mode)) == (0, 0o755)
    assert {p.stat().st_uid for p in ws.rglob("*")} == {0}


def test_uid_can_reach() -> None:
    uid = slot_uid(SLOT)
    tmp_path = Path(tempfile.mkdtemp(prefix="rb-reach-"))  # pytest's base directory is 0700
    try:
        _reach(uid, tmp_path)
    finally:
        shutil.rmtree(tmp_path)


def _reach(uid: int, tmp_path: Path) -> None:
    assert slots.uid_can_reach("/usr/bin/python3", uid, uid, need=5) is None
    private = tmp_path / "private"
    (private / "bin").mkdir(parents=True)
    (private / "bin" / "tool").write_text("#!/bin/sh\n")
    os.chmod(private / "bin" / "tool", 0o755)
    os.chmod(private / "bin", 0o755)
    os.chmod(private, 0o700)
    os.chmod(tmp_path, 0o755)
    assert slots.uid_can_reach(str(private / "bin" / "tool"), uid, uid, need=5) == str(private)
    os.chmod(private, 0o711)  # traversable, not listable: enough
    assert slots.uid_can_reach(str(private / "bin" / "tool"), uid, uid, need=5) is None
    os.chmod(private / "bin" / "tool", 0o700)  # the file itself
    assert slots.uid_can_reach(str(private / "bin" / "tool"), uid, uid, need=5) == str(private / "bin" / "tool")
    assert slots.uid_can_reach(str(tmp_path / "missing"), uid, uid, need=4) == str(tmp_path / "missing")


@needs_root
def test_remove_files_of_clears_the_uids_temporary_files() -> None:
    mine = Path("/tmp") / f"rb-slots-test-{os.getpid()}"
    theirs = Path("/dev/shm") / f"rb-slots-test-{os.getpid()}"
    theirs_dir = Path("/tmp") / f"rb-slots-test-dir-{os.getpid()}"
    try:
        mine.write_text("keep")
        theirs.write_text("remove")
        os.chown(theirs, UID, UID)
        (theirs_dir / "x").mkdir(parents=True)
        os.chown(theirs_dir, UID, UID)
        slots.remove_files_of(UID)
        assert mine.exists()
        assert not theirs.exists() and not theirs_dir.exists()
    finally:
        for p in (mine, theirs):
            p.unlink(missing_ok=True)


def _as_uid(code: str) -> str:
    out = subprocess.run(["/usr/bin/python3", "-I", "-c", code], user=UID, group=UID, extra_groups=[],
                         cwd="/", capture_output=True, text=True, timeout=30, check=True)
    return out.stdout


@needs_root
def test_slot_keyrings_are_cleared_when_the_slot_is_taken_and_given_back() -> None:
    # keys an unfiltered process of the uid left (an older version, another tool): the
    # user, user-session and persistent keyrings outlive every process of the uid
    from sandbox_helpers import keyring_code

    rings = ("user", "user-session", "persistent")
    find = keyring_code("find", rings)
    slots.kill_uid(UID)
    stored = _as_uid(keyring_code("store", rings, secret="b'LEFT-BY-AN-EARLIER-RUN'"))
    assert all(int(line.split()[1]) > 0 for line in stored.splitlines()), stored
    assert _as_uid(find).count("LEFT-BY-AN-EARLIER-RUN") >= 2  # the keys are there
    with slots.hold_slot(UID):
        assert "LEFT-BY-AN-EARLIER-RUN" not in _as_uid(find)  # cleared at the start
        _as_uid(keyring_code("store", rings, secret="b'LEFT-BY-THIS-RUN'"))
    assert "LEFT-BY-THIS-RUN" not in _as_uid(find)  # and at the end


@needs_root
def test_a_keyring_that_cannot_be_cleared_stops_the_slot_without_a_filter(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # The uid owns its keyrings: it can take the write permission off them (KEYCTL_SETPERM)
    # and then nobody can clear them (not even root) until the host reboots. Shown here
    # without locking a real uid: the clean-up is pointed at root's user keyring instead,
    # which the slot uid cannot write either.
    import ctypes

    from reliabench.sandbox import seccomp

    keyctl = seccomp.SYSCALL_NUMBERS[os.uname().machine]["keyctl"]
    roots = int(seccomp._libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(0), ctypes.c_long(-4),
                                      ctypes.c_long(1)))  # KEYCTL_GET_KEYRING_ID @u, create
    assert roots > 0
    monkeypatch.setattr(slots, "_KEY_SPEC_USER_KEYRING", roots)
    monkeypatch.setattr(seccomp, "filter_unavailable_reason", lambda: "test: no filter")
    wanted = (rf"the keyrings of slot uid {UID} could not be cleared \(keyring {roots}: "
              r"Permission denied\) and no seccomp filter")
    with pytest.raises(SandboxError, match=wanted), slots.hold_slot(UID):
        pass  # pragma: no cover
    monkeypatch.setattr(seccomp, "filter_unavailable_reason", lambda: None)
    with slots.hold_slot(UID):  # with the filter in force no sandbox can read it: a warning
        pass
    assert f"keyring {roots}: Permission denied" in caplog.text
