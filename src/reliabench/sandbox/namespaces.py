"""The ``namespaces`` backend (root only): ``unshare(1)``, rlimits, drop to the slot uid."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from reliabench.errors import SandboxError
from reliabench.sandbox.base import Limits, SandboxResult, _is_root, _prepare
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

