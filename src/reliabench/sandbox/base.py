"""The backend contract: :class:`SandboxBackend`, :class:`Limits` and :class:`SandboxResult`.

A backend runs one command on files of one workspace under resource limits and says what
happened; the runner, the hidden-test runner and the command agents see nothing else of it.
The contract names no host uid and no process: a backend may run the command as a slot uid
on this host (``bubblewrap``, ``namespaces``), as the current user (``none``), in a forked
jail of a warm server (``reliabench.warm.backend``), or -- not built in -- in a container
(podman, Docker) or on another machine. Such a backend:

* receives ``workdir`` as a host path and must make the command see the workspace at that
  same path as its cwd (a container bind-mounts it; a remote backend copies it there and back
  -- the caller reads the workspace after ``run`` returns);
* receives ``readonly`` host paths to show read-only at the same paths (the interpreter,
  staged hidden tests), and ``stdin`` as a host file that it feeds to the command's standard
  input (a container pipes it in, a remote backend sends it along);
* may refuse what it cannot give: ``pass_fds`` (inherited file descriptors exist only on
  this host), ``network=True`` (a backend without a network), or a ``slot`` it has no room
  for. It refuses by raising :class:`~reliabench.errors.SandboxError` from ``run``, before it
  starts anything, with a message naming the argument (``reliabench.warm.backend`` refuses
  ``pass_fds`` and ``network=True`` so). The runner records such a refusal as the harness's
  failure (``infra_error``, excluded from scores), never as a failed rollout. Note what needs
  ``pass_fds`` today: every command agent passes its usage channel
  (``reliabench.agents.usage``), and fresh-process hidden tests pass the signed outcome
  channel and its key (``reliabench.hidden_tests.fresh``). Through a backend that refuses
  ``pass_fds`` those end as ``infra_error``; the warm test path (``--test-workers warm``)
  does not go through the backend. Turning those channels into files in a directory the
  backend shows is what would let such a backend run them;
* enforces :class:`Limits` its own way (a container's cgroup instead of rlimits) and reports
  a limit that stopped the run in :attr:`SandboxResult.killed_reason` with the same words;
* leaves no process of the run behind when ``run`` returns, and names the isolation it gave
  in :attr:`SandboxResult.isolation` (recorded with every rollout).

The registry (:mod:`reliabench.sandbox.registry`) finds backends by name, built-in or
published by another package under the ``reliabench.sandboxes`` entry-point group.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from reliabench.errors import InvalidArgumentError, SandboxError
from reliabench.records import Isolation

__all__ = [
    "DEFAULT_PATH",
    "MAX_SECONDS",
    "Limits",
    "SandboxBackend",
    "SandboxResult",
    "minimal_env",
]

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
"""``PATH`` inside the sandbox when the caller gives no environment."""

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
                raise InvalidArgumentError(f"Limits.{name} must be > 0, got {value!r}")
            if not value <= _LIMIT_MAX[name]:
                raise InvalidArgumentError(
                    f"Limits.{name} must be at most {_LIMIT_MAX[name]:g}, got {value!r}")
        if self.output_bytes < 0:
            raise InvalidArgumentError(f"Limits.output_bytes must be >= 0, got {self.output_bytes!r}")


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """What one sandboxed run did.

    Attributes:
        returncode: Exit status (negative: killed by that signal); None if it never started.
        timed_out: True if the wall-time limit killed the run.
        wall_s: Seconds from start to the end of the clean-up.
        stdout: Captured standard output (UTF-8, errors replaced), cut to the output limit.
        stderr: Captured standard error, likewise.
        isolation: ``bubblewrap``, ``namespaces`` or ``none`` (a
            :data:`~reliabench.records.BuiltinIsolation`), or a plugin backend's own name.
        killed_reason: Why the run was stopped or killed, when known: ``wall time limit``,
            ``output limit``, ``cpu time limit``, ``file size limit``.
        seccomp: True when the command ran under the seccomp filter of
            :mod:`reliabench.sandbox.seccomp` (installed before anything of the command ran;
            a run whose filter could not be installed does not run at all).
    """

    returncode: int | None
    timed_out: bool
    wall_s: float
    stdout: str
    stderr: str
    isolation: Isolation
    killed_reason: str | None = None
    seccomp: bool = False


class SandboxBackend(Protocol):
    """An isolation backend; ``name`` is the isolation level it gives (recorded per rollout).

    See the module docstring for what a backend that is not on this host (a container, a
    remote machine) must do and which arguments it may refuse.
    """

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
            network: Keep the host network (for agent CLIs that call an API). A backend
                without a network raises ``SandboxError`` when this is True.
            slot: The worker slot; runs of one slot must not overlap.
            pass_fds: File descriptors the command inherits (same numbers). A backend
                that cannot pass descriptors raises ``SandboxError`` when this is not empty.
            stdin: A file the command reads as standard input (opened by the parent, so its
                path need not be visible inside); None: ``/dev/null``.

        Returns:
            What happened. A command that fails is a result, not an exception.

        Raises:
            SandboxError: The sandbox itself could not be set up, or an argument asks
                for what this backend cannot give (raised before anything starts).
        """
        ...



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


def minimal_env() -> dict[str, str]:
    """The environment a sandboxed process gets when the caller gives none (nothing of the host's)."""
    return {"PATH": DEFAULT_PATH, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "USER": "rollout"}


def _base_env(env: Mapping[str, str] | None) -> dict[str, str]:
    if env is None:
        return minimal_env()
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


