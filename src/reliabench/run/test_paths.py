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
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from reliabench.errors import PreflightError, SandboxError
from reliabench.hidden_tests.command import CommandTestRunner, command_limits
from reliabench.hidden_tests.fresh import FreshPytest
from reliabench.hidden_tests.layer import HiddenTestRunner
from reliabench.hidden_tests.stdio import StdioCases
from reliabench.meta_keys import TestPath, TestRunner
from reliabench.sandbox.base import Limits
from reliabench.sandbox.choice import TaskEnvironment
from reliabench.tasks.suite import Task
from reliabench.warm.hidden import WarmTests, open_test_workers, warm_unavailable_reason

__all__ = ["TestPaths", "check_harness"]


class TestPaths:
    """The hidden-test runners of one run (see the module docstring); ``close()`` after the run.

    Args:
        warm: The run's warm test workers (None: fresh processes for host tasks).
    """

    __test__ = False  # not a pytest test class

    def __init__(self, warm: WarmTests | None = None) -> None:
        self.warm = warm
        self._fresh = FreshPytest()
        self._stdio = StdioCases()
        self._command = CommandTestRunner()

    @classmethod
    def open(cls, test_workers: str) -> TestPaths:
        """The runners of a run with ``--test-workers test_workers`` (``auto``, ``warm``, ``fresh``).

        Raises:
            InvalidArgumentError: ``test_workers`` is not one of those.
            SandboxError: ``warm`` was asked for and does not work here.
        """
        return cls(open_test_workers(test_workers))

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
        if task.environment.kind != "host" or self.warm is None:
            return self._fresh
        return self.warm

    def test_path(self, task: Task) -> TestPath:
        """What ``meta.test_path`` records for ``task``'s rollouts."""
        return self.for_task(task).path

    def test_runner(self, task: Task) -> TestRunner:
        """What ``meta.test_runner`` records for ``task``'s rollouts (what ran the tests)."""
        path = self.test_path(task)
        if path in ("stdio", "command"):
            return path
        return task.test_runner if path == "warm" else "pytest"

    @staticmethod
    def limits(task: Task, limits: Limits) -> Limits:
        """The limits of ``task``'s test phase: ``limits``, raised for a command task (module docstring)."""
        return command_limits(limits) if task.test_runner == "command" else limits

    def for_path(self, path: str, task: Task) -> HiddenTestRunner:
        """The runner of a recorded ``test_path`` (a re-test runs where its rollout ran).

        Raises:
            SandboxError: ``path`` is ``warm`` and warm workers are not open here.
        """
        if path == "stdio" and task.stdio is not None:
            return self._stdio
        if path == "command" and task.test_runner == "command":
            return self._command
        if path == "warm":
            if self.warm is None:
                raise SandboxError("the rollout's tests ran on warm test workers, which are not available "
                                   "here; a re-run on another path would not measure the same harness")
            return self.warm
        return self._fresh

    def close(self) -> None:
        """Stop the warm workers (if any); idempotent."""
        self._command.close()
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
