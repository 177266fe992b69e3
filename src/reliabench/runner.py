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
import math
import os
import platform
import queue
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from reliabench import artifacts as _artifacts
from reliabench.agents.base import Agent, AgentRequest, AgentResult
from reliabench.agents.infra import InfraStopWatch, backoff_delay, backoff_scale, is_transient
from reliabench.artifacts import (
    DEFAULT_BUDGET,
    RolloutArtifacts,
    cap_record,
    cap_text,
    take_snapshot,
    write_artifacts,
)
from reliabench.errors import (
    InfraStopError,
    InvalidArgumentError,
    MissingExtraError,
    OutputError,
    SandboxError,
    StoreError,
)
from reliabench.plugins import Registry
from reliabench.records import Cost, Finding, Rollout, ScanError, TestOutcome
from reliabench.sandbox import MAX_SECONDS, Limits, SandboxBackend, get_backend
from reliabench.scanners import ChangeSet, Scanner, changed_files, get_scanner, workspace_diff
from reliabench.stdio_tests import expected_stdio_tests, run_stdio_tests
from reliabench.store import RunStore
from reliabench.tasks.suite import Suite, Task, materialize
from reliabench.testing import HiddenTestRun, collect_hidden_tests, run_hidden_tests
from reliabench.untrusted_files import remove_tree
from reliabench.warm.hidden import WarmTests, open_test_workers
from reliabench.warm.plain_tests import collect_plain_tests

__all__ = [
    "EXECUTORS",
    "ExecutionContext",
    "Executor",
    "LocalExecutor",
    "ProgressEvent",
    "RayExecutor",
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
        sandbox: Backend name (``auto``, ``bubblewrap``, ``namespaces``, ``none`` or a plugin's).
        scanners: Scanner names run on what each agent changed.
        limits: Resource limits of the hidden-test process (wall time comes from the task).
        agents_config_hash: Hash of the agents file (part of the run's identity).
        test_timeout_s: Cap on each task's ``timeout_s`` for the hidden tests (None: no cap).
        security_policy: A security policy (threshold, allow/deny lists) kept with the run and
            applied when it is scored; analysis-time only, so not part of the run's identity.
        executor: A name of :data:`EXECUTORS`: ``local`` (a thread pool on this machine),
            ``ray`` (Ray actors, one per worker slot, on a local or remote cluster) or a
            plugin's; not part of the run's identity.
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
        if self.executor not in EXECUTORS:
            raise InvalidArgumentError(f"executor must be one of {', '.join(EXECUTORS.names())}, "
                                       f"got {self.executor!r}")
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise InvalidArgumentError(f"n must be an integer >= 1, got {self.n!r}")
        if self.workers < 1:
            raise InvalidArgumentError(f"workers must be >= 1, got {self.workers!r}")
        t = self.test_timeout_s
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))
                              or not math.isfinite(t) or not 0 < t <= MAX_SECONDS):
            raise InvalidArgumentError(
                f"test_timeout_s must be a number of seconds in (0, {MAX_SECONDS:g}], got {t!r}")


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

    Paths that could not be examined (nested too deep, a path too long, no permission)
    become scan errors: never treated as clean.

    Returns:
        ``(findings, scan_errors, changed_files)``; findings only on changed lines.
    """
    findings, errors, changes = _scan(scanners, starter, workspace)
    touched = sorted({*changes.added, *changes.modified, *changes.deleted})
    return findings, errors, tuple(touched)


def _scan(scanners: Sequence[Scanner], starter: Path,
          workspace: Path) -> tuple[tuple[Finding, ...], tuple[ScanError, ...], ChangeSet]:
    changes = changed_files(starter, workspace)
    files = list(changes.files)
    findings: list[Finding] = []
    errors: list[ScanError] = [
        ScanError("reliabench", rel, "not examined (nested too deep, path too long or not "
                                     "readable): its content was not scanned")
        for rel in changes.unreadable
    ]
    if files:
        for scanner in scanners:
            result = scanner.scan(workspace, files, changes.changed_lines)
            findings += result.findings
            errors += result.errors
    return tuple(findings), tuple(errors), changes


MAX_SNAPSHOT_BYTES = DEFAULT_BUDGET.max_bytes  # all agent files kept under artifacts/.../files/


def snapshot_files(workspace: Path, rels: Sequence[str]) -> dict[str, bytes]:
    """The agent-written regular files to keep for re-scanning, within the per-rollout budget.

    See :func:`reliabench.artifacts.take_snapshot`, which also says what it left out.
    """
    return take_snapshot(workspace, rels).files


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
        anything, when the job's agent was stopped early. Never raises (``Exception``):
        whatever escapes an attempt becomes that rollout's record, so one rollout can
        neither abort the run nor make a resume loop on it.
        """
        if self.stopped(job.agent.name):
            return None
        attempts = 0
        while True:
            try:
                rollout, art = self._attempt(job, slot)
            except Exception as exc:  # the last line of defence
                return self._harness_failure(job, "running the rollout", exc)
            attempts += 1
            reason = rollout.meta.get("infra_reason")
            if (rollout.status != "infra_error" or attempts > INFRA_RETRIES
                    or not is_transient(reason) or self.stopped(job.agent.name)):
                break
            time.sleep(backoff_delay(attempts) * self.backoff_scale)
        if rollout.status == "infra_error" and attempts > 1:
            rollout = replace(rollout, meta={**rollout.meta, "infra_attempts": attempts})
        return rollout, art

    def _harness_failure(self, job: _Job, stage: str, exc: BaseException,
                         meta: dict[str, Any] | None = None, result: AgentResult | None = None,
                         agent_seconds: float = 0.0, diff: str = "") -> _Outcome:
        """The rollout's own failure (``test_error``): something raised after the agent ran."""
        detail = f"{type(exc).__name__}: {exc}"
        meta = {**(meta or {"seed": job.seed, "agent_kind": job.agent.kind}),
                "reason": f"harness error while {stage}: {detail[:500]}"}
        return self._record(job, "test_error", (), meta, result or AgentResult(status="agent_error"),
                            agent_seconds, None, (), (), diff)

    def _attempt(self, job: _Job, slot: int) -> _Outcome:
        """One attempt of one rollout.

        Before the agent runs, a failure is the harness's (``infra_error``, retried). After
        it ran, anything raised while examining, scanning, diffing or testing its workspace
        is that rollout's failure (``test_error``, see ``_harness_failure``): the agent's
        files may be what broke the harness, and only the harness may exclude a rollout.
        """
        tmp = Path(tempfile.mkdtemp(prefix="rollout-", dir=self.scratch))
        stage = "preparing the workspace"
        meta: dict[str, Any] = {"seed": job.seed, "agent_kind": job.agent.kind}
        result: AgentResult | None = None
        agent_seconds = 0.0
        diff = ""
        try:
            os.chmod(tmp, 0o711)
            workspace = tmp / "workspace"
            materialize(workspace, [job.task.workspace_dir])
            prompt_file = tmp / "prompt.md"
            prompt_file.write_text(job.task.prompt, encoding="utf-8")
            os.chmod(prompt_file, 0o644)
            stage = "running the agent"
            result, agent_seconds = self._call_agent(job, workspace, prompt_file, slot)
            meta.update(result.meta)
            if result.status == "infra_error":  # the agent produced nothing: no tests
                meta.setdefault("infra_reason", "agent_infra")
                return self._record(job, "infra_error", (), meta, result, agent_seconds, None, (), (), "")
            stage = "scanning the workspace"
            findings, scan_errors, changes = _scan(self.scanners, job.task.workspace_dir, workspace)
            changed = sorted({*changes.added, *changes.modified, *changes.deleted})
            stage = "keeping the agent's files"
            snap = take_snapshot(workspace, changes.files, _artifacts.DEFAULT_BUDGET)
            meta["changed_files"] = list(changed)
            meta["deleted_files"] = list(changes.deleted)
            if snap.omitted:
                meta["artifacts_omitted"] = [rel for rel, _ in snap.omitted]
            meta["scanned"] = [s.name for s in self.scanners]
            stage = "diffing the workspace"
            diff = workspace_diff(job.task.workspace_dir, workspace,
                                  max_bytes=_artifacts.DEFAULT_BUDGET.max_diff_bytes)
            status = result.status
            if status == "completed" and not changed:
                status = "no_change"
            wall = job.task.timeout_s
            if self.settings.test_timeout_s is not None:
                wall = min(wall, self.settings.test_timeout_s)
            limits = replace(self.settings.limits, wall_s=wall, cpu_s=wall)
            stage = "running the hidden tests"
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
                # the harness did not start, not even on the starter workspace (testing.py)
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
            stage = "recording the rollout"
            outcome = self._record(job, status, hidden.outcomes, meta, result, agent_seconds, hidden,
                                   findings, scan_errors, diff, snap.files, snap.omitted)
            if self.settings.retest:
                from reliabench.retest import retest_during_run

                stage = "re-testing the rollout"
                outcome = retest_during_run(outcome, job.task, self.expected[job.task.id],
                                            self.backend, limits, slot, tmp, self.settings.retest)
            return outcome
        except Exception as exc:
            if result is None:
                # nothing of the agent's ran yet (_call_agent turns the agent's own
                # exceptions into agent_error): the harness failed
                meta["reason"] = f"harness error while {stage}: {type(exc).__name__}: {exc}"[:600]
                meta["infra_reason"] = "sandbox"  # the rollout's sandbox could not be prepared
                return self._record(job, "infra_error", (), meta, AgentResult(status="infra_error"),
                                    0.0, None, (), (), "")
            return self._harness_failure(job, stage, exc, meta, result, agent_seconds, diff)
        finally:
            remove_tree(tmp)

    def _record(self, job: _Job, status: str, outcomes: tuple[TestOutcome, ...], meta: dict[str, Any],
                result: AgentResult, agent_seconds: float, hidden: HiddenTestRun | None,
                findings: tuple[Finding, ...], scan_errors: tuple[ScanError, ...], diff: str,
                files: dict[str, bytes] | None = None,
                omitted: tuple[tuple[str, str], ...] = ()) -> _Outcome:
        seconds = agent_seconds + (hidden.seconds if hidden else 0.0)
        budget = _artifacts.DEFAULT_BUDGET  # looked up per call (tests shrink it)
        art = RolloutArtifacts(cap_text(result.log, budget.max_log_bytes),
                               cap_text(diff, budget.max_diff_bytes),
                               cap_text(hidden.log, budget.max_log_bytes) if hidden else "",
                               files or {}, omitted)
        return cap_record(Rollout(
            task_id=job.task.id, agent=job.agent.name, rollout=job.rollout,
            tests=outcomes, status=status, findings=findings, scan_errors=scan_errors,
            cost=Cost(tokens=result.tokens, usd=result.usd, seconds=round(seconds, 3),
                      tokens_in=result.tokens_in, tokens_out=result.tokens_out,
                      agent_s=round(agent_seconds, 3),
                      test_s=round(hidden.seconds, 3) if hidden else None),
            isolation=hidden.isolation if hidden else self.backend.name,
            tamper_suspected=bool(hidden and hidden.tamper_suspected),
            simulated=job.agent.simulated, meta=meta,
        ), budget), art


def _write_rollout_artifacts(store: RunStore, rollout: Rollout, art: RolloutArtifacts) -> Rollout:
    """Write one rollout's artifacts; return the record with what was left out noted.

    Safe in a worker thread (it touches files only). ``OutputError`` (a full or read-only run
    directory) propagates: the run stops before the record is committed.
    """
    adir = store.artifact_dir(rollout.task_id, rollout.agent, rollout.rollout)
    left_out = write_artifacts(adir, art)
    new_left_out = [rel for rel, _ in left_out if rel not in rollout.meta.get("artifacts_omitted", ())]
    if new_left_out:
        meta = dict(rollout.meta)
        meta["artifacts_omitted"] = [*meta.get("artifacts_omitted", []), *new_left_out]
        rollout = cap_record(replace(rollout, meta=meta), _artifacts.DEFAULT_BUDGET)
    return rollout


def _store_rollout(store: RunStore, rollout: Rollout, art: RolloutArtifacts) -> Rollout:
    """Write one rollout's artifacts (unless a worker did) and record; return the record as stored.

    Whatever the rollout holds, it gets recorded: if its own content cannot be stored (an
    encoding the store refuses, nesting too deep to serialise), a minimal ``test_error``
    record with the reason takes its place. Only the run directory's own failures
    (``OutputError``) and a duplicate key stop the run.
    """
    if not art.written:
        rollout = _write_rollout_artifacts(store, rollout, art)
    try:
        store.add(rollout, replace_status="infra_error")
    except (OutputError, StoreError):
        raise
    except Exception as exc:  # the record itself is the problem: keep a minimal one
        rollout = Rollout(
            task_id=rollout.task_id, agent=rollout.agent, rollout=rollout.rollout, tests=(),
            status="test_error", cost=rollout.cost, isolation=rollout.isolation,
            tamper_suspected=rollout.tamper_suspected, simulated=rollout.simulated,
            meta={"reason": f"harness error while storing the rollout's record: "
                            f"{type(exc).__name__}: {exc}"[:600]},
        )
        store.add(rollout, replace_status="infra_error")
    return rollout


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
        remove_tree(scratch)


def _run_local(jobs: Iterable[_Job], workers: int, run_one: Callable[[_Job, int], _Outcome | None],
               record: Callable[[_Outcome | None], None], stop: threading.Event | None) -> None:
    """Run ``jobs`` on a thread pool; each thread borrows a sandbox slot per rollout.

    ``run_one`` (:meth:`ExecutionContext.rollouts`: the rollout and writing its artifacts)
    runs in the worker thread, so that only the store commit is left to the single writer.
    """
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(workers):
        slots.put(slot)

    def work(job: _Job) -> _Outcome | None:
        slot = slots.get()
        try:
            return run_one(job, slot)
        finally:
            slots.put(slot)

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


# ------------------------------------------------------------------ executors (a plugin kind)


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
        record: Store one outcome (None: a skipped job); call it from the thread that called
            ``Executor.run`` only -- it is the store's single writer.
        stop: Set when the run must stop after the rollouts in flight.
        agents_file: The agents file (executors whose workers load the agents elsewhere).
    """

    suite: Suite
    settings: RunSettings
    backend: SandboxBackend
    scanners: Sequence[Scanner]
    expected: dict[str, tuple[TestOutcome, ...]]
    warm: WarmTests | None
    store: RunStore
    stopped: Callable[[str], bool]
    record: Callable[[_Outcome | None], None]
    stop: threading.Event | None
    agents_file: Path | None = None

    @contextlib.contextmanager
    def rollouts(self) -> Iterator[Callable[[_Job, int], _Outcome | None]]:
        """Run rollouts in this process: yields ``run_one(job, slot)``.

        ``run_one`` runs one job on sandbox slot ``slot`` (one rollout at a time per slot) and
        writes its artifacts; it returns the outcome to ``record``, or None when the job's
        agent was stopped. It may be called from several threads.
        """
        scratch = Path(tempfile.mkdtemp(prefix="reliabench-run-"))
        os.chmod(scratch, 0o711)
        try:
            executor = _Executor(self.settings, self.backend, self.scanners, self.expected, scratch,
                                 self.warm)
            executor.stopped = self.stopped

            def run_one(job: _Job, slot: int) -> _Outcome | None:
                outcome = executor.run_one(job, slot)
                if outcome is None:
                    return None
                rollout, art = outcome  # in the worker thread: not on the single writer
                rollout = _write_rollout_artifacts(self.store, rollout, art)
                return rollout, RolloutArtifacts("", "", "", {}, retests=art.retests, written=True)

            yield run_one
        finally:
            remove_tree(scratch)


@runtime_checkable
class Executor(Protocol):
    """Where a run's rollouts execute (``--executor NAME``).

    Attributes:
        name: The registry name.
    """

    name: str

    def run(self, jobs: Iterable[_Job], context: ExecutionContext) -> None:
        """Run every job (stop early when ``context.stop`` is set); record each outcome.

        Each job has ``task``, ``agent``, ``rollout`` and ``seed``. ``context.record`` must
        be called from the calling thread.
        """
        ...


class LocalExecutor:
    """``local``: a thread pool of ``settings.workers`` sandbox slots in this process."""

    name = "local"

    def run(self, jobs: Iterable[_Job], context: ExecutionContext) -> None:
        """See :class:`Executor`."""
        with context.rollouts() as run_one:
            _run_local(jobs, context.settings.workers, run_one, context.record, context.stop)


class RayExecutor:
    """``ray``: Ray actors, one per worker slot, on a local or remote cluster (``ray`` extra)."""

    name = "ray"

    def run(self, jobs: Iterable[_Job], context: ExecutionContext) -> None:
        """See :class:`Executor`.

        Raises:
            InvalidArgumentError: no agents file (the actors load the agents themselves).
        """
        if context.agents_file is None:
            raise InvalidArgumentError("executor='ray' needs agents_file (workers load the agents)")
        if context.warm is not None:
            context.warm.close()  # each Ray actor opens its own
        spec = _WorkerSpec(str(context.suite.root.resolve()), context.suite.content_hash,
                           str(context.agents_file.resolve()), context.settings, context.expected)
        _run_ray(jobs, context.settings, spec, context.record, context.stop)


LOCAL_EXECUTOR = LocalExecutor()
RAY_EXECUTOR = RayExecutor()

EXECUTORS: Registry[Executor] = Registry(
    "executors",
    builtins={"local": "reliabench.runner:LOCAL_EXECUTOR", "ray": "reliabench.runner:RAY_EXECUTOR"},
    what="executor",
    check=lambda obj: isinstance(obj, Executor) and not isinstance(obj, type),
    expected="an Executor object (a str 'name' and a 'run(jobs, context)' method)",
)
"""The executor registry (entry-point group ``reliabench.executors``: name -> executor)."""


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
            if RunStore.stored_key(task.id, agent.name, r) not in done
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
                # has its artifacts; artifacts without a record are replaced when it reruns.
                # OutputError (full or read-only run directory) stops the run: resumable.
                rollout = _store_rollout(store, rollout, art)
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
            context = ExecutionContext(suite, settings, backend, scanners, expected, warm, store,
                                       stopped.__contains__, record, stop,
                                       None if agents_file is None else Path(agents_file))
            EXECUTORS.get(settings.executor).run(live_jobs, context)
    summary = RunSummary(Path(out_dir), resumed, planned, skipped, executed, passed, infra,
                         backend.name, time.perf_counter() - t0, test_path)
    if stopped:
        not_run = planned - skipped - executed
        raise InfraStopError(
            "; ".join(f"agent {a!r} stopped: {why}" for a, why in stopped.items())
            + f"; {not_run} rollout(s) not run. Fix the cause and run the same command again "
            f"to resume (rollouts recorded as infra_error are rerun)", summary=summary)
    return summary


