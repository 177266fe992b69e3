"""Run tasks x agents x n rollouts: agent, scan, hidden tests, record -- resumably.

Each rollout is independent: a fresh copy of the task's starter workspace, a seed derived
from (run seed, task, agent, rollout), the agent's edit, a scan of what the agent changed, and
the hidden tests in a fresh sandboxed process. Workers do the work, each with its own sandbox
slot and uid: threads of this process (``executor="local"``) or Ray actors on a local or
remote cluster (``executor="ray"``, the ``ray`` extra). The calling thread is the store's
single writer: it writes each rollout's artifacts and records it in one transaction as soon
as it is done, so an interruption loses nothing that was recorded and a re-run with the same
arguments does only the missing rollouts.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import platform
import queue
import shutil
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from reliabench.agents.base import Agent, AgentRequest, AgentResult
from reliabench.agents.infra import InfraStopWatch, backoff_delay, backoff_scale, is_transient
from reliabench.errors import InfraStopError, InvalidArgumentError, MissingExtraError, SandboxError
from reliabench.records import Cost, Finding, Rollout, ScanError, TestOutcome
from reliabench.sandbox import Limits, SandboxBackend, get_backend
from reliabench.scanners import Scanner, changed_files, get_scanner, workspace_diff
from reliabench.stdio_tests import expected_stdio_tests, run_stdio_tests
from reliabench.store import RunStore
from reliabench.tasks.suite import Suite, Task, materialize
from reliabench.testing import HiddenTestRun, collect_hidden_tests, run_hidden_tests
from reliabench.warm.hidden import WarmTests, open_test_workers
from reliabench.warm.plain_tests import collect_plain_tests

__all__ = [
    "ProgressEvent",
    "RayRolloutWorker",
    "RolloutArtifacts",
    "RunSettings",
    "RunSummary",
    "derive_seed",
    "run_suite",
    "scan_workspace",
    "snapshot_files",
    "write_artifacts",
]

INFRA_RETRIES = 2
_PACKAGES = ("reliabench", "numpy", "scipy", "pytest", "bandit", "semgrep", "openai")


def derive_seed(run_seed: int, task_id: str, agent: str, rollout: int) -> int:
    """A per-rollout seed from (run seed, task, agent, rollout): stable across runs and machines.

    Examples:
        >>> derive_seed(0, "t", "a", 1) == derive_seed(0, "t", "a", 1) != derive_seed(0, "t", "a", 2)
        True
    """
    h = hashlib.sha256(f"{run_seed}\0{task_id}\0{agent}\0{rollout}".encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


@dataclass(frozen=True, slots=True)
class RunSettings:
    """Everything that defines a run besides the suite and the agents.

    Attributes:
        n: Rollouts per (task, agent).
        seed: The run seed.
        workers: Parallel rollouts.
        sandbox: Backend name (``auto``, ``bubblewrap``, ``namespaces``, ``none``).
        scanners: Scanner names run on what each agent changed.
        limits: Resource limits of the hidden-test process (wall time comes from the task).
        agents_config_hash: Hash of the agents file (part of the run's identity).
        test_timeout_s: Cap on each task's ``timeout_s`` for the hidden tests (None: no cap).
        security_policy: A security policy (threshold, allow/deny lists) kept with the run and
            applied when it is scored; analysis-time only, so not part of the run's identity.
        executor: ``local`` (a thread pool on this machine) or ``ray`` (Ray actors, one per
            worker slot, on a local or remote cluster); not part of the run's identity.
        ray_address: Address of an existing Ray cluster (None: start a local one).
        retest: Re-run each rollout's hidden tests this many times on its unchanged files
            (``reliabench.retest``; harness noise); not part of the run's identity.
        test_workers: ``auto`` (warm test workers where they work, else fresh sandboxed
            processes), ``warm`` or ``fresh``; not part of the run's identity (verdicts are
            the same), each rollout records the path in ``meta["test_path"]``.
    """

    n: int
    seed: int = 0
    workers: int = 1
    sandbox: str = "auto"
    scanners: tuple[str, ...] = ("bandit",)
    limits: Limits = field(default_factory=Limits)
    agents_config_hash: str = ""
    test_timeout_s: float | None = None
    security_policy: dict[str, Any] | None = None
    executor: str = "local"
    ray_address: str | None = None
    retest: int = 0
    test_workers: str = "auto"

    def __post_init__(self) -> None:
        if self.executor not in ("local", "ray"):
            raise InvalidArgumentError(f"executor must be 'local' or 'ray', got {self.executor!r}")
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise InvalidArgumentError(f"n must be an integer >= 1, got {self.n!r}")
        if self.workers < 1:
            raise InvalidArgumentError(f"workers must be >= 1, got {self.workers!r}")


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    """Sent after each recorded rollout."""

    done: int
    total: int
    passed: int
    rollout: Rollout


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a call to ``run_suite`` did."""

    run_dir: Path
    resumed: bool
    planned: int
    skipped: int
    executed: int
    passed: int
    infra_errors: int
    isolation: str
    seconds: float
    test_path: str = ""


@dataclass(frozen=True, slots=True)
class _Job:
    task: Task
    agent: Agent
    rollout: int
    seed: int


def _package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def scan_workspace(
    scanners: Sequence[Scanner], starter: Path, workspace: Path
) -> tuple[tuple[Finding, ...], tuple[ScanError, ...], tuple[str, ...]]:
    """Scan what the agent changed in ``workspace`` relative to ``starter``.

    Returns:
        ``(findings, scan_errors, changed_files)``; findings only on changed lines.
    """
    changes = changed_files(starter, workspace)
    files = list(changes.files)
    findings: list[Finding] = []
    errors: list[ScanError] = []
    if files:
        for scanner in scanners:
            result = scanner.scan(workspace, files, changes.changed_lines)
            findings += result.findings
            errors += result.errors
    touched = sorted({*changes.added, *changes.modified, *changes.deleted})
    return tuple(findings), tuple(errors), tuple(touched)


MAX_SNAPSHOT_BYTES = 1 << 20  # per file kept under artifacts/.../files/


def snapshot_files(workspace: Path, rels: Sequence[str]) -> dict[str, bytes]:
    """The agent-written files to keep for re-scanning (regular files up to 1 MiB each)."""
    out: dict[str, bytes] = {}
    for rel in rels:
        path = workspace / rel
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_SNAPSHOT_BYTES:
            out[rel] = path.read_bytes()
    return out


@dataclass(frozen=True, slots=True)
class RolloutArtifacts:
    """What is kept beside a rollout's record under ``RUN/artifacts/<task>/<agent>/<rollout>/``.

    Built by the worker and written by the driver (the store's single writer), so workers
    on other machines need no access to the run directory.
    """

    agent_log: str
    diff: str
    test_log: str
    files: dict[str, bytes]
    retests: tuple[Any, ...] = ()
    written: bool = False  # a worker thread already wrote the files (what is left: retests)


def write_artifacts(adir: Path, art: RolloutArtifacts) -> None:
    """Write (replace) one rollout's artifacts."""
    if adir.exists():
        shutil.rmtree(adir)
    adir.mkdir(parents=True)
    (adir / "agent.log").write_text(art.agent_log, encoding="utf-8", errors="replace")
    (adir / "diff.patch").write_text(art.diff, encoding="utf-8", errors="replace")
    (adir / "tests.log").write_text(art.test_log, encoding="utf-8", errors="replace")
    for rel, data in art.files.items():
        target = adir / "files" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


_Outcome = tuple[Rollout, RolloutArtifacts]


class _Executor:
    """Runs single rollouts from shared, read-only state; the caller chooses the sandbox slot."""

    def __init__(self, settings: RunSettings, backend: SandboxBackend,
                 scanners: Sequence[Scanner], expected: dict[str, tuple[TestOutcome, ...]],
                 scratch: Path, warm: WarmTests | None = None) -> None:
        self.settings = settings
        self.warm = warm
        self.backend = backend
        self.scanners = scanners
        self.expected = expected
        self.scratch = scratch
        self.stopped: Callable[[str], bool] = lambda agent: False
        self.backoff_scale = backoff_scale()

    def _call_agent(self, job: _Job, workspace: Path, prompt_file: Path,
                    slot: int) -> tuple[AgentResult, float]:
        request = AgentRequest(
            task_id=job.task.id, prompt=job.task.prompt, workspace=workspace, seed=job.seed,
            rollout=job.rollout, timeout_s=job.task.timeout_s * 10, feedback_dir=job.task.feedback_dir,
            solution_dir=job.task.solution_dir if job.agent.simulated else None,
            variants=tuple((v.name, v.dir) for v in job.task.variants) if job.agent.simulated else (),
            prompt_file=prompt_file,
            slot=slot,
        )
        t0 = time.perf_counter()
        try:
            result = job.agent.run(request)
        except Exception:
            result = AgentResult(status="agent_error", log="agent raised:\n" + traceback.format_exc())
        return result, time.perf_counter() - t0

    def run_one(self, job: _Job, slot: int) -> _Outcome | None:
        """One rollout, retried on transient infrastructure failures.

        Up to ``INFRA_RETRIES`` retries, with exponential back-off
        (:func:`reliabench.agents.infra.backoff_delay`). Returns None, without running
        anything, when the job's agent was stopped early.
        """
        if self.stopped(job.agent.name):
            return None
        attempts = 0
        while True:
            rollout, art = self._attempt(job, slot)
            attempts += 1
            reason = rollout.meta.get("infra_reason")
            if (rollout.status != "infra_error" or attempts > INFRA_RETRIES
                    or not is_transient(reason) or self.stopped(job.agent.name)):
                break
            time.sleep(backoff_delay(attempts) * self.backoff_scale)
        if rollout.status == "infra_error" and attempts > 1:
            rollout = replace(rollout, meta={**rollout.meta, "infra_attempts": attempts})
        return rollout, art

    def _attempt(self, job: _Job, slot: int) -> _Outcome:
        tmp = Path(tempfile.mkdtemp(prefix="rollout-", dir=self.scratch))
        try:
            os.chmod(tmp, 0o711)
            workspace = tmp / "workspace"
            materialize(workspace, [job.task.workspace_dir])
            prompt_file = tmp / "prompt.md"
            prompt_file.write_text(job.task.prompt, encoding="utf-8")
            os.chmod(prompt_file, 0o644)
            result, agent_seconds = self._call_agent(job, workspace, prompt_file, slot)
            meta: dict[str, Any] = {"seed": job.seed, "agent_kind": job.agent.kind, **result.meta}
            if result.status == "infra_error":  # the agent produced nothing: no tests
                meta.setdefault("infra_reason", "agent_infra")
                return self._record(job, "infra_error", (), meta, result, agent_seconds, None, (), (), "")
            findings, scan_errors, changed = scan_workspace(self.scanners, job.task.workspace_dir, workspace)
            files = snapshot_files(workspace, changed)
            meta["changed_files"] = list(changed)
            meta["deleted_files"] = [f for f in changed if not os.path.lexists(workspace / f)]
            meta["scanned"] = [s.name for s in self.scanners]
            diff = workspace_diff(job.task.workspace_dir, workspace)
            status = result.status
            if status == "completed" and not changed:
                status = "no_change"
            wall = job.task.timeout_s
            if self.settings.test_timeout_s is not None:
                wall = min(wall, self.settings.test_timeout_s)
            limits = replace(self.settings.limits, wall_s=wall, cpu_s=wall)
            meta["test_path"] = "fresh" if self.warm is None else "warm"
            meta["test_runner"] = job.task.test_runner if self.warm is not None else "pytest"
            try:
                if job.task.stdio is not None:  # stdin/stdout cases, judged outside the sandbox
                    meta["test_path"] = meta["test_runner"] = "stdio"
                    hidden = run_stdio_tests(workspace, job.task.stdio, timeout_s=wall, backend=self.backend,
                                             limits=limits, slot=slot)
                else:
                    hidden = run_hidden_tests(workspace, job.task.tests_dir,
                                              expected=self.expected[job.task.id],
                                              backend=self.backend, limits=limits, slot=slot,
                                              starter=job.task.workspace_dir, worker=self.warm,
                                              test_runner=job.task.test_runner)
            except SandboxError as exc:
                meta["reason"] = f"sandbox failed: {exc}"
                meta["infra_reason"] = "sandbox"
                return self._record(job, "infra_error", (), meta, result, agent_seconds, None, (), (), diff)
            if hidden.status == "test_error":
                meta["reason"] = hidden.reason
                meta["infra_reason"] = "test_error"
                return self._record(job, "infra_error", hidden.outcomes, meta, result, agent_seconds,
                                    hidden, (), (), diff)
            if status == "completed" and hidden.status == "timeout":
                status = "timeout"
            if hidden.reason:
                meta["reason"] = hidden.reason
            if hidden.forged:
                meta["forged_outcomes"] = True
            if hidden.tamper_files:
                meta["tamper_files"] = list(hidden.tamper_files)
            outcome = self._record(job, status, hidden.outcomes, meta, result, agent_seconds, hidden,
                                   findings, scan_errors, diff, files)
            if self.settings.retest:
                from reliabench.retest import retest_during_run

                outcome = retest_during_run(outcome, job.task, self.expected[job.task.id],
                                            self.backend, limits, slot, tmp, self.settings.retest)
            return outcome
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _record(self, job: _Job, status: str, outcomes: tuple[TestOutcome, ...], meta: dict[str, Any],
                result: AgentResult, agent_seconds: float, hidden: HiddenTestRun | None,
                findings: tuple[Finding, ...], scan_errors: tuple[ScanError, ...], diff: str,
                files: dict[str, bytes] | None = None) -> _Outcome:
        seconds = agent_seconds + (hidden.seconds if hidden else 0.0)
        art = RolloutArtifacts(result.log, diff, hidden.log if hidden else "", files or {})
        return Rollout(
            task_id=job.task.id, agent=job.agent.name, rollout=job.rollout,
            tests=outcomes, status=status, findings=findings, scan_errors=scan_errors,
            cost=Cost(tokens=result.tokens, usd=result.usd, seconds=round(seconds, 3),
                      tokens_in=result.tokens_in, tokens_out=result.tokens_out,
                      agent_s=round(agent_seconds, 3),
                      test_s=round(hidden.seconds, 3) if hidden else None),
            isolation=hidden.isolation if hidden else self.backend.name,
            tamper_suspected=bool(hidden and hidden.tamper_suspected),
            simulated=job.agent.simulated, meta=meta,
        ), art


def _collect_expected(suite: Suite, backend: SandboxBackend, workers: int,
                      tasks: Sequence[Task],
                      warm: WarmTests | None = None) -> dict[str, tuple[TestOutcome, ...]]:
    """Learn each task's hidden tests once, cheaply.

    Plain tests are read from their source on the host; others are collected on the untouched
    starter workspace (in a warm worker when there is one).
    """
    out = {t.id: collect_plain_tests(t.tests_dir) for t in tasks if t.test_runner == "plain"}
    tasks = [t for t in tasks if t.id not in out]
    scratch = Path(tempfile.mkdtemp(prefix="reliabench-collect-"))
    os.chmod(scratch, 0o711)

    def one(task_slot: tuple[Task, int]) -> tuple[str, tuple[TestOutcome, ...]]:
        task, slot = task_slot
        if task.stdio is not None:
            return task.id, expected_stdio_tests(task.stdio)
        ws = scratch / task.id
        materialize(ws, [task.workspace_dir])
        os.chmod(ws, 0o755)
        return task.id, collect_hidden_tests(ws, task.tests_dir, backend=backend, slot=slot,
                                             limits=Limits(wall_s=max(60.0, task.timeout_s)),
                                             worker=warm)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            out.update(pool.map(one, [(t, i % workers) for i, t in enumerate(tasks)]))
        return out
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_local(jobs: Iterable[_Job], workers: int, executor: _Executor,
               record: Callable[[_Outcome | None], None], stop: threading.Event | None,
               finish: Callable[[_Outcome], _Outcome] | None = None) -> None:
    """Run ``jobs`` on a thread pool; each thread borrows a sandbox slot per rollout.

    ``finish`` (writing the artifacts) runs in the worker thread, so that only the store
    commit is left to the single writer.
    """
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(workers):
        slots.put(slot)

    def work(job: _Job) -> _Outcome | None:
        slot = slots.get()
        try:
            outcome = executor.run_one(job, slot)
        finally:
            slots.put(slot)
        return finish(outcome) if finish is not None and outcome is not None else outcome

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rollout")
    pending: set[Future[_Outcome | None]] = set()
    jobs_left = iter(jobs)

    def refill() -> None:
        if stop is not None and stop.is_set():
            return
        for job in jobs_left:
            pending.add(pool.submit(work, job))
            if len(pending) >= workers * 2:
                break

    try:
        refill()
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                pending.discard(fut)
                record(fut.result())
            refill()
    except BaseException:
        # Interrupted (Ctrl-C) or failed: drop the rollouts that have not started, let the
        # running ones finish, and record every finished one -- then re-raise.
        for fut in pending:
            fut.cancel()
        pool.shutdown(wait=True)
        for fut in list(pending):
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                pending.discard(fut)
                record(fut.result())
        raise
    finally:
        pool.shutdown(wait=True)


@dataclass(frozen=True, slots=True)
class _WorkerSpec:
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

    def __init__(self, spec: _WorkerSpec, slot: int) -> None:
        from reliabench.agents.config import load_agents
        from reliabench.tasks.suite import load_suite

        self.suite = load_suite(spec.suite_root)
        if self.suite.content_hash != spec.suite_hash:
            raise SandboxError(f"the suite at {spec.suite_root} differs on this node "
                               "(content hash): give every node the same suite")
        self.agents = {a.name: a for a in load_agents(spec.agents_file)}
        scratch = Path(tempfile.mkdtemp(prefix="reliabench-ray-"))
        os.chmod(scratch, 0o711)
        self.executor = _Executor(spec.settings, get_backend(spec.settings.sandbox),
                                  [get_scanner(n) for n in spec.settings.scanners], spec.expected, scratch,
                                  open_test_workers(spec.settings.test_workers))
        self.slot = slot

    def run(self, task_id: str, agent: str, rollout: int, seed: int) -> _Outcome | None:
        """Run one rollout on this worker's slot."""
        job = _Job(self.suite.task(task_id), self.agents[agent], rollout, seed)
        return self.executor.run_one(job, self.slot)


def _run_ray(jobs: Iterable[_Job], settings: RunSettings, spec: _WorkerSpec,
             record: Callable[[_Outcome | None], None], stop: threading.Event | None) -> None:
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


def run_suite(
    suite: Suite,
    agents: Sequence[Agent],
    out_dir: str | Path,
    settings: RunSettings,
    *,
    tasks: Sequence[str] | None = None,
    progress: Callable[[ProgressEvent], None] | None = None,
    stop: threading.Event | None = None,
    agents_file: str | Path | None = None,
    provenance: Mapping[str, Any] | None = None,
    n_per_agent: Mapping[str, int] | None = None,
) -> RunSummary:
    """Run every missing rollout of ``suite`` x ``agents`` x ``settings.n`` into ``out_dir``.

    A second call with the same arguments resumes: rollouts already in the store are skipped.
    A different configuration in an existing ``out_dir`` is refused (``RunMismatchError``).

    Args:
        suite: The loaded suite.
        agents: Loaded agents (unique names).
        out_dir: The run directory.
        settings: n, seed, workers, sandbox, scanners, limits.
        tasks: Restrict to these task ids (part of the run's identity).
        progress: Called after each recorded rollout, from the calling thread.
        stop: Set it to stop after the rollouts in flight (they are recorded).
        agents_file: The agents file ``agents`` came from; the Ray executor needs it (its
            workers load the agents on their own nodes).
        provenance: Kept with the run for reports, not part of its identity (e.g. the command
            line and the agents' configuration, secrets masked by the caller).
        n_per_agent: Rollouts per task of these agents instead of ``settings.n`` (adaptive
            runs); like n, not part of the run's identity.

    Returns:
        A ``RunSummary``.
    """
    names = [a.name for a in agents]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"agent names must be unique, got {names!r}")
    selected = [suite.task(t) for t in tasks] if tasks else list(suite.tasks)
    backend = get_backend(settings.sandbox)
    scanners = [get_scanner(name) for name in settings.scanners]
    config = {
        "suite_hash": suite.content_hash,
        "agents": sorted(names),
        "agents_config_hash": settings.agents_config_hash,
        "seed": settings.seed,
        "sandbox": settings.sandbox,
        "scanners": list(settings.scanners),
        "limits": {k: getattr(settings.limits, k) for k in
                   ("cpu_s", "memory_bytes", "max_procs", "file_size_bytes", "output_bytes")},
        "tasks": sorted(t.id for t in selected),
        "test_timeout_s": settings.test_timeout_s,
    }
    config_hash = hashlib.sha256(repr(sorted(config.items())).encode()).hexdigest()
    config["suite_path"] = str(suite.root.resolve())  # where `reliabench scan` finds the starters
    if settings.security_policy:
        config["security_policy"] = settings.security_policy
    config.update({k: v for k, v in (provenance or {}).items() if k not in config})
    t0 = time.perf_counter()
    store, resumed = RunStore.create_or_resume(
        out_dir, config={**config, "n": settings.n}, config_hash=config_hash,
        suite={"name": suite.name, "version": suite.version, "hash": suite.content_hash},
        packages=_package_versions(), isolation=backend.name,
    )
    stopped: dict[str, str] = {}  # agent -> why it was stopped early
    with store, contextlib.ExitStack() as cleanup:
        done = store.done_keys(except_status="infra_error")  # infra errors are rerun
        per_agent = {a.name: (n_per_agent or {}).get(a.name, settings.n) for a in agents}
        jobs = [
            _Job(task, agent, r, derive_seed(settings.seed, task.id, agent.name, r))
            for task in selected for agent in agents for r in range(per_agent[agent.name])
            if (task.id, agent.name, r) not in done
        ]
        planned = len(selected) * sum(per_agent.values())
        skipped = planned - len(jobs)
        passed = sum(1 for r in store.rollouts() if r.passes) if done else 0
        executed = infra = 0
        watch = InfraStopWatch()
        test_path = ""
        if jobs:
            needed = sorted({j.task.id for j in jobs})
            warm = open_test_workers(settings.test_workers)  # None: fresh sandboxed processes
            if warm is not None:
                cleanup.callback(warm.close)
            test_path = "fresh" if warm is None else "warm"
            expected = _collect_expected(suite, backend, settings.workers,
                                         [suite.task(t) for t in needed], warm)

            def record(outcome: _Outcome | None) -> None:
                nonlocal executed, passed, infra
                if outcome is None:  # its agent was stopped before it started
                    return
                rollout, art = outcome
                # artifacts first, then the one-transaction commit: a recorded rollout always
                # has its artifacts; artifacts without a record are replaced when it reruns
                if not art.written:  # (the local executor's workers write them themselves)
                    write_artifacts(store.artifact_dir(rollout.task_id, rollout.agent, rollout.rollout), art)
                store.add(rollout, replace_status="infra_error")
                if art.retests:
                    store.add_retests(art.retests)
                executed += 1
                passed += rollout.passes
                infra += rollout.status == "infra_error"
                why = watch.observe(rollout)
                if why is not None:
                    stopped[rollout.agent] = why
                if progress is not None:
                    progress(ProgressEvent(skipped + executed, planned, passed, rollout))

            # an agent stopped early gets no new rollouts (those in flight finish and are kept)
            live_jobs = (j for j in jobs if j.agent.name not in stopped)
            if settings.executor == "ray":
                if agents_file is None:
                    raise InvalidArgumentError("executor='ray' needs agents_file (workers load the agents)")
                if warm is not None:
                    warm.close()  # each Ray actor opens its own
                spec = _WorkerSpec(str(suite.root.resolve()), suite.content_hash,
                                   str(Path(agents_file).resolve()), settings, expected)
                _run_ray(live_jobs, settings, spec, record, stop)
            else:
                scratch = Path(tempfile.mkdtemp(prefix="reliabench-run-"))
                os.chmod(scratch, 0o711)
                try:
                    executor = _Executor(settings, backend, scanners, expected, scratch, warm)
                    executor.stopped = stopped.__contains__

                    def finish(outcome: _Outcome) -> _Outcome:
                        rollout, art = outcome  # in the worker thread: not on the single writer
                        write_artifacts(store.artifact_dir(rollout.task_id, rollout.agent, rollout.rollout),
                                        art)
                        return rollout, RolloutArtifacts("", "", "", {}, art.retests, written=True)

                    _run_local(live_jobs, settings.workers, executor, record, stop, finish)
                finally:
                    shutil.rmtree(scratch, ignore_errors=True)
    summary = RunSummary(Path(out_dir), resumed, planned, skipped, executed, passed, infra,
                         backend.name, time.perf_counter() - t0, test_path)
    if stopped:
        not_run = planned - skipped - executed
        raise InfraStopError(
            "; ".join(f"agent {a!r} stopped: {why}" for a, why in stopped.items())
            + f"; {not_run} rollout(s) not run. Fix the cause and run the same command again "
            f"to resume (rollouts recorded as infra_error are rerun)", summary=summary)
    return summary


