"""The Ray executor: one Ray actor per sandbox slot; records and artifacts go back to the driver.

The driver (the process that runs ``reliabench run``) packs the suite and the agents' files
once (:mod:`reliabench.run.executors.ray_bundle`) and puts them in Ray's object store; each
actor unpacks them into a private temporary folder on its node, checks them (every file's
sha256, the suite's content hash, the reliabench and Python versions, the sandbox backend and
the agents' environment variables) and refuses to start with a one-line error naming what
differs. Nothing has to be copied to the nodes by hand; reliabench (with the extras the run
uses) and bubblewrap must be installed on each. Container images are not shipped: each actor
prepares every task's environment on its node (``backend.prepare``: the image there, read by
its digest) and refuses to take any rollout, in one line naming the image, when the node does
not have the image the driver prepared, by digest -- no rollout of such a node is run or
scored.

Actors are spread over the cluster's nodes (soft node affinity, as many per node as it has
CPUs) and restarted by Ray on another node when theirs dies. A rollout whose actor died is
submitted again (at most :data:`MAX_ATTEMPTS` times) and recorded once, by the driver, the
store's only writer; it is never recorded as the agent's failure. When no actor is left for
:data:`RESTART_WAIT_S` seconds, the run stops with :class:`~reliabench.errors.WorkersLostError`
and the same command resumes it.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import platform
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reliabench.errors import (
    InvalidArgumentError,
    MissingExtraError,
    PreflightError,
    ReliabenchError,
    SandboxError,
    UsageError,
    WorkersLostError,
)
from reliabench.meta_keys import RAY_ATTEMPTS, RAY_NODE, RAY_NODE_ID
from reliabench.records import TestOutcome
from reliabench.run.environments import TaskEnvironment
from reliabench.run.executors.context import ExecutionContext
from reliabench.run.executors.ray_bundle import BundleManifest, pack_run_bundle, unpack_run_bundle
from reliabench.run.plan import Job
from reliabench.run.rollout import Outcome, RolloutRunner
from reliabench.run.settings import RunSettings
from reliabench.tasks.suite import Suite

__all__ = ["MAX_ATTEMPTS", "RAY_EXECUTOR", "RESTART_WAIT_S", "EnvironmentKey", "RayExecutor", "RayInputs",
           "RayRolloutWorker", "WorkerSpec", "WorkerStatus", "check_environments", "environment_keys",
           "run_ray"]

MAX_ATTEMPTS = 3
"""Submissions of one rollout whose actor died before it is left for a resume."""

RESTART_WAIT_S = 120.0
"""How long the driver waits for a lost actor to come back when no actor is left."""

logger = logging.getLogger(__name__)

_IN_FLIGHT = 2  # rollouts queued per actor: the next one starts as soon as one finishes
_PING_RETRY_S = 1.0


def _versions() -> dict[str, str]:
    import importlib.metadata

    try:
        mine = importlib.metadata.version("reliabench")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        mine = "unknown"
    return {"reliabench": mine, "python": platform.python_version()}


@dataclass(frozen=True, slots=True)
class EnvironmentKey:
    """Where a task runs, as a node must reproduce it: the backend and the image's digest.

    Attributes:
        backend: The backend's name.
        image: The image reference (None on the host).
        digest: The image's digest (None on the host).
    """

    backend: str
    image: str | None = None
    digest: str | None = None


def environment_keys(environments: Mapping[str, TaskEnvironment]) -> dict[str, EnvironmentKey]:
    """What each task's environment is, to compare across nodes."""
    out = {}
    for task_id, where in environments.items():
        image = where.prepared.image
        out[task_id] = EnvironmentKey(where.backend.name, image.reference if image else None,
                                      image.digest if image else None)
    return out


def check_environments(here: Mapping[str, EnvironmentKey],
                       driver: Mapping[str, EnvironmentKey]) -> str | None:
    """Why this node cannot run the driver's tasks as the driver prepared them (one line), or None."""
    for task_id, want in sorted(driver.items()):
        got = here.get(task_id)
        if got is None:  # pragma: no cover - both sides prepare the same tasks
            return f"task {task_id} was not prepared here"
        if got.backend != want.backend:
            return (f"task {task_id}: the sandbox backend here is {got.backend!r}, the driver's "
                    f"{want.backend!r}: install the same on every node")
        if want.digest is not None and got.digest != want.digest:
            return (f"task {task_id}: image {want.image} is {got.digest} here, the driver's is "
                    f"{want.digest}: load the same image on every node")
    return None


@dataclass(frozen=True, slots=True)
class RayInputs:
    """What the driver hands the Ray executor besides the jobs and the settings.

    Attributes:
        suite: The run's suite (shipped to the nodes).
        agents_file: The agents file the run's agents come from (shipped with its files).
        expected: Each task's expected hidden-test outcomes (computed once, on the driver).
        environments: Task id -> where it runs on the driver (:func:`environment_keys`);
            every node must give each task the same backend and image digest.
    """

    suite: Suite
    agents_file: Path
    expected: dict[str, tuple[TestOutcome, ...]]
    environments: dict[str, EnvironmentKey]


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """What a Ray worker needs to rebuild the run's state on its node (all picklable).

    The shipped files themselves travel separately (one object in Ray's object store).
    """

    manifest: BundleManifest
    settings: RunSettings
    expected: dict[str, tuple[TestOutcome, ...]]
    environments: dict[str, EnvironmentKey]
    versions: dict[str, str]


@dataclass(frozen=True, slots=True)
class WorkerStatus:
    """An actor's answer to ``ready()``.

    Attributes:
        node_ip: Its node's IP address.
        node_id: Its node's Ray id.
        problem: Why it cannot run rollouts (one line), or None.
        usage: The problem is the user's set-up (exit 2), not the infrastructure (exit 3).
    """

    node_ip: str
    node_id: str
    problem: str | None = None
    usage: bool = False


class RayRolloutWorker:
    """A Ray actor body: one sandbox slot, the suite and agents unpacked on its node.

    Construction never raises: a problem (files that differ after unpacking, other versions,
    another sandbox backend, an unset variable, an agents file that cannot load there) is
    kept and returned by :meth:`ready`, so that the driver reports it in one line.
    """

    def __init__(self, spec: WorkerSpec, data: bytes, slot: int) -> None:
        import ray

        self.slot = slot
        self.node_ip: str = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call,unused-ignore]
        self.node_id = ray.get_runtime_context().get_node_id()
        self.root: Path | None = None
        self.runner: RolloutRunner | None = None
        self.problem: str | None = None
        self.usage = False
        try:
            self._setup(spec, data)
        except ReliabenchError as exc:
            self.problem, self.usage = str(exc).splitlines()[0], isinstance(exc, UsageError)
        except Exception as exc:  # reported to the driver, not lost in a Ray log
            self.problem = f"{type(exc).__name__}: {exc}".splitlines()[0]

    def _setup(self, spec: WorkerSpec, data: bytes) -> None:
        from reliabench.agents.config import load_agents
        from reliabench.agents.preflight import check_agents
        from reliabench.run.environments import task_environments
        from reliabench.run.test_paths import TestPaths
        from reliabench.scanners import get_scanner
        from reliabench.tasks.suite import load_suite

        here = _versions()
        if here != spec.versions:
            raise UsageError(
                f"runs reliabench {here['reliabench']} on Python {here['python']}, the driver "
                f"reliabench {spec.versions['reliabench']} on Python {spec.versions['python']}: "
                "install the same versions on every node")
        self.root = Path(tempfile.mkdtemp(prefix="reliabench-ray-run-"))
        unpacked = unpack_run_bundle(spec.manifest, data, self.root / "files")
        suite = load_suite(unpacked.suite_root)
        if suite.content_hash != spec.manifest.suite_hash:
            raise SandboxError(f"the suite unpacked here has content hash {suite.content_hash[:12]}, "
                               f"the driver's {spec.manifest.suite_hash[:12]}")
        try:
            agents = load_agents(unpacked.agents_file, suite=suite)
        except UsageError as exc:
            missing = ", ".join(spec.manifest.not_shipped)
            raise UsageError(f"{exc} (not shipped, needed on every node: {missing or 'nothing'})"
                             ) from None
        problems = check_agents(agents, network=False)
        if problems:
            raise UsageError(f"{problems[0].message} (workers see the environment of the `ray start` "
                             "that started their node: set it there)")
        tasks = [suite.task(t) for t in sorted(spec.environments)]
        try:
            environments = task_environments(spec.settings.sandbox, tasks)
        except PreflightError as exc:  # an image the driver has and this node has not, a runtime
            raise SandboxError(str(exc)) from None
        problem = check_environments(environment_keys(environments), spec.environments)
        if problem is not None:
            raise SandboxError(problem)
        self.agents = {a.name: a for a in agents}
        self.suite = suite
        scratch = self.root / "scratch"
        scratch.mkdir()
        os.chmod(self.root, 0o711)
        os.chmod(scratch, 0o711)
        paths = TestPaths.open(spec.settings.test_workers, environments)
        self.runner = RolloutRunner(spec.settings, environments, paths,
                                    [get_scanner(n) for n in spec.settings.scanners], spec.expected,
                                    scratch)

    def ready(self) -> WorkerStatus:
        """Where this actor runs, and why it cannot run rollouts (None: it can)."""
        return WorkerStatus(self.node_ip, self.node_id, self.problem, self.usage)

    def run(self, task_id: str, agent: str, rollout: int, seed: int) -> Outcome | None:
        """Run one rollout on this worker's slot (its record notes the node in ``meta``)."""
        if self.runner is None:
            raise SandboxError(f"Ray worker on {self.node_ip} is not set up: {self.problem}")
        job = Job(self.suite.task(task_id), self.agents[agent], rollout, seed)
        outcome = self.runner.run_one(job, self.slot)
        if outcome is None:
            return None
        record, art = outcome
        return replace(record, meta={**record.meta, RAY_NODE: self.node_ip,
                                     RAY_NODE_ID: self.node_id}), art

    def close(self) -> None:
        """Close the warm test workers and remove the unpacked files and the scratch folder."""
        if self.runner is not None:
            with contextlib.suppress(Exception):
                self.runner.paths.close()
        if self.root is not None:
            from reliabench.files.untrusted import remove_tree

            remove_tree(self.root)


def _placements(ray: Any, workers: int) -> list[str | None]:
    """A node id per slot: round-robin over alive nodes, at most one slot per CPU of each."""
    nodes = sorted((n for n in ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0) >= 1),
                   key=lambda n: str(n["NodeID"]))
    room = {str(n["NodeID"]): int(n["Resources"]["CPU"]) for n in nodes}
    out: list[str | None] = []
    while len(out) < workers and any(room.values()):
        for n in nodes:
            node = str(n["NodeID"])
            if room[node] > 0 and len(out) < workers:
                out.append(node)
                room[node] -= 1
    return out + [None] * (workers - len(out))


class _Pool:
    """The driver's view of its actors: which are ready, how many rollouts each holds."""

    def __init__(self, ray: Any, actors: list[Any]) -> None:
        self.ray = ray
        self.actors = actors
        self.live: set[int] = set()
        self.load = [0] * len(actors)
        self.pings: dict[Any, int] = {}
        self.retry_at: dict[int, float] = {}
        self.lost_at: dict[int, float] = {}
        self.started = time.monotonic()
        for i in range(len(actors)):
            self.ping(i)

    def ping(self, i: int) -> None:
        self.pings[self.actors[i].ready.remote()] = i

    def lose(self, i: int) -> None:
        """Actor ``i`` died or cannot be reached: no work until it answers a ping again."""
        if i in self.live:
            self.live.discard(i)
            self.lost_at[i] = time.monotonic()
            self.ping(i)

    def free(self) -> int | None:
        ok = [i for i in self.live if self.load[i] < _IN_FLIGHT]
        return min(ok, key=lambda i: (self.load[i], i)) if ok else None

    def retry_pings(self) -> None:
        now = time.monotonic()
        for i, at in list(self.retry_at.items()):
            if at <= now:
                del self.retry_at[i]
                self.ping(i)

    def waiting(self) -> bool:
        """Some actor may still become ready."""
        return bool(self.pings or self.retry_at)


def _lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    e = ray.exceptions
    return (e.RayActorError, e.ObjectLostError, e.WorkerCrashedError, e.NodeDiedError,
            e.ActorUnschedulableError, e.LocalRayletDiedError)


def _key(job: Job) -> tuple[str, str, int]:
    return job.task.id, job.agent.name, job.rollout


def _describe(job: Job) -> str:
    return "/".join(map(str, _key(job)))


class RayExecutor:
    """``ray``: Ray actors, one per worker slot, on a local or remote cluster (``ray`` extra)."""

    name = "ray"

    def run(self, jobs: Iterable[Job], context: ExecutionContext) -> None:
        """Run ``jobs`` with :func:`run_ray` (see :class:`~reliabench.run.executors.Executor`).

        Raises:
            InvalidArgumentError: no agents file (it is shipped to the nodes with its files).
            MissingExtraError: Ray is not installed.
        """
        if context.agents_file is None:
            raise InvalidArgumentError("executor='ray' needs agents_file (it is shipped to the workers)")
        context.paths.close()  # each Ray actor opens its own warm workers
        run_ray(jobs, context.settings,
                RayInputs(context.suite, Path(context.agents_file), context.expected,
                          environment_keys(context.environments)),
                context.record, context.stop)


RAY_EXECUTOR = RayExecutor()
"""The ``ray`` executor object."""


def run_ray(jobs: Iterable[Job], settings: RunSettings, inputs: RayInputs,
            record: Callable[[Outcome | None], None], stop: threading.Event | None) -> None:
    """Run ``jobs`` on Ray actors (one per worker slot), two rollouts queued per actor.

    Raises:
        MissingExtraError: the ``ray`` extra is not installed.
        UsageError: the files cannot be shipped, or a node's set-up differs (versions, a path
            the agents need, an unset variable).
        SandboxError: a node's files differ after unpacking, or its sandbox backend differs.
        WorkersLostError: actors died and did not come back, or a rollout lost its actor
            :data:`MAX_ATTEMPTS` times; the rollouts that finished are recorded.
    """
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "the Ray executor (--executor ray)") from None
    bundle = pack_run_bundle(inputs.suite, inputs.agents_file, settings.agents_config_hash)
    spec = WorkerSpec(bundle.manifest, settings, inputs.expected, inputs.environments, _versions())
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    started = not ray.is_initialized()
    if started:
        # "local": a private cluster, never one that happens to run on this machine
        address = settings.executor_option("ray", "address")  # [executors.ray] address
        ray.init(address=address or "local", num_cpus=None if address else settings.workers,
                 include_dashboard=False, log_to_driver=False)
    actors: list[Any] = []
    pool: _Pool | None = None
    try:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        data_ref = ray.put(bundle.data)
        del bundle
        actor_cls: Any = ray.remote(num_cpus=1, max_restarts=MAX_ATTEMPTS, max_task_retries=0)(
            RayRolloutWorker)
        for slot, node in enumerate(_placements(ray, settings.workers)):
            opts = {} if node is None else {
                "scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=True)}
            actors.append(actor_cls.options(**opts).remote(spec, data_ref, slot))
        pool = _Pool(ray, actors)
        _drive(ray, pool, iter(jobs), record, stop)
    finally:
        live = [actors[i] for i in sorted(pool.live)] if pool is not None else []
        if live:  # remove their unpacked files (an actor that never started has none)
            with contextlib.suppress(Exception):
                ray.wait([a.close.remote() for a in live], num_returns=len(live), timeout=10)
            for actor in actors:
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)
        if started:
            ray.shutdown()


def _drive(ray: Any, pool: _Pool, jobs_left: Iterator[Job],
           record: Callable[[Outcome | None], None], stop: threading.Event | None) -> None:
    """Feed ready actors, record results, resubmit the rollouts of actors that died."""
    lost_errors = _lost_errors(ray)
    inflight: dict[Any, tuple[int, Job]] = {}
    again: collections.deque[Job] = collections.deque()
    attempts: collections.Counter[tuple[str, str, int]] = collections.Counter()
    recorded: set[tuple[str, str, int]] = set()
    given_up: list[Job] = []
    exhausted = False
    last_error = ""
    alone_since: float | None = None

    def next_job() -> Job | None:
        nonlocal exhausted
        if again:
            return again.popleft()
        job = None if exhausted else next(jobs_left, None)
        exhausted = job is None
        return job

    try:
        while True:
            stopping = stop is not None and stop.is_set()
            while not stopping and (i := pool.free()) is not None:
                job = next_job()
                if job is None:
                    break
                ref = pool.actors[i].run.remote(job.task.id, job.agent.name, job.rollout, job.seed)
                inflight[ref] = (i, job)
                pool.load[i] += 1
            pool.retry_pings()
            if not inflight and (stopping or (exhausted and not again)):
                break
            if not pool.live:
                if not pool.waiting() and not inflight:
                    break  # every actor is gone for good
                alone_since = alone_since or time.monotonic()
                if time.monotonic() - alone_since > RESTART_WAIT_S:
                    break
            else:
                alone_since = None
            waits = list(pool.pings) + list(inflight)  # pings first: a ready actor gets work sooner
            if not waits:  # only pings to retry: wait for their time
                time.sleep(_PING_RETRY_S)
                continue
            ready, _ = ray.wait(waits, num_returns=1, timeout=_PING_RETRY_S)
            for ref in ready:
                if ref in pool.pings:
                    i = pool.pings.pop(ref)
                    try:
                        status: WorkerStatus = ray.get(ref)
                    except lost_errors as exc:  # restarting, or dead: ask again for a while
                        last_error = str(exc).splitlines()[0]
                        if time.monotonic() - pool.lost_at.get(i, pool.started) < RESTART_WAIT_S:
                            pool.retry_at[i] = time.monotonic() + _PING_RETRY_S
                        continue
                    if status.problem is not None:
                        cls = UsageError if status.usage else SandboxError
                        raise cls(f"Ray worker on node {status.node_ip}: {status.problem}")
                    if i in pool.lost_at:
                        logger.warning("Ray worker %d is back, on node %s", i, status.node_ip)
                    pool.live.add(i)
                    pool.lost_at.pop(i, None)
                    continue
                i, job = inflight.pop(ref)
                pool.load[i] -= 1
                try:
                    outcome = ray.get(ref)
                except lost_errors as exc:  # the harness's failure: run it again, elsewhere
                    last_error = str(exc).splitlines()[0]
                    pool.lose(i)
                    attempts[_key(job)] += 1
                    if attempts[_key(job)] >= MAX_ATTEMPTS:
                        given_up.append(job)
                        logger.warning("rollout %s lost its Ray worker %d times: left for a resume",
                                       _describe(job), MAX_ATTEMPTS)
                    else:
                        again.appendleft(job)
                        logger.warning("Ray worker %d lost (%s): rollout %s submitted again",
                                       i, last_error, _describe(job))
                    continue
                if _key(job) in recorded:  # pragma: no cover - each job is in flight at most once
                    continue
                recorded.add(_key(job))
                if outcome is not None and attempts[_key(job)]:
                    rollout, art = outcome
                    outcome = replace(rollout, meta={**rollout.meta,
                                                     RAY_ATTEMPTS: attempts[_key(job)] + 1}), art
                record(outcome)
    except BaseException:
        # record what already finished; the rest is abandoned (resume reruns it)
        done, _ = (ray.wait(list(inflight), num_returns=len(inflight), timeout=0)
                   if inflight else ([], []))
        for ref in done:
            _, job = inflight.pop(ref)
            try:
                outcome = ray.get(ref)
            except Exception:  # not finished cleanly: left for the resume
                continue
            if _key(job) not in recorded:
                recorded.add(_key(job))
                record(outcome)
        raise
    if stop is not None and stop.is_set():
        return  # asked to stop: what did not run is left for the resume, as with the local executor
    not_run = (len(inflight) + len(again) + len(given_up)
               + (0 if exhausted else sum(1 for _ in jobs_left)))
    if not_run:
        what = (f"; rollout {_describe(given_up[0])} lost its worker {MAX_ATTEMPTS} times"
                if given_up else "")
        raise WorkersLostError(
            f"{not_run} rollout(s) not run: the Ray workers were lost ({last_error or 'no worker started'})"
            f"{what}. The finished rollouts are recorded; run the same command again to resume")
