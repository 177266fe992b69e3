"""The warm test server: pytest and the lean runner imported once, one jailed fork per rollout.

One server per worker slot, started by :class:`reliabench.warm.client.WarmWorkers` as root
with ``python -I -B``, outside any workspace (cwd ``/``), not dumpable. It reads one request
frame at a time on its stdin and answers on its stdout (:mod:`reliabench.warm.protocol`).

Per request it forks one process, straight into new mount, pid and IPC namespaces
(``clone``, :func:`reliabench.warm._linux.fork_into`)::

    server (root; its own network and UTS namespaces, empty; never runs rollout code)
      C    pid 1 of the new pid namespace, root at first: builds the minimal root and
           pivot_root (jail.py), mounts /proc, then rlimits, no capabilities, the slot uid,
           no_new_privs, and pytest.main (test_runner "pytest") or the lean runner ("plain")

``C`` dies with the server (``PR_SET_PDEATHSIG``); when ``C`` exits the kernel kills every
process left in its namespace, and the server reaps ``C`` only after that. The network
namespace is the server's own: empty (a loopback that is down and that no rollout can bring
up without ``CAP_NET_ADMIN``), made once per server instead of once per rollout (a new
network namespace is the costliest one to make and to tear down); rollouts of one slot run
one after another and nothing of one survives it, so sharing it carries nothing from one
rollout to the next. The server supervises from outside: the wall-time limit (it kills
``C``), the output limit on the stdout/stderr files (kept in the server's private directory,
outside the jail), and the outcome channel, a pipe it drains while the tests run (the runner
cannot rewind or truncate a pipe). Every rollout forks from the same pristine server: no
module state, file or process of one rollout can be seen by the next.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import select
import signal
import sys
import tempfile
import time
import traceback
from typing import Any

from reliabench.warm import _linux as lx
from reliabench.warm.jail import (
    NS_FLAGS,
    JailSpec,
    RlimitSpec,
    confine_syscalls,
    drop_privileges,
    enter_namespaces,
    mount_proc,
)
from reliabench.warm.protocol import ProtocolError, read_frame, write_frame

__all__ = ["SETUP_FAILED", "main", "serve"]

SETUP_FAILED = 121
"""Exit status of a rollout process whose jail could not be set up (nothing of it ran)."""

_CHAN_CAP = 16 * 1024 * 1024
_KILL_GRACE_S = 10.0
_POLL_MS = 50
_CHANNEL_FD, _KEY_FD, _CTL_FD = 3, 4, 5


def _prime() -> None:
    """Import what every rollout needs, so that children fork with it already in memory."""
    import _pytest.config
    import pytest  # noqa: F401

    import reliabench.warm.plain_runner  # noqa: F401

    for name in _pytest.config.default_plugins:
        with contextlib.suppress(ImportError):
            __import__(f"_pytest.{name}")
    _prime_pytest_session()
    for extra in ("hmac", "hashlib", "json", "random", "unittest", "doctest", "decimal",
                  "fractions", "collections", "itertools", "functools", "math", "re",
                  "string", "typing", "heapq", "bisect", "statistics", "copy"):
        with contextlib.suppress(ImportError):
            __import__(extra)


def _prime_pytest_session() -> None:
    """Run one pytest session on a trivial test, so that what pytest loads lazily is loaded.

    Saves ~40% of ``pytest.main`` in every child. The session is ours (a constant dummy
    test), so every child inherits the same primed state; the dummy module and its path are
    removed afterwards.
    """
    import shutil

    import pytest

    tmp = tempfile.mkdtemp(prefix="rb-warm-prime-")
    try:
        with open(os.path.join(tmp, "test_reliabench_prime.py"), "w", encoding="utf-8") as fh:
            fh.write("def test_prime():\n    assert 1 + 1 == 2\n")
        saved_path = list(sys.path)
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        pytest.main(["-q", "-p", "no:cacheprovider", "--import-mode=append", "--color=no",
                     "--rootdir", tmp, "-c", os.devnull, tmp])
        sys.path[:] = saved_path
        sys.modules.pop("test_reliabench_prime", None)
    finally:
        os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
        shutil.rmtree(tmp, ignore_errors=True)


def _exit_code(status: int) -> int:
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return 255  # pragma: no cover


def _place_fds(fds: list[int]) -> None:
    """Put ``fds`` at 0, 1, 2 ... in order and close every other descriptor."""
    moved = [fcntl_dup_at_least(fd, 100) for fd in fds]  # a target number may be a source too
    for target, fd in enumerate(moved):
        os.dup2(fd, target)
    os.closerange(len(fds), 1 << 16)


def fcntl_dup_at_least(fd: int, minimum: int) -> int:
    """``fcntl(F_DUPFD)``: a duplicate numbered at least ``minimum``."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD, minimum)


def _child_c(req: dict[str, Any], spec: JailSpec | None = None) -> None:
    """The test runner, pid 1 of the rollout's pid namespace. Never returns.

    Forked straight into new namespaces (``spec`` given), it builds the jail itself. As pid 1
    it mounts the namespace's ``/proc``, then drops to the slot uid and runs the tests. When
    it ends, the kernel kills every process left in the namespace.
    """
    code = SETUP_FAILED
    started = False
    try:
        lx.prctl(lx.PR_SET_PDEATHSIG, signal.SIGKILL)
        if spec is not None:
            enter_namespaces(spec, unshare=False)
        mount_proc()
        lim = req["limits"]
        drop_privileges(
            int(req["uid"]),
            RlimitSpec(cpu_s=int(lim["cpu_s"]), memory_bytes=int(lim["memory_bytes"]),
                       max_procs=int(lim["max_procs"]), file_size_bytes=int(lim["file_size_bytes"])),
            env=req["env"],
            cwd=req["workspace"],
        )
        confine_syscalls(bool(req.get("seccomp")))
        os.write(_CTL_FD, b"\0\0\0\0")  # the jail is ready
        os.close(_CTL_FD)
        lx.prctl(lx.PR_SET_DUMPABLE, 1)  # like a fresh process: its own /proc entries are its own
        signal.signal(signal.SIGINT, signal.default_int_handler)
        started = True
        if "random" in sys.modules:
            sys.modules["random"].seed()  # each rollout its own random state, like a fresh process
        if req["runner"] == "exec":
            os.close(_CHANNEL_FD)
            os.close(_KEY_FD)
            os.execve(req["argv"][0], req["argv"], req["env"])
        if req["runner"] == "plain":
            from reliabench.warm.plain_runner import run_plain

            code = run_plain(req["tests"], req["plugin_dir"], req["workspace"])
        else:
            import pytest

            sys.path.insert(0, req["plugin_dir"])
            code = int(pytest.main(list(req["pytest_args"])))
    except BaseException:  # whatever happens, this process must end here
        with contextlib.suppress(BaseException):
            sys.stderr.write(traceback.format_exc())
        code = 1 if started else SETUP_FAILED
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


def _spec_of(req: dict[str, Any], new_root: str) -> JailSpec:
    base = req["jail"]
    lim = req["limits"]
    return JailSpec(
        new_root=new_root,
        system=tuple(base["system"]),
        symlinks=tuple((a, b) for a, b in base["symlinks"]),
        files=tuple(base["files"]),
        readonly=tuple(req["readonly"]),
        workspace=req["workspace"],
        tmp_bytes=int(lim["tmp_bytes"]),
        shm_bytes=int(lim["shm_bytes"]),
    )


def _read_capped(fd: int, cap: int, marker: str) -> tuple[str, int]:
    size = os.fstat(fd).st_size
    if size <= cap:
        return os.pread(fd, size, 0).decode("utf-8", "replace"), size
    head_n = cap // 2
    tail_n = cap - head_n
    head = os.pread(fd, head_n, 0)
    tail = os.pread(fd, tail_n, size - tail_n)
    cut = size - head_n - tail_n
    return (head.decode("utf-8", "replace") + marker.format(n=cut)
            + tail.decode("utf-8", "replace")), size


def _sweep_uid(uid: int, timeout: float = 5.0) -> None:
    """Kill every process of ``uid`` (only when a killed rollout was not reaped in time)."""
    from reliabench.sandbox.slots import _procs_of_uid

    end = time.monotonic() + timeout
    while True:
        pids = _procs_of_uid(uid)
        if not pids or time.monotonic() > end:
            return
        for p in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
        time.sleep(0.01)


class _Server:
    def __init__(self, work: str, new_root: str) -> None:
        self.work = work
        self.new_root = new_root
        self.devnull = os.open("/dev/null", os.O_RDWR)

    def run(self, req: dict[str, Any]) -> dict[str, Any]:
        start = time.monotonic()
        lim = req["limits"]
        wall = float(lim["wall_s"])
        max_out = int(lim["max_output"])
        out_fd = os.open(os.path.join(self.work, "stdout"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        err_fd = os.open(os.path.join(self.work, "stderr"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        chan_r, chan_w = os.pipe()
        key_r, key_w = os.pipe()
        ctl_r, ctl_w = os.pipe()
        try:
            os.write(key_w, bytes.fromhex(req["key_hex"]))
            os.close(key_w)
            key_w = -1
            spec = _spec_of(req, self.new_root)
            pid = lx.fork_into(NS_FLAGS)
            if pid == 0:  # pragma: no cover - runs in the child
                try:
                    _place_fds([self.devnull, out_fd, err_fd, chan_w, key_r, ctl_w])
                except BaseException:
                    os._exit(SETUP_FAILED)
                _child_c(req, spec)
            for fd in (chan_w, key_r, ctl_w):
                os.close(fd)
            chan_w = key_r = ctl_w = -1
            return self._supervise(pid, start, wall, max_out, out_fd, err_fd, chan_r, ctl_r, lim,
                                   int(req["uid"]))
        finally:
            for fd in (out_fd, err_fd, chan_r, chan_w, key_r, key_w, ctl_r, ctl_w):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)

    def _supervise(self, pid: int, start: float, wall: float, max_out: int, out_fd: int,
                   err_fd: int, chan_r: int, ctl_r: int, lim: dict[str, Any],
                   uid: int) -> dict[str, Any]:
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(chan_r, select.POLLIN)
        poller.register(ctl_r, select.POLLIN)
        chunks: list[bytes] = []
        got = 0
        reason: str | None = None
        deadline = start + wall
        exited = False
        status = 0
        jailed: float | None = None

        swept = False

        def kill() -> None:
            # C is pid 1 of the rollout: killing it ends its namespace, and C is reaped only
            # once every process of the namespace is gone
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

        try:
            while True:
                now = time.monotonic()
                if reason is None and now >= deadline:
                    reason = "wall time limit"
                    kill()
                elif reason is not None and now >= deadline + _KILL_GRACE_S and not swept:
                    swept = True  # still not reaped: a second line of defence
                    kill()
                    _sweep_uid(uid)
                if reason is None and max(os.fstat(out_fd).st_size,
                                          os.fstat(err_fd).st_size) > max_out:
                    reason = "output limit"
                    kill()
                timeout = _POLL_MS if reason is None else 20
                if reason is None:
                    timeout = max(1, min(_POLL_MS, int((deadline - now) * 1000) + 1))
                for fd, _ev in poller.poll(timeout):
                    if fd == chan_r:
                        data = os.read(chan_r, 1 << 16)
                        if not data:
                            poller.unregister(chan_r)
                        elif got < _CHAN_CAP:
                            chunks.append(data)
                            got += len(data)
                    elif fd == ctl_r:
                        data = os.read(ctl_r, 4)
                        if len(data) == 4:  # C says its jail is ready
                            jailed = time.monotonic()
                        poller.unregister(ctl_r)
                    elif fd == pidfd and not exited:
                        _, status = os.waitpid(pid, 0)
                        exited = True
                        poller.unregister(pidfd)
                if exited:
                    break
            # every writer is gone (the pid namespace died with B): read the rest
            while True:
                try:
                    data = os.read(chan_r, 1 << 16)
                except BlockingIOError:  # pragma: no cover
                    break
                if not data:
                    break
                if got < _CHAN_CAP:
                    chunks.append(data)
                    got += len(data)
        finally:
            if not exited:
                kill()
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            os.close(pidfd)
        ended = time.monotonic()
        code = _exit_code(status)
        returncode = code if code < 128 else -(code - 128)
        cap = int(lim["output_bytes"])
        marker = "\n[... {n} bytes cut by the reliabench sandbox (output limit) ...]\n"
        stdout, out_size = _read_capped(out_fd, cap, marker)
        stderr, err_size = _read_capped(err_fd, cap, marker)
        if reason is None and max(out_size, err_size) > max_out:
            reason = "output limit"
        return {
            "returncode": returncode,
            "timed_out": reason == "wall time limit",
            "killed_reason": reason,
            "wall_s": time.monotonic() - start,
            "stdout": stdout,
            "stderr": stderr,
            "channel_b64": base64.b64encode(b"".join(chunks)).decode("ascii"),
            "setup_failed": code == SETUP_FAILED,
            "setup_s": (jailed or ended) - start,
            "run_s": ended - (jailed or ended),
        }


def serve(req_fd: int, resp_fd: int) -> None:
    """Answer requests until the request stream ends."""
    work = tempfile.mkdtemp(prefix="rb-warm-")
    os.chmod(work, 0o700)
    new_root = os.path.join(work, "root")
    os.mkdir(new_root, 0o700)
    server = _Server(work, new_root)
    write_frame(resp_fd, {"ready": True, "pid": os.getpid()})
    try:
        while True:
            try:
                req = read_frame(req_fd)
            except ProtocolError:
                return
            try:
                if req.get("op") == "ping":
                    resp: dict[str, Any] = {"pong": True}
                else:
                    resp = server.run(req)
            except Exception as exc:  # report, and keep serving
                resp = {"error": f"{type(exc).__name__}: {exc}"}
            write_frame(resp_fd, resp)
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    """Entry point of the server process (see the module docstring)."""
    os.chdir("/")
    lx.unshare(lx.CLONE_NEWNET | lx.CLONE_NEWUTS)
    lx.prctl(lx.PR_SET_DUMPABLE, 0)
    req_fd = fcntl_dup_at_least(0, 200)
    resp_fd = fcntl_dup_at_least(1, 201)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    _prime()
    serve(req_fd, resp_fd)
