"""The ``none`` backend: rlimits and a process-group kill only, as the current user."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from reliabench.sandbox.base import Limits, SandboxResult, _is_root, prepare_command
from reliabench.sandbox.host import HostBackend, HostView
from reliabench.sandbox.supervision import (
    nproc_for_current_user,
    rlimit_args,
    rlimit_preexec,
    run_supervised,
)

__all__ = ["NoSandboxBackend"]


class NoSandboxBackend(HostBackend):
    """No isolation: rlimits, a new session and a process-group kill, as the current user.

    It does not hide the file system or the network (``network = "none"`` is accepted and
    NOT enforced; ``"endpoint"`` is refused: it cannot narrow), does not stop a fork bomb when
    run as root (``RLIMIT_NPROC`` is ignored for root), and a grandchild that calls
    ``setsid()`` escapes the final process-group kill. Use it only for trusted code or when
    nothing else works; records say ``isolation = "none"``.
    """

    name: str = "none"

    def spawn(self, argv: Sequence[str], *, view: HostView, env: Mapping[str, str] | None,
              limits: Limits, network: bool, slot: int, stdin: Path | None) -> SandboxResult:
        """Run ``argv`` with rlimits only; see :class:`HostBackend`."""
        full_env, prog = prepare_command(argv, env)
        nproc = limits.max_procs if _is_root() else nproc_for_current_user(limits)
        prlimit = shutil.which("prlimit")
        preexec = None
        if prlimit is not None:
            cmd = [prlimit, *rlimit_args(limits, nproc), "--", prog, *argv[1:]]
        else:
            cmd = [prog, *argv[1:]]
            preexec = rlimit_preexec(limits, nproc)

        def cleanup(proc: subprocess.Popen[bytes]) -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)

        return run_supervised(
            cmd,
            cwd=Path(view.cwd),
            env=full_env,
            limits=limits,
            isolation=self.name,
            pass_fds=(),
            preexec_fn=preexec,
            user=None,
            cleanup=cleanup,
            stdin=stdin,
        )
