"""The ``namespaces`` backend (root only): new namespaces, the seccomp filter, rlimits, the slot uid."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from reliabench.errors import SandboxError
from reliabench.sandbox.base import Limits, SandboxResult, _is_root, prepare_command
from reliabench.sandbox.host import HostBackend, HostView
from reliabench.sandbox.seccomp import active_filter, preexec_confinement
from reliabench.sandbox.slots import (
    hold_slot,
    kill_uid,
    lend_workdir,
    remove_files_of,
    slot_uid,
    uid_can_reach,
)
from reliabench.sandbox.supervision import rlimit_args, run_supervised

__all__ = ["NamespacesBackend", "harness_unreachable"]

_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWNET = 0x40000000


def harness_unreachable(python: str, uid: int, modules: Sequence[str] = ("pytest",)) -> str | None:
    """Why ``uid`` cannot start ``python`` with ``modules`` from where they are, or None.

    The namespaces backend runs the interpreter as the slot uid on the host's own file system:
    the interpreter, its virtual environment and the folders of the modules it imports must
    be reachable by that uid (a clone in a 0700 folder, a home directory made 0700 by Debian,
    a pyenv build under ``/root`` are not).

    Returns:
        One line naming the unreachable path and what to do, or None.
    """
    import importlib.util

    checks = [(python, 5, "the interpreter")]
    venv = Path(os.path.abspath(python)).parent.parent
    if (venv / "pyvenv.cfg").is_file():
        checks.append((str(venv), 5, "the interpreter's virtual environment"))
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            checks.append((os.path.dirname(spec.origin), 5, f"the folder of {name}"))
    for path, need, what in checks:
        blocked = uid_can_reach(path, uid, uid, need=need)
        if blocked is not None:
            return (f"uid {uid} cannot reach {what} {path} ({blocked} is not accessible to it): "
                    f"make {blocked} traversable for every user (chmod o+x), install reliabench "
                    "where every user can read it (a venv made from /usr/bin/python3 in a "
                    "0755 folder), or use --sandbox bubblewrap")
    return None


class NamespacesBackend(HostBackend):
    """Root only: new net/ipc/uts namespaces, the seccomp filter, rlimits, drop to the slot uid.

    The child makes the namespaces itself (``unshare(2)`` in its ``preexec_fn``), then installs
    the filter of :mod:`reliabench.sandbox.seccomp` -- after the ``unshare`` it denies -- and
    only then runs ``prlimit`` and ``setpriv``, which drop to the slot uid. Without the
    filter (a machine without a table, or a kernel without seccomp) ``unshare(1)`` makes the
    namespaces as before and the result says ``seccomp=False``.

    There is no private filesystem view: the slot uid sees what Unix permissions let any
    uid see (world-readable files, world-writable ``/tmp``). So it refuses writable mounts,
    mounts elsewhere and a spec's ``workdir``, and cannot narrow the network to an endpoint.
    The workspace is lent to the slot uid with mode 0700 for the run; the interpreter and the
    workdir must be reachable by that uid (a pyenv build under a 0700 ``/root`` is not: the
    run raises ``SandboxError`` saying so, and :func:`harness_unreachable` says it before a
    run starts). After the run every process of the slot uid is killed, and files it left
    in ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are removed.
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

    def harness_problem(self, python: str, modules: Sequence[str]) -> str | None:
        """Why the slot uids cannot start ``python`` with ``modules`` (:func:`harness_unreachable`)."""
        return harness_unreachable(python, slot_uid(0), modules)

    def spawn(self, argv: Sequence[str], *, view: HostView, env: Mapping[str, str] | None,
              limits: Limits, network: bool, slot: int, stdin: Path | None) -> SandboxResult:
        """Run ``argv`` in new namespaces as the slot uid; see :class:`HostBackend`."""
        if self.prlimit is None or self.setpriv is None:  # pragma: no cover - __init__
            raise SandboxError("namespaces backend needs unshare, prlimit and setpriv")
        full_env, prog = prepare_command(argv, env)
        work = view.workspace
        uid = slot_uid(slot)
        checks = [(prog, 5, "the program")] + [
            (os.path.realpath(src), 4, "a read-only path") for src, _ in view.readonly
        ]
        venv = Path(os.path.abspath(prog)).parent.parent
        if (venv / "pyvenv.cfg").is_file():
            # a venv's interpreter also reads its site-packages: the venv must be reachable
            checks.append((str(venv), 5, "the interpreter's virtual environment"))
        for path, need, what in checks:
            blocked = uid_can_reach(path, uid, uid, need=need)
            if blocked is not None:
                raise SandboxError(
                    f"namespaces backend: uid {uid} cannot use {what} {path} ({blocked} is not "
                    "accessible to it); use an interpreter every uid can run (a venv made "
                    "from /usr/bin/python3) or the bubblewrap backend"
                )
        for what, path in (("workdir", work), ("channel folder", view.channel[0] if view.channel else work)):
            blocked = uid_can_reach(os.path.dirname(path), uid, uid, need=1)
            if blocked is not None:
                raise SandboxError(
                    f"namespaces backend: uid {uid} cannot reach the {what} {path} ({blocked} is "
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
            *rlimit_args(limits, limits.max_procs),
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
            kill_uid(uid)

        with hold_slot(uid):
            try:
                with lend_workdir(Path(work), uid):
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
                        seccomp=seccomp,
                    )
            finally:
                remove_files_of(uid)  # after the workdir was handed back
