"""What ``run_suite`` hands an executor: the run's state and the one way to record."""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reliabench.files.untrusted import remove_tree
from reliabench.records import TestOutcome
from reliabench.run.artifacts import RolloutArtifacts
from reliabench.run.environments import TaskEnvironment
from reliabench.run.phase_slots import SlotSource
from reliabench.run.plan import Job
from reliabench.run.recording import write_rollout_artifacts
from reliabench.run.rollout import Outcome, RolloutRunner
from reliabench.run.settings import RunSettings
from reliabench.run.test_paths import TestPaths
from reliabench.scanners import Scanner
from reliabench.store import RunStore
from reliabench.tasks.suite import Suite

__all__ = ["ExecutionContext"]


@dataclass(frozen=True, slots=True)
class ExecutionContext:
    """What ``run_suite`` hands an executor for the rollouts still to run.

    Attributes:
        suite: The suite.
        settings: The run's settings (``workers`` slots, ``executor_options``...).
        environments: Task id -> where the task executes (its backend and prepared spec, in
            this process).
        scanners: The scanners of this process.
        expected: Task id -> the hidden tests it must report (a missing one counts as failed).
        paths: The hidden-test runners of this process (warm test workers, if open).
        store: The run store (only ``record`` writes it).
        stopped: Whether an agent was stopped (its jobs that have not started are skipped).
        record: Store one outcome (None: a skipped job); call it only from the thread that
            called ``Executor.run``: it is the store's single writer.
        stop: Set when the run must stop after the rollouts in flight.
        agents_file: The agents file (for executors whose workers load the agents elsewhere).
    """

    suite: Suite
    settings: RunSettings
    environments: Mapping[str, TaskEnvironment]
    scanners: Sequence[Scanner]
    expected: dict[str, tuple[TestOutcome, ...]]
    paths: TestPaths
    store: RunStore
    stopped: Callable[[str], bool]
    record: Callable[[Outcome | None], None]
    stop: threading.Event | None
    agents_file: Path | None = None

    @contextlib.contextmanager
    def rollouts(self) -> Iterator[Callable[[Job, int | SlotSource], Outcome | None]]:
        """Run rollouts in this process: yields ``run_one(job, slot)``.

        ``run_one`` runs one job on sandbox slot ``slot`` (at most one rollout at a time per
        slot, slots ``0 .. settings.workers - 1``), or with its phases on the slots of a
        :class:`~reliabench.run.phase_slots.PhaseSlots` (agent phases apart from test phases),
        and writes its artifacts; it returns the outcome for ``record``, or None when the job's
        agent was stopped. Several threads may call it at once.
        """
        scratch = Path(tempfile.mkdtemp(prefix="reliabench-run-"))
        os.chmod(scratch, 0o711)
        try:
            runner = RolloutRunner(self.settings, self.environments, self.paths, self.scanners,
                                   self.expected, scratch)
            runner.stopped = self.stopped

            def run_one(job: Job, slot: int | SlotSource) -> Outcome | None:
                outcome = runner.run_one(job, slot)
                if outcome is None:
                    return None
                rollout, art = outcome  # in the worker thread: not on the single writer
                rollout = write_rollout_artifacts(self.store, rollout, art)
                return rollout, RolloutArtifacts("", "", "", {}, retests=art.retests, written=True)

            yield run_one
        finally:
            remove_tree(scratch)
