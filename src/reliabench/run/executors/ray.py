"""The Ray executor: one Ray actor per sandbox slot; records and artifacts go back to the driver."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reliabench.errors import InvalidArgumentError, MissingExtraError, SandboxError
from reliabench.records import TestOutcome
from reliabench.run.executors.context import ExecutionContext
from reliabench.run.plan import Job
from reliabench.run.rollout import Outcome, RolloutRunner
from reliabench.run.settings import RunSettings
from reliabench.sandbox import get_backend
from reliabench.scanners import get_scanner
from reliabench.warm.hidden import open_test_workers

__all__ = ["RAY_EXECUTOR", "RayExecutor", "RayRolloutWorker", "WorkerSpec", "run_ray"]


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """What a Ray worker needs to rebuild the run's state on its node (all picklable)."""

    suite_root: str
    suite_hash: str
    agents_file: str
    settings: RunSettings
    expected: dict[str, tuple[TestOutcome, ...]]


class RayRolloutWorker:
    """A Ray actor body: one sandbox slot, the suite and agents loaded on its node.

    The suite and the agents file must be at the same paths on every node (a shared file
    system or an identical checkout), with reliabench installed; the suite's content hash is
    checked. Results (record + artifacts) go back to the driver, the store's only writer.
    """

    def __init__(self, spec: WorkerSpec, slot: int) -> None:
        from reliabench.agents.config import load_agents
        from reliabench.tasks.suite import load_suite

        self.suite = load_suite(spec.suite_root)
        if self.suite.content_hash != spec.suite_hash:
            raise SandboxError(f"the suite at {spec.suite_root} differs on this node "
                               "(content hash): give every node the same suite")
        self.agents = {a.name: a for a in load_agents(spec.agents_file)}
        scratch = Path(tempfile.mkdtemp(prefix="reliabench-ray-"))
        os.chmod(scratch, 0o711)
        self.executor = RolloutRunner(spec.settings, get_backend(spec.settings.sandbox),
                                  [get_scanner(n) for n in spec.settings.scanners], spec.expected, scratch,
                                  open_test_workers(spec.settings.test_workers))
        self.slot = slot

    def run(self, task_id: str, agent: str, rollout: int, seed: int) -> Outcome | None:
        """Run one rollout on this worker's slot."""
        job = Job(self.suite.task(task_id), self.agents[agent], rollout, seed)
        return self.executor.run_one(job, self.slot)


class RayExecutor:
    """``ray``: Ray actors, one per worker slot, on a local or remote cluster (``ray`` extra)."""

    name = "ray"

    def run(self, jobs: Iterable[Job], context: ExecutionContext) -> None:
        """Run ``jobs`` with :func:`run_ray` (see :class:`~reliabench.run.executors.Executor`).

        Raises:
            InvalidArgumentError: no agents file (the actors load the agents themselves).
            MissingExtraError: Ray is not installed.
        """
        if context.agents_file is None:
            raise InvalidArgumentError("executor='ray' needs agents_file (workers load the agents)")
        if context.warm is not None:
            context.warm.close()  # each Ray actor opens its own
        spec = WorkerSpec(str(context.suite.root.resolve()), context.suite.content_hash,
                          str(context.agents_file.resolve()), context.settings, context.expected)
        run_ray(jobs, context.settings, spec, context.record, context.stop)


RAY_EXECUTOR = RayExecutor()


def run_ray(jobs: Iterable[Job], settings: RunSettings, spec: WorkerSpec,
             record: Callable[[Outcome | None], None], stop: threading.Event | None) -> None:
    """Run ``jobs`` on Ray actors (one per worker slot), two rollouts in flight per actor."""
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "the Ray executor (--executor ray)") from None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    started = not ray.is_initialized()
    if started:
        ray.init(address=settings.ray_address,
                 num_cpus=None if settings.ray_address else settings.workers,
                 include_dashboard=False, log_to_driver=False)
    actor_cls: Any = ray.remote(num_cpus=1)(RayRolloutWorker)
    actors: list[Any] = [actor_cls.remote(spec, slot) for slot in range(settings.workers)]
    inflight: dict[Any, int] = {}
    jobs_left = iter(jobs)

    def submit(i: int) -> None:
        if stop is not None and stop.is_set():
            return
        job = next(jobs_left, None)
        if job is not None:
            ref = actors[i].run.remote(job.task.id, job.agent.name, job.rollout, job.seed)
            inflight[ref] = i

    try:
        for i in range(len(actors)):
            submit(i)
            submit(i)
        while inflight:
            ready, _ = ray.wait(list(inflight), num_returns=1)
            i = inflight.pop(ready[0])
            record(ray.get(ready[0]))
            submit(i)
    except BaseException:
        # record what already finished; the rest is abandoned (resume reruns it)
        done, _ = ray.wait(list(inflight), num_returns=len(inflight), timeout=0) if inflight else ([], [])
        for ref in done:
            inflight.pop(ref, None)
            try:
                outcome = ray.get(ref)
            except Exception:
                continue
            record(outcome)
        raise
    finally:
        for actor in actors:
            ray.kill(actor)
        if started:
            ray.shutdown()
