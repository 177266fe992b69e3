"""The ``bubblewrap`` backend: a fresh root with read-only system and interpreter binds."""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from reliabench.errors import SandboxError
from reliabench.sandbox.base import DEFAULT_PATH, Limits, SandboxResult, _is_root, _prepare
from reliabench.sandbox.host import HostBackend
from reliabench.sandbox.seccomp import active_filter, filter_program
from reliabench.sandbox.slots import (
    _ancestors,
    _hold_slot,
    _kill_uid,
    _lend_workdir,
    _under,
    slot_uid,
)
from reliabench.sandbox.supervision import (
    _nproc_for_current_user,
    _rlimit_args,
    _rlimit_preexec,
    _run_supervised,
)

__all__ = ["BubblewrapBackend"]

logger = logging.getLogger(__name__)

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
_SHM_BYTES = 64 * 1024**2
"""Size of the sandbox's private ``/dev/shm`` (the warm jail's too)."""


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


class BubblewrapBackend(HostBackend):
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
        seccomp_fd: int | None = None,
    ) -> list[str]:
        cmd = [self.bwrap, "--die-with-parent", "--new-session", "--clearenv"]
        if seccomp_fd is not None:
            # bwrap loads it last, after its namespaces and mounts, before it runs prlimit
            cmd += ["--seccomp", str(seccomp_fd)]
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
        # a writable /dev/shm, as the warm jail has: POSIX semaphores (multiprocessing's
        # locks, queues and pools) live there, and --dev leaves it root's
        if _bwrap_has_size(self.bwrap):
            cmd.extend(["--size", str(min(_SHM_BYTES, limits.memory_bytes))])
        cmd.extend(["--perms", "1777", "--tmpfs", "/dev/shm"])
        made.update(("/tmp", "/proc", "/dev", "/dev/shm"))
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
        seccomp_fd = _program_fd() if active_filter() else None
        try:
            return self._run(argv, prog, work, ro, full_env, limits, network, uid, pass_fds,
                             stdin, seccomp_fd)
        finally:
            if seccomp_fd is not None:
                os.close(seccomp_fd)

    def _run(self, argv: Sequence[str], prog: str, work: str, ro: list[str],
             full_env: dict[str, str], limits: Limits, network: bool, uid: int | None,
             pass_fds: Sequence[int], stdin: Path | None, seccomp_fd: int | None) -> SandboxResult:
        cmd = self._command(
            argv,
            prog,
            workdir=work,
            readonly=ro,
            env=full_env,
            limits=limits,
            network=network,
            uid=uid,
            seccomp_fd=seccomp_fd,
        )
        preexec = None
        if uid is None and self.prlimit is None:
            preexec = _rlimit_preexec(limits, _nproc_for_current_user(limits))

        def cleanup(proc: subprocess.Popen[bytes]) -> None:
            # the pid namespace died with bwrap; the sweep is a second line of defence
            if uid is not None:
                _kill_uid(uid)

        extra_fds = () if seccomp_fd is None else (seccomp_fd,)
        with _hold_slot(uid), _lend_workdir(Path(work), uid):
            return _run_supervised(
                cmd,
                cwd=Path(work),
                env={"PATH": DEFAULT_PATH},
                limits=limits,
                isolation=self.name,
                pass_fds=(*pass_fds, *extra_fds),
                preexec_fn=preexec,
                user=None,
                cleanup=cleanup,
                stdin=stdin,
                seccomp=seccomp_fd is not None,
            )


def _program_fd() -> int:
    """A sealed-off copy of the filter program at offset 0, for ``bwrap --seccomp FD``."""
    fd = os.memfd_create("reliabench-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, filter_program())
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


