"""Isolation backends for untrusted code: bubblewrap, namespaces + setuid, rlimits only.

Everything an agent wrote runs through one of these backends, in the agent phase (the agent
edits its workspace) and in the test phase (hidden tests import the agent's code).

Three backends, strongest first (``get_backend("auto")`` probes once and picks the first
that works on this host)::

    name          as root                                     as a normal user
    bubblewrap    bwrap (mount/pid/net/ipc/uts namespaces),    bwrap --unshare-all
                  then rlimits, then drop to uid 61000+slot   (user namespace), rlimits
    namespaces    unshare(1) net/ipc/uts, rlimits, drop to    (not available)
                  uid 61000+slot, sweep that uid at the end
    none          rlimits + process-group kill only           the same

What every backend promises: the command runs with ``workdir`` as its cwd, a cleared
environment (then ``env``), the resource limits of :class:`Limits` (CPU, address space,
processes, file size; wall time and output size enforced by the parent), stdout and stderr
captured to *files* (an escaped grandchild holding a pipe would hang a pipe reader), and at
the end no process of the run is left (pid namespace for bubblewrap, a kill of every process
of the slot uid for namespaces, a process-group kill for none -- which a ``setsid()``
grandchild escapes: ``none`` says so in its name and warns).

Why the uid drop: ``RLIMIT_NPROC`` does nothing for root, even inside a user namespace that
root created, so a fork bomb run as root exhausts the host. As root, bubblewrap is started as
root *without* a user namespace (so that it can bind interpreters the slot uid could not reach
on the host, such as a pyenv build under the 0700 ``/root``), then ``prlimit`` and ``setpriv``
(util-linux) set the limits and drop to the slot uid inside the sandbox, with no capabilities
and ``no_new_privs``. The workspace is handed to the slot uid for the run and handed back to
the caller afterwards (files with several hard links are never chowned).

See ``docs/threat-model.md`` for what each level does and does not stop.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import math
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from reliabench.errors import SandboxError
from reliabench.untrusted_files import ChownReport, chown_tree, remove_tree

__all__ = [
    "BACKENDS",
    "DEFAULT_PATH",
    "MAX_SECONDS",
    "SLOT_UID_BASE",
    "BubblewrapBackend",
    "Limits",
    "NamespacesBackend",
    "NoSandboxBackend",
    "SandboxBackend",
    "SandboxResult",
    "get_backend",
    "slot_uid",
]

logger = logging.getLogger(__name__)

SLOT_UID_BASE = 61000
"""Worker slot ``s`` runs as uid and gid ``SLOT_UID_BASE + s`` when reliabench runs as root."""

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
"""``PATH`` inside the sandbox when the caller gives no environment."""

_CUT_MARKER = "\n[... {n} bytes cut by the reliabench sandbox (output limit) ...]\n"
_OUTPUT_KILL_FACTOR = 8  # a stream larger than 8 x output_bytes gets the process killed
_POLL_S = 0.05
_ETC_FILES = (
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/localtime",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/mime.types",
    "/etc/gitconfig",
)
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


MAX_SECONDS = 7 * 24 * 3600.0
"""The largest ``timeout_s`` of a task or ``--test-timeout`` (a week); agents get 10x that."""

_LIMIT_MAX: dict[str, float] = {  # what prlimit and the wall clock can take, with room
    "wall_s": 366 * 24 * 3600.0, "cpu_s": 366 * 24 * 3600.0, "memory_bytes": 2.0**62, "max_procs": 2.0**31,
    "file_size_bytes": 2.0**62, "tmp_bytes": 2.0**62,
}


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of one sandboxed run.

    Attributes:
        wall_s: Wall-clock seconds before the parent kills the run.
        cpu_s: CPU seconds (``RLIMIT_CPU``, per process; rounded up).
        memory_bytes: Address space per process (``RLIMIT_AS``).
        max_procs: Processes of the sandbox uid (``RLIMIT_NPROC``; no effect for root).
        file_size_bytes: Largest file a process may write (``RLIMIT_FSIZE``).
        output_bytes: stdout and stderr are each cut to this size (head and tail kept); a
            stream larger than 8 times this gets the run killed ("output limit").
        tmp_bytes: Size of the private ``/tmp`` (a tmpfs, so RAM) under bubblewrap; it is
            capped at ``memory_bytes``. A write past it fails with ENOSPC inside the sandbox.
            The namespaces and none backends have no private ``/tmp`` (see the threat model).
    """

    wall_s: float = 60.0
    cpu_s: float = 60.0
    memory_bytes: int = 2 * 1024**3
    max_procs: int = 64
    file_size_bytes: int = 64 * 1024**2
    output_bytes: int = 1024**2
    tmp_bytes: int = 256 * 1024**2

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "memory_bytes", "max_procs", "file_size_bytes", "tmp_bytes"):
            value = getattr(self, name)
            if not value > 0:
                raise SandboxError(f"Limits.{name} must be > 0, got {value!r}")
            if not value <= _LIMIT_MAX[name]:
                raise SandboxError(f"Limits.{name} must be at most {_LIMIT_MAX[name]:g}, got {value!r}")
        if self.output_bytes < 0:
            raise SandboxError(f"Limits.output_bytes must be >= 0, got {self.output_bytes!r}")


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """What one sandboxed run did.

    Attributes:
        returncode: Exit status (negative: killed by that signal); None if it never started.
        timed_out: True if the wall-time limit killed the run.
        wall_s: Seconds from start to the end of the clean-up.
        stdout: Captured standard output (UTF-8, errors replaced), cut to the output limit.
        stderr: Captured standard error, likewise.
        isolation: ``bubblewrap``, ``namespaces`` or ``none``.
        killed_reason: Why the run was stopped or killed, when known: ``wall time limit``,
            ``output limit``, ``cpu time limit``, ``file size limit``.
    """

    returncode: int | None
    timed_out: bool
    wall_s: float
    stdout: str
    stderr: str
    isolation: str
    killed_reason: str | None = None


class SandboxBackend(Protocol):
    """An isolation backend; ``name`` is the isolation level it gives."""

    name: str

    def run(
        self,
        argv: Sequence[str],
        *,
        workdir: Path,
        readonly: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        limits: Limits = Limits(),
        network: bool = False,
        slot: int = 0,
        pass_fds: Sequence[int] = (),
        stdin: Path | None = None,
    ) -> SandboxResult:
        """Run ``argv`` in the sandbox with ``workdir`` as its only writable place.

        Args:
            argv: The command; ``argv[0]`` is looked up on ``PATH`` if it has no slash.
            workdir: The writable working directory (the cwd), at the same path inside.
            readonly: Extra paths visible read-only at the same path inside.
            env: The whole environment of the command (``PATH`` defaults to
                :data:`DEFAULT_PATH`); None gives a minimal one.
            limits: Resource limits.
            network: Keep the host network (for agent CLIs that call an API).
            slot: The worker slot; runs of one slot must not overlap.
            pass_fds: File descriptors the command inherits (same numbers).
            stdin: A file the command reads as standard input (opened by the parent, so its
                path need not be visible inside); None: ``/dev/null``.

        Returns:
            What happened. A command that fails is a result, not an exception.

        Raises:
            SandboxError: The sandbox itself could not be set up.
        """
        ...


def slot_uid(slot: int) -> int:
    """The dedicated uid (and gid) of worker slot ``slot`` when running as root.

    Args:
        slot: The worker slot, 0 <= slot < 4000.

    Returns:
        ``SLOT_UID_BASE + slot``.

    Raises:
        SandboxError: ``slot`` is out of range.
    """
    if not 0 <= slot < 4000:
        raise SandboxError(f"slot must be in [0, 4000), got {slot!r}")
    return SLOT_UID_BASE + slot


# --------------------------------------------------------------------------------------------
# helpers shared by the backends
# --------------------------------------------------------------------------------------------


def _is_root() -> bool:
    return os.geteuid() == 0


def _resolve_argv0(argv: Sequence[str], env: Mapping[str, str]) -> str:
    if not argv:
        raise SandboxError("argv must not be empty")
    prog = argv[0]
    if "/" in prog:
        return prog
    found = shutil.which(prog, path=env.get("PATH", DEFAULT_PATH))
    if found is None:
        raise SandboxError(f"command not found on the sandbox PATH: {prog!r}")
    return found


def _base_env(env: Mapping[str, str] | None) -> dict[str, str]:
    if env is None:
        return {
            "PATH": DEFAULT_PATH,
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "USER": "rollout",
        }
    out = dict(env)
    out.setdefault("PATH", DEFAULT_PATH)
    return out


def _prepare(argv: Sequence[str], workdir: Path,
             env: Mapping[str, str] | None) -> tuple[dict[str, str], str, str]:
    """What every backend does first: the cleared environment, the resolved program, the workdir."""
    full_env = _base_env(env)
    prog = _resolve_argv0(argv, full_env)
    work = os.path.realpath(workdir)
    if not os.path.isdir(work):
        raise SandboxError(f"workdir is not a directory: {workdir}")
    return full_env, prog, work


def _rlimit_args(limits: Limits, nproc: int) -> list[str]:
    """``prlimit`` options; soft CPU limit sends SIGXCPU, the hard one a second later SIGKILL."""
    cpu = max(1, math.ceil(limits.cpu_s))
    return [
        f"--cpu={cpu}:{cpu + 1}",
        f"--as={limits.memory_bytes}",
        f"--nproc={nproc}",
        f"--fsize={limits.file_size_bytes}",
        "--core=0",
    ]


def _rlimit_preexec(limits: Limits, nproc: int) -> Callable[[], None]:
    """Fallback when ``prlimit(1)`` is missing (not thread-safe, like every preexec_fn)."""
    import resource

    cpu = max(1, math.ceil(limits.cpu_s))
    pairs = (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes)),
        (resource.RLIMIT_NPROC, (nproc, nproc)),
        (resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes)),
        (resource.RLIMIT_CORE, (0, 0)),
    )

    def apply() -> None:
        for which, value in pairs:
            resource.setrlimit(which, value)

    return apply


def _procs_of_uid(uid: int) -> list[int]:
    """Live (non-zombie) processes whose /proc entry belongs to ``uid``."""
    pids: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):  # a zombie is dead; its parent reaps it
            pids.append(int(entry.name))
    return pids


def _kill_uid(uid: int, *, timeout: float = 5.0) -> None:
    """Kill every process of ``uid``: ``kill(-1)`` run as that uid, then a /proc sweep.

    Raises:
        SandboxError: Processes of the uid survived ``timeout`` seconds of killing.
    """
    if uid == 0 or uid == os.getuid():
        raise SandboxError(f"refusing to kill every process of uid {uid}")
    kill = shutil.which("kill")
    if kill is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [kill, "-KILL", "-1"],
                user=uid,
                group=uid,
                extra_groups=[],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
                env={"PATH": DEFAULT_PATH},
            )
    deadline = time.monotonic() + timeout
    while True:
        pids = _procs_of_uid(uid)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise SandboxError(f"processes of uid {uid} survived the sweep: {pids[:10]}")
        time.sleep(0.01)


def _nproc_for_current_user(limits: Limits) -> int:
    """As a normal user RLIMIT_NPROC counts all of the user's processes, so allow those too."""
    return len(_procs_of_uid(os.getuid())) + limits.max_procs


def _chown_tree(root: Path, uid: int, gid: int) -> ChownReport:
    """Hand a tree to ``uid``; never follows symlinks, skips files with several links.

    Never raises for what the tree holds (a chain deeper than PATH_MAX, a file that cannot be
    chowned): those are counted in the report -- the agent made them, the harness goes on.
    """
    return chown_tree(root, uid, gid)


def _lock_dir() -> Path:
    """A root-only directory for the slot locks (an agent must not be able to hold one)."""
    for candidate in (Path("/run/reliabench"), Path(tempfile.gettempdir()) / "reliabench-root"):
        with contextlib.suppress(OSError):
            candidate.mkdir(mode=0o700, exist_ok=True)
            st = os.lstat(candidate)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o077:
                return candidate
    raise SandboxError("cannot create a private directory for the sandbox slot locks")


@contextlib.contextmanager
def _hold_slot(uid: int | None) -> Iterator[None]:
    """Hold the host-wide lock of a slot uid while it runs.

    Runs of one uid never overlap, even across processes: the final sweep kills every process
    of the uid, so a second run of the same slot would be killed by the first one's sweep.
    """
    if uid is None:
        yield
        return
    fd = os.open(_lock_dir() / f"slot-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def _lend_workdir(workdir: Path, uid: int | None) -> Iterator[None]:
    """Give ``workdir`` to the slot uid (mode 0700) for the run, then give it back."""
    if uid is None:
        yield
        return
    st = os.stat(workdir)
    _chown_tree(workdir, uid, uid)
    os.chmod(workdir, 0o700)
    try:
        yield
    finally:
        _chown_tree(workdir, st.st_uid, st.st_gid)
        os.chmod(workdir, stat.S_IMODE(st.st_mode))


def _read_capped(path: Path, cap: int) -> str:
    size = path.stat().st_size
    with open(path, "rb") as fh:
        if size <= cap:
            data = fh.read()
            return data.decode("utf-8", "replace")
        head_n = cap // 2
        tail_n = cap - head_n
        head = fh.read(head_n)
        fh.seek(size - tail_n)
        tail = fh.read(tail_n)
    cut = size - head_n - tail_n
    return (
        head.decode("utf-8", "replace")
        + _CUT_MARKER.format(n=cut)
        + tail.decode("utf-8", "replace")
    )


def _signal_reason(returncode: int | None) -> str | None:
    if returncode is None:
        return None
    sig = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if sig == signal.SIGXCPU:
        return "cpu time limit"
    if sig == signal.SIGXFSZ:
        return "file size limit"
    return None


def _run_supervised(
    cmd: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    limits: Limits,
    isolation: str,
    pass_fds: Sequence[int],
    preexec_fn: Callable[[], None] | None,
    user: int | None,
    cleanup: Callable[[subprocess.Popen[bytes]], None],
    stdin: Path | None = None,
) -> SandboxResult:
    """Start ``cmd`` with output to files, enforce wall time and output size, clean up."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rb-out-") as tmp:
        out_path = Path(tmp) / "stdout"
        err_path = Path(tmp) / "stderr"
        with open(out_path, "wb") as out_fh, open(err_path, "wb") as err_fh, \
                (open(stdin, "rb") if stdin is not None else contextlib.nullcontext()) as in_fh:
            try:
                proc = subprocess.Popen(
                    list(cmd),
                    cwd=cwd,
                    env=dict(env),
                    stdin=in_fh if in_fh is not None else subprocess.DEVNULL,
                    stdout=out_fh,
                    stderr=err_fh,
                    pass_fds=tuple(pass_fds),
                    start_new_session=True,
                    preexec_fn=preexec_fn,
                    user=user,
                    group=user,
                    extra_groups=[] if user is not None else None,
                )
            except OSError as exc:
                raise SandboxError(f"{isolation} sandbox could not start {cmd[0]!r}: {exc}") from exc
        timed_out = False
        reason: str | None = None
        try:
            reason = _wait(proc, start + limits.wall_s, (out_path, err_path), limits)
            timed_out = reason == "wall time limit"
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            proc.wait()
            cleanup(proc)
        cap = limits.output_bytes
        out_size = out_path.stat().st_size
        err_size = err_path.stat().st_size
        stdout = _read_capped(out_path, cap)
        stderr = _read_capped(err_path, cap)
    returncode = proc.returncode
    if reason is None:
        reason = _signal_reason(returncode)
    if reason is None and max(out_size, err_size) > _max_output(limits):
        reason = "output limit"  # the file size limit stopped the writer before we looked
    return SandboxResult(
        returncode=returncode,
        timed_out=timed_out,
        wall_s=time.monotonic() - start,
        stdout=stdout,
        stderr=stderr,
        isolation=isolation,
        killed_reason=reason,
    )


def _max_output(limits: Limits) -> int:
    return max(limits.output_bytes * _OUTPUT_KILL_FACTOR, 64 * 1024)


def _wait(
    proc: subprocess.Popen[bytes], deadline: float, outputs: Sequence[Path], limits: Limits
) -> str | None:
    """Wait for ``proc``; return why it was killed, or None if it ended by itself."""
    pidfd: int | None = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(proc.pid)
    poller = None
    if pidfd is not None:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
    max_out = _max_output(limits)
    try:
        while True:
            now = time.monotonic()
            if proc.poll() is not None:
                return None
            if now >= deadline:
                proc.kill()
                return "wall time limit"
            for path in outputs:
                with contextlib.suppress(OSError):
                    if path.stat().st_size > max_out:
                        proc.kill()
                        return "output limit"
            step = min(_POLL_S, deadline - now)
            if poller is not None:
                poller.poll(max(1, int(step * 1000)))
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=step)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _uid_can_reach(path: str, uid: int, gid: int, *, need: int) -> str | None:
    """Return the first component that ``uid`` cannot traverse or use, or None if all is well.

    ``need`` is the permission bit triple wanted on the last component (4 r, 2 w, 1 x); ACLs
    and capabilities are ignored (a conservative check for a fresh, group-less uid).
    """

    def allowed(st: os.stat_result, bits: int) -> bool:
        mode = stat.S_IMODE(st.st_mode)
        if st.st_uid == uid:
            return (mode >> 6) & bits == bits
        if st.st_gid == gid:
            return (mode >> 3) & bits == bits
        return mode & bits == bits

    real = os.path.realpath(path)
    # The kernel walks the path as written (a symlink such as a venv's bin/python sits in a
    # directory that must be traversable too) and then the target it resolves to.
    literal = os.path.abspath(path)
    for anc in dict.fromkeys(["/", *_ancestors(literal), *_ancestors(real)]):
        try:
            if not allowed(os.stat(anc), 1):
                return anc
        except OSError:
            return anc
    try:
        if not allowed(os.stat(real), need):
            return real
    except OSError:
        return real
    return None


def _python_prefixes() -> list[str]:
    out: list[str] = []
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        real = os.path.realpath(prefix)
        if real not in out and real != "/":
            out.append(real)
    exe_dir = os.path.dirname(os.path.realpath(sys.executable))
    if exe_dir and exe_dir != "/" and not any(_under(exe_dir, p) for p in out):
        out.append(exe_dir)
    return out


# --------------------------------------------------------------------------------------------
# bubblewrap
# --------------------------------------------------------------------------------------------


@functools.cache
def _bwrap_has_size(bwrap: str) -> bool:
    """Whether this bwrap knows ``--size`` (bubblewrap >= 0.5); without it /tmp is unsized."""
    try:
        out = subprocess.run([bwrap, "--help"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    found = b"--size" in out.stdout + out.stderr
    if not found:
        logger.warning("%s has no --size option: the sandbox's /tmp is not size-limited "
                       "(upgrade bubblewrap to 0.5 or later)", bwrap)
    return found


class BubblewrapBackend:
    """Namespaces via ``bwrap``: a fresh root with read-only system and interpreter binds.

    As root: bwrap without a user namespace, then ``prlimit`` and ``setpriv`` drop to the slot
    uid with no capabilities. As a normal user: ``bwrap --unshare-all`` (user namespace), which
    needs a host that allows unprivileged user namespaces.
    """

    name: str = "bubblewrap"

    def __init__(self, bwrap: str | None = None) -> None:
        found = bwrap or shutil.which("bwrap")
        if found is None:
            raise SandboxError("bubblewrap backend: 'bwrap' not found (apt-get install bubblewrap)")
        self.bwrap = found
        self.prlimit = shutil.which("prlimit")
        self.setpriv = shutil.which("setpriv")
        if _is_root() and (self.prlimit is None or self.setpriv is None):
            raise SandboxError(
                "bubblewrap backend as root needs prlimit and setpriv (util-linux) to drop to "
                "the slot uid"
            )

    def _command(
        self,
        argv: Sequence[str],
        prog: str,
        *,
        workdir: str,
        readonly: Sequence[str],
        env: Mapping[str, str],
        limits: Limits,
        network: bool,
        uid: int | None,
    ) -> list[str]:
        cmd = [self.bwrap, "--die-with-parent", "--new-session", "--clearenv"]
        if uid is not None:
            # root: no user namespace, so that setpriv can drop to a real, non-root uid
            cmd += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
            if not network:
                cmd += ["--unshare-net"]
        else:
            cmd += ["--unshare-all"]
            if network:
                cmd += ["--share-net"]
        made: set[str] = {"/"}
        mounts: dict[str, bool] = {}  # bind mount -> read-only (its subtree exists already)

        def prepare(dest: str) -> None:
            for anc in _ancestors(dest):
                if anc in made:
                    continue
                if any(_under(anc, m) for m in mounts):
                    break
                cmd.extend(["--perms", "0755", "--dir", anc])
                made.add(anc)

        for d in _SYSTEM_DIRS:
            if os.path.islink(d):
                cmd.extend(["--symlink", os.readlink(d), d])
                made.add(d)
            elif os.path.isdir(d):
                cmd.extend(["--ro-bind", d, d])
                mounts[d] = True
        binds: list[tuple[str, str]] = []
        etc = list(_ETC_FILES)
        if network:
            etc += ["/etc/gai.conf", "/etc/protocols", "/etc/services"]
        binds += [("--ro-bind", f) for f in etc if os.path.exists(f)]
        binds += [("--ro-bind", p) for p in _python_prefixes()]
        if not any(_under(prog, m) for m in _SYSTEM_DIRS) and os.path.exists(prog):
            binds.append(("--ro-bind", os.path.realpath(prog)))
        binds += [("--ro-bind", p) for p in readonly]
        binds.append(("--bind", workdir))
        if _bwrap_has_size(self.bwrap):
            cmd.extend(["--size", str(min(limits.tmp_bytes, limits.memory_bytes))])
        cmd.extend(["--perms", "1777", "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"])
        made.update(("/tmp", "/proc", "/dev"))
        # parents first, so that a bind inside another one lands on top of it
        done: set[str] = set()
        for kind, path in sorted(binds, key=lambda b: (b[1].count("/"), b[1])):
            if path in done:
                continue
            done.add(path)
            if kind == "--ro-bind" and any(_under(path, m) and ro for m, ro in mounts.items()):
                continue  # already visible through a read-only parent bind
            prepare(path)
            cmd.extend([kind, path, path])
            mounts[path] = kind == "--ro-bind"
        for key, value in env.items():
            cmd.extend(["--setenv", key, value])
        cmd.extend(["--chdir", workdir, "--"])
        if uid is not None:
            if self.prlimit is None or self.setpriv is None:  # pragma: no cover - __init__
                raise SandboxError("bubblewrap backend as root needs prlimit and setpriv")
            cmd += [self.prlimit, *_rlimit_args(limits, limits.max_procs), "--"]
            cmd += [
                self.setpriv,
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
                "--",
            ]
        elif self.prlimit is not None:
            cmd += [self.prlimit, *_rlimit_args(limits, _nproc_for_current_user(limits)), "--"]
        cmd += [prog, *argv[1:]]
        return cmd

    def run(
        self,
        argv: Sequence[str],
        *,
        workdir: Path,
        readonly: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        limits: Limits = Limits(),
        network: bool = False,
        slot: int = 0,
        pass_fds: Sequence[int] = (),
        stdin: Path | None = None,
    ) -> SandboxResult:
        """Run ``argv`` under bubblewrap; see :class:`SandboxBackend`."""
        full_env, prog, work = _prepare(argv, workdir, env)
        ro = [os.path.realpath(p) for p in readonly]
        uid = slot_uid(slot) if _is_root() else None
        cmd = self._command(
            argv,
            prog,
            workdir=work,
            readonly=ro,
            env=full_env,
            limits=limits,
            network=network,
            uid=uid,
        )
        preexec = None
        if uid is None and self.prlimit is None:
            preexec = _rlimit_preexec(limits, _nproc_for_current_user(limits))

        def cleanup(proc: subprocess.Popen[bytes]) -> None:
            # the pid namespace died with bwrap; the sweep is a second line of defence
            if uid is not None:
                _kill_uid(uid)

        with _hold_slot(uid), _lend_workdir(Path(work), uid):
            return _run_supervised(
                cmd,
                cwd=Path(work),
                env={"PATH": DEFAULT_PATH},
                limits=limits,
                isolation=self.name,
                pass_fds=pass_fds,
                preexec_fn=preexec,
                user=None,
                cleanup=cleanup,
                stdin=stdin,
            )


# --------------------------------------------------------------------------------------------
# namespaces + setuid (root only)
# --------------------------------------------------------------------------------------------


class NamespacesBackend:
    """Root only: new net/ipc/uts namespaces (``unshare(1)``), rlimits, drop to the slot uid.

    There is no private filesystem view: the slot uid sees what Unix permissions let any
    uid see (world-readable files, world-writable ``/tmp``). The workspace is lent to the slot
    uid with mode 0700 for the run; the interpreter and the workdir must be reachable by that
    uid (a pyenv build under a 0700 ``/root`` is not: the run raises ``SandboxError`` saying
    so). After the run every process of the slot uid is killed, and files it left in ``/tmp``,
    ``/var/tmp`` and ``/dev/shm`` are removed.
    """

    name: str = "namespaces"

    def __init__(self) -> None:
        if not _is_root():
            raise SandboxError("namespaces backend needs root (it switches to a slot uid)")
        self.unshare = shutil.which("unshare")
        self.prlimit = shutil.which("prlimit")
        self.setpriv = shutil.which("setpriv")
        if self.unshare is None or self.prlimit is None or self.setpriv is None:
            raise SandboxError("namespaces backend needs unshare, prlimit and setpriv (util-linux)")

    def run(
        self,
        argv: Sequence[str],
        *,
        workdir: Path,
        readonly: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        limits: Limits = Limits(),
        network: bool = False,
        slot: int = 0,
        pass_fds: Sequence[int] = (),
        stdin: Path | None = None,
    ) -> SandboxResult:
        """Run ``argv`` in new namespaces as the slot uid; see :class:`SandboxBackend`."""
        if self.unshare is None or self.prlimit is None or self.setpriv is None:  # pragma: no cover
            raise SandboxError("namespaces backend needs unshare, prlimit and setpriv")
        full_env, prog, work = _prepare(argv, workdir, env)
        uid = slot_uid(slot)
        checks = [(prog, 5, "the program")] + [
            (os.path.realpath(p), 4, "a read-only path") for p in readonly
        ]
        venv = Path(os.path.abspath(prog)).parent.parent
        if (venv / "pyvenv.cfg").is_file():
            # a venv's interpreter also reads its site-packages: the venv must be reachable
            checks.append((str(venv), 5, "the interpreter's virtual environment"))
        for path, need, what in checks:
            blocked = _uid_can_reach(path, uid, uid, need=need)
            if blocked is not None:
                raise SandboxError(
                    f"namespaces backend: uid {uid} cannot use {what} {path} ({blocked} is not "
                    "accessible to it); use an interpreter every uid can run (a venv made "
                    "from /usr/bin/python3) or the bubblewrap backend"
                )
        blocked = _uid_can_reach(os.path.dirname(work), uid, uid, need=1)
        if blocked is not None:
            raise SandboxError(
                f"namespaces backend: uid {uid} cannot reach the workdir {work} ({blocked} is "
                "not traversable); put workspaces under a world-traversable directory or use "
                "the bubblewrap backend"
            )
        flags = ["--ipc", "--uts"] + ([] if network else ["--net"])
        cmd = [
            self.unshare,
            *flags,
            "--",
            self.prlimit,
            *_rlimit_args(limits, limits.max_procs),
            "--",
            self.setpriv,
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
            prog,
            *argv[1:],
        ]

        def cleanup(proc: subprocess.Popen[bytes]) -> None:
            _kill_uid(uid)

        with _hold_slot(uid):
            try:
                with _lend_workdir(Path(work), uid):
                    return _run_supervised(
                        cmd,
                        cwd=Path(work),
                        env=full_env,
                        limits=limits,
                        isolation=self.name,
                        pass_fds=pass_fds,
                        preexec_fn=None,
                        user=None,
                        cleanup=cleanup,
                        stdin=stdin,
                    )
            finally:
                _remove_files_of(uid)  # after the workdir was handed back


def _remove_files_of(uid: int) -> None:
    for base in ("/tmp", "/var/tmp", "/dev/shm"):
        with contextlib.suppress(OSError):
            for entry in os.scandir(base):
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_uid != uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        remove_tree(Path(entry.path))
                    else:
                        os.unlink(entry.path)


# --------------------------------------------------------------------------------------------
# none: rlimits and a process-group kill
# --------------------------------------------------------------------------------------------


class NoSandboxBackend:
    """No isolation: rlimits, a new session and a process-group kill, as the current user.

    It does not hide the file system or the network, does not stop a fork bomb when run as
    root (``RLIMIT_NPROC`` is ignored for root), and a grandchild that calls ``setsid()``
    escapes the final process-group kill. Use it only for trusted code or when nothing else
    works; records say ``isolation = "none"``.
    """

    name: str = "none"

    def run(
        self,
        argv: Sequence[str],
        *,
        workdir: Path,
        readonly: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        limits: Limits = Limits(),
        network: bool = False,
        slot: int = 0,
        pass_fds: Sequence[int] = (),
        stdin: Path | None = None,
    ) -> SandboxResult:
        """Run ``argv`` with rlimits only; see :class:`SandboxBackend`."""
        full_env, prog, work = _prepare(argv, workdir, env)
        nproc = limits.max_procs if _is_root() else _nproc_for_current_user(limits)
        prlimit = shutil.which("prlimit")
        preexec = None
        if prlimit is not None:
            cmd = [prlimit, *_rlimit_args(limits, nproc), "--", prog, *argv[1:]]
        else:
            cmd = [prog, *argv[1:]]
            preexec = _rlimit_preexec(limits, nproc)

        def cleanup(proc: subprocess.Popen[bytes]) -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

        return _run_supervised(
            cmd,
            cwd=Path(work),
            env=full_env,
            limits=limits,
            isolation=self.name,
            pass_fds=pass_fds,
            preexec_fn=preexec,
            user=None,
            cleanup=cleanup,
            stdin=stdin,
        )


# --------------------------------------------------------------------------------------------
# registry and probing
# --------------------------------------------------------------------------------------------

BACKENDS: dict[str, type] = {
    "bubblewrap": BubblewrapBackend,
    "namespaces": NamespacesBackend,
    "none": NoSandboxBackend,
}
"""The registry: isolation level -> backend class, strongest first."""

_NONE_WARNING = (
    "reliabench is running untrusted code WITHOUT a sandbox (isolation = 'none'): only "
    "rlimits and a process-group kill; the code can read and write your files and reach the "
    "network. Install bubblewrap (apt-get install bubblewrap) or run as root for the "
    "'namespaces' backend."
)


@functools.cache
def _probe(name: str) -> str | None:
    """Try ``name`` once on a trivial command; return why it does not work, or None."""
    try:
        backend = BACKENDS[name]()
        with tempfile.TemporaryDirectory(prefix="rb-probe-") as tmp:
            os.chmod(tmp, 0o755)
            true = shutil.which("true", path=DEFAULT_PATH) or "/bin/true"
            result = backend.run(
                [true], workdir=Path(tmp), limits=Limits(wall_s=10.0), slot=0
            )
    except SandboxError as exc:
        return str(exc)
    except OSError as exc:  # pragma: no cover - depends on the host
        return f"{name}: {exc}"
    if result.returncode != 0:
        detail = result.stderr.strip().splitlines()[-1:] or [f"exit status {result.returncode}"]
        return f"{name} does not work on this host: {detail[0]}"
    return None


def get_backend(name: str = "auto") -> SandboxBackend:
    """Return an isolation backend by name, or the strongest that works here.

    Args:
        name: ``auto``, ``bubblewrap``, ``namespaces`` or ``none``. ``auto`` probes each
            backend once per process (cached) and picks the strongest that runs a trivial
            command; if it falls to ``none`` it warns.

    Returns:
        A ready backend.

    Raises:
        SandboxError: ``name`` is unknown, or the backend asked for does not work here.
    """
    if name == "auto":
        reasons = []
        for candidate in ("bubblewrap", "namespaces"):
            why = _probe(candidate)
            if why is None:
                return BACKENDS[candidate]()  # type: ignore[no-any-return]
            reasons.append(why)
            logger.info("sandbox backend %s unavailable: %s", candidate, why)
        name = "none"
    if name not in BACKENDS:
        raise SandboxError(
            f"unknown sandbox backend {name!r}; choose one of: auto, {', '.join(BACKENDS)}"
        )
    if name == "none":
        logger.warning(_NONE_WARNING)
        warnings.warn(_NONE_WARNING, RuntimeWarning, stacklevel=2)
        return NoSandboxBackend()
    why = _probe(name)
    if why is not None:
        raise SandboxError(f"sandbox backend {name!r} is not available: {why}")
    return BACKENDS[name]()  # type: ignore[no-any-return]
