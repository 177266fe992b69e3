"""The ``namespaces`` backend (root only): new namespaces, the seccomp filter, rlimits, the slot uid."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from reliabench.errors import SandboxError
from reliabench.sandbox.base import Limits, SandboxResult, _is_root, _prepare
from reliabench.sandbox.host import HostBackend
from reliabench.sandbox.seccomp import active_filter, preexec_confinement
from reliabench.sandbox.slots import (
    _hold_slot,
    _kill_uid,
    _lend_workdir,
    _remove_files_of,
    _uid_can_reach,
    slot_uid,
)
from reliabench.sandbox.supervision import _rlimit_args, _run_supervised

__all__ = ["NamespacesBackend"]

_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWNET = 0x40000000


class NamespacesBackend(HostBackend):
    """Root only: new net/ipc/uts namespaces, the seccomp filter, rlimits, drop to the slot uid.

    The child makes the namespaces itself (``unshare(2)`` in its ``preexec_fn``), then installs
    the filter of :mod:`reliabench.sandbox.seccomp` -- after the ``unshare`` it denies -- and
    only then runs ``prlimit`` and ``setpriv``, which drop to the slot uid. Without the
    filter (a machine without a table, or a kernel without seccomp) ``unshare(1)`` makes the
    namespaces as before and the result says ``seccomp=False``.

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
        if self.prlimit is None or self.setpriv is None or (self.unshare is None and not active_filter()):
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
        if self.prlimit is None or self.setpriv is None:  # pragma: no cover - __init__
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
        seccomp = active_filter()
        preexec = None
        cmd: list[str] = []
        if seccomp:
            # unshare, then the filter (which denies unshare), then prlimit and setpriv
            preexec = preexec_confinement(
                _CLONE_NEWIPC | _CLONE_NEWUTS | (0 if network else _CLONE_NEWNET))
        elif self.unshare is not None:
            cmd = [self.unshare, "--ipc", "--uts", *([] if network else ["--net"]), "--"]
        else:  # pragma: no cover - __init__
            raise SandboxError("namespaces backend needs unshare without a seccomp filter")
        cmd += [
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
                        preexec_fn=preexec,
                        user=None,
                        cleanup=cleanup,
                        stdin=stdin,
                        seccomp=seccomp,
                    )
            finally:
                _remove_files_of(uid)  # after the workdir was handed back

