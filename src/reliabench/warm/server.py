"""The warm test server: the lean runner (pytest when needed) imported once, one jailed fork per rollout.

One server per worker slot, started by :class:`reliabench.warm.client.WarmWorkers` as root
with ``python -I -B``, outside any workspace (cwd ``/``), not dumpable. It reads one request
frame at a time on its stdin and answers on its stdout (:mod:`reliabench.warm.protocol`).

It runs with bare ``reliabench`` and ``reliabench.warm`` packages (``client._BOOT``: no package
``__init__``, so no numpy and no thread pool of a library) and has exactly one thread: it
refuses to start, and to fork, otherwise (:func:`require_one_thread`; the client reports an
infrastructure error and replaces the server). A raw ``clone`` of a process with other threads
inherits their locks and ``pthread_atfork`` handlers without the threads, and a correct
solution that forks or calls BLAS would hang there.

It holds nothing of one rollout when it forks the next: a request and its answer live only in
:func:`_answer`'s frames, and no byte a rollout produced enters the server's memory (the
channel is spliced into a file, the answer's stdout, stderr and channel are sent from the
files by the kernel, the channel's secret is spliced from the request pipe to the rollout's
key pipe). It starts lean (the lean runner, the outcome plugin's standard-library modules);
pytest and its built-in plugins are imported, and one trivial session run, before the first
request that runs pytest or whose tests import it (:func:`_prime_pytest`). The priming
session's output is flushed before the next fork, and the pytest runner gets pytest's
``sys.argv``, as a fresh process has. After each priming the server's objects are frozen
(``gc.freeze``): a collection in a fork never visits, and so never copies, the server's heap.

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
module state, file, process or byte of output of one rollout can be seen by the next.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import resource
import select
import signal
import struct
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from reliabench.errors import SandboxError
from reliabench.warm import _linux as lx
from reliabench.warm.jail import (
    NS_FLAGS,
    JailSpec,
    RlimitSpec,
    confine_syscalls,
    drop_privileges,
    enter_namespaces,
    mount_proc,
    syscall_confinement,
)
from reliabench.warm.protocol import (
    FileSpan,
    ProtocolError,
    read_frame,
    splice_attachments,
    write_frame,
)

__all__ = ["SETUP_FAILED", "main", "os_thread_count", "require_one_thread", "serve"]

SETUP_FAILED = 121
"""Exit status of a rollout process whose jail could not be set up (nothing of it ran)."""

_CHAN_CAP = 16 * 1024 * 1024
_KILL_GRACE_S = 10.0
_POLL_MS = 50
_CHANNEL_FD, _KEY_FD, _CTL_FD = 3, 4, 5
_CHAN_PIPE_BYTES = 1 << 20
_READY = struct.Struct("!ddq")  # C's user and system CPU seconds and page faults when its jail is ready


def os_thread_count() -> int:
    """The threads of this process as the kernel counts them (``Threads:`` of /proc/self/status).

    Counts what :func:`threading.active_count` cannot see: threads started by C code (OpenBLAS,
    a watchdog, a native extension).
    """
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise SandboxError("/proc/self/status has no Threads: line")  # pragma: no cover


def require_one_thread(when: str) -> None:
    """Refuse to go on unless this process has exactly one thread (Python's and the kernel's).

    The rollout process is a raw ``clone`` of the server: it has one thread, and it inherits
    every lock, thread pool and ``pthread_atfork`` handler of the server's other threads, so
    a correct solution that forks or calls a threaded library would hang there.

    Raises:
        SandboxError: Another thread runs (an infrastructure failure, never the rollout's).
    """
    py_threads = threading.active_count()
    os_threads = os_thread_count()
    if py_threads != 1 or os_threads != 1:
        names = sorted(t.name for t in threading.enumerate())
        raise SandboxError(
            f"warm test server refuses to fork {when}: it has {os_threads} threads "
            f"({py_threads} Python threads: {', '.join(names)}); a rollout forked from it "
            "could deadlock")


def _prime() -> None:
    """Import what every rollout needs, so that children fork with it already in memory.

    The lean runner, the outcome plugin's modules and the standard library the tests of
    converted suites use. pytest is imported only when a request needs it
    (:func:`_prime_pytest`): a server of plain suites stays small, starts fast and forks
    fast.
    """
    import reliabench.warm.plain_runner  # noqa: F401

    for extra in ("hmac", "hashlib", "json", "random", "unittest", "doctest", "decimal",
                  "fractions", "collections", "itertools", "functools", "math", "re",
                  "string", "typing", "heapq", "bisect", "statistics", "copy",
                  "importlib.util", "importlib.machinery", "traceback", "tempfile"):
        with contextlib.suppress(ImportError):
            __import__(extra)
    _preload_outcome_plugin()
    _freeze_heap()


def _preload_outcome_plugin() -> None:
    """Load the outcome plugin and its import guard once, not activated, for every fork to inherit.

    The same files that a staging copies beside the tests (``reliabench/hidden_tests``), under
    the module names they run as (``_reliabench_outcome_plugin``, ``_reliabench_import_guard``);
    a rollout's fork activates its copy of the plugin (``activate()``: its channel, workspace
    and order seed from its own environment) instead of loading both files again (~2 ms and
    ~400 page faults per rollout). Loaded again after pytest is primed: the plugin takes its
    hook markers from pytest when pytest is imported.
    """
    import importlib.util

    from reliabench.warm.plain_runner import GUARD_MODULE, PLUGIN_MODULE

    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hidden_tests")

    def load(name: str, file: str, given: dict[str, Any]) -> Any:
        spec = importlib.util.spec_from_file_location(name, os.path.join(here, file))
        if spec is None or spec.loader is None:  # pragma: no cover - our own files
            raise SandboxError(f"warm test server cannot load {file}")
        module = importlib.util.module_from_spec(spec)
        module.__dict__.update(given)  # before the module runs: it sees them as its globals
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    guard = load(GUARD_MODULE, "_import_guard.py", {})
    load(PLUGIN_MODULE, "_outcome_plugin.py", {"_PRELOADED_GUARD": guard})


def _prime_pytest() -> None:
    """Import pytest and its built-in plugins and run one trivial session, once per server.

    Called before the first fork of a request that runs pytest or whose tests import it.
    Nothing of a rollout exists in the server when it runs (requests live only in their
    call), so every later fork inherits the same pristine, primed state.
    """
    import _pytest.config
    import pytest  # noqa: F401

    for name in _pytest.config.default_plugins:
        with contextlib.suppress(ImportError):
            __import__(f"_pytest.{name}")
    _prime_pytest_session()
    for stream in (sys.stdout, sys.stderr):  # its report, or every rollout's output starts with it
        stream.flush()
    _preload_outcome_plugin()  # with pytest's hook markers now
    _freeze_heap()


def _freeze_heap() -> None:
    """Move every object of the primed server out of the collector's reach (``gc.freeze``).

    A rollout is a copy-on-write fork of the server: a full collection in it (pytest runs two
    at the end of every session) would visit, and so copy, every page of the server's heap.
    Frozen objects are never visited; everything the rollout makes is collected as usual.
    Called after each priming, before the next fork; the objects are the server's own
    (nothing of a rollout exists in the server between requests).
    """
    gc.collect()
    gc.freeze()


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


def _child_c(req: dict[str, Any], spec: JailSpec | None = None,
             confine: Callable[[], None] | None = None, prepared: Any | None = None) -> None:
    """The test runner, pid 1 of the rollout's pid namespace. Never returns.

    Forked straight into new namespaces (``spec`` given), it builds the jail itself. As pid 1
    it mounts the namespace's ``/proc``, then drops to the slot uid and runs the tests. When
    it ends, the kernel kills every process left in the namespace. ``confine`` is the
    server's seccomp filter, built once (None: built here); ``prepared`` the server's pytest
    configuration for the request's arguments (:mod:`reliabench.warm.pytest_session`; None:
    pytest makes its own).
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
            cwd=req.get("cwd") or req["workspace"],
        )
        confine_syscalls(bool(req.get("seccomp")), confine)
        ready = resource.getrusage(resource.RUSAGE_SELF)
        os.write(_CTL_FD, _READY.pack(ready.ru_utime, ready.ru_stime, ready.ru_minflt))  # the jail is ready
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
            from reliabench.warm.plain_runner import PLUGIN_MODULE
            from reliabench.warm.pytest_session import run_session

            sys.argv[1:] = list(req["pytest_args"])  # what a fresh pytest process has
            sys.path.insert(0, req["plugin_dir"])
            code = run_session(req["pytest_args"], PLUGIN_MODULE, prepared)
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
        writable=tuple(req.get("writable", ())),
        workspace=req["workspace"],
        tmp_bytes=int(lim["tmp_bytes"]),
        shm_bytes=int(lim["shm_bytes"]),
    )


def _capped_spans(fd: int, cap: int) -> tuple[list[FileSpan], int, int]:
    """The spans of an output file that the answer carries (all of it, or its head and tail).

    Returns:
        The spans, the bytes cut between them, and the file's size.
    """
    size = os.fstat(fd).st_size
    if size <= cap:
        return [FileSpan(fd, 0, size)], 0, size
    head_n = cap // 2
    tail_n = cap - head_n
    return [FileSpan(fd, 0, head_n), FileSpan(fd, size - tail_n, tail_n)], size - cap, size


def _sweep_uid(uid: int, timeout: float = 5.0) -> None:
    """Kill every process of ``uid`` (only when a killed rollout was not reaped in time)."""
    from reliabench.sandbox.slots import procs_of_uid

    end = time.monotonic() + timeout
    while True:
        pids = procs_of_uid(uid)
        if not pids or time.monotonic() > end:
            return
        for p in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
        time.sleep(0.01)


class _Server:
    """Runs and answers requests. Holds nothing of a rollout between two requests.

    Every byte a rollout produced (its stdout, stderr, outcome channel) stays in the kernel: the
    channel pipe is spliced into a file and the answer sends the files with ``sendfile``
    (:class:`~reliabench.warm.protocol.FileSpan`); the channel's secret goes from the request
    pipe to the rollout's key pipe with ``splice``. What the server parses (the request's
    paths, limits and environment, the exit status) lives in the frames of :func:`_answer`
    and is released before the next request is read.
    """

    def __init__(self, work: str, new_root: str) -> None:
        self.work = work
        self.new_root = new_root
        self.devnull = os.open("/dev/null", os.O_RDWR)
        self.pytest_primed = False
        self.pytest_configs: dict[tuple[str, ...], Any] = {}
        try:  # the seccomp filter, built once and held in C memory (every fork inherits it)
            self.confine: Callable[[], None] | None = syscall_confinement()
        except SandboxError:  # no table for this machine: a request that asks for it fails
            self.confine = None

    def _prepared(self, args: list[str]) -> Any:
        """The pytest configuration for the blocked plugins of ``args``, made once (before the clock starts).

        Made from pytest's own modules and the ``-p no:`` values alone, never from a rollout;
        the server never uses it (:mod:`reliabench.warm.pytest_session`). None where it cannot
        be made: the fork then lets pytest make its own, as a fresh process does.
        """
        from reliabench.warm.pytest_session import blocked_plugins, prepare

        key = blocked_plugins(args)
        if key not in self.pytest_configs:
            try:
                self.pytest_configs[key] = prepare(key)
            except Exception:  # pytest's own failure shows in the rollout's session
                self.pytest_configs[key] = None
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            _freeze_heap()
        return self.pytest_configs[key]

    def _file(self, name: str) -> int:
        path = os.path.join(self.work, name)
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)

    def run(self, req: dict[str, Any], req_fd: int, resp_fd: int) -> None:
        """Run one request whose attachments are still on ``req_fd``; answer it on ``resp_fd``.

        Raises:
            ProtocolError: The request's attachments are not the channel's secret (the
                stream is out of step: the server must stop).
            SandboxError: The server has another thread (it must stop).
        """
        own = resource.getrusage(resource.RUSAGE_SELF)
        if (req.get("runner") == "pytest" or req.get("pytest")) and not self.pytest_primed:
            _prime_pytest()  # once, before the request's clock starts (its CPU is the server's)
            self.pytest_primed = True
        prepared = self._prepared(req["pytest_args"]) if req.get("runner") == "pytest" else None
        start = time.monotonic()
        out_fd = err_fd = chan_fd = chan_r = chan_w = ctl_r = ctl_w = -1
        key_r, key_w = os.pipe()
        try:
            try:
                splice_attachments(req_fd, req, [key_w])
            except OSError as exc:
                raise ProtocolError(f"the channel's secret did not arrive: {exc}") from None
            os.close(key_w)
            key_w = -1
            lim = req["limits"]
            out_fd, err_fd, chan_fd = self._file("stdout"), self._file("stderr"), self._file("channel")
            chan_r, chan_w = os.pipe()
            with contextlib.suppress(OSError):  # room for the whole stream between two drains
                fcntl.fcntl(chan_r, fcntl.F_SETPIPE_SZ, _CHAN_PIPE_BYTES)
            ctl_r, ctl_w = os.pipe()
            spec = _spec_of(req, self.new_root)
            require_one_thread("a rollout")
            pid = lx.fork_into(NS_FLAGS)
            if pid == 0:  # pragma: no cover - runs in the child
                try:
                    _place_fds([self.devnull, out_fd, err_fd, chan_w, key_r, ctl_w])
                except BaseException:
                    os._exit(SETUP_FAILED)
                _child_c(req, spec, self.confine, prepared)
            for fd in (chan_w, key_r, ctl_w):
                os.close(fd)
            chan_w = key_r = ctl_w = -1
            head = self._supervise(pid, start, float(lim["wall_s"]), int(lim["max_output"]),
                                   out_fd, err_fd, chan_r, chan_fd, ctl_r, int(req["uid"]))
            cap = int(lim["output_bytes"])
            out_spans, out_cut, out_size = _capped_spans(out_fd, cap)
            err_spans, err_cut, err_size = _capped_spans(err_fd, cap)
            if head["killed_reason"] is None and max(out_size, err_size) > int(lim["max_output"]):
                head["killed_reason"] = "output limit"
            chan_size = os.fstat(chan_fd).st_size
            head["streams"] = {"stdout": [len(out_spans), out_cut],
                               "stderr": [len(err_spans), err_cut], "channel": [1, 0]}
            done = resource.getrusage(resource.RUSAGE_SELF)
            head["cpu"]["server"] = [done.ru_utime - own.ru_utime, done.ru_stime - own.ru_stime]
            head["faults"]["server"] = done.ru_minflt - own.ru_minflt
            write_frame(resp_fd, head, [*out_spans, *err_spans, FileSpan(chan_fd, 0, chan_size)])
        finally:
            for fd in (out_fd, err_fd, chan_fd, chan_r, chan_w, key_r, key_w, ctl_r, ctl_w):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)

    def _supervise(self, pid: int, start: float, wall: float, max_out: int, out_fd: int,
                   err_fd: int, chan_r: int, chan_fd: int, ctl_r: int,
                   uid: int) -> dict[str, Any]:
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(ctl_r, select.POLLIN)
        # the channel is not polled: it is drained at every wake-up (at most _POLL_MS apart) and
        # at the end, so the tests' lines do not wake the server one by one; a writer that
        # fills the pipe in between waits for the next drain
        got = 0
        reason: str | None = None
        deadline = start + wall
        exited = False
        status = 0
        jailed: float | None = None
        ready_cpu: tuple[float, float, int] = (0.0, 0.0, 0)
        usage: resource.struct_rusage | None = None

        swept = False

        def kill() -> None:
            # C is pid 1 of the rollout: killing it ends its namespace, and C is reaped only
            # once every process of the namespace is gone
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

        def drain() -> int:
            # the channel goes to its file (past the cap: to /dev/null) inside the kernel
            nonlocal got
            target = chan_fd if got < _CHAN_CAP else self.devnull
            n = os.splice(chan_r, target, 1 << 20, flags=os.SPLICE_F_NONBLOCK)
            if target == chan_fd:
                got += n
            return n

        def drain_all() -> None:
            while True:
                try:
                    if not drain():
                        return
                except BlockingIOError:  # empty, writers still there
                    return

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
                    if fd == ctl_r:
                        data = os.read(ctl_r, _READY.size)
                        if len(data) == _READY.size:  # C says its jail is ready
                            jailed = time.monotonic()
                            ready_cpu = _READY.unpack(data)
                        poller.unregister(ctl_r)
                    elif fd == pidfd and not exited:
                        _, status, usage = os.wait4(pid, 0)
                        exited = True
                        poller.unregister(pidfd)
                drain_all()
                if exited:
                    break
            # every writer is gone (the pid namespace died with C): move the rest
            drain_all()
        finally:
            if not exited:
                kill()
                with contextlib.suppress(ChildProcessError):
                    _, status, usage = os.wait4(pid, 0)
            os.close(pidfd)
        ended = time.monotonic()
        code = _exit_code(status)
        user, system, faults = ((usage.ru_utime, usage.ru_stime, usage.ru_minflt) if usage is not None
                                else ready_cpu)
        return {
            "returncode": code if code < 128 else -(code - 128),
            "timed_out": reason == "wall time limit",
            "killed_reason": reason,
            "wall_s": time.monotonic() - start,
            "setup_failed": code == SETUP_FAILED,
            "setup_s": (jailed or ended) - start,
            "run_s": ended - (jailed or ended),
            # CPU seconds [user, system] of C (its namespace's other processes are not counted
            # unless C waited for them): until its jail was ready, and after
            "cpu": {"setup": list(ready_cpu[:2]), "run": [user - ready_cpu[0], system - ready_cpu[1]]},
            "faults": {"setup": ready_cpu[2], "run": faults - ready_cpu[2]},
        }


def _answer(server: _Server, req_fd: int, resp_fd: int) -> bool:
    """Read one request and answer it; False when the server must stop.

    Every object of the request and of its answer is local to this call, so nothing of one
    rollout is reachable (``gc.get_objects()``, frames) when the next rollout is forked.
    """
    try:
        req = read_frame(req_fd)
    except ProtocolError:
        return False
    try:
        if req.get("op") == "ping":
            write_frame(resp_fd, {"pong": True})
            return True
        server.run(req, req_fd, resp_fd)
        return True
    except (ProtocolError, SandboxError) as exc:  # out of step, or not fit to fork: stop
        write_frame(resp_fd, {"error": f"{type(exc).__name__}: {exc}", "fatal": True})
        return False
    except Exception as exc:  # report, and keep serving
        write_frame(resp_fd, {"error": f"{type(exc).__name__}: {exc}"})
        return True


def _forget_rollout() -> None:
    """Drop what an earlier request may have left reachable beyond :func:`_answer`'s frames."""
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            delattr(sys, name)
    gc.collect(0)  # young cycles (an exception and its traceback) of the request


def serve(req_fd: int, resp_fd: int) -> None:
    """Answer requests until the request stream ends (or the server cannot go on)."""
    work = tempfile.mkdtemp(prefix="rb-warm-")
    os.chmod(work, 0o700)
    new_root = os.path.join(work, "root")
    os.mkdir(new_root, 0o700)
    server = _Server(work, new_root)
    write_frame(resp_fd, {"ready": True, "pid": os.getpid()})
    try:
        while _answer(server, req_fd, resp_fd):
            _forget_rollout()
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
    try:
        require_one_thread("at start")
    except SandboxError as exc:
        write_frame(resp_fd, {"ready": False, "error": str(exc)})
        return
    serve(req_fd, resp_fd)
