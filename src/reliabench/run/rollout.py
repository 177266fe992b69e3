"""One rollout: a fresh workspace, the agent, a scan of its changes, the hidden tests, a record.

:class:`RolloutRunner` runs single rollouts from shared, read-only state: each task's
environment (:class:`~reliabench.run.environments.TaskEnvironment`, prepared once per run)
and hidden-test runner (:class:`~reliabench.run.test_paths.TestPaths`, chosen once per run).
Per rollout it holds the rollout's environments (:class:`~reliabench.run.environments.RolloutEnvironments`):
the agent opens its own through the request, the tests get theirs as the task's ``tests``
handover says, and all are closed when the rollout ends. The executor
(:mod:`reliabench.run.executors`) chooses the sandbox slot and the store's single writer records
the result. Nothing raised inside a rollout escapes it (docs/threat-model.md).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from reliabench.agents.base import AgentEnvironment, AgentRequest, AgentResult
from reliabench.agents.infra import backoff_delay, backoff_scale, is_transient
from reliabench.errors import SandboxError
from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.layer import TestRequest
from reliabench.meta_keys import (
    COARSE_OUTCOMES,
    IMAGE,
    IMAGE_DIGEST,
    INFRA_ATTEMPTS,
    INFRA_REASON,
    TEST_PATH,
    TEST_RUNNER,
)
from reliabench.records import TestOutcome
from reliabench.run import artifacts as _artifacts
from reliabench.run.artifacts import take_snapshot
from reliabench.run.draft import Outcome, RolloutDraft
from reliabench.run.environments import RolloutEnvironments, TaskEnvironment
from reliabench.run.phase_slots import FixedSlot, SlotSource, splits_phases
from reliabench.run.plan import Job
from reliabench.run.settings import RunSettings
from reliabench.run.test_paths import TestPaths
from reliabench.scanners import Scanner, workspace_diff
from reliabench.scanners.workspace import remove_bytecode, scan_changes
from reliabench.tasks.suite import materialize

__all__ = ["INFRA_RETRIES", "Outcome", "RolloutRunner"]

INFRA_RETRIES = 2


class RolloutRunner:
    """Runs single rollouts from shared, read-only state; the caller chooses the sandbox slot.

    Args:
        settings: The run's settings.
        environments: Task id -> where the task executes (prepared once per run).
        paths: The run's hidden-test runners (chosen once per run).
        scanners: The scanners.
        expected: Task id -> its expected tests.
        scratch: A private folder for the rollouts' workspaces.
    """

    def __init__(self, settings: RunSettings, environments: Mapping[str, TaskEnvironment], paths: TestPaths,
                 scanners: Sequence[Scanner], expected: dict[str, tuple[TestOutcome, ...]],
                 scratch: Path) -> None:
        self.settings = settings
        self.environments = environments
        self.paths = paths
        self.scanners = scanners
        self.expected = expected
        self.scratch = scratch
        self.stopped: Callable[[str], bool] = lambda agent: False
        self.backoff_scale = backoff_scale()

    def isolation(self, job: Job) -> str:
        """The backend a job's task runs on (the record's isolation until its tests say more)."""
        return self.environments[job.task.id].backend.name

    def _call_agent(self, job: Job, workspace: Path, prompt_file: Path,
                    slot: int, environment: AgentEnvironment) -> tuple[AgentResult, float]:
        request = AgentRequest(
            task_id=job.task.id, prompt=job.task.prompt, workspace=workspace, seed=job.seed,
            rollout=job.rollout, timeout_s=job.task.timeout_s * 10, feedback_dir=job.task.feedback_dir,
            prompt_file=prompt_file,
            slot=slot,
            environment=environment,
        )
        t0 = time.perf_counter()
        try:
            result = job.agent.run(request)
        except Exception:
            result = AgentResult(status="agent_error", log="agent raised:\n" + traceback.format_exc())
        return result, time.perf_counter() - t0

    def run_one(self, job: Job, slot: int | SlotSource) -> Outcome | None:
        """One rollout, retried on transient infrastructure failures.

        ``slot`` is one sandbox slot for both phases, or where each phase takes its own
        (:class:`~reliabench.run.phase_slots.PhaseSlots`: the agent phase on an agent slot, the
        scan, diff and tests on a test slot, for the tasks whose rollouts may change slot).

        Up to ``INFRA_RETRIES`` retries, with exponential back-off
        (:func:`reliabench.agents.infra.backoff_delay`). Returns None, without running
        anything, when the job's agent was stopped early. Never raises (``Exception``):
        whatever escapes an attempt becomes that rollout's record, so one rollout can
        neither abort the run nor make a resume loop on it.
        """
        if self.stopped(job.agent.name):
            return None
        slots = FixedSlot(slot) if isinstance(slot, int) else slot
        attempts = 0
        while True:
            try:
                attempt = self._attempt(job, slots, first=attempts == 0)
            except Exception as exc:  # the last line of defence
                return RolloutDraft.start(job, self.isolation(job)).harness_error("running the rollout", exc)
            if attempt is None:  # stopped while it waited for its slot: nothing ran
                return None
            rollout, art = attempt
            attempts += 1
            reason = rollout.meta.get(INFRA_REASON)
            if (rollout.status != "infra_error" or attempts > INFRA_RETRIES
                    or not is_transient(reason) or self.stopped(job.agent.name)):
                break
            time.sleep(backoff_delay(attempts) * self.backoff_scale)
        if rollout.status == "infra_error" and attempts > 1:
            rollout = replace(rollout, meta={**rollout.meta, INFRA_ATTEMPTS: attempts})
        return rollout, art

    def _attempt(self, job: Job, slots: SlotSource, *, first: bool = True) -> Outcome | None:
        """One attempt of one rollout; None: the ``first`` one's agent or run stopped while it waited.

        Before the agent runs, a failure is the harness's (``infra_error``, retried). After
        it ran, anything raised while examining, scanning, diffing or testing its workspace
        is that rollout's failure (``test_error``, :meth:`RolloutDraft.harness_error`): the
        agent's files may be what broke the harness, and only the harness may exclude a
        rollout. An environment that cannot be started (a ``SandboxError``) is the harness's
        failure in either phase.
        """
        tmp = Path(tempfile.mkdtemp(prefix="rollout-", dir=self.scratch))
        stage = "preparing the workspace"
        task = job.task
        where = self.environments[task.id]
        draft = RolloutDraft.start(job, where.backend.name)
        if where.prepared.image is not None:
            draft.meta[IMAGE] = where.prepared.image.reference
            draft.meta[IMAGE_DIGEST] = where.prepared.image.digest
        envs: RolloutEnvironments | None = None
        held = contextlib.ExitStack()  # the slot(s) this attempt holds; given back after envs.close()
        split = splits_phases(task)
        agent_slot = contextlib.ExitStack()  # a split rollout's agent slot, given back after the agent phase
        held.enter_context(agent_slot)
        try:
            slot = (agent_slot.enter_context(slots.agent_phase()) if split
                    else held.enter_context(slots.whole()))
            if first and (slots.closed or self.stopped(job.agent.name)):
                return None
            os.chmod(tmp, 0o711)
            workspace = tmp / "workspace"
            if task.repository is None:
                materialize(workspace, [task.workspace_dir])
            else:  # a repository task: a copy of its checkout at the base commit (prepared before the run)
                self.paths.repository.materialize(task, workspace, slot=slot)
            starter = self.paths.starter(task)
            prompt_file = tmp / "prompt.md"
            prompt_file.write_text(task.prompt, encoding="utf-8")
            os.chmod(prompt_file, 0o644)
            wall = task.timeout_s
            if self.settings.test_timeout_s is not None:
                wall = min(wall, self.settings.test_timeout_s)
            limits = self.paths.limits(task, replace(self.settings.limits, wall_s=wall, cpu_s=wall))
            envs = RolloutEnvironments(task, where, workspace, slot=slot, limits=self.settings.limits)
            stage = "running the agent"
            result, agent_seconds = self._call_agent(job, workspace, prompt_file, slot, envs.agent)
            draft.agent_ran(result, agent_seconds)
            if result.status == "infra_error":  # the agent produced nothing: no tests
                return draft.agent_infra_error()
            stage = "ending the agent phase"
            try:
                envs.end_agent_phase()  # nothing the agent left running touches the workspace now
            except SandboxError as exc:
                return draft.infra_error("sandbox", f"sandbox failed: {exc}")
            if split:  # the agent's environment is closed: its slot goes back, the CPU work takes a test slot
                stage = "waiting for a test slot"
                agent_slot.close()
                slot = held.enter_context(slots.test_phase())
                envs.slot = slot
            stage = "scanning the workspace"
            findings, scan_errors, changes = scan_changes(self.scanners, starter, workspace)
            bytecode_errors, _ = remove_bytecode(workspace)  # the tests run what was scanned
            scan_errors += bytecode_errors
            draft.scanned(findings, scan_errors, changes, [s.name for s in self.scanners])
            stage = "keeping the agent's files"
            draft.kept(take_snapshot(workspace, changes.files, _artifacts.DEFAULT_BUDGET))
            stage = "diffing the workspace"
            max_diff = _artifacts.DEFAULT_BUDGET.max_diff_bytes
            draft.diff = (workspace_diff(starter, workspace, max_bytes=max_diff) if task.repository is None
                          else self.paths.repository.agent_patch(task, workspace, max_bytes=max_diff))
            stage = "running the hidden tests"
            runner = self.paths.for_task(task)
            draft.meta[TEST_PATH] = runner.path
            draft.meta[TEST_RUNNER] = self.paths.test_runner(task)
            if task.test_command is not None and task.test_command.coarse:
                draft.meta[COARSE_OUTCOMES] = True
            request = TestRequest(task=task, workspace=workspace, expected=self.expected[task.id],
                                  limits=limits, slot=slot, open_environment=envs.open_tests,
                                  starter=starter, open_at=envs.open_at,
                                  allowed_skips=task.allowed_skips)
            try:
                hidden = runner.run(request)
            except SandboxError as exc:
                return draft.infra_error("sandbox", f"sandbox failed: {exc}")
            if hidden.status == "test_error":
                # the harness did not start, not even on the starter workspace (hidden_tests/judging.py)
                return draft.infra_error("test_error", hidden.reason, hidden=hidden)
            draft.tested(hidden)
            stage = "recording the rollout"
            outcome = draft.completed()
            if self.settings.retest:
                from reliabench.run.retest import retest_during_run

                stage = "re-testing the rollout"
                outcome = retest_during_run(outcome, task, self.expected[task.id], where, self.paths,
                                            limits, slot, tmp, self.settings.retest)
            return outcome
        except Exception as exc:
            if draft.result is None:
                # nothing of the agent's ran yet (_call_agent turns the agent's own
                # exceptions into agent_error): the harness failed; the rollout's sandbox
                # could not be prepared
                return draft.infra_error(
                    "sandbox", f"harness error while {stage}: {type(exc).__name__}: {exc}"[:600])
            return draft.harness_error(stage, exc)
        finally:
            if envs is not None:
                envs.close()
            held.close()
            remove_tree(tmp)
