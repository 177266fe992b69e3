"""Limits, results, and the one-command convenience every host backend keeps.

THE contract of the places where reliabench runs code is the environment lifecycle of
:mod:`reliabench.sandbox.environment` (``refuse``, ``prepare``, ``start``; ``exec``,
``copy_in``, ``copy_out``, ``stop_processes``, ``close``). This module holds what every
backend shares: :class:`Limits` (what one command may use) and :class:`SandboxResult` (what
happened to it, with the isolation it got), and :class:`SandboxBackend`, the protocol of
``run()``: ONE command on one workspace (``start`` + ``exec`` + ``close``), which every host
backend keeps as a convenience (:class:`reliabench.sandbox.host.HostBackend`).

A backend never passes file descriptors into the sandbox: what used to need them (the agents'
usage file, the hidden tests' signed outcome channel) lives in the environment's channel
folder, which every backend -- a container included -- can show.
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
    "prepare_command",
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
    """A backend's one-command convenience ``run()``; ``name`` is the isolation it records.

    Every host backend has it (:class:`reliabench.sandbox.host.HostBackend`); the lifecycle
    that every backend has, host or container, is
    :class:`reliabench.sandbox.environment.EnvironmentBackend`.
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


def prepare_command(argv: Sequence[str], env: Mapping[str, str] | None) -> tuple[dict[str, str], str]:
    """What every host backend does first: the command's whole environment and its resolved program.

    Args:
        argv: The command; ``argv[0]`` is looked up on the environment's ``PATH`` (default
            :data:`DEFAULT_PATH`) when it has no slash.
        env: The command's environment (None: :func:`minimal_env`).

    Returns:
        ``(environment, program)``.

    Raises:
        SandboxError: ``argv`` is empty or its program is not on the ``PATH``.
    """
    full_env = _base_env(env)
    return full_env, _resolve_argv0(argv, full_env)


