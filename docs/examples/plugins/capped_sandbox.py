"""A sandbox backend plugin: the strongest built-in backend, with a site's caps on every command.

Whatever a task or an agent asks for, a command gets at most 256 MiB of memory, 64 processes,
60 s of wall time and never the network: a site policy, applied in one place. The isolation
is the inner backend's; the record says ``capped`` so that such runs are told apart.

It implements the whole environment contract (``reliabench.sandbox.environment``) in one
file: ``refuse`` and ``prepare`` (what it can run, the once-per-task work), ``start`` (one
environment per rollout phase, whose ``exec``, copies and ``close`` it wraps), ``sweep``.

Entry point, in the plugin's ``pyproject.toml``::

    [project.entry-points."reliabench.sandboxes"]
    capped = "capped_sandbox:CappedBackend"

Then ``reliabench run ... --sandbox capped``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from reliabench.errors import SandboxError
from reliabench.sandbox import (
    Environment,
    EnvironmentBackend,
    EnvironmentSpec,
    Limits,
    Mount,
    PreparedSpec,
    SandboxResult,
    get_backend,
)
from reliabench.sandbox.environment import ImageRef, NetworkMode

__all__ = ["CappedBackend", "CappedEnvironment"]

MEMORY_CAP = 256 * 1024 * 1024
PROCS_CAP = 64
WALL_CAP_S = 60.0


def _capped(limits: Limits) -> Limits:
    return replace(limits, memory_bytes=min(limits.memory_bytes, MEMORY_CAP),
                   max_procs=min(limits.max_procs, PROCS_CAP), wall_s=min(limits.wall_s, WALL_CAP_S))


class CappedEnvironment:
    """An environment of the inner backend whose every command is capped."""

    keeps_processes: bool
    image: ImageRef | None

    def __init__(self, inner: Environment) -> None:
        self._inner = inner
        self.backend = "capped"
        self.isolation = "capped"
        self.workdir = inner.workdir
        self.channel_dir = inner.channel_dir
        self.channel_host = inner.channel_host
        self.image = inner.image
        self.keeps_processes = inner.keeps_processes

    def exec(self, argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             stdin: bytes | None = None, limits: Limits = Limits()) -> SandboxResult:
        """Run ``argv`` in the inner environment with the caps applied."""
        result = self._inner.exec(argv, cwd=cwd, env=env, stdin=stdin, limits=_capped(limits))
        return replace(result, isolation="capped")

    def copy_in(self, source: Path, target: str) -> None:
        """As the inner environment does."""
        self._inner.copy_in(source, target)

    def copy_out(self, source: str, target: Path, *, max_bytes: int) -> None:
        """As the inner environment does (bounded, no link followed)."""
        self._inner.copy_out(source, target, max_bytes=max_bytes)

    def stop_processes(self) -> None:
        """As the inner environment does."""
        self._inner.stop_processes()

    def close(self) -> None:
        """As the inner environment does."""
        self._inner.close()


class CappedBackend:
    """Delegates to the strongest built-in backend that works here (``auto``), every command capped."""

    name = "capped"

    def __init__(self) -> None:
        self._inner: EnvironmentBackend | None = None

    @property
    def inner(self) -> EnvironmentBackend:
        """The backend doing the isolation (chosen on first use)."""
        if self._inner is None:
            self._inner = get_backend("auto")
        return self._inner

    def refuse(self, spec: EnvironmentSpec) -> str | None:
        """What the inner backend refuses (the site runs host tasks only)."""
        return self.inner.refuse(spec)

    def prepare(self, spec: EnvironmentSpec) -> PreparedSpec:
        """The inner backend's preparation, named ours."""
        return replace(self.inner.prepare(spec), backend=self.name)

    def start(self, prepared: PreparedSpec, *, workspace: Path, slot: int, mounts: Sequence[Mount] = (),
              network: NetworkMode = "none", limits: Limits = Limits()) -> CappedEnvironment:
        """An inner environment without network, its limits capped."""
        if prepared.backend != self.name:
            raise SandboxError(f"a spec prepared by {prepared.backend!r} given to {self.name!r}")
        inner = self.inner.start(replace(prepared, backend=self.inner.name), workspace=workspace,
                                 slot=slot, mounts=mounts, network="none", limits=_capped(limits))
        return CappedEnvironment(inner)

    def sweep(self) -> int:
        """What the inner backend leaves behind."""
        return self.inner.sweep()
