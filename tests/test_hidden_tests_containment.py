"""The sandbox attacks inside hidden tests: the rollout is recorded failed, with a reason.

The same attacks run directly against every backend in ``tests/sandbox/test_selfcheck.py``
(``reliabench.sandbox.selfcheck``); here they come from the agent's solution, imported by the
hidden tests, on the fresh path and both warm test runners.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox_helpers import (
    backend_or_skip,
    hidden_test_path_or_skip,
    keyring_code,
    python_for,
    warm_or_skip,
)

from reliabench.hidden_tests.fresh import run_hidden_tests
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits, slot_uid, slots
from reliabench.warm import run_warm_tests

IS_ROOT = os.geteuid() == 0
SLOT = 5


def _no_procs_left() -> None:
    """No process of the slot uid is alive, looked at under the slot's host-wide lock (so a
    run of the same slot by another process on this host cannot be mistaken for a leftover)."""
    if IS_ROOT:
        with slots.hold_slot(slot_uid(SLOT)):
            assert slots.procs_of_uid(slot_uid(SLOT)) == []


def _suite(base: Path, body: str) -> tuple[Path, Path]:
    ws = base / "rollout"
    ws.mkdir()
    (ws / "solution.py").write_text(body, encoding="utf-8")
    tests = base / "suite-tests"
    tests.mkdir()
    (tests / "test_solution.py").write_text(
        "import solution\n\n"
        "def test_one():\n    assert solution.f() == 1\n\n"
        "def test_two():\n    assert True\n",
        encoding="utf-8",
    )
    return ws, tests


EXPECTED = (TestOutcome("test_solution.py::test_one", "skipped"),
            TestOutcome("test_solution.py::test_two", "skipped"))


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ("def f():\n    while True:\n        pass\n", "timeout"),
        ("import os\ndef f():\n    while True:\n        try:\n            os.fork()\n"
         "        except OSError:\n            pass\n", "timeout"),
        ("def f():\n    return len(bytearray(10 * 1024**3))\n", "completed"),
    ],
    ids=["infinite-loop", "fork-bomb", "10gb"],
)
@pytest.mark.parametrize("path", ["fresh", "warm-pytest", "warm-plain"])
def test_hostile_solution_fails_the_rollout(base: Path, body: str, status: str, path: str) -> None:
    ws, tests = _suite(base, body)
    limits = Limits(wall_s=3.0, cpu_s=10.0, memory_bytes=1024**3, max_procs=24)
    if path == "fresh":
        run = run_hidden_tests(ws, tests, expected=EXPECTED, backend=backend_or_skip("bubblewrap"),
                               limits=limits, slot=SLOT)
    else:
        run = run_warm_tests(warm_or_skip(), ws, tests, expected=EXPECTED, limits=limits,
                             slot=SLOT, test_runner=path.removeprefix("warm-"))
        assert run.isolation == "warm"
    assert run.status == status
    assert run.outcomes[0] == TestOutcome("test_solution.py::test_one", "failed")
    assert run.reason
    _no_procs_left()


# ------------------------------------------------------------------------------------------
# the kernel keyrings carry nothing from one rollout to the next (issue 20, finding 3)
# ------------------------------------------------------------------------------------------

KEY_SLOT = 11
HIDDEN_SECRET = "HIDDEN-TEST-SECRET-5b1e"
UID_RINGS = ("user", "user-session", "persistent")


@pytest.mark.sandbox
@pytest.mark.skipif(not IS_ROOT, reason="slot uids (shared by rollouts) are used as root only")
@pytest.mark.parametrize("path", ["bubblewrap", "namespaces", "warm"])
def test_keyrings_carry_nothing_between_rollouts_of_a_slot(base: Path, path: str) -> None:
    # rollout 0: the tested code stores the hidden test file in the slot uid's keyrings
    test_path = hidden_test_path_or_skip(path, KEY_SLOT)
    ws0 = base / "rollout-0"
    ws0.mkdir()
    store = keyring_code("store", UID_RINGS, secret="open(path, 'rb').read()")
    (ws0 / "solution.py").write_text(
        "import sys\n"
        f"STORE = {store!r}\n"
        "def f():\n"
        "    exec(STORE, {'path': sys._getframe(1).f_code.co_filename})  # the hidden test file\n"
        "    return 1\n",
        encoding="utf-8")
    tests = base / "suite-tests"
    tests.mkdir()
    (tests / "test_solution.py").write_text(
        f"# {HIDDEN_SECRET}\nimport solution\n\n"
        "def test_one():\n    assert solution.f() == 1\n",
        encoding="utf-8")
    for d in (base, ws0, tests):
        os.chmod(d, 0o755)
    expected = (TestOutcome("test_solution.py::test_one", "skipped"),)
    run0 = test_path.run(ws0, tests, expected=expected, slot=KEY_SLOT, limits=Limits(wall_s=30.0))
    assert run0.status == "completed", run0.reason
    # rollout 1, agent phase, same slot: look for the key
    agent_backend = backend_or_skip("auto" if path == "warm" else path)
    ws1 = base / "rollout-1"
    ws1.mkdir()
    os.chmod(ws1, 0o755)
    find = keyring_code("find", UID_RINGS)
    seen = agent_backend.run([python_for(agent_backend, KEY_SLOT), "-c", find], workdir=ws1,
                             slot=KEY_SLOT, limits=Limits(wall_s=30.0))
    assert seen.returncode == 0, seen.stderr[-1000:]
    assert HIDDEN_SECRET not in seen.stdout, seen.stdout
    # a later process of the slot uid, outside any sandbox (an older version, another tool)
    uid = slot_uid(KEY_SLOT)
    with slots.hold_slot(uid):
        later = subprocess.run(["/usr/bin/python3", "-I", "-c", find], user=uid, group=uid,
                               extra_groups=[], cwd="/", capture_output=True, text=True, timeout=30)
    assert HIDDEN_SECRET not in later.stdout, later.stdout


_HARNESS_WITH_A_SESSION_KEYRING = '''
import ctypes, json, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from sandbox_helpers import backend_or_skip, keyring_code, python_for
from reliabench.sandbox import Limits

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
# as a systemd service (KeyringMode=private) or a pam_keyinit login: a session keyring that
# every child inherits, a setuid included
assert libc.syscall(ctypes.c_long({keyctl}), ctypes.c_long(1), b"rb-harness-session") > 0
backend = backend_or_skip({name!r})
out = []
for slot, code in (({slot_a}, keyring_code("store", ("session",), "b'SESSION-SECRET-9c2d'")),
                   ({slot_b}, keyring_code("find", ("session",)))):
    ws = Path({base!r}) / f"slot-{{slot}}"
    ws.mkdir(mode=0o755)
    r = backend.run([python_for(backend, slot), "-c", code], workdir=ws, slot=slot,
                    limits=Limits(wall_s=30.0))
    out.append(r.stdout + r.stderr[-300:])
if hasattr(backend, "close"):
    backend.close()
print(json.dumps(out))
'''


@pytest.mark.sandbox
@pytest.mark.skipif(not IS_ROOT, reason="slot uids are used as root only")
@pytest.mark.parametrize("name", ["bubblewrap", "namespaces", "warm"])
def test_the_harness_session_keyring_carries_nothing_between_slots(base: Path, name: str) -> None:
    # Own attack class: a keyring no per-uid clean-up sees. The harness's session keyring is
    # inherited through the uid drop, possessed by the sandboxed process, so writable: rollout 0
    # (slot 12) stores a key in it, rollout 1 of ANOTHER slot and uid (13) reads it.
    import json

    os.chmod(base, 0o755)
    keyctl = {"x86_64": 250, "aarch64": 219}[os.uname().machine]
    script = _HARNESS_WITH_A_SESSION_KEYRING.format(
        tests=str(Path(__file__).parent), keyctl=keyctl, name=name, slot_a=12, slot_b=13,
        base=str(base))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd="/")
    if "Skipped" in proc.stderr:
        pytest.skip(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr[-2000:]
    stored, found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "SESSION-SECRET-9c2d" not in found, (stored, found)


NAMESPACE_ESCAPES = '''
import ctypes, os, shutil, subprocess

def f():
    """What the rollout got: a user namespace (root inside, mounts of its own)."""
    got = []
    unshare = shutil.which("unshare")
    if unshare:
        r = subprocess.run([unshare, "--user", "--map-root-user", "--mount", "sh", "-c",
                            "mount -t tmpfs none /tmp && echo mounted"],
                           capture_output=True, text=True)
        if "mounted" in r.stdout:
            got.append("unshare(1) --user --mount")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    clone = {"x86_64": 56, "aarch64": 220}[os.uname().machine]
    # raw clone(CLONE_NEWUSER | SIGCHLD): the unshare(2) a filter denies, by another door
    pid = libc.syscall(ctypes.c_long(clone), ctypes.c_long(0x10000000 | 17), ctypes.c_long(0),
                       ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))
    if pid == 0:
        os._exit(0)
    if pid > 0:
        os.waitpid(pid, 0)
        got.append("clone(CLONE_NEWUSER)")
    return got
'''


@pytest.mark.sandbox
@pytest.mark.parametrize("path", ["bubblewrap", "namespaces", "warm"])
def test_the_tested_code_gets_no_user_namespace(base: Path, path: str) -> None:
    # Own attack class: a user namespace makes the slot uid root of new mount, net and pid
    # namespaces (a large kernel surface, and a filter that denies unshare(2) bypassed by
    # clone(2) flags or clone3). The filter denies CLONE_NEW* in clone and clone3 itself.
    test_path = hidden_test_path_or_skip(path, SLOT)
    ws, tests = _suite(base, NAMESPACE_ESCAPES)
    (tests / "test_solution.py").write_text(
        "import solution\n\ndef test_one():\n    assert solution.f() == []\n\n"
        "def test_two():\n    assert True\n", encoding="utf-8")
    for d in (base, ws, tests):
        os.chmod(d, 0o755)
    run = test_path.run(ws, tests, expected=EXPECTED, slot=SLOT, limits=Limits(wall_s=30.0))
    assert run.status == "completed", run.reason
    assert run.outcomes[0] == TestOutcome("test_solution.py::test_one", "passed"), run.log[-2000:]
    _no_procs_left()
