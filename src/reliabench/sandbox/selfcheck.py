"""The containment self-check: the attacks a sandbox backend must stop, run against any backend.

Every check runs hostile commands in environments the backend starts (the lifecycle of
:mod:`reliabench.sandbox.environment`: ``start``, ``exec``, ``close``, one environment per
command) and looks at what reached the host. A container backend is checked on the spec it
is given (an image with ``python3``); host backends on the host. A backend that passes every
check gives the containment the runner relies on; a third-party backend
(``reliabench.sandboxes`` entry point) must pass them all before it is trusted with agents'
code. ``reliabench sandbox check --backend NAME`` runs them; the test
suite runs them on every built-in backend and on the warm jail
(``tests/sandbox/test_selfcheck.py``). The checks, in the order they run:

==========================  ====================================================================
check                       the backend passes when
==========================  ====================================================================
fork_bomb                   a bounded probe cannot start more processes than ``max_procs``
                            (else the real bomb is not run: it would reach the host's process
                            table); the bomb ends by the limit or the wall time within 15 s,
                            nothing of the slot is left running and the slot works right after
infinite_loop               ``while True: pass`` is killed at the wall time ("wall time limit",
                            1.4 s < wall < 5 s for a 1.5 s limit), nothing left running
sleep_forever               ``sleep 1000`` is killed at the wall time (< 4 s for 1 s), nothing left
memory_10gb                 a 10 GiB allocation fails with ``MemoryError``
file_100mb                  writing 100 MiB stops at ``file_size_bytes`` ("File too large" or
                            "file size limit"); the file is no larger than the limit
network                     a TCP connection to a server listening on the host's 127.0.0.1 is
                            refused and the server sees nothing
write_outside_workspace     writes to a private host directory, to the host's ``/tmp`` and to
                            ``/usr`` are denied and leave no file; nothing left running
read_private_dirs           another rollout's workspace and the hidden tests, in 0700
                            directories (as a runner keeps them), cannot be read
read_world_readable_dirs    the same in 0755 directories: only a private file-system view
                            hides them
setsid_grandchild           a grandchild that calls ``setsid()`` is gone when ``run`` returns
background_child            a plain background child is gone when ``run`` returns
kernel_keyring              a key one run stores in the uid's user, user-session or persistent
                            keyring, or in the session keyring it inherited, is not found by
                            the next run of the same slot
syscall_filter              the calls a seccomp filter must deny fail inside the sandbox
                            (``add_key``, ``keyctl``, ``unshare`` and ``clone`` of a user
                            namespace, ``io_uring_setup``, ``bpf``, ``perf_event_open``,
                            ``userfaultfd``, ``kcmp``, ``name_to_handle_at``, ``personality``
                            without ASLR): see :mod:`reliabench.sandbox.seccomp`
==========================  ====================================================================

"Nothing left running" is checked as root (then runs use the slot's uid): no process of the
slot uid is alive once ``run`` returned, looked at under the slot's host-wide lock.

What the built-in backends give (``docs/threat-model.md``): ``bubblewrap`` and the warm jail
pass every check; ``namespaces`` fails ``read_world_readable_dirs`` (it has no private
file-system view, permissions are its barrier: runners keep suite directories 0700); ``none``
FAILS containment by design -- network, writes and reads outside the workspace, the
``setsid()`` grandchild, the kernel keyrings and the system-call filter, and as root the
fork bomb (``RLIMIT_NPROC`` is ignored for root).

A check that cannot run says why (``skipped``): no Python interpreter runs in the backend,
for instance. Anything a failed check left on the host (escaped files, an escaped process,
found by a random token in its command line) is removed before the next check.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from reliabench.errors import SandboxError, UsageError
from reliabench.sandbox.base import Limits, SandboxResult
from reliabench.sandbox.environment import HOST, EnvironmentBackend, EnvironmentSpec, PreparedSpec
from reliabench.sandbox.seccomp import SYSCALL_NUMBERS
from reliabench.sandbox.slots import hold_slot, procs_of_uid, slot_uid

__all__ = [
    "CHECKS",
    "CheckResult",
    "CheckStatus",
    "ContainmentCheck",
    "SelfCheckReport",
    "check_backend",
    "check_names",
    "run_check",
    "run_once",
    "run_selfcheck",
]

CheckStatus = Literal["passed", "failed", "skipped"]
"""The outcome of one check."""

SMALL = Limits(wall_s=5.0, cpu_s=5.0, memory_bytes=512 * 1024**2, max_procs=32,
               file_size_bytes=10 * 1024**2, output_bytes=64 * 1024)
"""The limits of most attacks (a 512 MiB address space, a 10 MiB file size)."""


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one containment check on one backend.

    Attributes:
        check: The check's name (see :data:`CHECKS`).
        status: ``passed``, ``failed`` (the attack reached the host, or the backend could not
            run it), or ``skipped`` (the check could not run here; ``detail`` says why).
        detail: What was seen: the first broken promise, or why the check was skipped.
    """

    check: str
    status: CheckStatus
    detail: str


@dataclass(frozen=True)
class SelfCheckReport:
    """The self-check of one backend.

    Attributes:
        backend: The backend's ``name`` (the isolation it records).
        slot: The worker slot the attacks ran in.
        python: The interpreter the Python attacks ran, or None when none runs in the backend.
        results: One result per check, in the order of :data:`CHECKS`.
    """

    backend: str
    slot: int
    python: str | None
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        """True when every check passed (a skipped check is not a pass)."""
        return all(r.status == "passed" for r in self.results)

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        """The checks the backend failed."""
        return tuple(r for r in self.results if r.status == "failed")

    def result(self, check: str) -> CheckResult:
        """The result of the check named ``check``.

        Raises:
            UsageError: no such check in this report.
        """
        for r in self.results:
            if r.check == check:
                return r
        raise UsageError(f"no check named {check!r} in this report; it has: "
                         f"{', '.join(r.check for r in self.results)}")


class _Failed(Exception):
    """A promise the backend broke (the message says which)."""


class _Skipped(Exception):
    """The check cannot run here (the message says why)."""


def _expect(ok: bool, detail: str) -> None:
    if not ok:
        raise _Failed(detail)


def run_once(backend: EnvironmentBackend, prepared: PreparedSpec, argv: Sequence[str], *,
             workspace: Path, slot: int, limits: Limits = SMALL) -> SandboxResult:
    """One command in a fresh environment of ``backend`` on ``workspace``: start, exec, close.

    Raises:
        SandboxError: The environment could not be started or the command not run.
    """
    env = backend.start(prepared, workspace=workspace, slot=slot, limits=limits)
    try:
        return env.exec(list(argv), limits=limits)
    finally:
        env.close()


@dataclass
class _Context:
    """What one check gets: the backend and its prepared spec, the slot, the interpreter, a base."""

    backend: EnvironmentBackend
    prepared: PreparedSpec
    slot: int
    python: str | None
    base: Path

    def ws(self, name: str = "ws") -> Path:
        path = self.base / name
        path.mkdir(exist_ok=True)
        return path

    def run(self, argv: Sequence[str], limits: Limits = SMALL) -> SandboxResult:
        return run_once(self.backend, self.prepared, argv, workspace=self.ws(), slot=self.slot,
                        limits=limits)

    def py(self, code: str, limits: Limits = SMALL) -> SandboxResult:
        if self.python is None:
            raise _Skipped("no Python interpreter runs in this backend")
        return self.run([self.python, "-c", code], limits)

    def no_procs_left(self) -> None:
        """As root: no process of the slot uid is alive (looked at under the slot's lock)."""
        if os.geteuid() != 0:
            return
        uid = slot_uid(self.slot)
        with hold_slot(uid):
            left = procs_of_uid(uid)
        _expect(left == [], f"processes of the slot uid {uid} still run after run() returned: {left}")


@dataclass(frozen=True)
class ContainmentCheck:
    """One attack and the promise the backend must keep against it.

    Attributes:
        name: Short name (CLI output, test ids).
        promise: What a backend that passes does, in one line.
        run: Runs the attack; raises ``_Failed`` or ``_Skipped``; returns a note on success.
    """

    name: str
    promise: str
    run: Callable[[_Context], str]


def _pids_with_token(token: bytes) -> list[int]:
    """Live host processes whose command line holds ``token`` (a zombie's is empty)."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                if token in fh.read():
                    pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def _kill_by_token(token: str, timeout: float = 5.0) -> None:
    """Kill every host process whose command line holds ``token`` (an escaped attack); wait until gone."""
    needle = token.encode()
    deadline = time.monotonic() + timeout
    while True:
        pids = _pids_with_token(needle)
        if not pids or time.monotonic() > deadline:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


# --------------------------------------------------------------------------------------------
# the checks
# --------------------------------------------------------------------------------------------

_FORK_PROBE = (
    "import os, sys, time\n"
    "n = 0\n"
    "for _ in range({count}):\n"
    "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
    "    if pid == 0:\n        time.sleep(2)\n        os._exit(0)\n"
    "    n += 1\n"
    "print(n, flush=True)\n"
    "os._exit(0)\n"
)

_FORK_BOMB = (
    "import os, time\n"
    "for _ in range(100000):\n"
    "    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)\n"
)


def _fork_bomb(ctx: _Context) -> str:
    limits = Limits(wall_s=3.0, cpu_s=5.0, max_procs=24)
    count = limits.max_procs + 8
    probe = ctx.py(_FORK_PROBE.format(count=count), limits)
    started = probe.stdout.strip()
    if started == str(count):
        raise _Failed(f"one command started {count} processes with max_procs={limits.max_procs}: the "
                      "process limit is not in force (RLIMIT_NPROC is ignored for root), so a fork "
                      "bomb would reach the host's process table; the bomb itself was not run")
    ctx.no_procs_left()
    start = time.monotonic()
    result = ctx.py(_FORK_BOMB, limits)
    elapsed = time.monotonic() - start
    _expect(result.timed_out or result.returncode != 0,
            f"the fork bomb ended normally (returncode {result.returncode}, not timed out)")
    _expect(elapsed < 15, f"the fork bomb took {elapsed:.1f} s to stop (limit: wall 3 s; at most 15 s)")
    ctx.no_procs_left()
    after = ctx.py("print('next')")
    _expect(after.stdout == "next\n", f"the slot does not work after the fork bomb: stdout {after.stdout!r}, "
            f"stderr {after.stderr[-200:]!r}")
    return f"the probe started {started or 'no'} process(es) of {count}; the bomb stopped in {elapsed:.1f} s"


def _infinite_loop(ctx: _Context) -> str:
    result = ctx.py("while True: pass", Limits(wall_s=1.5, cpu_s=30.0))
    _expect(result.timed_out, f"`while True: pass` was not timed out (returncode {result.returncode})")
    _expect(result.killed_reason == "wall time limit",
            f"killed_reason is {result.killed_reason!r}, expected 'wall time limit'")
    _expect(1.4 < result.wall_s < 5, f"wall_s is {result.wall_s:.2f} for a 1.5 s limit (expected 1.4-5)")
    ctx.no_procs_left()
    return f"killed at {result.wall_s:.2f} s"


def _sleep_forever(ctx: _Context) -> str:
    result = ctx.run(["sleep", "1000"], Limits(wall_s=1.0))
    _expect(result.timed_out, f"`sleep 1000` was not timed out (returncode {result.returncode})")
    _expect(result.killed_reason == "wall time limit",
            f"killed_reason is {result.killed_reason!r}, expected 'wall time limit'")
    _expect(result.wall_s < 4, f"wall_s is {result.wall_s:.2f} for a 1 s limit (expected < 4)")
    ctx.no_procs_left()
    return f"killed at {result.wall_s:.2f} s"


def _memory_10gb(ctx: _Context) -> str:
    result = ctx.py("b = bytearray(10 * 1024**3)\nprint('allocated')")
    _expect(result.returncode != 0, "a 10 GiB allocation succeeded (returncode 0)")
    _expect("allocated" not in result.stdout, "a 10 GiB allocation succeeded")
    _expect("MemoryError" in result.stderr,
            f"no MemoryError for a 10 GiB allocation; stderr ends {result.stderr[-200:]!r}")
    return "MemoryError"


def _file_100mb(ctx: _Context) -> str:
    code = "with open('big.bin', 'wb') as f:\n    for _ in range(100):\n        f.write(b'x' * 2**20)"
    result = ctx.py(code)
    big = ctx.ws() / "big.bin"
    size = big.stat().st_size if big.exists() else 0
    _expect(result.returncode != 0, f"writing 100 MiB succeeded (file of {size} bytes)")
    _expect("File too large" in result.stderr or result.killed_reason == "file size limit",
            f"neither 'File too large' nor killed_reason 'file size limit' (got {result.killed_reason!r})")
    _expect(size <= SMALL.file_size_bytes,
            f"the file grew to {size} bytes, past file_size_bytes={SMALL.file_size_bytes}")
    return f"stopped at {size} bytes"


def _network(ctx: _Context) -> str:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        server.bind(("127.0.0.1", 0))
        server.listen(5)
        port = server.getsockname()[1]
        code = (
            "import socket\n"
            f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "    print('connected')\nexcept OSError as e:\n    print('refused', e)\n"
        )
        result = ctx.py(code)
        readable, _, _ = select.select([server], [], [], 0.2)
        _expect(readable == [], f"a server on the host's 127.0.0.1:{port} saw a connection from the sandbox")
        _expect("connected" not in result.stdout, "the sandbox connected to the host's 127.0.0.1")
        _expect(result.stdout.startswith("refused"),
                f"the connection attempt did not report a refusal: stdout {result.stdout[:200]!r}, "
                f"stderr {result.stderr[-200:]!r}")
        return result.stdout.strip()
    finally:
        server.close()


def _write_outside(ctx: _Context) -> str:
    private = Path(tempfile.mkdtemp(prefix="rb-selfcheck-host-"))  # 0700, the caller's
    tag = f"{os.getpid()}-{secrets.token_hex(4)}"
    target = private / "escaped.txt"
    host_tmp = Path(tempfile.gettempdir()) / f"rb-escape-{tag}.txt"
    usr = Path("/usr") / f"rb-escaped-{tag}.txt"
    code = (
        f"for p in ({str(target)!r}, {str(host_tmp)!r}, {str(usr)!r}):\n"
        "    try:\n        open(p, 'w').write('x'); print('wrote', p)\n"
        "    except OSError as e:\n        print('denied', p, e.errno)\n"
    )
    try:
        result = ctx.py(code)
        _expect(f"denied {target}" in result.stdout, f"a write to a private host directory was not denied "
                f"({target}): stdout {result.stdout[:300]!r}")
        _expect(f"denied {usr}" in result.stdout,
                f"a write to {usr} was not denied: stdout {result.stdout[:300]!r}")
        _expect(not target.exists(), f"{target} exists on the host")
        _expect(not usr.exists(), f"{usr} exists on the host")
        # a private /tmp (bubblewrap, warm), or the slot uid's files removed (namespaces)
        _expect(not host_tmp.exists(), f"{host_tmp} (the host's /tmp) exists after the run")
        ctx.no_procs_left()
        return "denied: private directory, /usr; nothing in the host's /tmp"
    finally:
        shutil.rmtree(private, ignore_errors=True)
        for p in (host_tmp, usr):
            with contextlib.suppress(OSError):
                p.unlink()


def _read_dirs(ctx: _Context, mode: int) -> str:
    other = ctx.ws("other-rollout")
    (other / "solution.py").write_text("SECRET_OTHER = 1\n", encoding="utf-8")
    tests = ctx.ws("hidden-tests")
    (tests / "test_x.py").write_text("SECRET_TESTS = 1\n", encoding="utf-8")
    os.chmod(other, mode)
    os.chmod(tests, mode)
    code = (
        f"for p in ({str(other / 'solution.py')!r}, {str(tests / 'test_x.py')!r}):\n"
        "    try:\n        print('read', open(p).read())\n"
        "    except OSError as e:\n        print('denied', e.errno)\n"
    )
    result = ctx.py(code)
    _expect("SECRET" not in result.stdout,
            f"the sandbox read a file of a {mode:o} directory outside its workspace: {result.stdout[:300]!r}")
    _expect(result.stdout.count("denied") == 2,
            f"expected two denied reads, got stdout {result.stdout[:300]!r}, stderr {result.stderr[-200:]!r}")
    return "both reads denied"


def _read_private(ctx: _Context) -> str:
    return _read_dirs(ctx, 0o700)


def _read_world_readable(ctx: _Context) -> str:
    return _read_dirs(ctx, 0o755)


_ESCAPE = (
    "import subprocess, sys\n"
    "loop = 'import time\\nend = time.time() + 30\\nwhile time.time() < end:\\n"
    "    open(\"marker\", \"a\").write(\"x\")\\n    time.sleep(0.05)'\n"
    "subprocess.Popen([sys.executable, '-c', loop, {token!r}], start_new_session={setsid},\n"
    "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
    "import time; time.sleep(0.5)\n"
)


def _child_gone(ctx: _Context, setsid: bool) -> str:
    token = f"rb-selfcheck-{os.getpid()}-{secrets.token_hex(8)}"
    try:
        result = ctx.py(_ESCAPE.format(token=token, setsid=setsid))
        _expect(result.returncode == 0, f"the attack did not run: returncode {result.returncode}, "
                f"stderr {result.stderr[-200:]!r}")
        marker = ctx.ws() / "marker"
        _expect(marker.exists(), "the child never wrote its marker")
        size = marker.stat().st_size
        time.sleep(0.4)
        _expect(marker.stat().st_size == size,
                f"the {'setsid ' if setsid else ''}grandchild is still running after run() returned")
        ctx.no_procs_left()
        return "gone when run() returned"
    finally:
        _kill_by_token(token)


def _setsid_grandchild(ctx: _Context) -> str:
    return _child_gone(ctx, setsid=True)


def _background_child(ctx: _Context) -> str:
    return _child_gone(ctx, setsid=False)


_KEYRING_PROGRAM = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
ADD, KEYCTL, TOKEN, STORE = {add_key}, {keyctl}, {token!r}.encode(), {store}
for name, ring in (("user", -4), ("user-session", -5), ("session", -3), ("persistent", None)):
    if ring is None:
        ring = libc.syscall(L(KEYCTL), L(22), L(-1), L(-2))  # KEYCTL_GET_PERSISTENT
        if ring < 0:
            continue
    if STORE:
        libc.syscall(L(ADD), b"user", b"rb-selfcheck", TOKEN, L(len(TOKEN)), L(ring))
        continue
    kid = libc.syscall(L(KEYCTL), L(10), L(ring), b"user", b"rb-selfcheck", L(0))  # SEARCH
    if kid >= 0:
        buf = ctypes.create_string_buffer(256)
        n = libc.syscall(L(KEYCTL), L(11), L(kid), buf, L(256))  # READ
        print("found", name, buf.raw[:max(n, 0)].decode("ascii", "replace") if n > 0 else kid)
print("done")
"""


def _numbers() -> dict[str, int]:
    numbers = SYSCALL_NUMBERS.get(os.uname().machine)
    if numbers is None:
        raise _Skipped(f"no system-call table for machine {os.uname().machine!r}")
    return dict(numbers)


def _kernel_keyring(ctx: _Context) -> str:
    nr = _numbers()
    token = f"rb-selfcheck-key-{secrets.token_hex(8)}"
    fmt = {"add_key": nr["add_key"], "keyctl": nr["keyctl"], "token": token}
    stored = ctx.py(_KEYRING_PROGRAM.format(store=True, **fmt))
    _expect(stored.stdout.endswith("done\n"), f"the storing run did not finish: stdout "
            f"{stored.stdout[-200:]!r}, stderr {stored.stderr[-200:]!r}")
    found = ctx.py(_KEYRING_PROGRAM.format(store=False, **fmt))
    _expect(found.stdout.endswith("done\n"), f"the reading run did not finish: stdout "
            f"{found.stdout[-200:]!r}, stderr {found.stderr[-200:]!r}")
    seen = [line for line in found.stdout.splitlines() if line.startswith("found")]
    _expect(not seen, f"the next run of the slot found the key of the previous one: {seen}")
    return "the next run found no key of the previous one"


_FILTER_PROGRAM = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
nr = {numbers!r}
def call(name, *args):
    rc = libc.syscall(L(nr[name]), *(a if isinstance(a, bytes) else L(a) for a in args))
    return rc
def clone_userns():
    rc = call("clone", 0x10000000 | 17, 0, 0, 0, 0)
    if rc == 0:
        os._exit(0)
    if rc > 0:
        os.waitpid(rc, 0)
    return rc
def no_aslr():
    rc = call("personality", 0x0040000)
    call("personality", 0)
    return rc
probes = {{
    "add_key": lambda: call("add_key", b"user", b"rb-selfcheck", b"x", 1, -2),
    "keyctl": lambda: call("keyctl", 0, -2, 1),
    "unshare": lambda: call("unshare", 0x10000000),
    "clone": clone_userns,
    "io_uring_setup": lambda: call("io_uring_setup", 1, 0),
    "bpf": lambda: call("bpf", 0, 0, 0),
    "perf_event_open": lambda: call("perf_event_open", 0, 0, -1, -1, 0),
    "userfaultfd": lambda: call("userfaultfd", 0),
    "kcmp": lambda: call("kcmp", os.getpid(), os.getpid(), 0, 0, 0),
    "name_to_handle_at": lambda: call("name_to_handle_at", -100, b".", 0, 0, 0),
    "personality": no_aslr,
}}
for name, probe in probes.items():
    rc = probe()
    if rc >= 0:
        print("allowed", name, rc)
print("done")
"""


def _syscall_filter(ctx: _Context) -> str:
    result = ctx.py(_FILTER_PROGRAM.format(numbers=_numbers()))
    _expect(result.stdout.endswith("done\n"), f"the probe did not finish: returncode "
            f"{result.returncode}, stderr {result.stderr[-300:]!r}")
    allowed = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("allowed")]
    _expect(not allowed, f"system calls a seccomp filter must deny succeeded: {', '.join(allowed)}")
    return "every probed call was denied"


CHECKS: tuple[ContainmentCheck, ...] = (
    ContainmentCheck("fork_bomb", "a fork bomb stops at the process limit or wall time; the slot works after",
                     _fork_bomb),
    ContainmentCheck("infinite_loop", "a busy loop is killed at the wall time", _infinite_loop),
    ContainmentCheck("sleep_forever", "sleep 1000 is killed at the wall time", _sleep_forever),
    ContainmentCheck("memory_10gb", "a 10 GiB allocation fails with MemoryError", _memory_10gb),
    ContainmentCheck("file_100mb", "a 100 MiB write stops at the file size limit", _file_100mb),
    ContainmentCheck("network", "no connection reaches the host's 127.0.0.1", _network),
    ContainmentCheck("write_outside_workspace", "no write reaches a host directory, /tmp or /usr",
                     _write_outside),
    ContainmentCheck("read_private_dirs", "0700 directories outside the workspace cannot be read",
                     _read_private),
    ContainmentCheck("read_world_readable_dirs", "0755 directories outside the workspace cannot be read",
                     _read_world_readable),
    ContainmentCheck("setsid_grandchild", "a setsid() grandchild is gone when run() returns",
                     _setsid_grandchild),
    ContainmentCheck("background_child", "a background child is gone when run() returns", _background_child),
    ContainmentCheck("kernel_keyring", "a key stored by one run is not found by the next run of the slot",
                     _kernel_keyring),
    ContainmentCheck("syscall_filter", "add_key, keyctl, user namespaces, io_uring, bpf ... are denied",
                     _syscall_filter),
)
"""Every containment check, in the order they run."""


def check_names() -> tuple[str, ...]:
    """The names of the checks, in the order they run."""
    return tuple(c.name for c in CHECKS)


# --------------------------------------------------------------------------------------------
# running them
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _base_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rb-selfcheck-"))
    os.chmod(path, 0o711)  # the slot uid may pass through, not list
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _find_python(backend: EnvironmentBackend, prepared: PreparedSpec, slot: int) -> str | None:
    """The first interpreter that runs in ``backend``, or None.

    On the host: this one, then the system's; in an image: ``python3`` on its ``PATH``.
    """
    if prepared.spec.kind == "host":
        candidates = list(dict.fromkeys(p for p in (sys.executable, "/usr/bin/python3")
                                        if p and os.path.exists(p)))
    else:
        candidates = ["python3"]
    for cand in candidates:
        with _base_dir() as base:
            ws = base / "ws"
            ws.mkdir()
            try:
                result = run_once(backend, prepared, [cand, "-c", "print('ok')"], workspace=ws, slot=slot)
            except SandboxError:
                continue
            if result.stdout == "ok\n":
                return cand
    return None


def _validate_slot(slot: int) -> None:
    if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < 4000:
        raise UsageError(f"slot must be an integer in [0, 4000), got {slot!r}")


def _by_name(name: str) -> ContainmentCheck:
    for check in CHECKS:
        if check.name == name:
            return check
    raise UsageError(f"unknown containment check {name!r}; choose one of: {', '.join(check_names())}")


def _run_one(check: ContainmentCheck, backend: EnvironmentBackend, prepared: PreparedSpec, slot: int,
             python: str | None) -> CheckResult:
    with _base_dir() as base:
        ctx = _Context(backend, prepared, slot, python, base)
        try:
            note = check.run(ctx)
        except _Failed as exc:
            return CheckResult(check.name, "failed", str(exc))
        except _Skipped as exc:
            return CheckResult(check.name, "skipped", str(exc))
        except SandboxError as exc:
            return CheckResult(check.name, "failed", f"the backend could not run the attack: {exc}")
        except Exception as exc:  # a third-party backend's bug must not end the self-check
            return CheckResult(check.name, "failed", f"the backend raised {type(exc).__name__}: {exc}")
    return CheckResult(check.name, "passed", note)


def _prepared(backend: EnvironmentBackend, spec: EnvironmentSpec) -> PreparedSpec:
    """``backend.prepare(spec)`` after ``refuse``; a refusal is a ``SandboxError`` naming it."""
    why = backend.refuse(spec)
    if why is not None:
        raise SandboxError(f"sandbox backend {backend.name!r} cannot run the self-check: {why}")
    return backend.prepare(spec)


def run_check(backend: EnvironmentBackend, check: str, *, slot: int = 0, python: str | None = None,
              spec: EnvironmentSpec = HOST) -> CheckResult:
    """Run one containment check on ``backend``.

    Args:
        backend: Any :class:`~reliabench.sandbox.environment.EnvironmentBackend`.
        check: A name from :func:`check_names`.
        slot: The worker slot to attack in (0 <= slot < 4000).
        python: The interpreter for the Python attacks; None: the first that runs in the
            backend (this interpreter, then ``/usr/bin/python3``; ``python3`` in an image).
        spec: Where the attacks run (the host; an image for a container backend).

    Returns:
        The check's result.

    Raises:
        UsageError: unknown check or bad slot.
        SandboxError: the backend refuses ``spec`` or cannot prepare it.
    """
    chosen = _by_name(check)
    _validate_slot(slot)
    prepared = _prepared(backend, spec)
    py = python if python is not None else _find_python(backend, prepared, slot)
    return _run_one(chosen, backend, prepared, slot, py)


def check_backend(backend: EnvironmentBackend, *, slot: int = 0, python: str | None = None,
                  checks: Sequence[str] | None = None, spec: EnvironmentSpec = HOST) -> SelfCheckReport:
    """Run the containment checks on ``backend``, one result per check.

    Args:
        backend: Any :class:`~reliabench.sandbox.environment.EnvironmentBackend`.
        slot: The worker slot to attack in (0 <= slot < 4000).
        python: As in :func:`run_check`.
        checks: Names of the checks to run (default: all, in order).
        spec: As in :func:`run_check`.

    Returns:
        The report; ``report.passed`` is True when every check passed.

    Raises:
        UsageError: an unknown check name or a bad slot.
        SandboxError: the backend refuses ``spec`` or cannot prepare it.
    """
    _validate_slot(slot)
    chosen = [_by_name(n) for n in checks] if checks is not None else list(CHECKS)
    prepared = _prepared(backend, spec)
    py = python if python is not None else _find_python(backend, prepared, slot)
    results = tuple(_run_one(c, backend, prepared, slot, py) for c in chosen)
    return SelfCheckReport(str(getattr(backend, "name", type(backend).__name__)), slot, py, results)


def run_selfcheck(name: str = "auto", *, slot: int = 0, checks: Sequence[str] | None = None,
                  spec: EnvironmentSpec = HOST) -> SelfCheckReport:
    """Run the containment checks on the backend registered as ``name``.

    Args:
        name: ``auto``, or a registered backend (:data:`reliabench.sandbox.registry.SANDBOXES`:
            the built-ins, ``warm`` -- the warm test workers' jail -- and plugins).
        slot: The worker slot to attack in.
        checks: As in :func:`check_backend`.
        spec: As in :func:`run_check` (container backends need an image).

    Returns:
        The report.

    Raises:
        SandboxError: the backend does not work on this host (or is unknown).
        UsageError: a plugin backend failed to load, an unknown check or a bad slot.
    """
    _validate_slot(slot)
    if checks is not None:
        for n in checks:
            _by_name(n)
    from reliabench.sandbox.registry import get_backend

    with warnings.catch_warnings():
        # ``none`` warns that it does not isolate: the report is there to say so
        warnings.simplefilter("ignore", RuntimeWarning)
        backend = get_backend(name)
    try:
        return check_backend(backend, slot=slot, checks=checks, spec=spec)
    finally:
        close = getattr(backend, "close", None)
        if callable(close):  # the warm jail's servers
            close()
