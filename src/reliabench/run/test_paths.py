"""Which hidden-test runner each task gets: chosen ONCE per run, from the task and the backend.

:class:`TestPaths` is opened once per run (``--test-workers``) and answers, per task, with one
:class:`~reliabench.hidden_tests.layer.HiddenTestRunner`:

==============================================  =====================================  ==========
task                                            runner                                 test_path
==============================================  =====================================  ==========
``test_runner = "stdio"``                       the stdio cases                        ``stdio``
``test_runner = "command"``                     the language's test command, in the    ``command``
                                                task's environment (host toolchains
                                                or the image's)
``test_runner = "repository"``                  the repository's test command, graded  ``repository``
                                                FAIL_TO_PASS / PASS_TO_PASS (one
                                                :class:`RepositoryTests` per run)
an image or a Dockerfile (``[environment]``)    a fresh pytest process in the image    ``fresh``
on the host, warm workers open (``auto``/warm)  the warm worker (pytest, or the lean   ``warm``
                                                runner for ``test_runner = "plain"``)
on the host otherwise (``fresh``, no warm)      a fresh pytest process in ``--sandbox``  ``fresh``
==============================================  =====================================  ==========

A command task's tests get at least :data:`~reliabench.hidden_tests.command.COMMAND_LIMITS`
(:meth:`TestPaths.limits`: a compiler and a JVM need more than a Python test); a host command
task whose language's toolchain is missing is refused before the run (:func:`check_harness`).

``--test-workers`` keeps its meaning: ``auto`` uses warm workers where they work (root,
namespaces, a jailed round trip) and fresh processes elsewhere; ``warm`` refuses to start
without them; ``fresh`` never starts them. The records say which runner ran
(``meta.test_path``, ``meta.test_runner``), and a re-test takes the same one
(:meth:`TestPaths.for_path`).

A repository task's rollouts start from its checkout at the base commit
(:meth:`TestPaths.starter`; :meth:`RepositoryTests.materialize` copies it), and their diff
artifact is the checkout's ``git diff`` (:meth:`RepositoryTests.agent_patch`).
:func:`prepare_repositories` prepares every repository task of a run before anything is
written (its environment built or taken from the cache, the test patch applied to the base
tree, its gold patch graded -- or, without one, the untouched checkout's tests run), and
refuses the run with one line when a task could not be graded at all.
"""

from __future__ import annotations

import queue
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from reliabench.errors import PreflightError, SandboxError, SuiteError
from reliabench.hidden_tests.command import CommandTestRunner, command_limits
from reliabench.hidden_tests.fresh import FreshPytest
from reliabench.hidden_tests.layer import HiddenTestRunner, OpenAt, fresh_open_at
from reliabench.hidden_tests.repository import RepositoryTests
from reliabench.hidden_tests.stdio import StdioCases
from reliabench.meta_keys import TestPath, TestRunner
from reliabench.sandbox.base import Limits
from reliabench.sandbox.choice import TaskEnvironment
from reliabench.tasks.suite import Task
from reliabench.warm.hidden import WarmTests, open_test_workers, warm_unavailable_reason

__all__ = ["TestPaths", "check_harness", "prepare_repositories", "repository_tests"]


def repository_tests(environments: Mapping[str, TaskEnvironment]) -> RepositoryTests:
    """The :class:`RepositoryTests` of a run: each task's environment from ``environments``, on a slot.

    Builds and control runs start the task's backend on its prepared spec (the checkout shown
    at the task's ``workdir``, network off).
    """

    def open_for(task: Task, slot: int) -> OpenAt:
        where = environments.get(task.id)
        if where is None:
            raise SandboxError(f"task {task.id}: no environment was prepared for it in this run")
        return fresh_open_at(where.backend, where.prepared, slot=slot)

    return RepositoryTests(open_for=open_for)


class TestPaths:
    """The hidden-test runners of one run (see the module docstring); ``close()`` after the run.

    Args:
        warm: The run's warm test workers (None: fresh processes for host tasks).
        environments: Task id -> its backend and prepared spec (the repository tasks' builds
            and control runs start there).
        repository: The run's repository runner, already prepared (:func:`prepare_repositories`);
            default: a new one over ``environments``.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, warm: WarmTests | None = None,
                 environments: Mapping[str, TaskEnvironment] | None = None,
                 repository: RepositoryTests | None = None) -> None:
        self.warm = warm
        self._fresh = FreshPytest()
        self._stdio = StdioCases()
        self._command = CommandTestRunner()
        self.repository = repository or repository_tests(environments or {})

    @classmethod
    def open(cls, test_workers: str, environments: Mapping[str, TaskEnvironment] | None = None,
             repository: RepositoryTests | None = None) -> TestPaths:
        """The runners of a run with ``--test-workers test_workers`` (``auto``, ``warm``, ``fresh``).

        Raises:
            InvalidArgumentError: ``test_workers`` is not one of those.
            SandboxError: ``warm`` was asked for and does not work here.
        """
        return cls(open_test_workers(test_workers), environments, repository)

    @property
    def host_path(self) -> TestPath:
        """The path host tasks take in this run (``warm`` or ``fresh``)."""
        return "fresh" if self.warm is None else "warm"

    def for_task(self, task: Task) -> HiddenTestRunner:
        """The runner of ``task`` in this run."""
        if task.stdio is not None:
            return self._stdio
        if task.test_runner == "command":
            return self._command
        if task.repository is not None:
            return self.repository
        if task.environment.kind != "host" or self.warm is None:
            return self._fresh
        return self.warm

    def test_path(self, task: Task) -> TestPath:
        """What ``meta.test_path`` records for ``task``'s rollouts."""
        return self.for_task(task).path

    def test_runner(self, task: Task) -> TestRunner:
        """What ``meta.test_runner`` records for ``task``'s rollouts (what ran the tests)."""
        path = self.test_path(task)
        if path in ("stdio", "command", "repository"):
            return path
        return task.test_runner if path == "warm" else "pytest"

    @staticmethod
    def limits(task: Task, limits: Limits) -> Limits:
        """The limits of ``task``'s test phase: ``limits``, raised for a command task (module docstring)."""
        return command_limits(limits) if task.test_runner == "command" else limits

    def starter(self, task: Task) -> Path:
        """What a rollout of ``task`` starts from: its ``workspace/``, or a repository's prepared checkout."""
        if task.repository is not None:
            return self.repository.prepare(task).starter
        return task.workspace_dir

    def for_path(self, path: str, task: Task) -> HiddenTestRunner:
        """The runner of a recorded ``test_path`` (a re-test runs where its rollout ran).

        Raises:
            SandboxError: ``path`` is ``warm`` and warm workers are not open here.
        """
        if path == "stdio" and task.stdio is not None:
            return self._stdio
        if path == "command" and task.test_runner == "command":
            return self._command
        if path == "repository" and task.repository is not None:
            return self.repository
        if path == "warm":
            if self.warm is None:
                raise SandboxError("the rollout's tests ran on warm test workers, which are not available "
                                   "here; a re-run on another path would not measure the same harness")
            return self.warm
        return self._fresh

    def close(self) -> None:
        """Stop the warm workers (if any), forget the prepared repositories; idempotent."""
        self._command.close()
        self.repository.close()
        if self.warm is not None:
            self.warm.close()
            self.warm = None


def check_harness(tasks: Sequence[Task], environments: Mapping[str, TaskEnvironment],
                  test_workers: str) -> None:
    """Refuse, before any rollout, a run whose test harness cannot start as the slot uid.

    Host tasks whose tests run in a fresh process of their backend (``--test-workers fresh``,
    or no warm workers here, and every stdio task) start this interpreter -- with pytest, for
    pytest tasks -- as the slot uid; a backend without a private file-system view (namespaces)
    needs the interpreter, its venv and pytest reachable by that uid on the host
    (``harness_problem``). A clone in a 0700 folder is not: every rollout would fail.

    A host command task needs its language's toolchain (``make polyglot``): one line names
    what is missing.

    Raises:
        PreflightError: One line: which path is unreachable and what to do.
    """
    from reliabench.hidden_tests.toolchains import missing_toolchain

    commands = CommandTestRunner()
    for task in tasks:
        if task.test_runner == "command" and task.environment.kind == "host":
            missing = missing_toolchain(commands.toolchain(task))
            if missing is not None:
                raise PreflightError(f"task {task.id}: {missing}")
    fresh_host = test_workers == "fresh" or (test_workers == "auto" and warm_unavailable_reason() is not None)
    for task in tasks:
        if task.environment.kind != "host" or (task.stdio is None and not fresh_host) \
                or task.test_runner == "command":
            continue
        check = getattr(environments[task.id].backend, "harness_problem", None)
        if check is None:
            continue
        why = check(sys.executable, () if task.stdio is not None else ("pytest",))
        if why is not None:
            raise PreflightError(f"the test harness cannot start as the slot uid "
                                 f"({environments[task.id].backend.name} backend): {why}")


def prepare_repositories(tasks: Sequence[Task], environments: Mapping[str, TaskEnvironment], *,
                         limits: Limits, test_timeout_s: float | None = None,
                         workers: int = 1) -> RepositoryTests:
    """Prepare every repository task of a run before its first rollout, or refuse the run.

    For each task (``workers`` at a time, each on its own slot): the repository checked out at
    its base commit, its environment built (or taken from the cache), the test patch applied to
    the base tree, and its gold patch graded -- or, without one, the tests run on the untouched
    checkout (:meth:`~reliabench.hidden_tests.repository.RepositoryTests.base_problem`; a task
    found sound is remembered in the environment cache). Any of them failing means no rollout
    of the task could be graded -- the harness's or the environment's failure, never an
    agent's -- so the run is refused before anything is written (rather than
    recording every rollout of the task ``infra_error``: the agents would run for nothing, and
    the early-stop watch would stop an agent whose first rollouts are that task's).

    Args:
        tasks: The run's tasks (those that are not repository tasks are left alone).
        environments: Task id -> its backend and prepared spec.
        limits: The run's test limits (the wall time is each task's, capped by ``test_timeout_s``).
        test_timeout_s: The run's cap on a task's test time.
        workers: Tasks prepared at once.

    Returns:
        The run's repository runner, every repository task prepared (hand it to :class:`TestPaths`).

    Raises:
        PreflightError: One line: the task, what failed, and what to do.
    """
    runner = repository_tests(environments)
    todo = [t for t in tasks if t.repository is not None]
    if not todo:
        return runner
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(max(1, min(workers, len(todo)))):
        slots.put(slot)

    def one(task: Task) -> str | None:
        wall = task.timeout_s if test_timeout_s is None else min(task.timeout_s, test_timeout_s)
        slot = slots.get()
        try:
            why = runner.base_problem(task, replace(limits, wall_s=wall, cpu_s=wall), slot=slot)
        except SuiteError as exc:
            why = "; ".join(exc.problems)
        except SandboxError as exc:
            why = str(exc)
        finally:
            slots.put(slot)
        return None if why is None else f"task {task.id}: {why}"

    try:
        with ThreadPoolExecutor(max_workers=slots.qsize()) as pool:
            problems = [p for p in pool.map(one, todo) if p is not None]
    except BaseException:
        runner.close()
        raise
    if problems:
        runner.close()
        more = f" ({len(problems)} of {len(todo)} repository tasks cannot run)" if len(problems) > 1 else ""
        raise PreflightError(f"{problems[0]}{more}; no rollout of it could be graded here: leave it out "
                             "(--task), or fix the cause (`reliabench validate SUITE --task ID` says why)")
    return runner
