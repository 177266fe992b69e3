"""The ``none`` backend: rlimits and a process-group kill only, as the current user."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from reliabench.sandbox.base import Limits, SandboxResult, _is_root, _prepare
from reliabench.sandbox.host import HostBackend
from reliabench.sandbox.supervision import (
    _nproc_for_current_user,
    _rlimit_args,
    _rlimit_preexec,
    _run_supervised,
)

__all__ = ["NoSandboxBackend"]

class NoSandboxBackend(HostBackend):
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


