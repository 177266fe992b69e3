"""The hidden-test layer: one protocol for every way a task's hidden tests are run.

A run chooses, ONCE, for each task, a :class:`HiddenTestRunner` from the task and the
backend (fresh pytest process, warm pytest or lean runner, stdio cases, a language's test
command, a repository's test command graded FAIL_TO_PASS / PASS_TO_PASS). The runner of a
rollout does not know which one it holds: it asks it to ``collect`` the expected tests of a
task once (on the starter, trusted), to ``run`` the tests of each rollout, and ``close`` s it
after the run.

A :class:`TestRequest` carries everything one rollout's test phase needs. The tests reach an
environment only through :attr:`TestRequest.open_environment`, which the run gives for the
task's environment spec and handover (:data:`~reliabench.sandbox.environment.TestsHandover`):
for ``tests = "fresh"`` a new environment on the workspace; for ``tests = "same"`` the agent's
own environment, its processes stopped, with the mounts copied in. Either way the agent never
saw the hidden tests. :attr:`TestRequest.open_at` starts a FRESH environment of the same kind
on another host folder (the control run on a copy of the starter). Whoever opens an
environment closes it.

Which runner a task gets is decided once per run in :mod:`reliabench.run.test_paths` (from the
task and the backend); the runners of this package: the fresh pytest process in any
environment (:class:`reliabench.hidden_tests.fresh.FreshPytest`) and the stdio cases
(:class:`reliabench.hidden_tests.stdio.StdioCases`); warm workers implement the protocol in
:mod:`reliabench.warm.hidden` (this package never imports ``warm``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from reliabench.meta_keys import TestPath
from reliabench.records import TestOutcome
from reliabench.sandbox.base import Limits
from reliabench.sandbox.environment import (
    Environment,
    EnvironmentBackend,
    Mount,
    NetworkMode,
    PreparedSpec,
)

if TYPE_CHECKING:
    from reliabench.hidden_tests.judging import HiddenTestRun
    from reliabench.tasks.suite import Task

__all__ = ["EnvironmentOpener", "HiddenTestRunner", "OpenAt", "TestRequest", "fresh_open_at", "fresh_opener"]

EnvironmentOpener = Callable[[Sequence[Mount]], Environment]
"""Opens the environment the tests run in, showing ``mounts`` (the staged tests, a report
folder); the caller closes what it opened."""

OpenAt = Callable[[Path, Sequence[Mount]], Environment]
"""Starts a FRESH environment of the task's kind on a host folder, showing ``mounts`` (a
control run on a copy of the starter, a build); the caller closes it."""


def fresh_open_at(backend: EnvironmentBackend, prepared: PreparedSpec, *, slot: int,
                  limits: Limits = Limits(), network: NetworkMode = "none") -> OpenAt:
    """An :data:`OpenAt` that starts a new environment of ``backend`` from ``prepared`` at each call.

    Args:
        backend: The backend.
        prepared: What ``backend.prepare`` returned for the task's spec.
        slot: The worker slot.
        limits: The environment's limits (a container's cgroup).
        network: The network of the environment (the test phase: ``none``).
    """

    def open_at(workspace: Path, mounts: Sequence[Mount]) -> Environment:
        return backend.start(prepared, workspace=workspace, slot=slot, mounts=mounts, network=network,
                             limits=limits)

    return open_at


def fresh_opener(backend: EnvironmentBackend, prepared: PreparedSpec, workspace: Path, *, slot: int,
                 limits: Limits = Limits(), network: NetworkMode = "none") -> EnvironmentOpener:
    """An opener that starts a new environment from ``prepared`` on ``workspace`` at each call."""
    open_at = fresh_open_at(backend, prepared, slot=slot, limits=limits, network=network)
    return lambda mounts: open_at(workspace, mounts)


@dataclass(frozen=True, slots=True)
class TestRequest:
    """One rollout's test phase.

    Attributes:
        task: The task.
        workspace: The host folder holding the agent's work (the tests may add to it).
        expected: The task's expected tests (:meth:`HiddenTestRunner.collect`); each gets
            exactly one outcome, one without a trusted outcome is ``failed``.
        limits: Limits of the test phase (its wall time is the task's, capped by the run's).
        slot: The worker slot.
        open_environment: Opens the environment to run in (see the module docstring).
        open_at: Starts a fresh environment of the task's kind on another host folder (the
            control run on a copy of the starter); None: no control run (a missing start
            line is then the harness's failure).
        starter: The untouched starter workspace (trusted), for control runs and the
            tamper scan.
        order_seed: Run the tests in a seeded random order (re-tests); None keeps the order.
        allowed_skips: Tests whose skip counts as ``skipped`` (the task's ``allowed_skips``).
    """

    __test__ = False  # not a pytest test class

    task: Task
    workspace: Path
    expected: tuple[TestOutcome, ...]
    limits: Limits
    slot: int
    open_environment: EnvironmentOpener
    starter: Path | None = None
    open_at: OpenAt | None = None
    order_seed: int | None = None
    allowed_skips: Collection[str] = ()


@runtime_checkable
class HiddenTestRunner(Protocol):
    """One way of running hidden tests, chosen once per run for a task."""

    path: TestPath
    """What ``meta.test_path`` records for rollouts it ran."""

    def collect(self, task: Task, open_environment: EnvironmentOpener, *, starter: Path,
                limits: Limits, slot: int) -> tuple[TestOutcome, ...]:
        """The task's expected tests, learnt once on the starter workspace (trusted).

        ``open_environment`` opens an environment of the task's kind on a fresh copy of
        ``starter`` that the caller made (a runner lends the workspace to a slot uid).

        Raises:
            SuiteError: The tests cannot be collected on the starter.
            SandboxError: The harness could not run at all.
        """
        ...

    def run(self, request: TestRequest) -> HiddenTestRun:
        """Run the hidden tests of one rollout; the agent's failures are outcomes.

        Raises:
            SandboxError: The environment could not be started (the harness's failure).
        """
        ...

    def close(self) -> None:
        """Release what the runner holds (warm servers, staged copies); idempotent."""
        ...
