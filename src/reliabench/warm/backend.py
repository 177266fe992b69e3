"""The ``warm`` sandbox backend: any command, run in a jailed fork of a warm server.

It gives a command what a warm rollout's tests get (see :mod:`reliabench.warm.server`): new
mount, pid and IPC namespaces, the server's empty network and UTS namespaces, a minimal root
with read-only system and interpreter binds, the workdir writable at its own path, private
sized ``/tmp`` and ``/dev/shm``, rlimits, the slot uid, no capabilities, ``no_new_privs``,
and a kill of everything it started when it ends. The command is ``execve``'d in the jail,
so it saves the start-up of ``bwrap``, not of the command itself: the speed of warm workers
comes from running hidden tests in the fork without an ``exec``
(:class:`~reliabench.warm.hidden.WarmTests`). This backend exists so that every containment
test of the other backends runs unchanged on the warm jail.

Not supported: ``network=True`` (the jail has no network), ``pass_fds`` and ``stdin``; all are refused
with ``SandboxError`` before anything starts, as the contract in
:mod:`reliabench.sandbox.base` says.

It is not in the sandbox registry (``get_backend("warm")``, ``--sandbox warm``): it owns
server processes (one per slot, shared with :class:`~reliabench.warm.hidden.WarmTests`) that
must be stopped with ``close()``, which the backend contract and the runner's use of a backend
do not have; the run's agents would lose the network and every command agent its usage
channel (``pass_fds``); and the runner already reaches the warm jail for hidden tests through
``--test-workers``. Tests build it from a ``WarmWorkers`` (``tests/sandbox_helpers.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from reliabench.errors import SandboxError
from reliabench.sandbox.base import Limits, SandboxResult, _prepare
from reliabench.warm.client import WarmWorkers

__all__ = ["WarmBackend"]


class WarmBackend:
    """Run commands in the warm jail; see the module docstring. close() stops the servers."""

    name: str = "warm"

    def __init__(self, workers: WarmWorkers | None = None) -> None:
        self._own = workers is None
        self.workers = workers or WarmWorkers()

    def close(self) -> None:
        """Stop the servers if this backend started them."""
        if self._own:
            self.workers.close()

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
        """Run ``argv`` in a jailed fork of the slot's warm server; see ``SandboxBackend``."""
        if network:
            raise SandboxError("the warm backend has no network (use bubblewrap for network=True)")
        if pass_fds:
            raise SandboxError("the warm backend does not pass file descriptors")
        if stdin is not None:
            raise SandboxError(f"the warm backend does not feed standard input, got stdin={stdin}")
        full_env, prog, work = _prepare(argv, workdir, env)
        raw = self.workers.request(
            "exec", Path(work), readonly=[str(Path(p).resolve()) for p in readonly],
            env=full_env, limits=limits, slot=slot, fields={"argv": [prog, *argv[1:]]},
        )
        return raw.result
