"""Warm test workers: a rollout cannot reach the server or the next rollout of its slot.

Each attack runs as the agent's code in rollout 1; rollout 2 of the same slot then runs
honest tests and must get exactly the verdicts it would get alone, on the same server.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest
from sandbox_helpers import warm_or_skip, warm_rollout

from reliabench.errors import SandboxError
from reliabench.hidden_tests.fresh import HiddenTestRun
from reliabench.meta_keys import TestRunner
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits, slot_uid, slots
from reliabench.warm import WarmTests, WarmWorkers, run_warm_tests
from reliabench.warm.plain_tests import collect_plain_tests

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
    # nothing of an earlier rollout: no file data in /tmp (a fresh tmpfs: only the mount
    # points of the binds, which take no blocks; it cannot even be listed, so the host's
    # folder names behind them are not shown), nothing in /dev/shm, no other process
    try:
        os.listdir("/tmp")
        raise AssertionError("the jail's /tmp is listable")
    except PermissionError:
        pass
    st = os.statvfs("/tmp")
    assert st.f_blocks - st.f_bfree == 0, (st.f_blocks, st.f_bfree)
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



def _rollout(base: Path, warm: WarmTests, solution: str, runner: TestRunner,
             name: str = "ws", limits: Limits = LIMITS) -> HiddenTestRun:
    return warm_rollout(warm, base, name, solution, tests=HONEST_TESTS, names=NAMES,
                        limits=limits, slot=SLOT, runner=runner)


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
    assert slots.procs_of_uid(slot_uid(SLOT)) == []


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
        assert slots.procs_of_uid(slot_uid(SLOT)) == []


def test_a_server_that_cannot_start_is_a_sandbox_error(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warm_or_skip()
    from reliabench.warm import client

    monkeypatch.setattr(client, "_BOOT", "raise SystemExit('no server today')  # {packages}")
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


# --------------------------------------------------------------------------------------------
# correct code that forks, starts threads, calls BLAS or uses multiprocessing: the same verdict
# on the warm path (the default) as in a fresh process. The server has one thread (no numpy,
# no OpenBLAS pool in it): a raw clone of a multi-threaded server hung on fork and on BLAS.
# --------------------------------------------------------------------------------------------

PROCESS_SOLUTION = '''
import multiprocessing, os, subprocess, sys, threading

def square(x):
    return x * x

def forked():
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    _, status = os.waitpid(pid, 0)
    return os.WEXITSTATUS(status)

def threads():
    out = [None] * 8
    def work(i):
        out[i] = square(i)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out

def matmul():
    import numpy as np
    a = np.ones((300, 300))
    return float((a @ a).sum())

def in_process(method):
    ctx = multiprocessing.get_context(method)
    q = ctx.SimpleQueue()
    p = ctx.Process(target=_put_square, args=(q, 9))
    p.start()
    p.join(30)
    return p.exitcode, q.get()

def _put_square(q, x):
    q.put(square(x))

def pool(method):
    with multiprocessing.get_context(method).Pool(2) as p:
        return p.map(square, range(6))

def fork_after_threads():
    t = threading.Thread(target=square, args=(3,))
    t.start()
    t.join()
    return forked()

def child_python():
    return subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True,
                          text=True, timeout=30).stdout.strip()
'''
PROCESS_TESTS = '''
import solution

def test_os_fork():
    assert solution.forked() == 7

def test_threads():
    assert solution.threads() == [i * i for i in range(8)]

def test_numpy_matmul():
    assert solution.matmul() == 300.0 * 300 * 300

def test_multiprocessing_fork():
    assert solution.in_process("fork") == (0, 81)

def test_multiprocessing_spawn():
    assert solution.in_process("spawn") == (0, 81)

def test_multiprocessing_forkserver():
    assert solution.in_process("forkserver") == (0, 81)

def test_pool_fork():
    assert solution.pool("fork") == [0, 1, 4, 9, 16, 25]

def test_pool_spawn():
    assert solution.pool("spawn") == [0, 1, 4, 9, 16, 25]

def test_fork_after_threads():
    assert solution.fork_after_threads() == 7

def test_subprocess_python():
    assert solution.child_python() == "42"
'''
PROCESS_NAMES = [f"test_procs.py::{n}" for n in (
    "test_os_fork", "test_threads", "test_numpy_matmul", "test_multiprocessing_fork",
    "test_multiprocessing_spawn", "test_multiprocessing_forkserver", "test_pool_fork",
    "test_pool_spawn", "test_fork_after_threads", "test_subprocess_python")]


@pytest.mark.parametrize(("path", "runner"), [
    ("bubblewrap", "pytest"), ("namespaces", "pytest"), ("none", "pytest"),
    ("warm", "plain"), ("warm", "pytest")])
def test_correct_code_that_forks_threads_or_uses_numpy_passes_warm_as_fresh(
        base: Path, path: str, runner: str) -> None:
    pytest.importorskip("numpy")
    from sandbox_helpers import hidden_test_path_or_skip

    way = hidden_test_path_or_skip(path, SLOT, ("pytest", "numpy"))
    ws, tests = base / "ws", base / "tests"
    ws.mkdir()
    tests.mkdir()
    (ws / "solution.py").write_text(PROCESS_SOLUTION, encoding="utf-8")
    (tests / "test_procs.py").write_text(PROCESS_TESTS, encoding="utf-8")
    limits = Limits(wall_s=90.0, cpu_s=90.0, memory_bytes=4 * 1024**3, max_procs=64,
                    file_size_bytes=16 * 1024**2, output_bytes=64 * 1024)
    run = way.run(ws, tests, expected=[TestOutcome(n, "skipped") for n in PROCESS_NAMES],
                  limits=limits, slot=SLOT, test_runner=runner)
    assert run.status == "completed", (run.reason, run.log)
    assert {o.name: o.outcome for o in run.outcomes} == dict.fromkeys(PROCESS_NAMES, "passed"), run.log
    if path == "warm":  # the pid namespace took the forkserver and the resource tracker along
        assert slots.procs_of_uid(slot_uid(SLOT)) == []


def test_the_server_imports_no_numpy_and_runs_one_thread(warm: WarmTests, base: Path) -> None:
    server = _server_pid(warm, base, "plain")
    with open(f"/proc/{server}/status", encoding="ascii") as fh:
        threads = [line.split()[1] for line in fh if line.startswith("Threads:")]
    assert threads == ["1"]
    with open(f"/proc/{server}/maps", encoding="ascii") as fh:
        maps = fh.read()
    assert "numpy" not in maps and "openblas" not in maps.lower()


_NATIVE_THREAD = (
    "import ctypes\n"
    "def native_thread():\n"
    "    libc = ctypes.CDLL(None)\n"
    "    tid = ctypes.c_ulong()\n"
    "    start = ctypes.cast(libc.pause, ctypes.c_void_p)\n"
    "    assert libc.pthread_create(ctypes.byref(tid), None, start, None) == 0\n"
)


@pytest.mark.parametrize("thread", ["python", "native"])
def test_a_server_with_another_thread_refuses_to_start(
        base: Path, monkeypatch: pytest.MonkeyPatch, thread: str) -> None:
    warm_or_skip()
    from reliabench.warm import client

    start = ("import threading, time\n"
             "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
             if thread == "python" else _NATIVE_THREAD + "native_thread()\n")
    monkeypatch.setattr(client, "_BOOT", start + client._BOOT)
    with WarmWorkers() as workers, WarmTests(workers) as warm, \
            pytest.raises(SandboxError, match="refuses to fork at start: it has 2 threads"):
        _rollout(base, warm, HONEST, "plain")


def test_a_server_that_gains_a_thread_refuses_to_fork_and_is_replaced(
        base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    warm_or_skip()
    from reliabench.warm import client

    # the server starts a native thread when it gets SIGUSR1 (after it said it is ready)
    start = _NATIVE_THREAD + ("import signal\n"
                              "signal.signal(signal.SIGUSR1, lambda *a: native_thread())\n")
    monkeypatch.setattr(client, "_BOOT", start + client._BOOT)
    with WarmWorkers() as workers, WarmTests(workers) as warm:
        server = _server_pid(warm, base, "plain")
        os.kill(server, signal.SIGUSR1)
        time.sleep(0.2)
        with pytest.raises(SandboxError, match="refuses to fork a rollout: it has 2 threads"):
            _rollout(base, warm, HONEST, "plain")
        monkeypatch.undo()
        run = _rollout(base, warm, HONEST, "plain")  # on a new server
        assert [o.outcome for o in run.outcomes] == ["passed"] * 3, run.log
        assert workers.server_pid(SLOT) not in (None, server)


# --------------------------------------------------------------------------------------------
# nothing of rollout N is in the memory rollout N+1 is forked from (finding 4 of issue 20)
# --------------------------------------------------------------------------------------------

LEAKY = '''
import os, sys
CANARY = bytes.fromhex("{canary}").decode()
def value():
    print("stdout " + CANARY)
    sys.stderr.write("stderr " + CANARY + "\\n")
    os.write(3, ("channel " + CANARY + "\\n").encode())  # the outcome channel
    return "value " + CANARY  # the failed assertion's message goes to the log
'''

# Rollout N+1's tested code: look for rollout N's canary and channel secret in its own memory,
# first byte by byte (/proc/self/mem; the only copies of the needles made here are excluded
# by address), then as live objects (gc.get_objects(), every frame up the stack).
SCANNER = '''
import ctypes, gc, os, sys

NEEDLES = {name: bytearray.fromhex(h) for name, h in {needles}.items()}

def _addr(buf):
    return ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))

def scan_memory():
    hits = []
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    own = [(_addr(buf), len(buf))] + [(_addr(n), len(n)) for n in NEEDLES.values()]
    with open("/proc/self/maps") as fh:
        maps = fh.read().splitlines()
    fd = os.open("/proc/self/mem", os.O_RDONLY)
    try:
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("rw") or "[vvar" in line or "[vsyscall" in line:
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            at = lo
            while at < hi:
                want = min(len(buf), hi - at)
                try:
                    got = os.preadv(fd, [view[:want]], at)
                except OSError:
                    break
                for name, needle in NEEDLES.items():
                    i = buf.find(needle, 0, got)
                    while i >= 0:
                        where = at + i
                        if not any(a <= where < a + n for a, n in own):
                            hits.append((name, hex(where), line))
                        i = buf.find(needle, i + 1, got)
                if got < want:
                    break
                at += got - 64 if got > 64 else got  # overlap: a needle across two reads
    finally:
        os.close(fd)
    return hits

def scan_objects():
    texts = {name: bytes(n).decode() for name, n in NEEDLES.items()}
    mine = set(map(id, [*texts.values(), *NEEDLES.values()]))
    hits = []

    def look(where, value, depth=0):
        if isinstance(value, (str, bytes, bytearray)) and id(value) not in mine:
            for name, text in texts.items():
                if (text if isinstance(value, str) else text.encode()) in value:
                    hits.append((name, where))
        elif depth < 4 and isinstance(value, dict):
            for v in list(value.values()):
                look(where, v, depth + 1)
        elif depth < 4 and isinstance(value, (list, tuple)):
            for v in list(value):
                look(where, v, depth + 1)

    for obj in gc.get_objects():
        if isinstance(obj, (dict, list, tuple)) and obj is not texts:
            look(type(obj).__name__, obj)
    frame = sys._getframe(1)
    while frame is not None:
        look("frame " + frame.f_code.co_name, dict(frame.f_locals))
        frame = frame.f_back
    for name in ("last_type", "last_value", "last_traceback"):
        look("sys." + name, [repr(getattr(sys, name, None))])
    return hits

def value():
    found = scan_memory()  # before any str copy of a needle exists
    found += scan_objects()
    print("found:", found[:8])
    return 42 if not found else found[:8]
'''


@pytest.mark.parametrize("runner", ["plain", "pytest"])
def test_the_next_rollout_finds_nothing_of_the_last_one_in_its_memory(
        warm: WarmTests, base: Path, runner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import secrets

    from reliabench.warm import hidden

    canary = "rb-canary-" + secrets.token_hex(16)
    key = secrets.token_hex(32).encode("ascii")
    server = _server_pid(warm, base, runner)
    monkeypatch.setattr(hidden, "new_key", lambda: key)
    leaky = _rollout(base, warm, LEAKY.replace("{canary}", canary.encode().hex()), runner,
                     name="leaky")
    monkeypatch.undo()
    assert f"stdout {canary}" in leaky.log and f"stderr {canary}" in leaky.log, leaky.log
    needles = {"canary": canary.encode().hex(), "key": key.hex()}
    scanner = SCANNER.replace("{needles}", repr(needles))
    run = _rollout(base, warm, scanner, runner, name="scanner")
    assert run.outcomes[0].outcome == "passed", run.log
    assert warm.workers.server_pid(SLOT) == server, "not the same server: nothing was tested"


# --------------------------------------------------------------------------------------------
# the server's own state is not the rollout's: a warm pytest rollout sees the interpreter a
# fresh pytest process has (own attack class: state of the server that reaches rollouts)
# --------------------------------------------------------------------------------------------

FINGERPRINT = '''
import faulthandler, gc, json, logging, os, signal, sys, warnings

def fingerprint():
    umask = os.umask(0)
    os.umask(umask)
    return {
        "argv": [len(sys.argv)] + [a for a in sys.argv if not a.startswith("/")],
        "env": sorted(os.environ),
        "root_handlers": [type(h).__name__ for h in logging.root.handlers],
        "root_level": logging.root.level,
        "warnings": [repr(f) for f in warnings.filters],
        "signals": {s: repr(signal.getsignal(getattr(signal, s)))
                    for s in ("SIGINT", "SIGTERM", "SIGPIPE", "SIGCHLD", "SIGHUP", "SIGXFSZ")},
        "sigmask": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "faulthandler": faulthandler.is_enabled(),
        "recursion": sys.getrecursionlimit(),
        "umask": umask,
        "flags": repr(sys.flags),
        "gc": [gc.isenabled(), gc.get_threshold()],
        "stdout": [sys.stdout.encoding, sys.stdout.errors],
        "cwd": os.getcwd() == os.environ.get("RELIABENCH_WORKSPACE"),
    }

def value():
    print("FINGERPRINT" + json.dumps(fingerprint()))
    return 0
'''


def _fingerprint(run: HiddenTestRun) -> object:
    import json

    for line in run.log.splitlines():
        if line.startswith("FINGERPRINT"):
            return json.loads(line[len("FINGERPRINT"):])
    return run.log


def test_a_warm_pytest_rollout_sees_the_interpreter_of_a_fresh_one(warm: WarmTests, base: Path) -> None:
    from sandbox_helpers import hidden_test_path_or_skip

    fresh = hidden_test_path_or_skip("bubblewrap", SLOT)
    ws, tests = base / "ws", base / "tests"
    ws.mkdir()
    tests.mkdir()
    (ws / "solution.py").write_text(FINGERPRINT, encoding="utf-8")
    (tests / "test_suite.py").write_text(HONEST_TESTS, encoding="utf-8")
    expected = [TestOutcome(n, "skipped") for n in NAMES]
    cold = fresh.run(ws, tests, expected=expected, limits=LIMITS, slot=SLOT)
    hot = run_warm_tests(warm, ws, tests, expected=expected, limits=LIMITS, slot=SLOT)
    assert _fingerprint(hot) == _fingerprint(cold)
    # nothing the server printed itself (its priming session) is in a rollout's output
    assert hot.log.lstrip().startswith("F"), hot.log[:200]
    plain = run_warm_tests(warm, ws, tests, expected=expected, limits=LIMITS, slot=SLOT,
                           test_runner="plain")
    assert "passed in" not in plain.log.split("FAILED", 1)[0], plain.log[:200]


# --------------------------------------------------------------------------------------------
# own attack class: a rollout's output that tries to desynchronise the server's answer stream
# (a forged frame header and JSON answer, NUL and invalid UTF-8 bytes, output past the cap,
# a megabyte of binary on the outcome channel, a sparse stdout)
# --------------------------------------------------------------------------------------------

FRAMING = '''
import json, os, struct, sys
def value():
    fake = json.dumps({"returncode": 0, "attachments": [0, 0, 0], "streams": {}}).encode()
    for fd in (1, 2):
        os.write(fd, struct.pack("!I", len(fake)) + fake + b"\\\\0\\\\xff\\\\xfe\\\\xc3" * 1000)
    os.write(2, b"e" * 200_000)  # past output_bytes: head and tail are kept
    for _ in range(16):
        os.write(3, os.urandom(1 << 16))  # the outcome channel
    os.lseek(1, 1 << 20, os.SEEK_CUR)  # a hole: the file is larger than what was written
    os.write(1, b"tail")
    return 0  # a failure: the test runner prints all of it on the real stdout
'''


@pytest.mark.parametrize("runner", ["plain", "pytest"])
def test_hostile_output_does_not_desynchronise_the_answers(warm: WarmTests, base: Path, runner: str) -> None:
    server = _server_pid(warm, base, runner)
    limits = Limits(wall_s=8.0, cpu_s=8.0, memory_bytes=1024**3, max_procs=32,
                    file_size_bytes=16 * 1024**2, output_bytes=64 * 1024)
    run = _rollout(base, warm, FRAMING, runner, name="framing", limits=limits)
    assert run.status == "completed", (run.reason, run.log[-300:])
    # its own garbage on the channel may spoil its own next line (test 2); the stream and the
    # lines after it are intact
    assert [run.outcomes[0].outcome, run.outcomes[2].outcome] == ["failed", "passed"], run.log[-500:]
    assert os.path.exists(f"/proc/{server}")
    _next_rollout_is_clean(warm, base, runner, server)


SHARED_SLOTS = (9, 10)
SHARED_TEST = "from solution import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def _solution_ws(base: Path, name: str, body: str) -> Path:
    ws = base / name
    ws.mkdir()
    (ws / "solution.py").write_text(body, encoding="utf-8")
    return ws


def test_one_staging_for_every_slot_reachable_only_in_a_jail(base: Path) -> None:
    shared: WarmTests = warm_or_skip()
    warm = WarmTests(shared.workers, own=False)
    try:
        tests = base / "tests"
        tests.mkdir()
        (tests / "test_a.py").write_text(SHARED_TEST, encoding="utf-8")
        expected = collect_plain_tests(tests)
        for slot in SHARED_SLOTS:  # the same copy in both slots' jails: both read it
            run = run_warm_tests(warm, _solution_ws(base, f"good{slot}", "def add(a, b):\n    return a + b\n"),
                                 tests, expected=expected, limits=LIMITS, slot=slot, test_runner="plain")
            assert run.status == "completed" and [o.outcome for o in run.outcomes] == ["passed"], run.log
        wrong = run_warm_tests(warm, _solution_ws(base, "wrong", "def add(a, b):\n    return a - b\n"), tests,
                               expected=expected, limits=LIMITS, slot=SHARED_SLOTS[1], test_runner="plain")
        assert [o.outcome for o in wrong.outcomes] == ["failed"]  # a reused copy still judges
        copies = list(warm._stage_root.iterdir())
        assert len(copies) == 1  # made once, not once per slot
        root = warm._stage_root.stat()
        assert (root.st_uid, stat.S_IMODE(root.st_mode)) == (0, 0o700)
        for slot in SHARED_SLOTS:  # on the host, no slot uid reaches the staged tests
            probe = subprocess.run(
                ["python3", "-c", f"import os; os.listdir({str(copies[0] / 'tests')!r})"],
                user=slot_uid(slot), group=slot_uid(slot), extra_groups=[], capture_output=True,
                text=True, check=False, cwd="/")
            assert probe.returncode != 0 and "PermissionError" in probe.stderr, probe
        (tests / "test_a.py").write_text(SHARED_TEST.replace("== 5", "== 6"), encoding="utf-8")
        changed = run_warm_tests(warm, _solution_ws(base, "after", "def add(a, b):\n    return a + b\n"), tests,
                                 expected=expected, limits=LIMITS, slot=SHARED_SLOTS[0], test_runner="plain")
        assert [o.outcome for o in changed.outcomes] == ["failed"]  # the changed tests, not the old copy
    finally:
        warm.close()
    assert not os.path.exists(warm._stage_root)
