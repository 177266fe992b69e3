"""The executor kind: the Executor protocol, what it is handed, and the registry.

An executor decides where the rollouts of a run execute (``--executor NAME``). ``run_suite``
plans the jobs, opens the store, and hands the jobs to the executor with an
:class:`ExecutionContext`; the executor runs them (in this process with
:meth:`ExecutionContext.rollouts`, or elsewhere) and calls ``context.record`` for each
outcome from the calling thread, the store's single writer. Built-ins: ``local`` (a thread
pool) and ``ray`` (Ray actors); third parties add one through the entry-point group
``reliabench.executors``, naming an executor object::

    [project.entry-points."reliabench.executors"]
    serial = "my_package.serial:executor"
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from reliabench.files.untrusted import remove_tree
from reliabench.plugins import Registry
from reliabench.records import TestOutcome
from reliabench.run.artifacts import RolloutArtifacts
from reliabench.run.plan import Job
from reliabench.run.recording import write_rollout_artifacts
from reliabench.run.rollout import Outcome, RolloutRunner
from reliabench.run.settings import RunSettings
from reliabench.sandbox import SandboxBackend
from reliabench.scanners import Scanner
from reliabench.store import RunStore
from reliabench.tasks.suite import Suite
from reliabench.warm.hidden import WarmTests

__all__ = ["BUILTIN_EXECUTORS", "EXECUTORS", "ExecutionContext", "Executor"]


@dataclass(frozen=True, slots=True)
class ExecutionContext:
    """What ``run_suite`` hands an executor for the rollouts still to run.

    Attributes:
        suite: The suite.
        settings: The run's settings (``workers`` slots, ``ray_address``...).
        backend: The sandbox backend of this process.
        scanners: The scanners of this process.
        expected: Task id -> the hidden tests it must report (a missing one counts as failed).
        warm: Warm test workers of this process (None: fresh sandboxed processes).
        store: The run store (only ``record`` writes it).
        stopped: Whether an agent was stopped (its jobs that have not started are skipped).
        record: Store one outcome (None: a skipped job); call it only from the thread that
            called ``Executor.run``: it is the store's single writer.
        stop: Set when the run must stop after the rollouts in flight.
        agents_file: The agents file (for executors whose workers load the agents elsewhere).
    """

    suite: Suite
    settings: RunSettings
    backend: SandboxBackend
    scanners: Sequence[Scanner]
    expected: dict[str, tuple[TestOutcome, ...]]
    warm: WarmTests | None
    store: RunStore
    stopped: Callable[[str], bool]
    record: Callable[[Outcome | None], None]
    stop: threading.Event | None
    agents_file: Path | None = None

    @contextlib.contextmanager
    def rollouts(self) -> Iterator[Callable[[Job, int], Outcome | None]]:
        """Run rollouts in this process: yields ``run_one(job, slot)``.

        ``run_one`` runs one job on sandbox slot ``slot`` (at most one rollout at a time per
        slot, slots ``0 .. settings.workers - 1``) and writes its artifacts; it returns the
        outcome for ``record``, or None when the job's agent was stopped. Several threads may
        call it at once.
        """
        scratch = Path(tempfile.mkdtemp(prefix="reliabench-run-"))
        os.chmod(scratch, 0o711)
        try:
            runner = RolloutRunner(self.settings, self.backend, self.scanners, self.expected,
                                   scratch, self.warm)
            runner.stopped = self.stopped

            def run_one(job: Job, slot: int) -> Outcome | None:
                outcome = runner.run_one(job, slot)
                if outcome is None:
                    return None
                rollout, art = outcome  # in the worker thread: not on the single writer
                rollout = write_rollout_artifacts(self.store, rollout, art)
                return rollout, RolloutArtifacts("", "", "", {}, retests=art.retests, written=True)

            yield run_one
        finally:
            remove_tree(scratch)


@runtime_checkable
class Executor(Protocol):
    """Where a run's rollouts execute.

    Attributes:
        name: The registry name (``--executor NAME``).
    """

    name: str

    def run(self, jobs: Iterable[Job], context: ExecutionContext) -> None:
        """Run every job, recording each outcome with ``context.record``.

        Stop taking new jobs when ``context.stop`` is set; on an exception, record what
        finished and re-raise (a re-run resumes the rest).
        """
        ...


def _is_executor(obj: Any) -> bool:
    return (not isinstance(obj, type) and isinstance(obj, Executor)
            and isinstance(getattr(obj, "name", None), str))


BUILTIN_EXECUTORS = {
    "local": "reliabench.run.executors.local:LOCAL_EXECUTOR",
    "ray": "reliabench.run.executors.ray:RAY_EXECUTOR",
}
"""The built-in executors: name -> ``module:attribute`` of the executor object."""

EXECUTORS: Registry[Executor] = Registry(
    "executors",
    builtins=BUILTIN_EXECUTORS,
    what="executor",
    check=_is_executor,
    expected="an Executor object (a str 'name' and a 'run(jobs, context)' method)",
)
"""The executor registry (entry-point group ``reliabench.executors``: name -> executor)."""
