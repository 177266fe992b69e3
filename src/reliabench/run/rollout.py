"""One rollout: a fresh workspace, the agent, a scan of its changes, the hidden tests, a record.

:class:`RolloutRunner` runs single rollouts from shared, read-only state; the executor
(:mod:`reliabench.run.executors`) chooses the sandbox slot and the store's single writer records
the result. Nothing raised inside a rollout escapes it (docs/threat-model.md).
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from reliabench.agents.base import AgentRequest, AgentResult
from reliabench.agents.infra import backoff_delay, backoff_scale, is_transient
from reliabench.errors import SandboxError
from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.fresh import run_hidden_tests
from reliabench.hidden_tests.stdio import run_stdio_tests
from reliabench.meta_keys import INFRA_ATTEMPTS, INFRA_REASON, TEST_PATH, TEST_RUNNER
from reliabench.records import TestOutcome
from reliabench.run import artifacts as _artifacts
from reliabench.run.artifacts import take_snapshot
from reliabench.run.draft import Outcome, RolloutDraft
from reliabench.run.plan import Job
from reliabench.run.settings import RunSettings
from reliabench.sandbox import SandboxBackend
from reliabench.scanners import Scanner, workspace_diff
from reliabench.scanners.workspace import remove_bytecode, scan_changes
from reliabench.tasks.suite import materialize
from reliabench.warm.hidden import WarmTests

__all__ = ["INFRA_RETRIES", "Outcome", "RolloutRunner"]

INFRA_RETRIES = 2


class RolloutRunner:
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

    def _call_agent(self, job: Job, workspace: Path, prompt_file: Path,
                    slot: int) -> tuple[AgentResult, float]:
        request = AgentRequest(
            task_id=job.task.id, prompt=job.task.prompt, workspace=workspace, seed=job.seed,
            rollout=job.rollout, timeout_s=job.task.timeout_s * 10, feedback_dir=job.task.feedback_dir,
            prompt_file=prompt_file,
            slot=slot,
        )
        t0 = time.perf_counter()
        try:
            result = job.agent.run(request)
        except Exception:
            result = AgentResult(status="agent_error", log="agent raised:\n" + traceback.format_exc())
        return result, time.perf_counter() - t0

    def run_one(self, job: Job, slot: int) -> Outcome | None:
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
                return RolloutDraft.start(job, self.backend.name).harness_error("running the rollout", exc)
            attempts += 1
            reason = rollout.meta.get(INFRA_REASON)
            if (rollout.status != "infra_error" or attempts > INFRA_RETRIES
                    or not is_transient(reason) or self.stopped(job.agent.name)):
                break
            time.sleep(backoff_delay(attempts) * self.backoff_scale)
        if rollout.status == "infra_error" and attempts > 1:
            rollout = replace(rollout, meta={**rollout.meta, INFRA_ATTEMPTS: attempts})
        return rollout, art

    def _attempt(self, job: Job, slot: int) -> Outcome:
        """One attempt of one rollout.

        Before the agent runs, a failure is the harness's (``infra_error``, retried). After
        it ran, anything raised while examining, scanning, diffing or testing its workspace
        is that rollout's failure (``test_error``, :meth:`RolloutDraft.harness_error`): the
        agent's files may be what broke the harness, and only the harness may exclude a
        rollout.
        """
        tmp = Path(tempfile.mkdtemp(prefix="rollout-", dir=self.scratch))
        stage = "preparing the workspace"
        draft = RolloutDraft.start(job, self.backend.name)
        try:
            os.chmod(tmp, 0o711)
            workspace = tmp / "workspace"
            materialize(workspace, [job.task.workspace_dir])
            prompt_file = tmp / "prompt.md"
            prompt_file.write_text(job.task.prompt, encoding="utf-8")
            os.chmod(prompt_file, 0o644)
            stage = "running the agent"
            result, agent_seconds = self._call_agent(job, workspace, prompt_file, slot)
            draft.agent_ran(result, agent_seconds)
            if result.status == "infra_error":  # the agent produced nothing: no tests
                return draft.agent_infra_error()
            stage = "scanning the workspace"
            findings, scan_errors, changes = scan_changes(self.scanners, job.task.workspace_dir, workspace)
            bytecode_errors, _ = remove_bytecode(workspace)  # the tests run what was scanned
            scan_errors += bytecode_errors
            draft.scanned(findings, scan_errors, changes, [s.name for s in self.scanners])
            stage = "keeping the agent's files"
            draft.kept(take_snapshot(workspace, changes.files, _artifacts.DEFAULT_BUDGET))
            stage = "diffing the workspace"
            draft.diff = workspace_diff(job.task.workspace_dir, workspace,
                                        max_bytes=_artifacts.DEFAULT_BUDGET.max_diff_bytes)
            wall = job.task.timeout_s
            if self.settings.test_timeout_s is not None:
                wall = min(wall, self.settings.test_timeout_s)
            limits = replace(self.settings.limits, wall_s=wall, cpu_s=wall)
            stage = "running the hidden tests"
            draft.meta[TEST_PATH] = "fresh" if self.warm is None else "warm"
            draft.meta[TEST_RUNNER] = job.task.test_runner if self.warm is not None else "pytest"
            try:
                if job.task.stdio is not None:  # stdin/stdout cases, judged outside the sandbox
                    draft.meta[TEST_PATH] = draft.meta[TEST_RUNNER] = "stdio"
                    hidden = run_stdio_tests(workspace, job.task.stdio, timeout_s=wall, backend=self.backend,
                                             limits=limits, slot=slot)
                else:
                    hidden = run_hidden_tests(workspace, job.task.tests_dir,
                                              expected=self.expected[job.task.id],
                                              backend=self.backend, limits=limits, slot=slot,
                                              starter=job.task.workspace_dir, worker=self.warm,
                                              test_runner=job.task.test_runner,
                                              allowed_skips=job.task.allowed_skips)
            except SandboxError as exc:
                return draft.infra_error("sandbox", f"sandbox failed: {exc}")
            if hidden.status == "test_error":
                # the harness did not start, not even on the starter workspace (hidden_tests/fresh.py)
                return draft.infra_error("test_error", hidden.reason, hidden=hidden)
            draft.tested(hidden)
            stage = "recording the rollout"
            outcome = draft.completed()
            if self.settings.retest:
                from reliabench.run.retest import retest_during_run

                stage = "re-testing the rollout"
                outcome = retest_during_run(outcome, job.task, self.expected[job.task.id],
                                            self.backend, limits, slot, tmp, self.settings.retest,
                                            worker=self.warm)
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
            remove_tree(tmp)
