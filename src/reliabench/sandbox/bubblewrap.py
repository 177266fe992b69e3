"""The ``bubblewrap`` backend: a fresh root with read-only system and interpreter binds."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from reliabench.errors import SandboxError
from reliabench.sandbox.base import DEFAULT_PATH, Limits, SandboxResult, _is_root, prepare_command
from reliabench.sandbox.environment import NetworkMode
from reliabench.sandbox.host import HostBackend, HostView
from reliabench.sandbox.rootfs import ETC_FILES, SHM_BYTES, SYSTEM_DIRS, ancestors, python_prefixes, under
from reliabench.sandbox.seccomp import active_filter, filter_program
from reliabench.sandbox.slots import hold_slot, kill_uid, lend_workdir, slot_uid
from reliabench.sandbox.supervision import (
    nproc_for_current_user,
    rlimit_args,
    rlimit_preexec,
    run_supervised,
)

__all__ = ["BubblewrapBackend"]

logger = logging.getLogger(__name__)


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
    needs a host that allows unprivileged user namespaces. It has a private file-system view,
    so it can show the workspace at a spec's ``workdir`` (``/testbed``) and mounts anywhere,
    read-only or writable.
    """

    name: str = "bubblewrap"
    networks: ClassVar[frozenset[NetworkMode]] = frozenset({"none", "endpoint", "host"})
    moves_paths: ClassVar[bool] = True
    writable_mounts: ClassVar[bool] = True

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
        view: HostView,
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
        mounts: dict[str, bool] = {}  # bind mount target -> read-only (its subtree exists already)

        def prepare(dest: str) -> None:
            for anc in ancestors(dest):
                if anc in made:
                    continue
                if any(under(anc, m) for m in mounts):
                    break
                cmd.extend(["--perms", "0755", "--dir", anc])
                made.add(anc)

        for d in SYSTEM_DIRS:
            if os.path.islink(d):
                cmd.extend(["--symlink", os.readlink(d), d])
                made.add(d)
            elif os.path.isdir(d):
                cmd.extend(["--ro-bind", d, d])
                mounts[d] = True
        binds: list[tuple[str, str, str]] = []  # (kind, host path, inside path)
        etc = list(ETC_FILES)
        if network:
            etc += ["/etc/gai.conf", "/etc/protocols", "/etc/services"]
        binds += [("--ro-bind", f, f) for f in etc if os.path.exists(f)]
        binds += [("--ro-bind", p, p) for p in python_prefixes()]
        if not any(under(prog, m) for m in SYSTEM_DIRS) and os.path.exists(prog):
            real = os.path.realpath(prog)
            binds.append(("--ro-bind", real, real))
        binds += [("--ro-bind", src, dst) for src, dst in view.readonly]
        binds += [("--bind", src, dst) for src, dst in view.writable]
        if view.channel is not None:
            binds.append(("--bind", *view.channel))
        binds.append(("--bind", view.workspace, view.workdir))
        if _bwrap_has_size(self.bwrap):
            cmd.extend(["--size", str(min(limits.tmp_bytes, limits.memory_bytes))])
        cmd.extend(["--perms", "1777", "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"])
        # a writable /dev/shm, as the warm jail has: POSIX semaphores (multiprocessing's
        # locks, queues and pools) live there, and --dev leaves it root's
        if _bwrap_has_size(self.bwrap):
            cmd.extend(["--size", str(min(SHM_BYTES, limits.memory_bytes))])
        cmd.extend(["--perms", "1777", "--tmpfs", "/dev/shm"])
        made.update(("/tmp", "/proc", "/dev", "/dev/shm"))
        # parents first, so that a bind inside another one lands on top of it
        done: set[str] = set()
        for kind, src, dst in sorted(binds, key=lambda b: (b[2].count("/"), b[2])):
            if dst in done:
                continue
            done.add(dst)
            if kind == "--ro-bind" and src == dst and any(under(dst, m) and ro for m, ro in mounts.items()):
                continue  # already visible through a read-only parent bind
            prepare(dst)
            cmd.extend([kind, src, dst])
            mounts[dst] = kind == "--ro-bind"
        for key, value in env.items():
            cmd.extend(["--setenv", key, value])
        cmd.extend(["--chdir", view.cwd, "--"])
        if uid is not None:
            if self.prlimit is None or self.setpriv is None:  # pragma: no cover - __init__
                raise SandboxError("bubblewrap backend as root needs prlimit and setpriv")
            cmd += [self.prlimit, *rlimit_args(limits, limits.max_procs), "--"]
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
            cmd += [self.prlimit, *rlimit_args(limits, nproc_for_current_user(limits)), "--"]
        cmd += [prog, *argv[1:]]
        return cmd

    def spawn(self, argv: Sequence[str], *, view: HostView, env: Mapping[str, str] | None,
              limits: Limits, network: bool, slot: int, stdin: Path | None) -> SandboxResult:
        """Run ``argv`` under bubblewrap, seeing ``view``; see :class:`HostBackend`."""
        full_env, prog = prepare_command(argv, env)
        uid = slot_uid(slot) if _is_root() else None
        seccomp_fd = _program_fd() if active_filter() else None
        try:
            cmd = self._command(argv, prog, view=view, env=full_env, limits=limits, network=network,
                                uid=uid, seccomp_fd=seccomp_fd)
            preexec = None
            if uid is None and self.prlimit is None:
                preexec = rlimit_preexec(limits, nproc_for_current_user(limits))

            def cleanup(proc: subprocess.Popen[bytes]) -> None:
                # the pid namespace died with bwrap; the sweep is a second line of defence
                if uid is not None:
                    kill_uid(uid)

            extra_fds = () if seccomp_fd is None else (seccomp_fd,)
            with contextlib.ExitStack() as lent:
                lent.enter_context(hold_slot(uid))
                for host in (view.workspace, *(src for src, _ in view.writable)):
                    if os.path.isdir(host):
                        lent.enter_context(lend_workdir(Path(host), uid))
                return run_supervised(
                    cmd,
                    cwd=Path(view.workspace),
                    env={"PATH": DEFAULT_PATH},
                    limits=limits,
                    isolation=self.name,
                    pass_fds=extra_fds,
                    preexec_fn=preexec,
                    user=None,
                    cleanup=cleanup,
                    stdin=stdin,
                    seccomp=seccomp_fd is not None,
                )
        finally:
            if seccomp_fd is not None:
                os.close(seccomp_fd)


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


