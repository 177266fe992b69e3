"""A sandbox backend plugin: the strongest built-in backend, with a site's caps on every run.

Whatever a task or an agent asks for, a command gets at most 256 MiB of memory, 64 processes,
60 s of wall time and never the network: a site policy, applied in one place. The isolation
is the inner backend's; the record says ``capped`` so that such runs are told apart.

Entry point, in the plugin's ``pyproject.toml``::

    [project.entry-points."reliabench.sandboxes"]
    capped = "capped_sandbox:CappedBackend"

Then ``reliabench run ... --sandbox capped``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from reliabench.sandbox import Limits, SandboxBackend, SandboxResult, get_backend

__all__ = ["CappedBackend"]

MEMORY_CAP = 256 * 1024 * 1024
PROCS_CAP = 64
WALL_CAP_S = 60.0


class CappedBackend:
    """Delegates to the strongest built-in backend that works here (``auto``), limits capped."""

    name = "capped"

    def __init__(self) -> None:
        self._inner: SandboxBackend | None = None

    @property
    def inner(self) -> SandboxBackend:
        """The backend doing the isolation (chosen on first use)."""
        if self._inner is None:
            self._inner = get_backend("auto")
        return self._inner

    def run(self, argv: Sequence[str], *, workdir: Path, readonly: Sequence[Path] = (),
            env: Mapping[str, str] | None = None, limits: Limits = Limits(),
            network: bool = False, slot: int = 0, pass_fds: Sequence[int] = (),
            stdin: Path | None = None) -> SandboxResult:
        """Run ``argv`` in the inner backend with the caps applied and no network."""
        capped = replace(limits, memory_bytes=min(limits.memory_bytes, MEMORY_CAP),
                         max_procs=min(limits.max_procs, PROCS_CAP),
                         wall_s=min(limits.wall_s, WALL_CAP_S))
        result = self.inner.run(argv, workdir=workdir, readonly=readonly, env=env, limits=capped,
                                network=False, slot=slot, pass_fds=pass_fds, stdin=stdin)
        return replace(result, isolation=self.name)
