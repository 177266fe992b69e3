"""The ``warm`` sandbox backend: any command, run in a jailed fork of a warm server.

It gives a command what a warm rollout's tests get (see :mod:`reliabench.warm.server`): new
mount, pid and IPC namespaces, the server's empty network and UTS namespaces, a minimal root
with read-only system and interpreter binds, the workspace and the channel folder writable at
their own path, private sized ``/tmp`` and ``/dev/shm``, rlimits, the slot uid, no
capabilities, ``no_new_privs``, and a kill of everything it started when it ends. The command
is ``execve``'d in the jail, so it saves the start-up of ``bwrap``, not of the command itself:
the speed of warm workers comes from running hidden tests in the fork without an ``exec``
(:class:`~reliabench.warm.hidden.WarmTests`). This backend exists so that every containment
test of the other backends runs unchanged on the warm jail, and it is in the one registry
(``get_backend("warm")``, ``reliabench sandbox check --backend warm``).

What it refuses, by name and before anything starts (:class:`~reliabench.sandbox.host.HostBackend`):
every network mode but ``none`` (the jail has no network), standard input, mounts elsewhere
than at their own path and a spec's ``workdir``.

It is not among the ``--sandbox`` choices of a run (:func:`reliabench.sandbox.registry.available_backends`):
a run reaches the warm jail through ``--test-workers``, which runs the hidden tests in the
fork itself -- the point of warm workers; an ``exec`` of a fresh pytest in the jail would be a
slower fresh path, and the agents of a run would lose their network. It owns server processes
(one per slot, started on first use): :meth:`WarmBackend.close` stops them (the servers also
end when this process does: their request pipe closes).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from reliabench.sandbox.base import Limits, SandboxResult, prepare_command
from reliabench.sandbox.environment import NetworkMode
from reliabench.sandbox.host import HostBackend, HostView
from reliabench.warm.client import WarmWorkers

__all__ = ["WarmBackend"]


class WarmBackend(HostBackend):
    """Run commands in the warm jail; see the module docstring. ``close()`` stops the servers.

    Args:
        workers: The servers to use (default: this backend's own, started on first use).
    """

    name: str = "warm"
    networks: ClassVar[frozenset[NetworkMode]] = frozenset({"none"})
    writable_mounts: ClassVar[bool] = True
    feeds_stdin: ClassVar[bool] = False

    def __init__(self, workers: WarmWorkers | None = None) -> None:
        self._own = workers is None
        self._workers = workers
        self._lock = threading.Lock()

    @property
    def workers(self) -> WarmWorkers:
        """The warm servers (this backend's own are started on first use)."""
        with self._lock:
            if self._workers is None:
                self._workers = WarmWorkers()
                atexit.register(self._workers.close)
            return self._workers

    def close(self) -> None:
        """Stop the servers if this backend started them."""
        with self._lock:
            if self._own and self._workers is not None:
                self._workers.close()
                self._workers = None

    def probe(self) -> str | None:
        """Why warm workers do not work here (root, namespaces, a jailed round trip), or None."""
        from reliabench.warm.hidden import warm_unavailable_reason

        return warm_unavailable_reason()

    def spawn(self, argv: Sequence[str], *, view: HostView, env: Mapping[str, str] | None,
              limits: Limits, network: bool, slot: int, stdin: Path | None) -> SandboxResult:
        """Run ``argv`` in a jailed fork of the slot's warm server; see :class:`HostBackend`."""
        full_env, prog = prepare_command(argv, env)
        writable = [src for src, _ in view.writable]
        if view.channel is not None:
            writable.append(view.channel[0])
        raw = self.workers.request(
            "exec", Path(view.workspace), readonly=[src for src, _ in view.readonly],
            writable=writable, cwd=view.cwd, env=full_env, limits=limits, slot=slot,
            fields={"argv": [prog, *argv[1:]]},
        )
        return raw.result
