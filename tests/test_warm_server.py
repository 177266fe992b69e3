"""Warm test workers: a rollout cannot reach the server or the next rollout of its slot.

Each attack runs as the agent's code in rollout 1; rollout 2 of the same slot then runs
honest tests and must get exactly the verdicts it would get alone, on the same server.
"""

from __future__ import annotations

import os
import shutil
import signal
import textwrap
import time
from pathlib import Path

import pytest
from sandbox_helpers import warm_or_skip

from reliabench.errors import SandboxError
from reliabench.hidden_tests.fresh import HiddenTestRun, run_hidden_tests
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits, slot_uid, slots
from reliabench.warm import WarmTests, WarmWorkers

SLOT = 9
LIMITS = Limits(wall_s=8.0, cpu_s=8.0, memory_bytes=1024**3, max_procs=32,
                file_size_bytes=16 * 1024**2, output_bytes=64 * 1024)

HONEST_TESTS = '''
import json, os, sys
import solution

def test_value():
    assert solution.value() == 42

def test_json_is_the_real_one():
    assert json.dumps({"a": 1}) == '{"a": 1}'

def test_alone():
    # nothing of an earlier rollout: no file in /tmp or /dev/shm, no other process
    # (/tmp holds only the directories the workspace and the staged tests are mounted on)
    left = [n for n in os.listdir("/tmp") if not n.startswith(("rb-warm-stage-", "rb-test-"))]
    assert left == [], left
    assert os.listdir("/dev/shm") == []
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    assert pids == ["1"], pids
'''
HONEST = "def value():\n    return 42\n"
NAMES = ["test_suite.py::test_value", "test_suite.py::test_json_is_the_real_one",
         "test_suite.py::test_alone"]


@pytest.fixture
def warm() -> WarmTests:
    return warm_or_skip()  # type: ignore[no-any-return]



def _rollout(base: Path, warm: WarmTests, solution: str, runner: str,
             name: str = "ws", limits: Limits = LIMITS) -> HiddenTestRun:
    ws = base / name
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir()
    (ws / "solution.py").write_text(textwrap.dedent(solution), encoding="utf-8")
    tests = base / "tests"
    if not tests.exists():
        tests.mkdir()
        (tests / "test_suite.py").write_text(HONEST_TESTS, encoding="utf-8")
    return run_hidden_tests(ws, tests, expected=[TestOutcome(n, "skipped") for n in NAMES],
                            worker=warm, limits=limits, slot=SLOT, test_runner=runner)


def _server_pid(warm: WarmTests, base: Path, runner: str) -> int:
    first = _rollout(base, warm, HONEST, runner, name="warmup")
    assert [o.outcome for o in first.outcomes] == ["passed"] * 3, first.log
    pid = warm.workers.server_pid(SLOT)
    assert pid is not None
    return pid


def _next_rollout_is_clean(warm: WarmTests, base: Path, runner: str, server: int) -> None:
    after = _rollout(base, warm, HONEST, runner, name="next")
    assert after.status == "completed", after.reason
    assert [o.outcome for o in after.outcomes] == ["passed"] * 3, after.log
    assert not after.forged
    assert warm.workers.server_pid(SLOT) == server, "the server was replaced"
    assert slots._procs_of_uid(slot_uid(SLOT)) == []


ATTACKS = {
    "kill-server": '''
        import os, signal
        def value():
            for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP):
                for pid in ({server}, 1, -1):
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
            return 42
    ''',
    "ptrace-server": '''
        import ctypes, os
        def value():
            libc = ctypes.CDLL(None, use_errno=True)
            PTRACE_ATTACH = 16
            assert libc.ptrace(PTRACE_ATTACH, {server}, 0, 0) == -1
            assert not os.path.exists("/proc/{server}")
            return 42
    ''',
    "write-server-memory": '''
        def value():
            for path in ("/proc/{server}/mem", "/proc/1/root/proc/{server}/mem"):
                try:
                    with open(path, "r+b") as fh:
                        fh.seek(0x400000)
                        fh.write(b"\\xcc" * 16)
                    raise SystemExit("wrote to " + path)
                except OSError:
                    pass
            return 42
    ''',
    "leave-processes-and-files": '''
        import os, subprocess, sys
        def value():
            subprocess.Popen(["sleep", "1000"], start_new_session=True)
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    import time
                    time.sleep(1000)
                os._exit(0)
            for d in ("/tmp", "/dev/shm"):
                with open(os.path.join(d, "leftover"), "w") as fh:
                    fh.write("from the last rollout")
            return 42
    ''',
    "monkeypatch-modules": '''
        import builtins, json, sys
        def value():
            json.dumps = lambda *a, **k: "forged"
            builtins.len = lambda x: 0
            builtins.print = None
            pytest = sys.modules.get("pytest")
            if pytest is not None:
                pytest.main = lambda *a, **k: 0
            sys.modules["solution_cache"] = object()
            return 42
    ''',
    "fork-bomb": '''
        import os
        def value():
            for _ in range(100000):
                try:
                    os.fork()
                except OSError:
                    pass
            return 42
    ''',
    "fill-tmp": '''
        import os
        def value():
            for d in ("/tmp", "/dev/shm"):
                try:
                    with open(os.path.join(d, "fill"), "wb") as fh:
                        while True:
                            fh.write(b"x" * (1 << 20))
                except OSError:
                    pass
            return 42
    ''',
    "sysv-ipc": '''
        import ctypes
        def value():
            libc = ctypes.CDLL(None, use_errno=True)
            IPC_CREAT = 0o1000
            shmid = libc.shmget(0x5EB1, 4096, IPC_CREAT | 0o666)
            assert shmid >= 0
            return 42
    ''',
}


@pytest.mark.parametrize("runner", ["plain", "pytest"])
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_attack_does_not_reach_the_server_or_the_next_rollout(
        warm: WarmTests, base: Path, attack: str, runner: str) -> None:
    if attack in ("fork-bomb", "fill-tmp") and runner == "pytest":
        pytest.skip("the same attack as with the plain runner; once is enough for the slow ones")
    server = _server_pid(warm, base, runner)
    code = ATTACKS[attack].replace("{server}", str(server))
    limits = Limits(wall_s=4.0, cpu_s=8.0, memory_bytes=1024**3, max_procs=32,
                    file_size_bytes=16 * 1024**2, output_bytes=64 * 1024)
    _rollout(base, warm, code, runner, name="attacker", limits=limits)
    assert os.path.exists(f"/proc/{server}"), "the server died"
    _next_rollout_is_clean(warm, base, runner, server)


def test_sysv_ipc_does_not_survive(warm: WarmTests, base: Path) -> None:
    _rollout(base, warm, ATTACKS["sysv-ipc"].replace("{server}", "0"), "plain", name="a")
    probe = '''
        import ctypes
        def value():
            libc = ctypes.CDLL(None, use_errno=True)
            return 42 if libc.shmget(0x5EB1, 0, 0) == -1 else 0
    '''
    run = _rollout(base, warm, probe, "plain", name="b")
    assert run.outcomes[0].outcome == "passed", run.log


def test_a_dead_server_is_restarted(warm: WarmTests, base: Path) -> None:
    server = _server_pid(warm, base, "plain")
    os.kill(server, signal.SIGKILL)
    time.sleep(0.1)
    run = _rollout(base, warm, HONEST, "plain", name="after")
    assert [o.outcome for o in run.outcomes] == ["passed"] * 3, run.log
    new = warm.workers.server_pid(SLOT)
    assert new is not None and new != server


def test_a_server_killed_mid_rollout_is_retried_on_a_new_one(base: Path) -> None:
    warm_or_skip()
    with WarmWorkers() as workers, WarmTests(workers) as warm:
        server = _server_pid(warm, base, "plain")
        slow = "import time\ndef value():\n    time.sleep(1.5)\n    return 42\n"

        def killer() -> None:
            time.sleep(0.5)
            os.kill(server, signal.SIGKILL)

        import threading

        t = threading.Thread(target=killer)
        t.start()
        run = _rollout(base, warm, slow, "plain", name="slow")
        t.join()
        assert [o.outcome for o in run.outcomes] == ["passed"] * 3, run.log
        assert workers.restarts == 1
        assert slots._procs_of_uid(slot_uid(SLOT)) == []


def test_a_server_that_cannot_start_is_a_sandbox_error(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warm_or_skip()
    from reliabench.warm import client

    monkeypatch.setattr(client, "_BOOT", "raise SystemExit('no server today')  # {src}")
    with WarmWorkers() as workers, WarmTests(workers) as warm, \
            pytest.raises(SandboxError, match="no server today"):
        _rollout(base, warm, HONEST, "plain")


def test_rollout_runs_as_the_slot_uid_without_capabilities(warm: WarmTests, base: Path) -> None:
    probe = '''
        import os
        def value():
            status = open("/proc/self/status").read()
            caps = [l.split()[1] for l in status.splitlines() if l.startswith(("CapEff", "CapPrm", "CapBnd"))]
            nnp = [l.split()[1] for l in status.splitlines() if l.startswith("NoNewPrivs")]
            ok = (os.getuid() == os.geteuid() == {uid} and os.getgid() == {uid} and os.getgroups() == []
                  and caps == ["0000000000000000"] * 3 and nnp == ["1"])
            return 42 if ok else (os.getuid(), caps, nnp)
    '''.replace("{uid}", str(slot_uid(SLOT)))
    run = _rollout(base, warm, probe, "plain")
    assert run.outcomes[0].outcome == "passed", run.log


def test_only_the_workspace_is_writable(warm: WarmTests, base: Path) -> None:
    probe = '''
        import os, socket
        def value():
            for path in ("/usr/x", "/etc/x", "/x", "{tests}/x", "/proc/sys/kernel/hostname"):
                try:
                    open(path, "w").write("x")
                    return path
                except OSError:
                    pass
            open("mine.txt", "w").write("ok")
            try:
                socket.create_connection(("1.1.1.1", 53), timeout=1)
                return "network"
            except OSError:
                pass
            return 42
    '''.replace("{tests}", str(base / "tests"))
    run = _rollout(base, warm, probe, "plain")
    assert run.outcomes[0].outcome == "passed", run.log
    assert (base / "ws" / "mine.txt").read_text() == "ok"
