"""Each rollout's environments: the agent's and the tests', started on demand, closed together.

Before the first rollout every task got its backend and prepared spec
(:mod:`reliabench.sandbox.choice`: a task no rollout of which could run refuses the run).
Per rollout, :class:`RolloutEnvironments` holds what the rollout starts: the agent's
environment (:attr:`RolloutEnvironments.agent`, started when the agent first opens it) and
the tests' (:meth:`RolloutEnvironments.open_tests`): for ``tests = "fresh"`` a new environment
from the prepared spec on the workspace; for ``tests = "same"`` the agent's own environment,
its processes stopped, the staged tests copied in. :meth:`RolloutEnvironments.close` closes
whatever is still open. Starting an environment can fail (a dead runtime, a container that
cannot start): a ``SandboxError``, which the rollout records as ``infra_error`` (retried),
never as the agent's failure. The agent can make the handover of ``tests = "same"`` fail (it
filled its ``/tmp``, where the tests are copied): that is the rollout's own failure
(:class:`HandoverError`), never ``infra_error``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from reliabench.errors import ReliabenchError, SandboxError
from reliabench.sandbox.base import Limits
from reliabench.sandbox.choice import TaskEnvironment, choose_backends, prepare_environments
from reliabench.sandbox.environment import (
    Environment,
    EnvironmentBackend,
    Mount,
    NetworkMode,
    PreparedSpec,
)
from reliabench.sandbox.registry import NOT_FOR_RUNS, shared_backend
from reliabench.sandbox.rootfs import under
from reliabench.tasks.suite import Task

__all__ = [
    "HandoverError",
    "RolloutEnvironments",
    "TaskEnvironment",
    "choose_backends",
    "prepare_environments",
    "task_environments",
]


def task_environments(sandbox: str, tasks: Sequence[Task]) -> dict[str, TaskEnvironment]:
    """Each task's backend and prepared spec for ``--sandbox sandbox``: the run's preflight.

    Raises:
        PreflightError: a task's environment is refused or cannot be prepared (one line).
        SandboxError: the backend asked for does not work here.
    """
    specs = {t.id: t.environment for t in tasks}
    return prepare_environments(specs, choose_backends(sandbox, specs))


def _overlaps(a: str, b: str) -> bool:
    return under(a, b) or under(b, a)


class HandoverError(ReliabenchError):
    """``tests = "same"``: the machine the agent left has no room for the hidden tests.

    Not a :class:`~reliabench.errors.SandboxError`: the agent filled it (its ``/tmp``, say),
    so the rollout fails (``test_error``, counted in n), never ``infra_error``, which would
    take it out of n.
    """


_NO_ROOM: Final = ("No space left on device", "Disk quota exceeded")


def _no_room_left(env: Environment, exc: SandboxError) -> None:
    """Raise :class:`HandoverError` when copying the tests in failed for want of room.

    Only when the environment itself still works: otherwise the copy's failure stays the
    harness's (``SandboxError``).
    """
    if not any(marker in str(exc) for marker in _NO_ROOM):
        return
    try:
        healthy = env.exec(["true"], env={}).returncode == 0
    except SandboxError:
        return
    if healthy:
        raise HandoverError(f"the agent's environment has no room left for the hidden tests ({exc})") \
            from None


class _AgentEnvironment:
    """The agent's side of a rollout's environments (:class:`reliabench.agents.base.AgentEnvironment`)."""

    def __init__(self, owner: RolloutEnvironments) -> None:
        self._owner = owner
        self.spec = owner.task.environment

    def open(self, *, mounts: Sequence[Mount] = (), network: NetworkMode = "none",
             limits: Limits | None = None, sandbox: str = "auto") -> Environment:
        """Start the rollout's agent environment (see :class:`reliabench.agents.base.AgentEnvironment`)."""
        return self._owner.open_agent(mounts=mounts, network=network, limits=limits, sandbox=sandbox)


class RolloutEnvironments:
    """The environments of one rollout: the agent's, the tests', closed together (module docstring).

    Args:
        task: The task.
        where: The task's backend and prepared spec.
        workspace: The rollout's workspace (host folder).
        slot: The worker slot.
        limits: The environment's limits (a container's cgroup).
    """

    def __init__(self, task: Task, where: TaskEnvironment, workspace: Path, *, slot: int,
                 limits: Limits) -> None:
        self.task = task
        self.where = where
        self.workspace = workspace
        self.slot = slot
        self.limits = limits
        self._lock = threading.Lock()
        self._agent_env: Environment | None = None
        self._agent_args: tuple[object, ...] | None = None
        self._opened: list[Environment] = []
        self._closed = False
        self.agent = _AgentEnvironment(self)

    def _check_mounts(self, mounts: Sequence[Mount]) -> None:
        """An agent's mounts are read-only and never show the task's hidden files."""
        secret = os.path.realpath(self.task.root)
        for m in mounts:
            if m.writable:
                raise SandboxError(f"an agent's mount is read-only: {m.source} was asked writable "
                                   "(the workspace is the agent's only writable place)")
            if _overlaps(os.path.realpath(m.source), secret):
                raise SandboxError(f"an agent's mount must not show the task's folder {secret} (its hidden "
                                   f"tests and reference solution): {m.source} was asked")

    def _backend_for_agent(self, sandbox: str) -> tuple[EnvironmentBackend, PreparedSpec]:
        if self.task.environment.kind != "host":
            if sandbox not in ("auto", self.where.backend.name):
                image = self.where.prepared.image
                what = image.reference if image else "?"
                raise SandboxError(f"task {self.task.id} runs in a container ({what}) "
                                   f"on {self.where.backend.name}: an agent's sandbox = {sandbox!r} cannot "
                                   "run there (leave sandbox unset or 'auto')")
            return self.where.backend, self.where.prepared
        if sandbox in NOT_FOR_RUNS:
            raise SandboxError(f"an agent's sandbox cannot be {sandbox!r}")
        backend = shared_backend(sandbox)
        if backend is self.where.backend:
            return backend, self.where.prepared
        why = backend.refuse(self.task.environment)
        if why is not None:
            raise SandboxError(f"the agent's sandbox {sandbox!r}: {why}")
        return backend, backend.prepare(self.task.environment)

    def open_agent(self, *, mounts: Sequence[Mount] = (), network: NetworkMode = "none",
                   limits: Limits | None = None, sandbox: str = "auto") -> Environment:
        """Start the agent's environment, once (the same arguments give it again).

        Raises:
            SandboxError: It cannot be started as asked (the harness's failure).
        """
        args = (tuple(mounts), network, limits, sandbox)
        with self._lock:
            if self._closed:
                raise SandboxError("the rollout's environments are closed")
            if self._agent_env is not None:
                if args != self._agent_args:
                    raise SandboxError("the rollout's environment is already open, with other mounts, "
                                       "network or limits")
                return self._agent_env
            self._check_mounts(mounts)
            backend, prepared = self._backend_for_agent(sandbox)
            env = backend.start(prepared, workspace=self.workspace, slot=self.slot, mounts=mounts,
                                network=network, limits=limits or self.limits)
            self._agent_env, self._agent_args = env, args
            self._opened.append(env)
            return env

    def open_tests(self, mounts: Sequence[Mount] = ()) -> Environment:
        """The environment of the hidden tests (an :data:`~reliabench.hidden_tests.layer.EnvironmentOpener`).

        ``tests = "same"``: the agent's own environment, its processes stopped, ``mounts``
        copied in at their targets; the caller now owns it. Otherwise a fresh environment from
        the task's prepared spec on the workspace (no network).

        Raises:
            SandboxError: It could not be started (the harness's failure).
        """
        with self._lock:
            if self._closed:
                raise SandboxError("the rollout's environments are closed")
            agent_env = self._agent_env
            same = (self.task.environment.tests == "same" and agent_env is not None
                    and agent_env.backend == self.where.backend.name)
            if same and agent_env is not None:
                self._agent_env = None  # handed over: the tests' runner closes it
                agent_env.stop_processes()
                for m in mounts:
                    try:
                        agent_env.copy_in(m.source, m.target or os.path.realpath(m.source))
                    except SandboxError as exc:
                        _no_room_left(agent_env, exc)
                        raise
                return agent_env
        return self.open_at(self.workspace, mounts)

    def open_at(self, workspace: Path, mounts: Sequence[Mount] = ()) -> Environment:
        """A fresh environment of the task's kind on the host folder ``workspace`` (an ``OpenAt``).

        Raises:
            SandboxError: It could not be started (the harness's failure).
        """
        with self._lock:
            if self._closed:
                raise SandboxError("the rollout's environments are closed")
        env = self.where.backend.start(self.where.prepared, workspace=workspace, slot=self.slot,
                                       mounts=mounts, network="none", limits=self.limits)
        with self._lock:
            self._opened.append(env)
        return env

    def end_agent_phase(self) -> None:
        """After the agent returned: stop its processes (``tests = "same"``) or close its environment."""
        with self._lock:
            env = self._agent_env
            keep = self.task.environment.tests == "same"
            if env is not None and not keep:
                self._agent_env = None
        if env is None:
            return
        if keep:
            env.stop_processes()
        else:
            env.close()

    def close(self) -> None:
        """Close every environment this rollout started; idempotent, never raises ``SandboxError``."""
        with self._lock:
            self._closed = True
            opened, self._opened = self._opened, []
            self._agent_env = None
        for env in opened:
            try:
                env.close()
            except SandboxError:  # pragma: no cover - a backend's clean-up failure; sweep() catches it
                continue

